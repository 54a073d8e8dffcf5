//! The norm row primitives, written once over [`Lanes`] for the AVX2 (8
//! lanes) and NEON (4 lanes) entries in `avx2.rs` and `neon.rs`.
//!
//! Each reproduces the scalar spec bit for bit: sums keep the spec's 32
//! lanes as `32 / N` accumulators, fold them in the spec's order into one
//! 8-lane group (`8 / N` vectors), take leftover 8-blocks into it, reduce
//! it with the spec's tree ([`Spec8::hsum8`]) and add the tail one by one.
//! No fused multiply-add: products are rounded before they are added, as
//! in the scalar code. Loads and stores are unaligned; tails are scalar,
//! so nothing reads past `n`.

#[cfg(target_arch = "aarch64")]
use std::arch::aarch64::*;
#[cfg(target_arch = "x86_64")]
use std::arch::x86_64::*;

use crate::kernels::lanes::Lanes;

/// A width whose vectors tile the spec's 8-lane groups.
pub(super) trait Spec8: Lanes {
    /// `(t0 + t2) + (t1 + t3)` where `t[k] = v[k] + v[k + 4]` over the 8
    /// lanes `parts` hold (`8 / N` vectors, lowest lanes first).
    ///
    /// # Safety
    /// As [`Lanes::splat`]; `parts` holds `8 / N` vectors.
    unsafe fn hsum8(parts: &[Self]) -> f32;
}

#[cfg(target_arch = "x86_64")]
impl Spec8 for __m256 {
    #[inline(always)]
    unsafe fn hsum8(parts: &[Self]) -> f32 {
        // SAFETY: AVX2 enabled (the trait's contract).
        unsafe {
            let v = parts[0];
            let t = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps::<1>(v));
            let u = _mm_add_ps(t, _mm_movehl_ps(t, t));
            _mm_cvtss_f32(_mm_add_ss(u, _mm_shuffle_ps::<1>(u, u)))
        }
    }
}

#[cfg(target_arch = "aarch64")]
impl Spec8 for float32x4_t {
    #[inline(always)]
    unsafe fn hsum8(parts: &[Self]) -> f32 {
        // SAFETY: NEON enabled (the trait's contract).
        unsafe {
            let t = vaddq_f32(parts[0], parts[1]);
            let u = vadd_f32(vget_low_f32(t), vget_high_f32(t));
            vget_lane_f32::<0>(u) + vget_lane_f32::<1>(u)
        }
    }
}

/// `x`, or `(x - mean)^2` when `SQ`, per vector. A const parameter, not a
/// closure: a closure does not take the caller's target features, so the
/// intrinsics in it might not be inlined.
///
/// # Safety
/// `V`'s target features are enabled.
#[inline(always)]
unsafe fn term<V: Lanes, const SQ: bool>(v: V, mean: V) -> V {
    // SAFETY: `V`'s features are the caller's.
    unsafe {
        if SQ {
            let d = v.sub(mean);
            d.mul(d)
        } else {
            v
        }
    }
}

/// [`term`] of one element.
#[inline(always)]
fn term1<const SQ: bool>(v: f32, mean: f32) -> f32 {
    if SQ {
        let d = v - mean;
        d * d
    } else {
        v
    }
}

/// The spec's ordered sum of `term(x[i])`.
///
/// # Safety
/// `V`'s target features are enabled; `x` readable for `n` f32.
#[inline(always)]
unsafe fn reduce<V: Spec8, const SQ: bool>(x: *const f32, n: usize, mean: f32) -> f32 {
    // Vectors per 8-lane group, and accumulators for the spec's 32 lanes:
    // accumulator `k` holds lanes `k N..(k + 1) N`, part `k % g` of group
    // `k / g`.
    let g = 8 / V::N;
    // SAFETY: every load is below `n`; `V`'s features are the caller's.
    unsafe {
        let m = V::splat(mean);
        let mut a = [V::splat(0.0); 8];
        let mut i = 0;
        while i + 32 <= n {
            for (k, acc) in a[..4 * g].iter_mut().enumerate() {
                *acc = acc.add(term::<V, SQ>(V::load(x.add(i + V::N * k)), m));
            }
            i += 32;
        }
        let mut parts = [V::splat(0.0); 2];
        for (j, part) in parts[..g].iter_mut().enumerate() {
            *part = a[j].add(a[g + j]).add(a[2 * g + j].add(a[3 * g + j]));
        }
        while i + 8 <= n {
            for (j, part) in parts[..g].iter_mut().enumerate() {
                *part = part.add(term::<V, SQ>(V::load(x.add(i + V::N * j)), m));
            }
            i += 8;
        }
        let mut s = V::hsum8(&parts[..g]);
        while i < n {
            s += term1::<SQ>(*x.add(i), mean);
            i += 1;
        }
        s
    }
}

/// `sum(x[i])`, bit-identical to the scalar spec.
///
/// # Safety
/// `V`'s target features are enabled; `x` readable for `n` f32.
#[inline(always)]
pub(super) unsafe fn sum<V: Spec8>(x: *const f32, n: usize) -> f32 {
    // SAFETY: forwarded contract.
    unsafe { reduce::<V, false>(x, n, 0.0) }
}

/// `sum((x[i] - mean)^2)`, bit-identical to the scalar spec.
///
/// # Safety
/// `V`'s target features are enabled; `x` readable for `n` f32.
#[inline(always)]
pub(super) unsafe fn sum_sq_dev<V: Spec8>(x: *const f32, n: usize, mean: f32) -> f32 {
    // SAFETY: forwarded contract.
    unsafe { reduce::<V, true>(x, n, mean) }
}

/// `out[i] = (x[i] + res[i]) + bias[i]`.
///
/// # Safety
/// `V`'s target features are enabled; inputs readable, `out` writable for
/// `n` f32; `out` may equal `x` or `res` exactly.
#[inline(always)]
pub(super) unsafe fn add<V: Lanes>(x: *const f32, res: *const f32, bias: Option<*const f32>, out: *mut f32, n: usize) {
    let mut i = 0;
    // SAFETY: every access is below `n`; each block is loaded before the
    // store that may alias it.
    unsafe {
        match bias {
            Some(bias) => {
                while i + V::N <= n {
                    let v = V::load(x.add(i)).add(V::load(res.add(i)));
                    v.add(V::load(bias.add(i))).store(out.add(i));
                    i += V::N;
                }
                while i < n {
                    *out.add(i) = (*x.add(i) + *res.add(i)) + *bias.add(i);
                    i += 1;
                }
            }
            None => {
                while i + V::N <= n {
                    V::load(x.add(i)).add(V::load(res.add(i))).store(out.add(i));
                    i += V::N;
                }
                while i < n {
                    *out.add(i) = *x.add(i) + *res.add(i);
                    i += 1;
                }
            }
        }
    }
}

/// `out[i] = ((x[i] - mean) * scale) * g[i] + b[i]`.
///
/// # Safety
/// `V`'s target features are enabled; inputs readable, `out` writable for
/// `n` f32; `out` may equal `x` exactly.
#[inline(always)]
pub(super) unsafe fn normalize<V: Lanes>(
    x: *const f32,
    mean: f32,
    scale: f32,
    g: *const f32,
    b: Option<*const f32>,
    out: *mut f32,
    n: usize,
) {
    let mut i = 0;
    // SAFETY: every access is below `n`; each block is loaded before the
    // store that may alias it; `V`'s features are the caller's.
    unsafe {
        let (m, s) = (V::splat(mean), V::splat(scale));
        match b {
            Some(b) => {
                while i + V::N <= n {
                    V::load(x.add(i)).sub(m).mul(s).mul(V::load(g.add(i))).add(V::load(b.add(i))).store(out.add(i));
                    i += V::N;
                }
                while i < n {
                    *out.add(i) = ((*x.add(i) - mean) * scale) * *g.add(i) + *b.add(i);
                    i += 1;
                }
            }
            None => {
                while i + V::N <= n {
                    V::load(x.add(i)).sub(m).mul(s).mul(V::load(g.add(i))).store(out.add(i));
                    i += V::N;
                }
                while i < n {
                    *out.add(i) = ((*x.add(i) - mean) * scale) * *g.add(i);
                    i += 1;
                }
            }
        }
    }
}
