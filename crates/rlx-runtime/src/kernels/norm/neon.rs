//! NEON row primitives of the norm kernels.
//!
//! Each reproduces the scalar spec bit for bit: the spec's 32 lanes are
//! eight 4-lane accumulators, folded in the spec's order (`lo` holds lanes
//! 0-3 of each 8-group, `hi` lanes 4-7); leftover 8-blocks go into the
//! folded pair, then the spec's tree and a scalar tail. No fused
//! multiply-add: products are rounded before they are added.

use std::arch::aarch64::*;

/// `(t0 + t2) + (t1 + t3)` where `t[k] = lo[k] + hi[k]`.
#[inline]
#[target_feature(enable = "neon")]
fn hsum(lo: float32x4_t, hi: float32x4_t) -> f32 {
    let t = vaddq_f32(lo, hi);
    let u = vadd_f32(vget_low_f32(t), vget_high_f32(t));
    vget_lane_f32::<0>(u) + vget_lane_f32::<1>(u)
}

/// The spec's ordered sum of `f(x[i])`, `f` given per vector and per lane.
///
/// # Safety
/// NEON available; `x` readable for `n` f32.
#[inline(always)]
unsafe fn reduce(x: *const f32, n: usize, fv: impl Fn(float32x4_t) -> float32x4_t, fs: impl Fn(f32) -> f32) -> f32 {
    // SAFETY: every load is below `n`; the caller guarantees NEON.
    unsafe {
        let mut a = [vdupq_n_f32(0.0); 8];
        let mut i = 0;
        while i + 32 <= n {
            for (k, acc) in a.iter_mut().enumerate() {
                *acc = vaddq_f32(*acc, fv(vld1q_f32(x.add(i + 4 * k))));
            }
            i += 32;
        }
        // Accumulator k holds spec lanes 4k..4k+4: even k are the low
        // halves of the 8-lane groups, odd k the high halves.
        let mut lo = vaddq_f32(vaddq_f32(a[0], a[2]), vaddq_f32(a[4], a[6]));
        let mut hi = vaddq_f32(vaddq_f32(a[1], a[3]), vaddq_f32(a[5], a[7]));
        while i + 8 <= n {
            lo = vaddq_f32(lo, fv(vld1q_f32(x.add(i))));
            hi = vaddq_f32(hi, fv(vld1q_f32(x.add(i + 4))));
            i += 8;
        }
        let mut s = hsum(lo, hi);
        while i < n {
            s += fs(*x.add(i));
            i += 1;
        }
        s
    }
}

/// NEON `sum(x[i])`, bit-identical to the scalar spec.
///
/// # Safety
/// NEON available; `x` readable for `n` f32.
#[target_feature(enable = "neon")]
pub(super) unsafe fn neon_sum(x: *const f32, n: usize) -> f32 {
    // SAFETY: forwarded contract.
    unsafe { reduce(x, n, |v| v, |v| v) }
}

/// NEON `sum((x[i] - mean)^2)`, bit-identical to the scalar spec.
///
/// # Safety
/// NEON available; `x` readable for `n` f32.
#[target_feature(enable = "neon")]
pub(super) unsafe fn neon_sum_sq_dev(x: *const f32, n: usize, mean: f32) -> f32 {
    let m = vdupq_n_f32(mean);
    // SAFETY: forwarded contract.
    unsafe {
        reduce(
            x,
            n,
            |v| {
                let d = vsubq_f32(v, m);
                vmulq_f32(d, d)
            },
            |v| {
                let d = v - mean;
                d * d
            },
        )
    }
}

/// NEON `out[i] = (x[i] + res[i]) + bias[i]`.
///
/// # Safety
/// NEON available; inputs readable, `out` writable for `n` f32; `out` may
/// equal `x` or `res` exactly.
#[target_feature(enable = "neon")]
pub(super) unsafe fn neon_add(x: *const f32, res: *const f32, bias: Option<*const f32>, out: *mut f32, n: usize) {
    let mut i = 0;
    // SAFETY: every access is below `n`; each block is loaded before the
    // store that may alias it.
    unsafe {
        match bias {
            Some(bias) => {
                while i + 4 <= n {
                    let v = vaddq_f32(vld1q_f32(x.add(i)), vld1q_f32(res.add(i)));
                    vst1q_f32(out.add(i), vaddq_f32(v, vld1q_f32(bias.add(i))));
                    i += 4;
                }
                while i < n {
                    *out.add(i) = (*x.add(i) + *res.add(i)) + *bias.add(i);
                    i += 1;
                }
            }
            None => {
                while i + 4 <= n {
                    vst1q_f32(out.add(i), vaddq_f32(vld1q_f32(x.add(i)), vld1q_f32(res.add(i))));
                    i += 4;
                }
                while i < n {
                    *out.add(i) = *x.add(i) + *res.add(i);
                    i += 1;
                }
            }
        }
    }
}

/// NEON `out[i] = ((x[i] - mean) * scale) * g[i] + b[i]`.
///
/// # Safety
/// NEON available; inputs readable, `out` writable for `n` f32; `out` may
/// equal `x` exactly.
#[target_feature(enable = "neon")]
pub(super) unsafe fn neon_normalize(
    x: *const f32,
    mean: f32,
    scale: f32,
    g: *const f32,
    b: Option<*const f32>,
    out: *mut f32,
    n: usize,
) {
    let (m, s) = (vdupq_n_f32(mean), vdupq_n_f32(scale));
    let mut i = 0;
    // SAFETY: every access is below `n`; each block is loaded before the
    // store that may alias it.
    unsafe {
        let scaled = |i: usize| vmulq_f32(vmulq_f32(vsubq_f32(vld1q_f32(x.add(i)), m), s), vld1q_f32(g.add(i)));
        match b {
            Some(b) => {
                while i + 4 <= n {
                    vst1q_f32(out.add(i), vaddq_f32(scaled(i), vld1q_f32(b.add(i))));
                    i += 4;
                }
                while i < n {
                    *out.add(i) = ((*x.add(i) - mean) * scale) * *g.add(i) + *b.add(i);
                    i += 1;
                }
            }
            None => {
                while i + 4 <= n {
                    vst1q_f32(out.add(i), scaled(i));
                    i += 4;
                }
                while i < n {
                    *out.add(i) = ((*x.add(i) - mean) * scale) * *g.add(i);
                    i += 1;
                }
            }
        }
    }
}
