//! aarch64 NEON variant: blocks of eight 4-lane accumulators.
//!
//! Band: per block of outputs, accumulators at +0, then per tap one load
//! and one `vfmaq_n_f32` (a fused multiply-add per lane) per vector, in
//! tap order; then the bias is added and the block stored. The tail runs
//! one vector at a time up to `len` rounded up to 4 (the caller's buffers
//! have room for that). Each lane takes the scalar reference's operations
//! in its order, so the results are bit-identical to it. Copies, zeroing,
//! `split2` and `gather2` (stride-2 columns, `vld2q_f32`) end one by one
//! so they touch nothing past their ranges.

use std::arch::aarch64::*;

use super::{run_units, Isa, Job, Tap};

/// Vectors per block.
const B: usize = 8;

/// NEON.
pub(super) struct Neon;

impl Isa for Neon {
    #[target_feature(enable = "neon")]
    #[inline]
    unsafe fn band(src: *const f32, taps: &[Tap], acc: *mut f32, len: usize, bias: Option<f32>) {
        let n = len.next_multiple_of(4);
        let mut f = 0;
        // SAFETY: blocks stay below `n`, which the caller's extents cover.
        unsafe {
            while f + 4 * B <= n {
                block::<B>(src.add(f), taps, acc.add(f), bias);
                f += 4 * B;
            }
            while f < n {
                block::<1>(src.add(f), taps, acc.add(f), bias);
                f += 4;
            }
        }
    }

    #[target_feature(enable = "neon")]
    #[inline]
    unsafe fn copy(src: *const f32, dst: *mut f32, n: usize) {
        let mut i = 0;
        // SAFETY: full vectors below `n`, then one by one.
        unsafe {
            while i + 4 <= n {
                vst1q_f32(dst.add(i), vld1q_f32(src.add(i)));
                i += 4;
            }
            while i < n {
                *dst.add(i) = *src.add(i);
                i += 1;
            }
        }
    }

    #[target_feature(enable = "neon")]
    #[inline]
    unsafe fn zero(dst: *mut f32, n: usize) {
        let mut i = 0;
        // SAFETY: full vectors below `n`, then one by one.
        unsafe {
            while i + 4 <= n {
                vst1q_f32(dst.add(i), vdupq_n_f32(0.0));
                i += 4;
            }
            while i < n {
                *dst.add(i) = 0.0;
                i += 1;
            }
        }
    }

    #[target_feature(enable = "neon")]
    #[inline]
    unsafe fn split2(src: *const f32, even: *mut f32, odd: *mut f32, n: usize) {
        let mut i = 0;
        // SAFETY: a full step reads `src[2i..2i + 8]` and writes four of
        // each output; the rest one by one.
        unsafe {
            while i + 4 <= n {
                let v = vld2q_f32(src.add(2 * i));
                vst1q_f32(even.add(i), v.0);
                vst1q_f32(odd.add(i), v.1);
                i += 4;
            }
            while i < n {
                *even.add(i) = *src.add(2 * i);
                *odd.add(i) = *src.add(2 * i + 1);
                i += 1;
            }
        }
    }

    #[target_feature(enable = "neon")]
    #[inline]
    unsafe fn gather2(src: *const f32, dst: *mut f32, n: usize) {
        let mut i = 0;
        // SAFETY: a full step reads `src[2i..2i + 8]`, inside `2n - 1`
        // while `i + 5 <= n`; the rest one by one.
        unsafe {
            while i + 5 <= n {
                vst1q_f32(dst.add(i), vld2q_f32(src.add(2 * i)).0);
                i += 4;
            }
            while i < n {
                *dst.add(i) = *src.add(2 * i);
                i += 1;
            }
        }
    }
}

/// `V` vectors of outputs.
///
/// # Safety
///
/// As [`Isa::band`] for `4 * V` outputs; the CPU supports NEON.
#[target_feature(enable = "neon")]
#[inline]
unsafe fn block<const V: usize>(src: *const f32, taps: &[Tap], acc: *mut f32, bias: Option<f32>) {
    let mut v = [vdupq_n_f32(0.0); V];
    // SAFETY: `4 * V` inputs per tap and outputs: the caller's extents.
    unsafe {
        for t in taps {
            let x = src.add(t.off);
            for (j, v) in v.iter_mut().enumerate() {
                *v = vfmaq_n_f32(*v, vld1q_f32(x.add(4 * j)), t.w);
            }
        }
        if let Some(b) = bias {
            let b = vdupq_n_f32(b);
            for v in &mut v {
                *v = vaddq_f32(*v, b);
            }
        }
        for (j, v) in v.iter().enumerate() {
            vst1q_f32(acc.add(4 * j), *v);
        }
    }
}

/// See [`super::UnitsFn`].
///
/// # Safety
///
/// As [`run_units`]; the CPU must support NEON.
#[target_feature(enable = "neon")]
pub(super) unsafe fn neon_depthwise_units(job: &Job<'_>, start: usize, len: usize) {
    // SAFETY: forwarded contract.
    unsafe { run_units::<Neon>(job, start, len) }
}
