//! NEON dot and axpy: four 4-lane FMA accumulators over 16-element blocks,
//! one 4-element step at a time into the first, a scalar tail; `axpy` is
//! one FMA per element (the tail uses `mul_add`), equal to the scalar
//! reference bit for bit.

use std::arch::aarch64::*;

/// Dot product of `n` f32.
///
/// # Safety
///
/// `a` and `b` must be valid for reads of `n` f32.
#[target_feature(enable = "neon")]
pub(crate) unsafe fn neon_dot_f32(a: *const f32, b: *const f32, n: usize) -> f32 {
    let mut acc = [vdupq_n_f32(0.0); 4];
    let mut i = 0;
    while i + 16 <= n {
        for (j, acc) in acc.iter_mut().enumerate() {
            // SAFETY: `i + 4 * j + 4 <= n`.
            *acc = unsafe { vfmaq_f32(*acc, vld1q_f32(a.add(i + 4 * j)), vld1q_f32(b.add(i + 4 * j))) };
        }
        i += 16;
    }
    while i + 4 <= n {
        // SAFETY: `i + 4 <= n`.
        acc[0] = unsafe { vfmaq_f32(acc[0], vld1q_f32(a.add(i)), vld1q_f32(b.add(i))) };
        i += 4;
    }
    let mut s = vaddvq_f32(vaddq_f32(vaddq_f32(acc[0], acc[1]), vaddq_f32(acc[2], acc[3])));
    while i < n {
        // SAFETY: `i < n`.
        s += unsafe { *a.add(i) * *b.add(i) };
        i += 1;
    }
    s
}

/// `y[i] = alpha * x[i] + y[i]` over `n` f32, fused.
///
/// # Safety
///
/// `x` must be valid for reads and `y` for reads and writes of `n` f32;
/// they must not overlap.
#[target_feature(enable = "neon")]
pub(crate) unsafe fn neon_axpy_f32(alpha: f32, x: *const f32, y: *mut f32, n: usize) {
    let a = vdupq_n_f32(alpha);
    let mut i = 0;
    while i + 4 <= n {
        // SAFETY: `i + 4 <= n`.
        unsafe { vst1q_f32(y.add(i), vfmaq_f32(vld1q_f32(y.add(i)), a, vld1q_f32(x.add(i)))) };
        i += 4;
    }
    while i < n {
        // SAFETY: `i < n`.
        unsafe { *y.add(i) = alpha.mul_add(*x.add(i), *y.add(i)) };
        i += 1;
    }
}
