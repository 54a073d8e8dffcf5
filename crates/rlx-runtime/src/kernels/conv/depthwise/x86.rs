//! x86_64 variants: AVX-512F (blocks of four 16-lane accumulators) and
//! AVX2+FMA (eight 8-lane ones: FMA latency times two pipes).
//!
//! Band: per block of outputs, accumulators at +0, then per tap one
//! broadcast weight and one unaligned load and FMA per vector, in tap
//! order; then the bias is added and the block stored. The tail runs one
//! vector at a time up to `len` rounded up to the vector width (the
//! caller's buffers have room for that). Each lane takes the scalar
//! reference's operations in its order, so the results are bit-identical
//! to it. Copies and zeroing end in a masked vector; `split2` and `gather2`
//! (stride-2 columns) load two vectors and permute their even and odd
//! lanes apart, the last step masked (AVX-512) or scalar (AVX2) so it
//! reads nothing past its input.

use std::arch::x86_64::*;

use super::{run_units, Isa, Job, Tap};
use crate::kernels::softmax::avx2::tail_mask;

/// Vectors per AVX-512 block.
const B512: usize = 4;
/// Vectors per AVX2 block.
const B256: usize = 8;

/// AVX-512F.
pub(super) struct Avx512;

/// Lanes `< n` (at most 16).
#[inline]
fn mask16(n: usize) -> __mmask16 {
    ((1u32 << n.min(16)) - 1) as __mmask16
}

impl Isa for Avx512 {
    #[target_feature(enable = "avx512f")]
    #[inline]
    unsafe fn band(src: *const f32, taps: &[Tap], acc: *mut f32, len: usize, bias: Option<f32>) {
        let n = len.next_multiple_of(16);
        let mut f = 0;
        // SAFETY: blocks stay below `n`, which the caller's extents cover.
        unsafe {
            while f + 16 * B512 <= n {
                block512::<B512>(src.add(f), taps, acc.add(f), bias);
                f += 16 * B512;
            }
            while f < n {
                block512::<1>(src.add(f), taps, acc.add(f), bias);
                f += 16;
            }
        }
    }

    #[target_feature(enable = "avx512f")]
    #[inline]
    unsafe fn copy(src: *const f32, dst: *mut f32, n: usize) {
        let mut i = 0;
        // SAFETY: full vectors below `n`, then the masked rest.
        unsafe {
            while i + 16 <= n {
                _mm512_storeu_ps(dst.add(i), _mm512_loadu_ps(src.add(i)));
                i += 16;
            }
            if i < n {
                let m = mask16(n - i);
                _mm512_mask_storeu_ps(dst.add(i), m, _mm512_maskz_loadu_ps(m, src.add(i)));
            }
        }
    }

    #[target_feature(enable = "avx512f")]
    #[inline]
    unsafe fn zero(dst: *mut f32, n: usize) {
        let mut i = 0;
        // SAFETY: full vectors below `n`, then the masked rest.
        unsafe {
            while i + 16 <= n {
                _mm512_storeu_ps(dst.add(i), _mm512_setzero_ps());
                i += 16;
            }
            if i < n {
                _mm512_mask_storeu_ps(dst.add(i), mask16(n - i), _mm512_setzero_ps());
            }
        }
    }

    #[target_feature(enable = "avx512f")]
    #[inline]
    unsafe fn split2(src: *const f32, even: *mut f32, odd: *mut f32, n: usize) {
        let ev = _mm512_setr_epi32(0, 2, 4, 6, 8, 10, 12, 14, 16, 18, 20, 22, 24, 26, 28, 30);
        let od = _mm512_setr_epi32(1, 3, 5, 7, 9, 11, 13, 15, 17, 19, 21, 23, 25, 27, 29, 31);
        let mut i = 0;
        // SAFETY: a full step reads `src[2i..2i + 32]` and writes 16 of
        // each output; the last step masks its loads to the `2m` inputs
        // left and its stores to the `m` outputs.
        unsafe {
            while i + 16 <= n {
                let lo = _mm512_loadu_ps(src.add(2 * i));
                let hi = _mm512_loadu_ps(src.add(2 * i + 16));
                _mm512_storeu_ps(even.add(i), _mm512_permutex2var_ps(lo, ev, hi));
                _mm512_storeu_ps(odd.add(i), _mm512_permutex2var_ps(lo, od, hi));
                i += 16;
            }
            if i < n {
                let m = n - i;
                let lo = _mm512_maskz_loadu_ps(mask16(2 * m), src.add(2 * i));
                let hi = _mm512_maskz_loadu_ps(mask16((2 * m).saturating_sub(16)), src.add(2 * i + 16));
                _mm512_mask_storeu_ps(even.add(i), mask16(m), _mm512_permutex2var_ps(lo, ev, hi));
                _mm512_mask_storeu_ps(odd.add(i), mask16(m), _mm512_permutex2var_ps(lo, od, hi));
            }
        }
    }

    #[target_feature(enable = "avx512f")]
    #[inline]
    unsafe fn gather2(src: *const f32, dst: *mut f32, n: usize) {
        let even = _mm512_setr_epi32(0, 2, 4, 6, 8, 10, 12, 14, 16, 18, 20, 22, 24, 26, 28, 30);
        let mut i = 0;
        // SAFETY: a full step reads `src[2i..2i + 32]`, inside `2n - 1`
        // while `i + 17 <= n`; the last step masks its loads to the
        // `2m - 1` inputs left and its store to the `m` outputs.
        unsafe {
            while i + 17 <= n {
                let lo = _mm512_loadu_ps(src.add(2 * i));
                let hi = _mm512_loadu_ps(src.add(2 * i + 16));
                _mm512_storeu_ps(dst.add(i), _mm512_permutex2var_ps(lo, even, hi));
                i += 16;
            }
            if i < n {
                let m = n - i;
                let left = 2 * m - 1;
                let lo = _mm512_maskz_loadu_ps(mask16(left), src.add(2 * i));
                let hi = _mm512_maskz_loadu_ps(mask16(left.saturating_sub(16)), src.add(2 * i + 16));
                _mm512_mask_storeu_ps(dst.add(i), mask16(m), _mm512_permutex2var_ps(lo, even, hi));
            }
        }
    }
}

/// `V` vectors of outputs.
///
/// # Safety
///
/// As [`Isa::band`] for `16 * V` outputs; the CPU supports AVX-512F.
#[target_feature(enable = "avx512f")]
#[inline]
unsafe fn block512<const V: usize>(src: *const f32, taps: &[Tap], acc: *mut f32, bias: Option<f32>) {
    let mut v = [_mm512_setzero_ps(); V];
    // SAFETY: `16 * V` inputs per tap and outputs: the caller's extents.
    unsafe {
        for t in taps {
            let w = _mm512_set1_ps(t.w);
            let x = src.add(t.off);
            for (j, v) in v.iter_mut().enumerate() {
                *v = _mm512_fmadd_ps(w, _mm512_loadu_ps(x.add(16 * j)), *v);
            }
        }
        if let Some(b) = bias {
            let b = _mm512_set1_ps(b);
            for v in &mut v {
                *v = _mm512_add_ps(*v, b);
            }
        }
        for (j, v) in v.iter().enumerate() {
            _mm512_storeu_ps(acc.add(16 * j), *v);
        }
    }
}

/// See [`super::UnitsFn`].
///
/// # Safety
///
/// As [`run_units`]; the CPU must support AVX-512F.
#[target_feature(enable = "avx512f")]
pub(super) unsafe fn avx512_depthwise_units(job: &Job<'_>, start: usize, len: usize) {
    // SAFETY: forwarded contract.
    unsafe { run_units::<Avx512>(job, start, len) }
}

/// AVX2 and FMA.
pub(super) struct Avx2;

impl Isa for Avx2 {
    #[target_feature(enable = "avx2,fma")]
    #[inline]
    unsafe fn band(src: *const f32, taps: &[Tap], acc: *mut f32, len: usize, bias: Option<f32>) {
        let n = len.next_multiple_of(8);
        let mut f = 0;
        // SAFETY: blocks stay below `n`, which the caller's extents cover.
        unsafe {
            while f + 8 * B256 <= n {
                block256::<B256>(src.add(f), taps, acc.add(f), bias);
                f += 8 * B256;
            }
            while f < n {
                block256::<1>(src.add(f), taps, acc.add(f), bias);
                f += 8;
            }
        }
    }

    #[target_feature(enable = "avx2,fma")]
    #[inline]
    unsafe fn copy(src: *const f32, dst: *mut f32, n: usize) {
        let mut i = 0;
        // SAFETY: full vectors below `n`, then the masked rest.
        unsafe {
            while i + 8 <= n {
                _mm256_storeu_ps(dst.add(i), _mm256_loadu_ps(src.add(i)));
                i += 8;
            }
            if i < n {
                let m = tail_mask(n - i);
                _mm256_maskstore_ps(dst.add(i), m, _mm256_maskload_ps(src.add(i), m));
            }
        }
    }

    #[target_feature(enable = "avx2,fma")]
    #[inline]
    unsafe fn zero(dst: *mut f32, n: usize) {
        let mut i = 0;
        // SAFETY: full vectors below `n`, then the masked rest.
        unsafe {
            while i + 8 <= n {
                _mm256_storeu_ps(dst.add(i), _mm256_setzero_ps());
                i += 8;
            }
            if i < n {
                _mm256_maskstore_ps(dst.add(i), tail_mask(n - i), _mm256_setzero_ps());
            }
        }
    }

    #[target_feature(enable = "avx2,fma")]
    #[inline]
    unsafe fn split2(src: *const f32, even: *mut f32, odd: *mut f32, n: usize) {
        let mut i = 0;
        // SAFETY: a full step reads `src[2i..2i + 16]` and writes 8 of each
        // output; the rest one by one.
        unsafe {
            while i + 8 <= n {
                let a = _mm256_loadu_ps(src.add(2 * i));
                let b = _mm256_loadu_ps(src.add(2 * i + 8));
                // [a0 a2 b0 b2 | a4 a6 b4 b6] (odd: a1 a3 ...), then 64-bit
                // lanes 0, 2, 1, 3.
                let e = _mm256_shuffle_ps::<0b10_00_10_00>(a, b);
                let o = _mm256_shuffle_ps::<0b11_01_11_01>(a, b);
                let e = _mm256_castpd_ps(_mm256_permute4x64_pd::<0b11_01_10_00>(_mm256_castps_pd(e)));
                let o = _mm256_castpd_ps(_mm256_permute4x64_pd::<0b11_01_10_00>(_mm256_castps_pd(o)));
                _mm256_storeu_ps(even.add(i), e);
                _mm256_storeu_ps(odd.add(i), o);
                i += 8;
            }
            while i < n {
                *even.add(i) = *src.add(2 * i);
                *odd.add(i) = *src.add(2 * i + 1);
                i += 1;
            }
        }
    }

    #[target_feature(enable = "avx2,fma")]
    #[inline]
    unsafe fn gather2(src: *const f32, dst: *mut f32, n: usize) {
        let mut i = 0;
        // SAFETY: a full step reads `src[2i..2i + 16]`, inside `2n - 1`
        // while `i + 9 <= n`; the rest one by one.
        unsafe {
            while i + 9 <= n {
                let a = _mm256_loadu_ps(src.add(2 * i));
                let b = _mm256_loadu_ps(src.add(2 * i + 8));
                // [a0 a2 b0 b2 | a4 a6 b4 b6], then 64-bit lanes 0, 2, 1, 3.
                let s = _mm256_shuffle_ps::<0b10_00_10_00>(a, b);
                let s = _mm256_castpd_ps(_mm256_permute4x64_pd::<0b11_01_10_00>(_mm256_castps_pd(s)));
                _mm256_storeu_ps(dst.add(i), s);
                i += 8;
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
/// As [`Isa::band`] for `8 * V` outputs; the CPU supports AVX2 and FMA.
#[target_feature(enable = "avx2,fma")]
#[inline]
unsafe fn block256<const V: usize>(src: *const f32, taps: &[Tap], acc: *mut f32, bias: Option<f32>) {
    let mut v = [_mm256_setzero_ps(); V];
    // SAFETY: `8 * V` inputs per tap and outputs: the caller's extents.
    unsafe {
        for t in taps {
            let w = _mm256_set1_ps(t.w);
            let x = src.add(t.off);
            for (j, v) in v.iter_mut().enumerate() {
                *v = _mm256_fmadd_ps(w, _mm256_loadu_ps(x.add(8 * j)), *v);
            }
        }
        if let Some(b) = bias {
            let b = _mm256_set1_ps(b);
            for v in &mut v {
                *v = _mm256_add_ps(*v, b);
            }
        }
        for (j, v) in v.iter().enumerate() {
            _mm256_storeu_ps(acc.add(8 * j), *v);
        }
    }
}

/// See [`super::UnitsFn`].
///
/// # Safety
///
/// As [`run_units`]; the CPU must support AVX2 and FMA.
#[target_feature(enable = "avx2,fma")]
pub(super) unsafe fn avx2_depthwise_units(job: &Job<'_>, start: usize, len: usize) {
    // SAFETY: forwarded contract.
    unsafe { run_units::<Avx2>(job, start, len) }
}
