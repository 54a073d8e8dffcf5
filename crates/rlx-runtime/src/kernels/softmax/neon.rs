//! NEON row softmax: the AVX2 algorithm on 4 lanes (the same vector `exp`,
//! `kernels::vexp`). The tail
//! (`n % 4` elements) is handled with the scalar `exp`, since NEON has no
//! masked loads; its error bound is tighter, so the row bound still holds.

use std::arch::aarch64::*;

use super::scalar::normaliser;
use crate::kernels::vexp::exp_flushed;

/// `exp` of 4 lanes: the AVX2 `exp256`'s operations (`vexp::exp_flushed`).
#[inline]
#[target_feature(enable = "neon")]
pub(crate) fn exp128(x: float32x4_t) -> float32x4_t {
    // SAFETY: NEON is enabled here, the feature `float32x4_t` lanes need.
    unsafe { exp_flushed(x) }
}

/// Softmax of one row of `n` f32; same edge cases as the scalar reference.
///
/// # Safety
///
/// `src` must be valid for reads and `dst` for writes of `n` f32; they may
/// be the same pointer but must not otherwise overlap.
#[target_feature(enable = "neon")]
pub(crate) unsafe fn neon_softmax_row_f32(src: *const f32, dst: *mut f32, n: usize) {
    let full = n - n % 4;
    // `vmaxq_f32` propagates NaN, unlike `f32::max`; `vmaxnmq_f32` ignores
    // it, matching the reference (NaN still reaches the sum).
    let mut vmax = vdupq_n_f32(f32::NEG_INFINITY);
    let mut i = 0;
    while i < full {
        // SAFETY: `i + 4 <= n`.
        vmax = vmaxnmq_f32(vmax, unsafe { vld1q_f32(src.add(i)) });
        i += 4;
    }
    let mut max = vmaxnmvq_f32(vmax);
    for j in full..n {
        // SAFETY: `j < n`.
        max = max.max(unsafe { *src.add(j) });
    }
    let shift_s = if max == f32::NEG_INFINITY { 0.0 } else { max };
    let shift = vdupq_n_f32(shift_s);

    let mut vsum = vdupq_n_f32(0.0);
    let mut i = 0;
    while i < full {
        // SAFETY: `i + 4 <= n`; load before store, so `dst == src` is fine.
        unsafe {
            let e = exp128(vsubq_f32(vld1q_f32(src.add(i)), shift));
            vst1q_f32(dst.add(i), e);
            vsum = vaddq_f32(vsum, e);
        }
        i += 4;
    }
    let mut sum = vaddvq_f32(vsum);
    for j in full..n {
        // SAFETY: `j < n`.
        unsafe {
            let e = (*src.add(j) - shift_s).exp();
            *dst.add(j) = e;
            sum += e;
        }
    }
    let inv_s = normaliser(sum);
    let inv = vdupq_n_f32(inv_s);
    let mut i = 0;
    while i < full {
        // SAFETY: `i + 4 <= n`.
        unsafe { vst1q_f32(dst.add(i), vmulq_f32(vld1q_f32(dst.add(i)), inv)) };
        i += 4;
    }
    for j in full..n {
        // SAFETY: `j < n`.
        unsafe { *dst.add(j) *= inv_s };
    }
}
