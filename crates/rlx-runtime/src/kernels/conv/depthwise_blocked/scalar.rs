//! The reference variant: 16 lanes as an array, `mul_add` per lane (one
//! rounding, as every FMA variant's lanes).

use super::{run_tasks, Job, Lanes16, L};

/// One block of plain f32.
#[derive(Clone, Copy)]
pub(super) struct Scalar([f32; L]);

impl Lanes16 for Scalar {
    const R: usize = 4;

    #[inline(always)]
    unsafe fn zero() -> Self {
        Scalar([0.0; L])
    }

    #[inline(always)]
    unsafe fn load(p: *const f32) -> Self {
        // SAFETY: 16 readable f32 (the caller's contract).
        Scalar(unsafe { p.cast::<[f32; L]>().read_unaligned() })
    }

    #[inline(always)]
    unsafe fn store(self, p: *mut f32) {
        // SAFETY: 16 writable f32 (the caller's contract).
        unsafe { p.cast::<[f32; L]>().write_unaligned(self.0) }
    }

    #[inline(always)]
    unsafe fn fma(w: Self, x: Self, acc: Self) -> Self {
        Scalar(std::array::from_fn(|i| w.0[i].mul_add(x.0[i], acc.0[i])))
    }

    #[inline(always)]
    unsafe fn add(self, b: Self) -> Self {
        Scalar(std::array::from_fn(|i| self.0[i] + b.0[i]))
    }

    #[inline(always)]
    unsafe fn clamp(self, lo: f32, hi: f32) -> Self {
        Scalar(self.0.map(|v| crate::math::clip(v, lo, hi)))
    }
}

/// See [`super::TasksFn`].
///
/// # Safety
///
/// As [`run_tasks`].
pub(super) unsafe fn scalar_tasks(job: &Job<'_>, start: usize, len: usize) {
    // SAFETY: forwarded contract.
    unsafe { run_tasks::<Scalar, false>(job, start, len) }
}
