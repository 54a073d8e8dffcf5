//! Every microkernel against the scalar reference, bit for bit, over
//! awkward shapes (row and column tails, `k` below, at and across a pass,
//! empty dims), both `B` layouts, column and row bias, with and without an
//! activation, serial and split.

use rlx_core::pack::{pack_b, packed_len};
use rlx_core::ActKind;

use super::*;
use crate::kernels::test_support::{check_variants, identical};

/// Deterministic values with varied exponents, so rounding order shows.
fn values(len: usize, seed: u32) -> Vec<f32> {
    let mut x = seed.wrapping_mul(2_654_435_761).wrapping_add(12345);
    (0..len)
        .map(|_| {
            x ^= x << 13;
            x ^= x >> 17;
            x ^= x << 5;
            ((x % 20_000) as f32 - 10_000.0) / 3_217.0
        })
        .collect()
}

#[derive(Clone, Copy, Debug, PartialEq)]
enum BiasKind {
    None,
    Cols,
    Rows,
}

/// The definition: `act(bias + sum_p a[i,p] * b[p,j])` with one `mul_add`
/// per `p` in order; `b` row-major `[k, n]`.
fn reference(
    a: &[f32],
    b: &[f32],
    bias: &[f32],
    kind: BiasKind,
    (m, k, n): (usize, usize, usize),
    act: ActKind,
) -> Vec<f32> {
    let mut c = vec![0.0f32; m * n];
    for i in 0..m {
        for j in 0..n {
            let mut acc = match kind {
                BiasKind::None => 0.0,
                BiasKind::Cols => bias[j],
                BiasKind::Rows => bias[i],
            };
            for p in 0..k {
                acc = a[i * k + p].mul_add(b[p * n + j], acc);
            }
            c[i * n + j] = acc;
        }
    }
    // SAFETY: `c` holds `m*n` f32, in place.
    unsafe { crate::kernels::activation::act_f32_slice(act, c.as_ptr(), c.as_mut_ptr(), m * n, false) };
    c
}

fn bits(v: &[f32]) -> Vec<u32> {
    v.iter().map(|x| x.to_bits()).collect()
}

/// The product of dense row-major `a` (`m x k`) and packed `b` into dense
/// `c` (`m x n`).
fn dense(a: &[f32], b: &[f32], c: &mut [f32], (m, k, n): (usize, usize, usize), bias: Bias, act: ActKind) -> Gemm {
    Gemm { m, k, n, a: a.as_ptr(), lda: k, b: b.as_ptr(), c: c.as_mut_ptr(), ldc: n, bias, act }
}

const SHAPES: &[(usize, usize, usize)] = &[
    (1, 1, 1),
    (1, 7, 16),
    (5, 3, 15),
    (6, 16, 17),
    (7, 1, 33),
    (12, 256, 16),
    (13, 257, 31),
    (25, 600, 70),
    (3, 0, 5),
    (0, 4, 3),
    (4, 5, 0),
    // One or two rows: the wide kernels, over every panel count up to a
    // task's (AVX-512: 8), full and partial last panels, `k` across a
    // pass, and more panels than one task.
    (1, 300, 70),
    (2, 40, 128),
    (1, 0, 64),
    (2, 257, 200),
    (1, 400, 120),
    (2, 120, 84),
    (1, 5, 8),
    (2, 3, 16),
    (1, 9, 32),
    (2, 17, 48),
    (1, 260, 112),
    (2, 33, 129),
    (1, 7, 300),
    // Pairs of full panels: with a single panel after them, over `k`
    // passes, and for a short strip beside a group that is not full.
    (12, 300, 96),
    (11, 520, 48),
    (2, 40, 100),
];

const CASES: &[(BiasKind, ActKind)] = &[
    (BiasKind::None, ActKind::Identity),
    (BiasKind::Cols, ActKind::Identity),
    (BiasKind::Cols, ActKind::Relu),
    (BiasKind::Rows, ActKind::Gelu),
];

#[test]
fn packed_b_matches_the_reference_bit_for_bit() {
    let kernels = KERNELS.supported();
    for &(m, k, n) in SHAPES {
        for &(kind, act) in CASES {
            let (a, b, bias) = (values(m * k, 1), values(k * n, 2), values(m.max(n), 3));
            let packed = pack_b(&b, k, n, false);
            assert_eq!(packed.len(), packed_len(k, n).unwrap());
            let want = reference(&a, &b, &bias, kind, (m, k, n), act);
            let bias_of = match kind {
                BiasKind::None => Bias::None,
                BiasKind::Cols => Bias::Cols(bias.as_ptr()),
                BiasKind::Rows => Bias::Rows(bias.as_ptr()),
            };
            for par in [false, true] {
                let what = format!("m={m} k={k} n={n} {kind:?} {act:?} par={par}");
                check_variants(&want, &kernels, identical, &what, |kernel| {
                    let mut c = vec![f32::NAN; m * n];
                    let g = dense(&a, &packed, &mut c, (m, k, n), bias_of, act);
                    // SAFETY: every buffer has the extent the kernel reads or writes.
                    unsafe { run(&kernel, &g, par) };
                    c
                });
            }
        }
    }
}

/// `B` packed at run time from a strided matrix (as `pack_b` does at
/// import), `a` and `c` inside wider ones (strides past the row length):
/// nothing outside the `m x n` window of `c` changes.
#[test]
fn strided_operands_match_the_reference_and_stay_in_their_window() {
    const PAD: usize = 3;
    let kernels = KERNELS.supported();
    for &(m, k, n) in SHAPES {
        for &(kind, act) in CASES {
            let (a, b, bias) = (values(m * k, 4), values(k * n, 5), values(m.max(n), 6));
            let want = reference(&a, &b, &bias, kind, (m, k, n), act);
            let (lda, ldb, ldc) = (k + PAD, n + PAD, n + PAD);
            let mut a_wide = vec![f32::NAN; m * lda];
            let mut b_wide = vec![f32::NAN; k * ldb];
            // The reference in `c`'s window, the padding untouched.
            let mut want_wide = vec![-7.0f32; m * ldc];
            for i in 0..m {
                a_wide[i * lda..i * lda + k].copy_from_slice(&a[i * k..(i + 1) * k]);
                want_wide[i * ldc..i * ldc + n].copy_from_slice(&want[i * n..(i + 1) * n]);
            }
            for p in 0..k {
                b_wide[p * ldb..p * ldb + n].copy_from_slice(&b[p * n..(p + 1) * n]);
            }
            let bias_of = match kind {
                BiasKind::None => Bias::None,
                BiasKind::Cols => Bias::Cols(bias.as_ptr()),
                BiasKind::Rows => Bias::Rows(bias.as_ptr()),
            };
            let mut packed = vec![f32::NAN; packed_len(k, n).unwrap()];
            // SAFETY: `b_wide` holds `k` rows of `ldb`; `packed` the packed size.
            unsafe { pack_rows_f32(b_wide.as_ptr(), ldb, k, n, packed.as_mut_ptr(), true) };
            assert_eq!(bits(&packed), bits(&pack_b(&b, k, n, false)), "pack_rows_f32 k={k} n={n}");
            let what = format!("m={m} k={k} n={n} {kind:?} {act:?}");
            check_variants(&want_wide, &kernels, identical, &what, |kernel| {
                let mut c = vec![-7.0f32; m * ldc];
                let g = Gemm {
                    m,
                    k,
                    n,
                    a: a_wide.as_ptr(),
                    lda,
                    b: packed.as_ptr(),
                    c: c.as_mut_ptr(),
                    ldc,
                    bias: bias_of,
                    act,
                };
                // SAFETY: every buffer has the extent the kernel reads or writes.
                unsafe { run(&kernel, &g, true) };
                c
            });
        }
    }
}

#[test]
fn the_via_entry_allows_the_output_over_the_input() {
    let (m, k, n) = (9, 20, 20);
    let mut buf = values(m * k, 4);
    let b = values(k * n, 5);
    let packed = pack_b(&b, k, n, false);
    let want = reference(&buf, &b, &[], BiasKind::None, (m, k, n), ActKind::Identity);
    let mut scratch = vec![0.0f32; m * n];
    // SAFETY: `buf` is both `a` and `c` (m*k == m*n here); the scratch is separate.
    unsafe {
        let p = buf.as_mut_ptr();
        packed_gemm_f32_via(scratch.as_mut_ptr(), p, packed.as_ptr(), None, p, m, k, n, ActKind::Identity, false);
    }
    assert_eq!(bits(&buf), bits(&want));
}

/// Prints GFLOP/s of the best kernel with and without its pair kernel on
/// model shapes, interleaved in one process: `cargo test --release -p
/// rlx-runtime gemm_pair_timing -- --ignored --nocapture`.
#[test]
#[ignore = "timing, run by hand"]
fn gemm_pair_timing() {
    let best = *KERNELS.best();
    let single = Kernel { pair: None, ..best };
    for (m, k, n) in [(128, 384, 384), (128, 384, 1536), (128, 1536, 384), (128, 32, 128), (256, 256, 256)] {
        let (a, b, bias) = (values(m * k, 1), values(k * n, 2), values(n, 3));
        let packed = pack_b(&b, k, n, false);
        let mut c = vec![0.0f32; m * n];
        let g = dense(&a, &packed, &mut c, (m, k, n), Bias::Cols(bias.as_ptr()), ActKind::Identity);
        let mut best_us = [f64::MAX; 2];
        for _ in 0..200 {
            for (slot, kernel) in [&best, &single].into_iter().enumerate() {
                let t = std::time::Instant::now();
                // SAFETY: every buffer has the extent the kernel reads or writes.
                unsafe { run(kernel, &g, false) };
                best_us[slot] = best_us[slot].min(t.elapsed().as_secs_f64() * 1e6);
            }
        }
        let gf = |us: f64| 2.0 * (m * k * n) as f64 / us / 1e3;
        println!(
            "{m}x{k}x{n}: {} with pairs {:.1} GF/s, without {:.1} GF/s",
            best.name,
            gf(best_us[0]),
            gf(best_us[1])
        );
    }
}
