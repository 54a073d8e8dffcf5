//! GEMM family tests: every ISA variant against the scalar reference (bit
//! for bit), the scalar reference against independent formulas, and the
//! GEMM entries against a naive f64 triple loop.
//!
//! GEMM tolerance: any summation order of a length-`k` f32 dot product is
//! within `gamma_k * sum|a||b|` of the exact value (`gamma_k ~ k * u`,
//! `u = 2^-24`; Higham, Accuracy and Stability, 3.1); a bias add and the
//! final rounding add at most `u` times the magnitudes each. Hence the
//! bound `(k + 4) * u * (sum|a||b| + |bias|)` used below holds for every
//! correct implementation, while an indexing error misses it by far.

use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};
use rlx_core::ActKind;

use super::*;

use crate::kernels::test_support::{check_variants, identical, LENGTHS};

const U: f64 = 1.0 / (1u64 << 24) as f64;

fn random(rng: &mut StdRng, len: usize) -> Vec<f32> {
    (0..len).map(|_| rng.gen_range(-1.0f32..1.0)).collect()
}

fn same_bits(a: &[f32], b: &[f32]) -> bool {
    a.len() == b.len() && a.iter().zip(b).all(|(x, y)| x.to_bits() == y.to_bits())
}

// ---- conversions ----------------------------------------------------

#[test]
fn scalar_f16_matches_the_half_crate() {
    for h in 0..=u16::MAX {
        let got = scalar::f16_bits_to_f32(h);
        let want = half::f16::from_bits(h).to_f32();
        if want.is_nan() {
            // The spec: quiet NaN, sign and payload kept.
            let expected = (u32::from(h & 0x8000) << 16) | 0x7fc0_0000 | (u32::from(h & 0x03ff) << 13);
            assert_eq!(got.to_bits(), expected, "{h:#06x}");
        } else {
            assert_eq!(got.to_bits(), want.to_bits(), "{h:#06x}");
        }
    }
}

#[test]
fn scalar_bf16_is_the_high_half() {
    for h in 0..=u16::MAX {
        let got = scalar::bf16_bits_to_f32(h);
        assert_eq!(got.to_bits() >> 16, u32::from(h));
        assert_eq!(got.to_bits() & 0xffff, 0);
        let via_half = half::bf16::from_bits(h).to_f32();
        assert!(got.to_bits() == via_half.to_bits() || (got.is_nan() && via_half.is_nan()), "{h:#06x}");
    }
}

type Convert = unsafe fn(*const u16, *mut f32, usize);

/// Every u16 pattern through `convert` at several lengths and offsets, so
/// both the vector body and the tail see every value.
fn conversion_bits(convert: Convert) -> Vec<f32> {
    let all: Vec<u16> = (0..=u16::MAX).collect();
    let mut out = vec![0.0f32; all.len()];
    // SAFETY: `out` and `all` have the same length.
    unsafe { convert(all.as_ptr(), out.as_mut_ptr(), all.len()) };
    for len in LENGTHS {
        for offset in [0, 3] {
            let mut piece = vec![f32::NAN; len];
            // SAFETY: `offset + len <= all.len()`.
            unsafe { convert(all.as_ptr().add(offset), piece.as_mut_ptr(), len) };
            assert!(same_bits(&piece, &out[offset..offset + len]), "len {len} offset {offset}");
        }
    }
    out
}

#[test]
fn conversions_of_every_isa_match_scalar_bit_for_bit() {
    let f16_ref = conversion_bits(SCALAR.f16_to_f32);
    let bf16_ref = conversion_bits(SCALAR.bf16_to_f32);
    check_variants(&f16_ref, &ISAS.supported(), identical, "f16", |isa| conversion_bits(isa.f16_to_f32));
    check_variants(&bf16_ref, &ISAS.supported(), identical, "bf16", |isa| conversion_bits(isa.bf16_to_f32));
}

// ---- vector kernels -------------------------------------------------

/// Random values with NaN, infinities, negative zero and large values mixed in.
fn awkward(rng: &mut StdRng, len: usize) -> Vec<f32> {
    let specials = [f32::NAN, f32::INFINITY, f32::NEG_INFINITY, -0.0, 3.0e38, -1.0e-40];
    (0..len)
        .map(|i| if i % 11 == 5 { specials[(i / 11) % specials.len()] } else { rng.gen_range(-100.0f32..100.0) })
        .collect()
}

#[test]
fn bias_add_rows_of_every_isa_match_naive() {
    let mut rng = StdRng::seed_from_u64(1);
    for len in LENGTHS {
        let src = awkward(&mut rng, len);
        let bias = awkward(&mut rng, len);
        let want: Vec<f32> = src.iter().zip(&bias).map(|(s, b)| s + b).collect();
        check_variants(&want, &ISAS.supported(), identical, &format!("len {len}"), |isa| {
            let mut dst = vec![0.0; len];
            // SAFETY: equal lengths, no overlap.
            unsafe { (isa.bias_add_row)(src.as_ptr(), bias.as_ptr(), dst.as_mut_ptr(), len) };
            dst
        });
        check_variants(&want, &ISAS.supported(), identical, &format!("in place, len {len}"), |isa| {
            let mut inplace = src.clone();
            let p = inplace.as_mut_ptr();
            // SAFETY: equal lengths; the exact alias `dst == src` is allowed.
            unsafe { (isa.bias_add_row)(p, bias.as_ptr(), p, len) };
            inplace
        });
    }
}

#[test]
fn axpy_of_every_isa_matches_scalar() {
    let mut rng = StdRng::seed_from_u64(2);
    for len in LENGTHS {
        let x = awkward(&mut rng, len);
        let y0 = awkward(&mut rng, len);
        let a = rng.gen_range(-3.0f32..3.0);
        let want: Vec<f32> = x.iter().zip(&y0).map(|(x, y)| a.mul_add(*x, *y)).collect();
        check_variants(&want, &ISAS.supported(), identical, &format!("len {len}"), |isa| {
            let mut y = y0.clone();
            // SAFETY: equal lengths, no overlap.
            unsafe { (isa.axpy)(y.as_mut_ptr(), a, x.as_ptr(), len) };
            y
        });
    }
}

#[test]
fn bias_add_entry_serial_parallel_and_in_place_agree() {
    let mut rng = StdRng::seed_from_u64(3);
    for (rows, cols) in [(0, 5), (5, 0), (1, 1), (3, 17), (64, 33), (300, 129)] {
        let src = awkward(&mut rng, rows * cols);
        let bias = awkward(&mut rng, cols);
        let want: Vec<f32> = (0..rows * cols).map(|i| src[i] + bias[i % cols.max(1)]).collect();
        for par in [false, true] {
            let mut dst = vec![0.0; rows * cols];
            // SAFETY: sized buffers, no overlap.
            unsafe { bias_add_f32(src.as_ptr(), bias.as_ptr(), dst.as_mut_ptr(), rows, cols, par) };
            assert!(same_bits(&dst, &want), "{rows}x{cols} par {par}");
            let mut inplace = src.clone();
            let p = inplace.as_mut_ptr();
            // SAFETY: exact alias is allowed.
            unsafe { bias_add_f32(p, bias.as_ptr(), p, rows, cols, par) };
            assert!(same_bits(&inplace, &want), "{rows}x{cols} par {par} in place");
        }
    }
}

// ---- GEMM entries ---------------------------------------------------

/// `c = op(a) @ op(b) (+ bias)` in f64 with the error bound of each entry.
fn naive(
    a: &[f32],
    b: &[f32],
    bias: Option<&[f32]>,
    m: usize,
    k: usize,
    n: usize,
    ta: bool,
    tb: bool,
) -> (Vec<f64>, Vec<f64>) {
    let mut want = vec![0.0; m * n];
    let mut bound = vec![0.0; m * n];
    for i in 0..m {
        for j in 0..n {
            let (mut s, mut mag) = (0.0f64, 0.0f64);
            for p in 0..k {
                let x = f64::from(if ta { a[p * m + i] } else { a[i * k + p] });
                let y = f64::from(if tb { b[j * k + p] } else { b[p * n + j] });
                s += x * y;
                mag += (x * y).abs();
            }
            if let Some(bias) = bias {
                s += f64::from(bias[j]);
                mag += f64::from(bias[j]).abs();
            }
            want[i * n + j] = s;
            bound[i * n + j] = (k as f64 + 4.0) * U * mag;
        }
    }
    (want, bound)
}

fn assert_close(got: &[f32], (want, bound): &(Vec<f64>, Vec<f64>), what: &str) {
    assert_eq!(got.len(), want.len(), "{what}");
    for (i, ((g, w), e)) in got.iter().zip(want).zip(bound).enumerate() {
        assert!((f64::from(*g) - w).abs() <= *e, "{what}: [{i}] = {g}, want {w} (bound {e})");
    }
}

const SHAPES: [(usize, usize, usize); 8] =
    [(0, 3, 4), (3, 0, 4), (3, 4, 0), (1, 1, 1), (1, 7, 5), (9, 1, 3), (17, 33, 9), (40, 70, 300)];

#[test]
fn sgemm_entries_match_naive() {
    let mut rng = StdRng::seed_from_u64(4);
    for (m, k, n) in SHAPES {
        let a = random(&mut rng, m * k);
        let b = random(&mut rng, k * n);
        let mut c = vec![f32::NAN; m * n];
        // SAFETY: sized buffers, no overlap.
        unsafe { sgemm_f32(a.as_ptr(), b.as_ptr(), c.as_mut_ptr(), m, k, n) };
        assert_close(&c, &naive(&a, &b, None, m, k, n, false, false), &format!("sgemm {m}x{k}x{n}"));
        for (ta, tb) in [(false, false), (true, false), (false, true), (true, true)] {
            let mut c = vec![f32::NAN; m * n];
            // SAFETY: sized buffers, no overlap.
            unsafe { sgemm_t_f32(a.as_ptr(), b.as_ptr(), c.as_mut_ptr(), m, k, n, ta, tb) };
            let what = format!("sgemm_t {m}x{k}x{n} ta={ta} tb={tb}");
            assert_close(&c, &naive(&a, &b, None, m, k, n, ta, tb), &what);
        }
    }
}

fn to_f16(x: &[f32]) -> Vec<u16> {
    x.iter().map(|&v| half::f16::from_f32(v).to_bits()).collect()
}

fn to_bf16(x: &[f32]) -> Vec<u16> {
    x.iter().map(|&v| half::bf16::from_f32(v).to_bits()).collect()
}

#[test]
fn half_weight_gemm_matches_naive_on_both_paths() {
    let mut rng = StdRng::seed_from_u64(5);
    let shapes = [(0, 3, 4), (2, 0, 5), (1, 1, 1), (1, 37, 300), (8, 9, 513), (9, 16, 20), (20, 65, 33)];
    for (m, k, n) in shapes {
        let a = random(&mut rng, m * k);
        let w = random(&mut rng, k * n);
        for (name, bits, widened) in [
            ("f16", to_f16(&w), to_f16(&w).iter().map(|&h| half::f16::from_bits(h).to_f32()).collect::<Vec<_>>()),
            ("bf16", to_bf16(&w), to_bf16(&w).iter().map(|&h| half::bf16::from_bits(h).to_f32()).collect()),
        ] {
            let want = naive(&a, &widened, None, m, k, n, false, false);
            let mut results = Vec::new();
            for par in [false, true] {
                let mut scratch = vec![f32::NAN; half_weight_scratch_elems(m, k, n)];
                let mut c = vec![f32::NAN; m * n];
                // SAFETY: sized buffers, no overlap.
                unsafe {
                    let f = if name == "f16" { sgemm_f16w } else { sgemm_bf16w };
                    f(a.as_ptr(), bits.as_ptr(), c.as_mut_ptr(), m, k, n, scratch.as_mut_ptr(), par);
                }
                assert_close(&c, &want, &format!("{name} {m}x{k}x{n} par {par}"));
                results.push(c);
            }
            assert!(same_bits(&results[0], &results[1]), "{name} {m}x{k}x{n}: par changed bits");
        }
    }
}

#[test]
fn half_weight_via_uses_scratch_in_front() {
    let mut rng = StdRng::seed_from_u64(6);
    for (m, k, n) in [(3, 5, 7), (12, 5, 7)] {
        let a = random(&mut rng, m * k);
        let w = random(&mut rng, k * n);
        let bits = to_f16(&w);
        let mut direct = vec![0.0; m * n];
        let mut scratch = vec![0.0; m * n + half_weight_scratch_elems(m, k, n)];
        let mut via = vec![0.0; m * n];
        // SAFETY: sized buffers, no overlap.
        unsafe {
            sgemm_f16w(a.as_ptr(), bits.as_ptr(), direct.as_mut_ptr(), m, k, n, scratch.as_mut_ptr(), false);
            sgemm_f16w_via(scratch.as_mut_ptr(), a.as_ptr(), bits.as_ptr(), via.as_mut_ptr(), m, k, n, false);
        }
        assert!(same_bits(&direct, &via), "{m}x{k}x{n}");
    }
}

#[test]
fn batched_sgemm_matches_naive_with_broadcasts() {
    let mut rng = StdRng::seed_from_u64(7);
    for (batch, m, k, n) in [(0, 2, 2, 2), (1, 3, 4, 5), (3, 1, 7, 9), (5, 17, 9, 33), (4, 0, 3, 3)] {
        for (a_bcast, b_bcast) in [(false, false), (true, false), (false, true), (true, true)] {
            let a_count = if a_bcast { 1 } else { batch };
            let b_count = if b_bcast { 1 } else { batch };
            let a = random(&mut rng, a_count * m * k);
            let b = random(&mut rng, b_count * k * n);
            let mut results = Vec::new();
            for par in [false, true] {
                let mut c = vec![f32::NAN; batch * m * n];
                // SAFETY: sized buffers, no overlap.
                unsafe {
                    batched_sgemm_f32(a.as_ptr(), b.as_ptr(), c.as_mut_ptr(), batch, m, k, n, a_bcast, b_bcast, par)
                };
                for i in 0..batch {
                    let ai = if a_bcast { 0 } else { i * m * k };
                    let bi = if b_bcast { 0 } else { i * k * n };
                    let want = naive(&a[ai..ai + m * k], &b[bi..bi + k * n], None, m, k, n, false, false);
                    let what = format!("batch {i}/{batch} {m}x{k}x{n} bcast {a_bcast}/{b_bcast} par {par}");
                    assert_close(&c[i * m * n..(i + 1) * m * n], &want, &what);
                }
                results.push(c);
            }
            assert!(same_bits(&results[0], &results[1]), "par changed bits");
        }
    }
}

#[test]
fn fused_mm_bias_act_matches_naive() {
    let mut rng = StdRng::seed_from_u64(8);
    // Activations with exact, order-preserving reference formulas, so the
    // GEMM bound carries over unchanged.
    type Reference = fn(f64) -> f64;
    let acts: [(ActKind, Reference); 3] = [
        (ActKind::Identity, |x| x),
        (ActKind::Relu, |x| x.max(0.0)),
        (ActKind::LeakyRelu { alpha: 0.5 }, |x| if x < 0.0 { 0.5 * x } else { x }),
    ];
    for (m, k, n) in SHAPES {
        let a = random(&mut rng, m * k);
        let w = random(&mut rng, k * n);
        let bias = random(&mut rng, n);
        let (want, bound) = naive(&a, &w, Some(&bias), m, k, n, false, false);
        for (act, f) in acts {
            let want_act: Vec<f64> = want.iter().map(|&x| f(x)).collect();
            for par in [false, true] {
                let mut c = vec![f32::NAN; m * n];
                // SAFETY: sized buffers, no overlap.
                unsafe {
                    fused_mm_bias_act_f32(a.as_ptr(), w.as_ptr(), bias.as_ptr(), c.as_mut_ptr(), m, k, n, act, par)
                };
                let what = format!("fused {m}x{k}x{n} {} par {par}", act.name());
                assert_close(&c, &(want_act.clone(), bound.clone()), &what);
            }
        }
    }
}

#[test]
fn via_variants_give_the_direct_bits() {
    let mut rng = StdRng::seed_from_u64(9);
    let (m, k, n) = (5, 6, 7);
    let a = random(&mut rng, m * k);
    let b = random(&mut rng, k * n);
    let bias = random(&mut rng, n);
    let mut scratch = vec![0.0; 2 * m * n];
    let s = scratch.as_mut_ptr();
    let (mut d, mut v) = (vec![0.0; 2 * m * n], vec![0.0; 2 * m * n]);
    // SAFETY: sized buffers, no overlap.
    unsafe {
        sgemm_f32(a.as_ptr(), b.as_ptr(), d.as_mut_ptr(), m, k, n);
        sgemm_f32_via(s, a.as_ptr(), b.as_ptr(), v.as_mut_ptr(), m, k, n);
        assert!(same_bits(&d, &v), "sgemm");
        sgemm_t_f32(a.as_ptr(), b.as_ptr(), d.as_mut_ptr(), m, k, n, true, true);
        sgemm_t_f32_via(s, a.as_ptr(), b.as_ptr(), v.as_mut_ptr(), m, k, n, true, true);
        assert!(same_bits(&d, &v), "sgemm_t");
        batched_sgemm_f32(a.as_ptr(), b.as_ptr(), d.as_mut_ptr(), 2, m, k, n, true, true, false);
        batched_sgemm_f32_via(s, a.as_ptr(), b.as_ptr(), v.as_mut_ptr(), 2, m, k, n, true, true, false);
        assert!(same_bits(&d, &v), "batched");
        fused_mm_bias_act_f32(a.as_ptr(), b.as_ptr(), bias.as_ptr(), d.as_mut_ptr(), m, k, n, ActKind::Relu, false);
        fused_mm_bias_act_f32_via(
            s,
            a.as_ptr(),
            b.as_ptr(),
            bias.as_ptr(),
            v.as_mut_ptr(),
            m,
            k,
            n,
            ActKind::Relu,
            false,
        );
        assert!(same_bits(&d, &v), "fused");
    }
}
