//! aarch64 NEON variant: a block is four q registers; 6 outputs (24
//! accumulators) in registers. `vfmaq_f32(acc, w, x)` rounds once per
//! lane, as the reference's `mul_add`, so every lane has its bits.

use std::arch::aarch64::*;

use super::{run_tasks, Job, Lanes16};

/// NEON: lanes 0..4, 4..8, 8..12, 12..16.
#[derive(Clone, Copy)]
pub(super) struct Neon([float32x4_t; 4]);

impl Lanes16 for Neon {
    const R: usize = 6;

    #[target_feature(enable = "neon")]
    #[inline]
    unsafe fn zero() -> Self {
        Neon([vdupq_n_f32(0.0); 4])
    }

    #[target_feature(enable = "neon")]
    #[inline]
    unsafe fn load(p: *const f32) -> Self {
        // SAFETY: 16 readable f32 (the caller's contract).
        unsafe { Neon([vld1q_f32(p), vld1q_f32(p.add(4)), vld1q_f32(p.add(8)), vld1q_f32(p.add(12))]) }
    }

    #[target_feature(enable = "neon")]
    #[inline]
    unsafe fn store(self, p: *mut f32) {
        // SAFETY: 16 writable f32 (the caller's contract).
        unsafe {
            for (i, v) in self.0.into_iter().enumerate() {
                vst1q_f32(p.add(4 * i), v);
            }
        }
    }

    #[target_feature(enable = "neon")]
    #[inline]
    unsafe fn fma(w: Self, x: Self, acc: Self) -> Self {
        Neon(std::array::from_fn(|i| vfmaq_f32(acc.0[i], w.0[i], x.0[i])))
    }

    #[target_feature(enable = "neon")]
    #[inline]
    unsafe fn add(self, b: Self) -> Self {
        Neon(std::array::from_fn(|i| vaddq_f32(self.0[i], b.0[i])))
    }

    #[target_feature(enable = "neon")]
    #[inline]
    unsafe fn clamp(self, lo: f32, hi: f32) -> Self {
        // `math::clip` by compare and select: `x < lo ? lo : x`, then
        // `t > hi ? hi : t` (NEON's max/min differ on NaN).
        let (lo, hi) = (vdupq_n_f32(lo), vdupq_n_f32(hi));
        Neon(self.0.map(|v| {
            let t = vbslq_f32(vcltq_f32(v, lo), lo, v);
            vbslq_f32(vcgtq_f32(t, hi), hi, t)
        }))
    }
}

/// See [`super::TasksFn`].
///
/// # Safety
///
/// As [`run_tasks`]; the CPU must support NEON.
#[target_feature(enable = "neon")]
pub(super) unsafe fn neon_tasks(job: &Job<'_>, start: usize, len: usize) {
    // SAFETY: forwarded contract.
    unsafe { run_tasks::<Neon, false>(job, start, len) }
}
