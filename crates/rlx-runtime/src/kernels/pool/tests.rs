use proptest::prelude::*;
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};

use super::*;

use crate::kernels::test_support::{check_variants, same, LENGTHS};

/// Widths of a plane: the awkward lengths but 0.
const WIDTHS: &[usize] = LENGTHS.split_at(1).1;

fn variants() -> Vec<(&'static str, PlaneFn)> {
    PLANE_KERNELS.supported()
}

fn bits(v: &[f32]) -> Vec<u32> {
    v.iter().map(|x| x.to_bits()).collect()
}

/// Output size for a pooling window, floor or ceil mode, with leading
/// and trailing padding.
fn out_len(len: usize, k: usize, s: usize, pad: usize, ceil: bool) -> usize {
    let span = len + 2 * pad - k;
    if ceil {
        span.div_ceil(s) + 1
    } else {
        span / s + 1
    }
}

fn pool_shape(
    n: usize,
    c: usize,
    (h, w): (usize, usize),
    (kh, kw): (usize, usize),
    (sh, sw): (usize, usize),
    (ph, pw): (usize, usize),
    ceil: bool,
) -> Pool2dShape {
    Pool2dShape {
        n,
        c,
        h,
        w,
        h_out: out_len(h, kh, sh, ph, ceil),
        w_out: out_len(w, kw, sw, pw, ceil),
        kh,
        kw,
        sh,
        sw,
        ph,
        pw,
    }
}

/// Independent pooling: visits every window position, skips those outside
/// the input, sums in `(ki, kj)` order and counts by the documented rule.
fn naive(x: &[f32], s: &Pool2dShape, kind: PoolKind, cip: bool) -> Vec<f32> {
    let mut out = Vec::new();
    for p in 0..s.n * s.c {
        for ho in 0..s.h_out {
            for wo in 0..s.w_out {
                let mut acc = if kind == PoolKind::Max { f32::NEG_INFINITY } else { 0.0 };
                let (mut real, mut padded) = (0usize, 0usize);
                for ki in 0..s.kh {
                    for kj in 0..s.kw {
                        let (ph_pos, pw_pos) = (ho * s.sh + ki, wo * s.sw + kj);
                        if ph_pos < s.h + 2 * s.ph && pw_pos < s.w + 2 * s.pw {
                            padded += 1;
                        }
                        let (hi, wi) = (ph_pos as i64 - s.ph as i64, pw_pos as i64 - s.pw as i64);
                        if hi < 0 || wi < 0 || hi >= s.h as i64 || wi >= s.w as i64 {
                            continue;
                        }
                        real += 1;
                        let v = x[p * s.h * s.w + hi as usize * s.w + wi as usize];
                        match kind {
                            PoolKind::Max => {
                                if v.is_nan() || acc.is_nan() {
                                    acc = f32::NAN;
                                } else if v > acc {
                                    acc = v;
                                }
                            }
                            PoolKind::Mean => acc += v,
                        }
                    }
                }
                if kind == PoolKind::Mean {
                    let count = if cip { padded } else { real };
                    acc = if count == 0 { 0.0 } else { acc / count as f32 };
                }
                out.push(acc);
            }
        }
    }
    out
}

fn run(x: &[f32], s: &Pool2dShape, kind: PoolKind, cip: bool, par: bool) -> Vec<f32> {
    let mut out = vec![f32::NAN; s.n * s.c * s.h_out * s.w_out];
    // SAFETY: sized for the shape.
    unsafe { pool2d_f32(x.as_ptr(), out.as_mut_ptr(), s, kind, cip, par) };
    out
}

/// Same window order and same count: the result must equal the naive
/// one exactly.
fn check(x: &[f32], s: &Pool2dShape, what: &str) {
    for kind in [PoolKind::Max, PoolKind::Mean] {
        for cip in [false, true] {
            let want = naive(x, s, kind, cip);
            let got = run(x, s, kind, cip, false);
            assert_eq!(bits(&got), bits(&want), "{what} {kind:?} cip={cip}");
            assert_eq!(bits(&run(x, s, kind, cip, true)), bits(&want), "{what} {kind:?} cip={cip} par");
        }
    }
}

fn random(rng: &mut StdRng, n: usize) -> Vec<f32> {
    (0..n).map(|_| rng.gen_range(-4.0f32..4.0)).collect()
}

#[test]
fn ceil_mode_overhang_averages_real_frames_only() {
    // 259 frames, kernel = stride = 100, ceil mode: 3 windows.
    let s = pool_shape(1, 2, (1, 259), (1, 100), (1, 100), (0, 0), true);
    assert_eq!(s.w_out, 3);
    let x: Vec<f32> = (0..2 * 259).map(|i| (i % 259) as f32).collect();
    for cip in [false, true] {
        let out = run(&x, &s, PoolKind::Mean, cip, false);
        // The last window holds frames 200..259: mean 229.
        assert_eq!(out[2], 229.0, "cip={cip}");
        assert_eq!(out[5], 229.0, "cip={cip}");
        assert_eq!(out[0], 49.5);
    }
    check(&x, &s, "chatterbox");
}

#[test]
fn padding_with_and_without_count_include_pad() {
    let mut rng = StdRng::seed_from_u64(90);
    for ceil in [false, true] {
        let s = pool_shape(2, 3, (7, 7), (3, 3), (2, 2), (1, 1), ceil);
        let x = random(&mut rng, 2 * 3 * 49);
        check(&x, &s, &format!("3x3/2 pad 1 ceil={ceil}"));
        // A corner window of a 3x3 kernel with padding 1 holds 4 real
        // elements and 9 padded positions.
        let ones = vec![1.0f32; 2 * 3 * 49];
        assert_eq!(run(&ones, &s, PoolKind::Mean, true, false)[0], 4.0 / 9.0);
        assert_eq!(run(&ones, &s, PoolKind::Mean, false, false)[0], 1.0);
    }
}

#[test]
fn window_over_padding_only() {
    // Padding 2 with a 2-wide kernel: the first window sees no input.
    let s = Pool2dShape { n: 1, c: 1, h: 3, w: 3, h_out: 3, w_out: 3, kh: 2, kw: 2, sh: 2, sw: 2, ph: 2, pw: 2 };
    let x = vec![1.0f32; 9];
    assert_eq!(run(&x, &s, PoolKind::Max, false, false)[0], f32::NEG_INFINITY);
    assert_eq!(run(&x, &s, PoolKind::Mean, false, false)[0], 0.0);
    check(&x, &s, "padding only");
}

#[test]
fn max_propagates_nan_and_keeps_infinities() {
    let s = pool_shape(1, 1, (4, 4), (2, 2), (2, 2), (0, 0), false);
    let mut x = vec![0.0f32; 16];
    x[0] = f32::NAN;
    x[2] = f32::INFINITY;
    x[8] = f32::NEG_INFINITY;
    let out = run(&x, &s, PoolKind::Max, false, false);
    assert!(out[0].is_nan());
    assert_eq!(out[1], f32::INFINITY);
    assert_eq!(out[2], 0.0);
    check(&x, &s, "specials");
}

#[test]
fn variants_are_bit_identical_over_widths() {
    let mut rng = StdRng::seed_from_u64(91);
    for &w in WIDTHS {
        for (k, st, pad) in [(3, 1, 1), (2, 2, 0), (5, 3, 2)] {
            let s = pool_shape(1, 1, (5, w + 2 * pad.max(k)), (3, k), (1, st), (1, pad), true);
            let x = random(&mut rng, s.h * s.w);
            for kind in [PoolKind::Max, PoolKind::Mean] {
                for cip in [false, true] {
                    let mut reference = vec![0.0f32; s.h_out * s.w_out];
                    // SAFETY: one plane each.
                    unsafe { scalar::scalar_pool_plane_f32(x.as_ptr(), reference.as_mut_ptr(), &s, kind, cip) };
                    assert_eq!(bits(&reference), bits(&naive(&x, &s, kind, cip)));
                    check_variants(&reference, &variants(), same, &format!("w={w} k={k}"), |plane| {
                        let mut out = vec![0.0f32; s.h_out * s.w_out];
                        // SAFETY: as above.
                        unsafe { plane(x.as_ptr(), out.as_mut_ptr(), &s, kind, cip) };
                        out
                    });
                }
            }
        }
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(48))]

    #[test]
    fn random_shapes_match_naive(
        n in 1usize..3, c in 1usize..3, h in 1usize..10, w in 1usize..10, kh in 1usize..4, kw in 1usize..4,
        sh in 1usize..4, sw in 1usize..4, ph in 0usize..2, pw in 0usize..2, ceil in any::<bool>(), seed in any::<u64>(),
    ) {
        prop_assume!(kh <= h + 2 * ph && kw <= w + 2 * pw && ph < kh && pw < kw);
        let s = pool_shape(n, c, (h, w), (kh, kw), (sh, sw), (ph, pw), ceil);
        let mut rng = StdRng::seed_from_u64(seed);
        let x = random(&mut rng, n * c * h * w);
        check(&x, &s, "prop");
    }
}

#[test]
fn global_windows_wide_windows_and_strides_match_naive() {
    let mut rng = StdRng::seed_from_u64(93);
    let shapes = [
        // Global pooling (one window per plane), with and without padding.
        pool_shape(1, 3, (7, 7), (7, 7), (1, 1), (0, 0), false),
        pool_shape(2, 2, (5, 6), (6, 7), (1, 1), (1, 1), false),
        // A window wider than the column table (40 > 32).
        pool_shape(1, 2, (3, 50), (2, 40), (1, 5), (0, 3), true),
        // Strides 2 and 3 on the deinterleaved path, and a row too long for
        // it (2049 columns at stride 2).
        pool_shape(1, 2, (9, 112), (3, 3), (2, 2), (1, 1), false),
        pool_shape(1, 1, (8, 31), (3, 4), (2, 3), (1, 2), true),
        pool_shape(1, 1, (3, 2049), (2, 3), (2, 2), (0, 1), false),
    ];
    for s in shapes {
        let x = random(&mut rng, s.n * s.c * s.h * s.w);
        check(&x, &s, "global/wide/strided");
    }
}

/// Timing of the models' poolings (`cargo test --release -p rlx-runtime
/// pooling_timing -- --ignored --nocapture`); prints only.
#[test]
#[ignore]
fn pooling_timing() {
    let shapes = [
        ("LeNet max 2x2/2 6x28x28", pool_shape(1, 6, (28, 28), (2, 2), (2, 2), (0, 0), false)),
        ("ResNet max 3x3/2 64x112x112", pool_shape(1, 64, (112, 112), (3, 3), (2, 2), (1, 1), false)),
        ("global mean 1280x7x7", pool_shape(1, 1280, (7, 7), (7, 7), (1, 1), (0, 0), false)),
    ];
    let mut rng = StdRng::seed_from_u64(5);
    for (name, s) in shapes {
        let x = random(&mut rng, s.n * s.c * s.h * s.w);
        let mut out = vec![0.0f32; s.n * s.c * s.h_out * s.w_out];
        let kind = if name.contains("mean") { PoolKind::Mean } else { PoolKind::Max };
        let mut best = f64::MAX;
        for _ in 0..50 {
            let t = std::time::Instant::now();
            // SAFETY: buffers sized for the shape.
            unsafe { pool2d_f32(x.as_ptr(), out.as_mut_ptr(), &s, kind, false, false) };
            best = best.min(t.elapsed().as_secs_f64());
            std::hint::black_box(&out);
        }
        println!("{name:30} {:8.2} us", best * 1e6);
    }
}
