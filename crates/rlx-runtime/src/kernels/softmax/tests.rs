use proptest::prelude::*;
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};

use super::*;

use crate::kernels::test_support::{bits_checksum, check_variants, pinning_inputs, same, LENGTHS};
const U: f64 = f32::EPSILON as f64 / 2.0;

/// Every row kernel this CPU can run, the reference last.
fn variants() -> Vec<(&'static str, RowFn)> {
    ROW_KERNELS.supported()
}

/// Independent softmax in f64, for finite rows.
fn naive(x: &[f32]) -> Vec<f64> {
    let m = x.iter().fold(f64::NEG_INFINITY, |m, &v| m.max(v as f64));
    let e: Vec<f64> = x.iter().map(|&v| (v as f64 - m).exp()).collect();
    let s: f64 = e.iter().sum();
    e.iter().map(|v| v / s).collect()
}

/// Error bound of one output, relative to the exact value: the shift
/// `x - max` rounds (error `|x - max| u`, which `exp` turns into a relative
/// error), `exp` itself (`EXP_MAX_REL_ERR`, also covering libm's < 1 ulp),
/// the sum of `n` positive terms (`(n - 1) u` in the worst order) and the
/// reciprocal and final multiply (`2 u`). Flushed subnormals add at most
/// `f32::MIN_POSITIVE` absolutely.
fn check_row(name: &str, x: &[f32], got: &[f32]) {
    let want = naive(x);
    let m = x.iter().fold(f32::NEG_INFINITY, |m, &v| m.max(v)) as f64;
    let spread = x.iter().map(|&v| (v as f64 - m).abs()).fold(0.0, f64::max);
    let n = x.len() as f64;
    for (i, (&g, &w)) in got.iter().zip(&want).enumerate() {
        let rel = 2.0 * EXP_MAX_REL_ERR as f64 + ((x[i] as f64 - m).abs() + spread) * U + (n + 1.0) * U;
        let tol = w * rel + f32::MIN_POSITIVE as f64;
        assert!((g as f64 - w).abs() <= tol, "{name}: n={} i={i} got {g} want {w} tol {tol}", x.len());
    }
}

fn random_row(rng: &mut StdRng, n: usize, lo: f32, hi: f32) -> Vec<f32> {
    (0..n).map(|_| rng.gen_range(lo..hi)).collect()
}

fn run(kernel: RowFn, x: &[f32]) -> Vec<f32> {
    let mut out = vec![f32::NAN; x.len()];
    // SAFETY: both slices hold `x.len()` f32.
    unsafe { kernel(x.as_ptr(), out.as_mut_ptr(), x.len()) };
    out
}

/// The AVX-512 kernel gives the AVX2 kernel's bits on every length up to
/// three 16-lane blocks past a tail, and on rows with the edge cases
/// (`-inf` entries, NaN, `+inf`, signed zeros, values past `exp`'s range).
#[test]
fn avx512_gives_the_avx2_bits() {
    let variants = variants();
    let Some(&(_, avx2)) = variants.iter().find(|(name, _)| *name == "avx2") else { return };
    let wide: Vec<(&'static str, RowFn)> = variants.iter().copied().filter(|(name, _)| *name == "avx512").collect();
    let mut rng = StdRng::seed_from_u64(12);
    let specials = [f32::NEG_INFINITY, -0.0, 0.0, f32::NAN, f32::INFINITY, -100.0, 100.0, 88.0, -88.0];
    for n in 0..=70 {
        let mut rows = vec![random_row(&mut rng, n, -30.0, 30.0), random_row(&mut rng, n, -1.0, 1.0)];
        for (k, &sp) in specials.iter().enumerate() {
            let mut row = random_row(&mut rng, n, -20.0, 20.0);
            for (j, x) in row.iter_mut().enumerate() {
                if (j + k) % 5 == 0 {
                    *x = sp;
                }
            }
            rows.push(row);
        }
        rows.push(vec![f32::NEG_INFINITY; n]);
        for x in rows {
            check_variants(&run(avx2, &x), &wide, same, &format!("n={n} on {x:?}"), |kernel| run(kernel, &x));
        }
    }
}

#[test]
fn every_variant_matches_exact_softmax_over_tail_lengths() {
    let mut rng = StdRng::seed_from_u64(1);
    for (name, kernel) in variants() {
        for &n in &LENGTHS {
            let x = random_row(&mut rng, n, -10.0, 10.0);
            check_row(name, &x, &run(kernel, &x));
        }
    }
}

#[test]
fn wide_rows_underflow_to_zero_within_bound() {
    // exp(x - max) below 1.2e-38 is flushed by the SIMD exp.
    let mut rng = StdRng::seed_from_u64(2);
    for (name, kernel) in variants() {
        for &n in &LENGTHS {
            let x = random_row(&mut rng, n, -200.0, 0.0);
            check_row(name, &x, &run(kernel, &x));
        }
    }
}

#[test]
fn in_place_equals_out_of_place() {
    let mut rng = StdRng::seed_from_u64(3);
    for (name, kernel) in variants() {
        for &n in &LENGTHS {
            let x = random_row(&mut rng, n, -5.0, 5.0);
            let out = run(kernel, &x);
            let mut data = x.clone();
            // SAFETY: exact alias is allowed.
            unsafe { kernel(data.as_ptr(), data.as_mut_ptr(), n) };
            assert_eq!(bits(&data), bits(&out), "{name}: n={n}");
        }
    }
}

fn bits(v: &[f32]) -> Vec<u32> {
    v.iter().map(|x| x.to_bits()).collect()
}

#[test]
fn fully_masked_row_is_zeros() {
    for (name, kernel) in variants() {
        for &n in &LENGTHS {
            let x = vec![f32::NEG_INFINITY; n];
            assert!(run(kernel, &x).iter().all(|&v| v == 0.0), "{name}: n={n}");
        }
    }
}

#[test]
fn partly_masked_row_gives_masked_entries_exact_zero() {
    for (name, kernel) in variants() {
        for &n in &LENGTHS[1..] {
            let x: Vec<f32> = (0..n).map(|i| if i % 3 == 0 { 1.0 } else { f32::NEG_INFINITY }).collect();
            let out = run(kernel, &x);
            let live = n.div_ceil(3) as f32;
            for (i, &v) in out.iter().enumerate() {
                if i % 3 == 0 {
                    // Equal inputs: each output is 1/live up to the sum's
                    // rounding (live terms of exactly 1.0 sum exactly).
                    assert!((v - 1.0 / live).abs() <= 2.0 * f32::EPSILON / live, "{name}: n={n} i={i} {v}");
                } else {
                    assert_eq!(v, 0.0, "{name}: n={n} i={i}");
                }
            }
        }
    }
}

#[test]
fn nan_or_pos_inf_poisons_the_row() {
    for (name, kernel) in variants() {
        for &n in &LENGTHS[1..] {
            for (poison, at) in [(f32::NAN, 0), (f32::NAN, n - 1), (f32::INFINITY, n / 2)] {
                let mut x = vec![0.5f32; n];
                x[at] = poison;
                let out = run(kernel, &x);
                assert!(out.iter().all(|v| v.is_nan()), "{name}: n={n} poison {poison} at {at}: {out:?}");
            }
        }
    }
}

#[test]
fn negative_inf_entries_among_nan_still_poison() {
    for (name, kernel) in variants() {
        let x = [f32::NEG_INFINITY, f32::NAN, f32::NEG_INFINITY];
        assert!(run(kernel, &x).iter().all(|v| v.is_nan()), "{name}");
    }
}

/// The vector `exp` of this CPU applied to 8 values, if it has one (the
/// AVX2 variant's, which the AVX-512 one shares, or NEON's).
fn vector_exp() -> Option<fn([f32; 8]) -> [f32; 8]> {
    #[cfg(target_arch = "x86_64")]
    if variants().iter().any(|(name, _)| *name == "avx2") {
        return Some(|x| {
            use std::arch::x86_64::*;
            let mut out = [0.0f32; 8];
            // SAFETY: this CPU runs the AVX2 variant, so it has AVX2 and
            // FMA; both arrays hold 8.
            unsafe { _mm256_storeu_ps(out.as_mut_ptr(), avx2::exp256(_mm256_loadu_ps(x.as_ptr()))) };
            out
        });
    }
    #[cfg(target_arch = "aarch64")]
    return Some(|x| {
        use std::arch::aarch64::*;
        let mut out = [0.0f32; 8];
        // SAFETY: NEON is baseline on aarch64; both arrays hold 8.
        unsafe {
            for h in [0, 4] {
                vst1q_f32(out.as_mut_ptr().add(h), neon::exp128(vld1q_f32(x.as_ptr().add(h))));
            }
        }
        out
    });
    #[allow(unreachable_code)]
    None
}

#[test]
fn vector_exp_relative_error_is_within_the_stated_bound() {
    let Some(exp8) = vector_exp() else { return };
    // A dense sweep over the whole normal-result range.
    let (lo, hi) = (-87.336_54f32, 88.722_83f32);
    let steps = 400_000usize;
    let mut worst = 0.0f64;
    let mut chunk = [0.0f32; 8];
    for s in 0..=steps {
        chunk[s % 8] = lo + (hi - lo) * (s as f32 / steps as f32);
        if s % 8 == 7 || s == steps {
            for (g, x) in exp8(chunk).iter().zip(chunk) {
                let want = (x as f64).exp();
                worst = worst.max(((*g as f64) - want).abs() / want);
            }
        }
    }
    assert!(worst <= EXP_MAX_REL_ERR as f64, "worst relative error {worst:e}");
}

#[test]
fn vector_exp_edge_values() {
    let Some(exp8) = vector_exp() else { return };
    let got = exp8([f32::NEG_INFINITY, -1e9, -88.0, 0.0, 89.0, f32::INFINITY, f32::NAN, -0.0]);
    assert_eq!(&got[..4], &[0.0, 0.0, 0.0, 1.0]);
    assert_eq!(got[4], f32::INFINITY);
    assert_eq!(got[5], f32::INFINITY);
    assert!(got[6].is_nan());
    assert_eq!(got[7], 1.0);
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(24))]

    #[test]
    fn entry_matches_exact_and_par_is_bit_identical(rows in 0usize..40, cols in 0usize..300, seed in any::<u64>()) {
        let mut rng = StdRng::seed_from_u64(seed);
        let x = random_row(&mut rng, rows * cols, -8.0, 8.0);
        let mut serial = vec![0.0f32; x.len()];
        let mut parallel = vec![0.0f32; x.len()];
        // SAFETY: all buffers hold rows * cols f32.
        unsafe {
            softmax_f32(x.as_ptr(), serial.as_mut_ptr(), rows, cols, false);
            softmax_f32(x.as_ptr(), parallel.as_mut_ptr(), rows, cols, true);
        }
        prop_assert_eq!(bits(&serial), bits(&parallel));
        for r in 0..rows {
            check_row("entry", &x[r * cols..(r + 1) * cols], &serial[r * cols..(r + 1) * cols]);
        }
    }
}

/// The vector `exp`'s results, pinned by a checksum over
/// `pinning_inputs`: every width and spelling of it (AVX2, NEON) must give
/// these bits, so a rewrite cannot change a softmax unnoticed.
#[test]
fn vector_exp_keeps_its_pinned_bits() {
    let Some(exp8) = vector_exp() else { return };
    let x = pinning_inputs();
    let mut out = Vec::with_capacity(x.len());
    for chunk in x.chunks_exact(8) {
        out.extend(exp8(chunk.try_into().unwrap()));
    }
    assert_eq!(bits_checksum(&out), VECTOR_EXP_BITS, "{:#018x}", bits_checksum(&out));
}

/// See [`vector_exp_keeps_its_pinned_bits`].
const VECTOR_EXP_BITS: u64 = 0x03cc_db12_a4e0_7b01;
