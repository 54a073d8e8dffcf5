//! Rope: SIMD rows against the scalar spec, and the kernel against a naive
//! rotation written here. All comparisons are exact: every variant rounds
//! each product and then the sum, the same f32 operations as the naive
//! formula.

use rand::{Rng, SeedableRng};

use super::*;
use crate::kernels::test_support::{check_variants, identical, LENGTHS};

fn random(n: usize, seed: u64) -> Vec<f32> {
    let mut r = rand::rngs::StdRng::seed_from_u64(seed);
    (0..n).map(|_| r.gen_range(-2.0f32..2.0)).collect()
}

/// The documented rotation over `[batch, seq, heads, head_dim]`.
fn naive(x: &[f32], cos: &[f32], sin: &[f32], dims: [usize; 4], interleaved: bool) -> Vec<f32> {
    let [batch, seq, heads, hd] = dims;
    let half = hd / 2;
    let mut out = x.to_vec();
    for b in 0..batch {
        for s in 0..seq {
            for h in 0..heads {
                let base = ((b * seq + s) * heads + h) * hd;
                for i in 0..half {
                    let (p1, p2) = if interleaved { (2 * i, 2 * i + 1) } else { (i, i + half) };
                    let (x1, x2) = (x[base + p1], x[base + p2]);
                    let (c, sn) = (cos[s * half + i], sin[s * half + i]);
                    out[base + p1] = x1 * c - x2 * sn;
                    out[base + p2] = x2 * c + x1 * sn;
                }
            }
        }
    }
    out
}

fn variants() -> Vec<(&'static str, RopeOps)> {
    ROPE_OPS.supported()
}

#[test]
fn every_variant_matches_the_naive_rotation() {
    // Head dims whose halves (or pair counts) hit every SIMD tail: the
    // awkward lengths as `head_dim / 2`, plus odd head dims.
    let variants = variants();
    for &half in &LENGTHS {
        for hd in [2 * half, 2 * half + 1] {
            if hd == 0 {
                continue;
            }
            let dims = [2, 3, 2, hd];
            let x = random(dims.iter().product(), hd as u64);
            let cos = random(3 * half, hd as u64 + 1);
            let sin = random(3 * half, hd as u64 + 2);
            for interleaved in [false, true] {
                let want = naive(&x, &cos, &sin, dims, interleaved);
                let what = format!("head_dim {hd} interleaved {interleaved}");
                check_variants(&want, &variants, identical, &what, |ops| {
                    let mut got = vec![f32::NAN; x.len()];
                    // SAFETY: buffers sized by the dims.
                    unsafe {
                        rope_with(
                            &ops,
                            x.as_ptr(),
                            cos.as_ptr(),
                            sin.as_ptr(),
                            got.as_mut_ptr(),
                            2,
                            3,
                            2,
                            hd,
                            interleaved,
                            false,
                        )
                    };
                    got
                });
            }
        }
    }
}

#[test]
fn in_place_parallel_and_non_finite() {
    let dims = [2, 64, 8, 64];
    let (batch, seq, heads, hd) = (dims[0], dims[1], dims[2], dims[3]);
    let mut x = random(dims.iter().product(), 1);
    x[5] = f32::NAN;
    x[100] = f32::INFINITY;
    x[200] = -0.0;
    let cos = random(seq * hd / 2, 2);
    let sin = random(seq * hd / 2, 3);
    for interleaved in [false, true] {
        let want = naive(&x, &cos, &sin, dims, interleaved);
        let same =
            |a: &[f32]| a.iter().zip(&want).all(|(p, q)| p.to_bits() == q.to_bits() || (p.is_nan() && q.is_nan()));
        let mut par = vec![0.0; x.len()];
        let mut inplace = x.clone();
        let p = inplace.as_mut_ptr();
        // SAFETY: buffers sized by the dims; `out == x` is allowed.
        unsafe {
            rope_f32(
                x.as_ptr(),
                cos.as_ptr(),
                sin.as_ptr(),
                par.as_mut_ptr(),
                batch,
                seq,
                heads,
                hd,
                interleaved,
                true,
            );
            rope_f32(p, cos.as_ptr(), sin.as_ptr(), p, batch, seq, heads, hd, interleaved, false);
        }
        assert!(same(&par), "parallel, interleaved {interleaved}");
        assert!(same(&inplace), "in place, interleaved {interleaved}");
    }
}
