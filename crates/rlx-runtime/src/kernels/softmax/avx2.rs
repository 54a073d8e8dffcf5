//! AVX2+FMA row softmax.
//!
//! Three passes over the row, 8 lanes at a time: the maximum, then
//! `e = exp(x - max)` stored and summed lane-wise (the 8 lane sums are
//! added pairwise at the end), then `e * (1 / sum)`. The tail (`n % 8`
//! elements) goes through masked loads and stores, so every element takes
//! the same vector `exp`. No alignment is assumed.

use std::arch::x86_64::*;

use super::scalar::normaliser;
use crate::kernels::vexp::exp_flushed;

/// `exp` of 8 lanes with relative error under
/// [`super::EXP_MAX_REL_ERR`] for normal results (`vexp::exp_flushed`).
#[inline]
#[target_feature(enable = "avx2,fma")]
pub(crate) fn exp256(x: __m256) -> __m256 {
    // SAFETY: AVX2 and FMA are enabled here, the features `__m256` lanes need.
    unsafe { exp_flushed(x) }
}

/// Lanes `< tail` set, for masked loads and stores of a row's tail.
#[inline]
#[target_feature(enable = "avx2,fma")]
pub(crate) fn tail_mask(tail: usize) -> __m256i {
    _mm256_cmpgt_epi32(_mm256_set1_epi32(tail as i32), _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7))
}

/// Sum of the 8 lanes: halves added, then pairs, then the last two.
#[inline]
#[target_feature(enable = "avx2,fma")]
pub(crate) fn hsum(v: __m256) -> f32 {
    let s = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps::<1>(v));
    let s = _mm_add_ps(s, _mm_movehl_ps(s, s));
    let s = _mm_add_ss(s, _mm_movehdup_ps(s));
    _mm_cvtss_f32(s)
}

/// Maximum of the 8 lanes (no lane is NaN here).
#[inline]
#[target_feature(enable = "avx2,fma")]
fn hmax(v: __m256) -> f32 {
    let s = _mm_max_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps::<1>(v));
    let s = _mm_max_ps(s, _mm_movehl_ps(s, s));
    let s = _mm_max_ss(s, _mm_movehdup_ps(s));
    _mm_cvtss_f32(s)
}

/// Softmax of one row of `n` f32; same edge cases as the scalar reference.
///
/// # Safety
///
/// The CPU must support AVX2 and FMA. `src` must be valid for reads and
/// `dst` for writes of `n` f32; they may be the same pointer but must not
/// otherwise overlap.
#[target_feature(enable = "avx2,fma")]
pub(crate) unsafe fn avx2_softmax_row_f32(src: *const f32, dst: *mut f32, n: usize) {
    let full = n - n % 8;
    let mask = tail_mask(n % 8);
    let mask_ps = _mm256_castsi256_ps(mask);
    let neg_inf = _mm256_set1_ps(f32::NEG_INFINITY);

    // `max_ps(x, acc)` returns `acc` when `x` is NaN, so NaN is ignored
    // here (it still reaches the sum below).
    let mut vmax = neg_inf;
    let mut i = 0;
    while i < full {
        // SAFETY: `i + 8 <= n`.
        vmax = _mm256_max_ps(unsafe { _mm256_loadu_ps(src.add(i)) }, vmax);
        i += 8;
    }
    if full < n {
        // SAFETY: the mask only touches lanes `< n - full`.
        let x = unsafe { _mm256_maskload_ps(src.add(full), mask) };
        vmax = _mm256_max_ps(_mm256_blendv_ps(neg_inf, x, mask_ps), vmax);
    }
    let max = hmax(vmax);
    let shift = _mm256_set1_ps(if max == f32::NEG_INFINITY { 0.0 } else { max });

    let mut vsum = _mm256_setzero_ps();
    let mut i = 0;
    while i < full {
        // SAFETY: `i + 8 <= n`; the load happens before the store, so
        // `dst == src` is fine.
        unsafe {
            let e = exp256(_mm256_sub_ps(_mm256_loadu_ps(src.add(i)), shift));
            _mm256_storeu_ps(dst.add(i), e);
            vsum = _mm256_add_ps(vsum, e);
        }
        i += 8;
    }
    if full < n {
        // SAFETY: masked lanes only.
        unsafe {
            let e = exp256(_mm256_sub_ps(_mm256_maskload_ps(src.add(full), mask), shift));
            _mm256_maskstore_ps(dst.add(full), mask, e);
            vsum = _mm256_add_ps(vsum, _mm256_and_ps(e, mask_ps));
        }
    }
    let inv = _mm256_set1_ps(normaliser(hsum(vsum)));

    let mut i = 0;
    while i < full {
        // SAFETY: `i + 8 <= n`.
        unsafe { _mm256_storeu_ps(dst.add(i), _mm256_mul_ps(_mm256_loadu_ps(dst.add(i)), inv)) };
        i += 8;
    }
    if full < n {
        // SAFETY: masked lanes only.
        unsafe {
            let e = _mm256_maskload_ps(dst.add(full), mask);
            _mm256_maskstore_ps(dst.add(full), mask, _mm256_mul_ps(e, inv));
        }
    }
}
