//! x86_64 variants: AVX-512F (a block is one zmm; 12 outputs in
//! registers, 16 on the sliding microkernel) and AVX2+FMA (a block is two ymm; 6 outputs, 12
//! accumulators). `_mm*_fmadd_ps(w, x, acc)` rounds once per lane, as the
//! reference's `mul_add`, so every lane has its bits.

use std::arch::x86_64::*;

use super::{run_tasks, Job, Lanes16};

/// AVX-512F.
#[derive(Clone, Copy)]
pub(super) struct Avx512(__m512);

impl Lanes16 for Avx512 {
    const R: usize = 12;

    #[target_feature(enable = "avx512f")]
    #[inline]
    unsafe fn zero() -> Self {
        Avx512(_mm512_setzero_ps())
    }

    #[target_feature(enable = "avx512f")]
    #[inline]
    unsafe fn load(p: *const f32) -> Self {
        // SAFETY: 16 readable f32 (the caller's contract).
        Avx512(unsafe { _mm512_loadu_ps(p) })
    }

    #[target_feature(enable = "avx512f")]
    #[inline]
    unsafe fn store(self, p: *mut f32) {
        // SAFETY: 16 writable f32 (the caller's contract).
        unsafe { _mm512_storeu_ps(p, self.0) }
    }

    #[target_feature(enable = "avx512f")]
    #[inline]
    unsafe fn fma(w: Self, x: Self, acc: Self) -> Self {
        Avx512(_mm512_fmadd_ps(w.0, x.0, acc.0))
    }

    #[target_feature(enable = "avx512f")]
    #[inline]
    unsafe fn add(self, b: Self) -> Self {
        Avx512(_mm512_add_ps(self.0, b.0))
    }

    #[target_feature(enable = "avx512f")]
    #[inline]
    unsafe fn clamp(self, lo: f32, hi: f32) -> Self {
        // `max(lo, x)` is `lo > x ? lo : x`: `math::clip`'s comparisons.
        Avx512(_mm512_min_ps(_mm512_set1_ps(hi), _mm512_max_ps(_mm512_set1_ps(lo), self.0)))
    }
}

/// See [`super::TasksFn`]; `SLIDE` on the sliding microkernel (its own
/// function, so the other one's code stays as without it).
///
/// # Safety
///
/// As [`run_tasks`]; the CPU must support AVX-512F.
#[target_feature(enable = "avx512f")]
pub(super) unsafe fn avx512_tasks<const SLIDE: bool>(job: &Job<'_>, start: usize, len: usize) {
    // SAFETY: forwarded contract.
    unsafe { run_tasks::<Avx512, SLIDE>(job, start, len) }
}

/// AVX2 and FMA: lanes 0..8 and 8..16.
#[derive(Clone, Copy)]
pub(super) struct Avx2(__m256, __m256);

impl Lanes16 for Avx2 {
    const R: usize = 6;

    #[target_feature(enable = "avx2,fma")]
    #[inline]
    unsafe fn zero() -> Self {
        Avx2(_mm256_setzero_ps(), _mm256_setzero_ps())
    }

    #[target_feature(enable = "avx2,fma")]
    #[inline]
    unsafe fn load(p: *const f32) -> Self {
        // SAFETY: 16 readable f32 (the caller's contract).
        unsafe { Avx2(_mm256_loadu_ps(p), _mm256_loadu_ps(p.add(8))) }
    }

    #[target_feature(enable = "avx2,fma")]
    #[inline]
    unsafe fn store(self, p: *mut f32) {
        // SAFETY: 16 writable f32 (the caller's contract).
        unsafe {
            _mm256_storeu_ps(p, self.0);
            _mm256_storeu_ps(p.add(8), self.1);
        }
    }

    #[target_feature(enable = "avx2,fma")]
    #[inline]
    unsafe fn fma(w: Self, x: Self, acc: Self) -> Self {
        Avx2(_mm256_fmadd_ps(w.0, x.0, acc.0), _mm256_fmadd_ps(w.1, x.1, acc.1))
    }

    #[target_feature(enable = "avx2,fma")]
    #[inline]
    unsafe fn add(self, b: Self) -> Self {
        Avx2(_mm256_add_ps(self.0, b.0), _mm256_add_ps(self.1, b.1))
    }

    #[target_feature(enable = "avx2,fma")]
    #[inline]
    unsafe fn clamp(self, lo: f32, hi: f32) -> Self {
        let (lo, hi) = (_mm256_set1_ps(lo), _mm256_set1_ps(hi));
        Avx2(_mm256_min_ps(hi, _mm256_max_ps(lo, self.0)), _mm256_min_ps(hi, _mm256_max_ps(lo, self.1)))
    }
}

/// See [`super::TasksFn`].
///
/// # Safety
///
/// As [`run_tasks`]; the CPU must support AVX2 and FMA.
#[target_feature(enable = "avx2,fma")]
pub(super) unsafe fn avx2_tasks(job: &Job<'_>, start: usize, len: usize) {
    // SAFETY: forwarded contract.
    unsafe { run_tasks::<Avx2, false>(job, start, len) }
}
