//! AVX-512F row softmax with the bits of the AVX2 one ([`super::avx2`]).
//!
//! [`exp512`] and [`super::avx2::exp256`] are the one vector `exp`
//! (`kernels::vexp`) at two widths, so every `exp` has the same bits. The maximum and the final scaling do not
//! depend on the order of elements; the sum does, so it stays the AVX2
//! one: an 8-lane accumulator takes the low, then the high half of each
//! 16-element block, which is the order in which the AVX2 kernel adds its
//! 8-element chunks. A last 8-element chunk and the tail go through the
//! AVX2 code itself.

use std::arch::x86_64::*;

use super::avx2::{exp256, hsum, tail_mask};
use super::scalar::normaliser;
use crate::kernels::vexp::exp_flushed;

/// [`exp256`] on 16 lanes: the same operations, so the same bits per lane.
#[inline]
#[target_feature(enable = "avx512f")]
fn exp512(x: __m512) -> __m512 {
    // SAFETY: AVX-512F is enabled here, the feature `__m512` lanes need.
    unsafe { exp_flushed(x) }
}

/// Softmax of one row of `n` f32, bit-identical to
/// [`super::avx2::avx2_softmax_row_f32`].
///
/// # Safety
///
/// The CPU must support AVX-512F, AVX2 and FMA. `src` must be valid for
/// reads and `dst` for writes of `n` f32; they may be the same pointer but
/// must not otherwise overlap.
#[target_feature(enable = "avx512f,avx2,fma")]
pub(crate) unsafe fn avx512_softmax_row_f32(src: *const f32, dst: *mut f32, n: usize) {
    let full8 = n - n % 8;
    let full16 = n - n % 16;
    let mask = tail_mask(n % 8);
    let mask_ps = _mm256_castsi256_ps(mask);

    // The maximum, ignoring NaN as the AVX2 pass does (`max(x, acc)` keeps
    // `acc`); the order of a maximum does not change it.
    let mut vmax = _mm512_set1_ps(f32::NEG_INFINITY);
    let mut i = 0;
    while i < full16 {
        // SAFETY: `i + 16 <= n`.
        vmax = _mm512_max_ps(unsafe { _mm512_loadu_ps(src.add(i)) }, vmax);
        i += 16;
    }
    let mut max = _mm512_reduce_max_ps(vmax);
    for j in full16..n {
        // SAFETY: `j < n`.
        let x = unsafe { *src.add(j) };
        if x > max {
            max = x;
        }
    }
    let shift = if max == f32::NEG_INFINITY { 0.0 } else { max };
    let (shift16, shift8) = (_mm512_set1_ps(shift), _mm256_set1_ps(shift));

    let mut vsum = _mm256_setzero_ps();
    let mut i = 0;
    while i < full16 {
        // SAFETY: `i + 16 <= n`; the load happens before the store.
        unsafe {
            let e = exp512(_mm512_sub_ps(_mm512_loadu_ps(src.add(i)), shift16));
            _mm512_storeu_ps(dst.add(i), e);
            vsum = _mm256_add_ps(vsum, _mm512_castps512_ps256(e));
            vsum = _mm256_add_ps(vsum, _mm256_castpd_ps(_mm512_extractf64x4_pd::<1>(_mm512_castps_pd(e))));
        }
        i += 16;
    }
    if full16 < full8 {
        // SAFETY: `full16 + 8 == full8 <= n`.
        unsafe {
            let e = exp256(_mm256_sub_ps(_mm256_loadu_ps(src.add(full16)), shift8));
            _mm256_storeu_ps(dst.add(full16), e);
            vsum = _mm256_add_ps(vsum, e);
        }
    }
    if full8 < n {
        // SAFETY: masked lanes only.
        unsafe {
            let e = exp256(_mm256_sub_ps(_mm256_maskload_ps(src.add(full8), mask), shift8));
            _mm256_maskstore_ps(dst.add(full8), mask, e);
            vsum = _mm256_add_ps(vsum, _mm256_and_ps(e, mask_ps));
        }
    }
    let inv = normaliser(hsum(vsum));

    let inv16 = _mm512_set1_ps(inv);
    let mut i = 0;
    while i < full16 {
        // SAFETY: `i + 16 <= n`.
        unsafe { _mm512_storeu_ps(dst.add(i), _mm512_mul_ps(_mm512_loadu_ps(dst.add(i)), inv16)) };
        i += 16;
    }
    for j in full16..n {
        // SAFETY: `j < n`.
        unsafe { *dst.add(j) *= inv };
    }
}
