//! `Fma` kernels: `dst[i] = a[i] * b[i] + c[i]` with one rounding.
//!
//! The scalar reference is `mul_add`; the AVX2 (`vfmadd`) and NEON
//! (`fmla`) forms are the same IEEE fused operation, so all agree bit for
//! bit.

use super::par::{split, SyncPtr};
use super::{entry_body, Body};

/// The fused multiply-add element type.
pub(crate) trait MulAdd: Copy {
    fn mul_add(self, b: Self, c: Self) -> Self;
}
impl MulAdd for f32 {
    #[inline(always)]
    fn mul_add(self, b: f32, c: f32) -> f32 {
        f32::mul_add(self, b, c)
    }
}
impl MulAdd for f64 {
    #[inline(always)]
    fn mul_add(self, b: f64, c: f64) -> f64 {
        f64::mul_add(self, b, c)
    }
}

/// The reference: `d[j] = a[j].mul_add(b[j], c[j])`.
///
/// # Safety
/// Inputs readable and `d` writable for `n`; `d` equals an input or
/// overlaps none.
pub(crate) unsafe fn scalar_fma<T: MulAdd>(a: *const T, b: *const T, c: *const T, d: *mut T, n: usize) {
    for j in 0..n {
        // SAFETY: `j < n`, inside the caller's extents; all inputs at `j` are read
        // before `d[j]` is written, so an exact alias is fine.
        unsafe { *d.add(j) = (*a.add(j)).mul_add(*b.add(j), *c.add(j)) };
    }
}

/// One thread's share of [`fma_f32`] on the body `body`.
///
/// # Safety
/// As [`fma_f32`] for `n` elements; `body` runs on this CPU.
#[inline]
pub(crate) unsafe fn fma_f32_with(body: Body, a: *const f32, b: *const f32, c: *const f32, d: *mut f32, n: usize) {
    match body {
        #[cfg(target_arch = "x86_64")]
        // SAFETY: the AVX2 body runs on this CPU; extents and aliasing are
        // the caller's contract (as `fma_f32`).
        Body::Avx2 => unsafe { super::avx2::avx2_fma_f32(a, b, c, d, n) },
        #[cfg(target_arch = "aarch64")]
        // SAFETY: NEON is baseline on aarch64; extents and aliasing are the
        // caller's contract (as `fma_f32`).
        Body::Neon => unsafe { super::neon::neon_fma_f32(a, b, c, d, n) },
        // SAFETY: extents and aliasing are the caller's contract, which is
        // `scalar_fma`'s.
        Body::Scalar => unsafe { scalar_fma(a, b, c, d, n) },
    }
}

/// One thread's share of [`fma_f64`] on the body `body` (no NEON form:
/// the scalar loop there).
///
/// # Safety
/// As [`fma_f64`] for `n` elements; `body` runs on this CPU.
#[inline]
pub(crate) unsafe fn fma_f64_with(body: Body, a: *const f64, b: *const f64, c: *const f64, d: *mut f64, n: usize) {
    #[cfg(target_arch = "x86_64")]
    if body == Body::Avx2 {
        // SAFETY: the AVX2 body runs on this CPU; extents and aliasing are
        // the caller's contract (as `fma_f64`).
        return unsafe { super::avx2::avx2_fma_f64(a, b, c, d, n) };
    }
    let _ = body;
    // SAFETY: extents and aliasing are the caller's contract, which is
    // `scalar_fma`'s.
    unsafe { scalar_fma(a, b, c, d, n) }
}

/// `d[i] = a[i] * b[i] + c[i]` on f32, rounded once, for `i < len`.
///
/// # Safety
/// `a`, `b`, `c` readable and `d` writable for `len` f32; `d` equals any
/// of the inputs (same offset) or overlaps none.
pub unsafe fn fma_f32(a: *const f32, b: *const f32, c: *const f32, d: *mut f32, len: usize, par: bool) {
    let (a, b, c, d) = (SyncPtr::new_const(a), SyncPtr::new_const(b), SyncPtr::new_const(c), SyncPtr(d));
    let body = entry_body();
    // SAFETY: each chunk `s..s + n` lies in `0..len`, inside every operand's
    // extent; chunks write disjoint ranges of `d`, and an exact alias stays
    // exact at the same offset; the entry's body runs on this CPU.
    split(len, par, &|s, n| unsafe {
        fma_f32_with(body, a.get().add(s), b.get().add(s), c.get().add(s), d.get().add(s), n)
    });
}

/// `d[i] = a[i] * b[i] + c[i]` on f64, rounded once, for `i < len`.
///
/// # Safety
/// As [`fma_f32`] with f64 elements.
pub unsafe fn fma_f64(a: *const f64, b: *const f64, c: *const f64, d: *mut f64, len: usize, par: bool) {
    let (a, b, c, d) = (SyncPtr::new_const(a), SyncPtr::new_const(b), SyncPtr::new_const(c), SyncPtr(d));
    let body = entry_body();
    // SAFETY: each chunk `s..s + n` lies in `0..len`, inside every operand's
    // extent; chunks write disjoint ranges of `d`, and an exact alias stays
    // exact at the same offset; the entry's body runs on this CPU.
    split(len, par, &|s, n| unsafe {
        fma_f64_with(body, a.get().add(s), b.get().add(s), c.get().add(s), d.get().add(s), n)
    });
}
