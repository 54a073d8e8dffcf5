//! The reference of `Requantize`: the composition's steps one element at
//! a time.

use crate::kernels::quant::IntElem;

/// The [`super::requantize`] contract one element at a time, with no feature
/// dispatch and no threads.
///
/// # Safety
/// As [`super::requantize`].
#[allow(clippy::too_many_arguments)]
pub unsafe fn requantize_reference<Q: IntElem>(
    acc: *const i32,
    bias: *const i32,
    scale: *const f32,
    zero: *const Q,
    out: *mut Q,
    outer: usize,
    channels: usize,
    inner: usize,
    scale_len: usize,
) {
    // SAFETY: every index is inside the caller's extents.
    unsafe {
        let z = if zero.is_null() { 0.0 } else { (*zero).to_i32() as f32 };
        for i in 0..outer * channels * inner {
            let c = i / inner % channels;
            let bias = if bias.is_null() { 0 } else { *bias.add(c) };
            let scale = *scale.add(if scale_len == 1 { 0 } else { c });
            // The composition's steps, one at a time.
            let sum = (*acc.add(i)).wrapping_add(bias);
            let shifted = (sum as f32 * scale).round_ties_even() + z;
            let saturated = if shifted < Q::MIN {
                Q::MIN
            } else if shifted > Q::MAX {
                Q::MAX
            } else {
                shifted
            };
            *out.add(i) = Q::from_i32(saturated as i32);
        }
    }
}
