//! Every variant against `pool2d_f32` on NCHW, bit for bit per real lane;
//! padded input lanes hold NaN and must not reach a real lane.

use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};

use super::super::pool2d_f32;
use super::*;
use crate::kernels::test_support::{check_variants, same};

fn to_blocked(x: &[f32], n: usize, c: usize, hw: usize, fill: f32) -> Vec<f32> {
    let cb = channel_blocks(c);
    let mut out = vec![fill; n * cb * hw * L];
    for img in 0..n {
        for ch in 0..c {
            for p in 0..hw {
                out[((img * cb + ch / L) * hw + p) * L + ch % L] = x[(img * c + ch) * hw + p];
            }
        }
    }
    out
}

fn to_nchw(x: &[f32], n: usize, c: usize, hw: usize) -> Vec<f32> {
    let cb = channel_blocks(c);
    let mut out = vec![0.0; n * c * hw];
    for img in 0..n {
        for ch in 0..c {
            for p in 0..hw {
                out[(img * c + ch) * hw + p] = x[((img * cb + ch / L) * hw + p) * L + ch % L];
            }
        }
    }
    out
}

/// A shape whose outputs reach `pe` past the input (padding, or a ceil-mode
/// overhang when `pe > p`).
fn shape(n: usize, c: usize, (h, w): (usize, usize), k: usize, st: usize, (p, pe): (usize, usize)) -> Pool2dShape {
    let out = |len: usize| if len + p + pe >= k { (len + p + pe - k) / st + 1 } else { 0 };
    Pool2dShape { n, c, h, w, h_out: out(h), w_out: out(w), kh: k, kw: k, sh: st, sw: st, ph: p, pw: p }
}

fn check(s: &Pool2dShape, kind: PoolKind, cip: bool, seed: u64) {
    let mut rng = StdRng::seed_from_u64(seed);
    let mut x: Vec<f32> = (0..s.n * s.c * s.h * s.w).map(|_| rng.gen_range(-4.0f32..4.0)).collect();
    if x.len() > 7 {
        // Signed zeros and a NaN: max_nan's order shows.
        x[1] = -0.0;
        x[2] = 0.0;
        x[7] = f32::NAN;
    }
    let plane_out = s.h_out * s.w_out;
    let mut want = vec![f32::NAN; s.n * s.c * plane_out];
    // SAFETY: buffers sized for the shape.
    unsafe { pool2d_f32(x.as_ptr(), want.as_mut_ptr(), s, kind, cip, false) };
    let xb = to_blocked(&x, s.n, s.c, s.h * s.w, f32::NAN);
    for par in [false, true] {
        check_variants(&want, &variants(), same, &format!("par {par} {s:?} {kind:?} cip {cip}"), |k| {
            let mut got = vec![f32::NAN; s.n * channel_blocks(s.c) * plane_out * L];
            // SAFETY: buffers sized for the shape; the variant runs here.
            unsafe { pool_with(k, xb.as_ptr(), got.as_mut_ptr(), s, kind, cip, par) };
            to_nchw(&got, s.n, s.c, plane_out)
        });
    }
}

#[test]
fn awkward_shapes_both_kinds_and_counts() {
    let mut seed = 0;
    for c in [1, 3, 16, 17, 40, 33] {
        for w in [1, 5, 7, 13, 31] {
            for (k, st) in [(3, 1), (3, 2), (5, 1), (5, 2), (7, 2), (2, 2)] {
                seed += 1;
                let p = (seed as usize) % 3.min(k);
                let pe = (seed as usize / 3) % 4;
                let s = shape(1 + seed as usize % 2, c, (6, w), k, st, (p.min(k / 2), pe));
                for kind in [PoolKind::Max, PoolKind::Mean] {
                    check(&s, kind, seed % 2 == 0, seed);
                }
            }
        }
    }
}

#[test]
fn global_pooling_and_resnet_max_pool() {
    for (c, hw) in [(40, 7), (17, 1), (80, 3), (33, 5)] {
        let s = Pool2dShape { n: 2, c, h: hw, w: hw, h_out: 1, w_out: 1, kh: hw, kw: hw, sh: 1, sw: 1, ph: 0, pw: 0 };
        for kind in [PoolKind::Max, PoolKind::Mean] {
            check(&s, kind, false, c as u64);
        }
    }
    let s = shape(1, 64, (28, 28), 3, 2, (1, 1));
    check(&s, PoolKind::Max, false, 5);
    // Every window inside (LeNet's 2x2/2 pools): the fast path.
    for (i, s) in [shape(1, 6, (28, 28), 2, 2, (0, 0)), shape(2, 17, (9, 11), 3, 2, (0, 0))].iter().enumerate() {
        for kind in [PoolKind::Max, PoolKind::Mean] {
            check(s, kind, i % 2 == 0, 7 + i as u64);
        }
    }
    // Ceil mode with count_include_pad: the overhang is not counted.
    let s = shape(2, 20, (8, 9), 3, 2, (1, 3));
    check(&s, PoolKind::Mean, true, 6);
}

#[test]
fn empty_outputs_write_nothing() {
    let s = Pool2dShape { h_out: 0, ..shape(1, 17, (5, 5), 3, 1, (1, 1)) };
    let mut out = [7.0f32; 4];
    // SAFETY: nothing is read or written for an empty output.
    unsafe { pool2d_blocked_f32([0.0f32; 4].as_ptr(), out.as_mut_ptr(), &s, PoolKind::Max, false, true) };
    assert_eq!(out, [7.0; 4]);
}

/// Blocked vs NCHW pooling, single thread (`cargo test --release -p
/// rlx-runtime pool_blocked_timing -- --ignored --nocapture`); prints only.
#[test]
#[ignore]
fn pool_blocked_timing() {
    let best_of = |f: &mut dyn FnMut()| {
        let mut best = f64::MAX;
        for _ in 0..30 {
            let t = std::time::Instant::now();
            f();
            best = best.min(t.elapsed().as_secs_f64());
        }
        best * 1e6
    };
    let global = |c: usize, hw: usize| Pool2dShape {
        n: 1,
        c,
        h: hw,
        w: hw,
        h_out: 1,
        w_out: 1,
        kh: hw,
        kw: hw,
        sh: 1,
        sw: 1,
        ph: 0,
        pw: 0,
    };
    println!("{:<28} {:>10} {:>10} {:>6}", "pool", "nchw us", "blocked us", "x");
    for (name, s, kind) in [
        ("max 3x3 s2 p1 64ch 112->56", shape(1, 64, (112, 112), 3, 2, (1, 0)), PoolKind::Max),
        ("global mean 1280ch 7x7", global(1280, 7), PoolKind::Mean),
        ("global mean 512ch 7x7", global(512, 7), PoolKind::Mean),
    ] {
        let x: Vec<f32> = (0..s.c * s.h * s.w).map(|i| (i % 97) as f32 * 0.25).collect();
        let xb = to_blocked(&x, 1, s.c, s.h * s.w, 0.0);
        let mut out = vec![0.0f32; s.c * s.h_out * s.w_out];
        let mut outb = vec![0.0f32; channel_blocks(s.c) * s.h_out * s.w_out * L];
        // SAFETY: buffers sized for the shape.
        let t_nchw = best_of(&mut || unsafe { pool2d_f32(x.as_ptr(), out.as_mut_ptr(), &s, kind, false, false) });
        // SAFETY: as above.
        let t_blocked =
            best_of(&mut || unsafe { pool2d_blocked_f32(xb.as_ptr(), outb.as_mut_ptr(), &s, kind, false, false) });
        println!("{name:<28} {t_nchw:>10.1} {t_blocked:>10.1} {:>6.2}", t_nchw / t_blocked);
    }
}
