//! The reference variant: the rounding every other one reproduces.

use super::{run_units, Isa, Job, Tap};

/// Plain Rust; `mul_add` is one rounding, as every FMA variant's lanes.
pub(super) struct Scalar;

impl Isa for Scalar {
    /// Each accumulator starts at +0, takes one `mul_add` per tap in
    /// order, then the bias. Tap-major: the inner loop is an `axpy` over
    /// the band, the same operations per output in the same order.
    unsafe fn band(src: *const f32, taps: &[Tap], acc: *mut f32, len: usize, bias: Option<f32>) {
        // SAFETY: `len` accumulators, not overlapping `src`.
        let acc = unsafe { std::slice::from_raw_parts_mut(acc, len) };
        acc.fill(0.0);
        for t in taps {
            // SAFETY: the tap's `len` inputs.
            let x = unsafe { std::slice::from_raw_parts(src.add(t.off), len) };
            for (a, &x) in acc.iter_mut().zip(x) {
                *a = t.w.mul_add(x, *a);
            }
        }
        if let Some(b) = bias {
            acc.iter_mut().for_each(|a| *a += b);
        }
    }

    unsafe fn copy(src: *const f32, dst: *mut f32, n: usize) {
        // SAFETY: forwarded contract.
        unsafe { std::ptr::copy_nonoverlapping(src, dst, n) };
    }

    unsafe fn zero(dst: *mut f32, n: usize) {
        // SAFETY: forwarded contract; all-zero bytes are +0.0.
        unsafe { dst.write_bytes(0, n) };
    }

    unsafe fn split2(src: *const f32, even: *mut f32, odd: *mut f32, n: usize) {
        for i in 0..n {
            // SAFETY: `2 * i + 1 < 2 * n`.
            unsafe {
                *even.add(i) = *src.add(2 * i);
                *odd.add(i) = *src.add(2 * i + 1);
            }
        }
    }

    unsafe fn gather2(src: *const f32, dst: *mut f32, n: usize) {
        for i in 0..n {
            // SAFETY: `2 * i <= 2 * n - 2`.
            unsafe { *dst.add(i) = *src.add(2 * i) };
        }
    }
}

/// See [`super::UnitsFn`].
///
/// # Safety
///
/// As [`run_units`].
pub(super) unsafe fn scalar_depthwise_units(job: &Job<'_>, start: usize, len: usize) {
    // SAFETY: forwarded contract.
    unsafe { run_units::<Scalar>(job, start, len) }
}
