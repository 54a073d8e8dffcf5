//! The reference of `DynamicQuantize`: the function body's steps, one
//! element at a time.

use super::{quantize, scale_and_zero};
use crate::kernels::reduce::scalar::{max_nan, min_nan};

/// The [`super::dynamic_quantize`] contract one element at a time, straight from
/// the function body (a serial min and max, then each element).
///
/// # Safety
/// As [`super::dynamic_quantize`].
pub unsafe fn dynamic_quantize_reference(x: *const f32, y: *mut u8, scale: *mut f32, zero: *mut u8, len: usize) {
    // SAFETY: the caller's extents.
    unsafe {
        let xs = std::slice::from_raw_parts(x, len);
        let lo = xs.iter().fold(f32::INFINITY, |a, &v| min_nan(a, v));
        let hi = xs.iter().fold(f32::NEG_INFINITY, |a, &v| max_nan(a, v));
        let (s, z) = scale_and_zero(lo, hi);
        *scale = s;
        *zero = z;
        for (i, &v) in xs.iter().enumerate() {
            *y.add(i) = quantize(v, s, f32::from(z));
        }
    }
}
