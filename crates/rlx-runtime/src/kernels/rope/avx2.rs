//! AVX2 rotary-embedding rows, bit-identical to the scalar spec.
//!
//! Half layout: 8 pairs per step, `x1` and `x2` from the two halves of the
//! row. Interleaved layout: 4 pairs per step from one 8-float load; the
//! partner of each lane comes from an in-lane swap, `cos` is duplicated
//! per pair and `sin` gets a negative sign on the first lane of each pair,
//! so lane `2i` computes `x1 * c + x2 * (-s)`, which equals the spec's
//! `x1 * c - x2 * s` exactly. No FMA. Tails use the scalar code.

use std::arch::x86_64::*;

use super::scalar;

/// AVX2 [`scalar::rotate_half`].
///
/// # Safety
/// AVX2 and FMA available; otherwise as [`scalar::rotate_half`].
#[target_feature(enable = "avx2,fma")]
pub(super) unsafe fn avx2_rotate_half(x: *const f32, cos: *const f32, sin: *const f32, out: *mut f32, half: usize) {
    let mut i = 0;
    // SAFETY: indices below `2 * half`; each block is loaded before the
    // stores that may alias it.
    unsafe {
        while i + 8 <= half {
            let (x1, x2) = (_mm256_loadu_ps(x.add(i)), _mm256_loadu_ps(x.add(half + i)));
            let (c, s) = (_mm256_loadu_ps(cos.add(i)), _mm256_loadu_ps(sin.add(i)));
            _mm256_storeu_ps(out.add(i), _mm256_sub_ps(_mm256_mul_ps(x1, c), _mm256_mul_ps(x2, s)));
            _mm256_storeu_ps(out.add(half + i), _mm256_add_ps(_mm256_mul_ps(x2, c), _mm256_mul_ps(x1, s)));
            i += 8;
        }
        // The tail pairs keep their offsets inside the row.
        let n = half - i;
        for k in 0..n {
            let j = i + k;
            let (x1, x2) = (*x.add(j), *x.add(half + j));
            let (c, s) = (*cos.add(j), *sin.add(j));
            *out.add(j) = x1 * c - x2 * s;
            *out.add(half + j) = x2 * c + x1 * s;
        }
    }
}

/// AVX2 [`scalar::rotate_interleaved`].
///
/// # Safety
/// AVX2 and FMA available; otherwise as [`scalar::rotate_interleaved`].
#[target_feature(enable = "avx2,fma")]
pub(super) unsafe fn avx2_rotate_interleaved(
    x: *const f32,
    cos: *const f32,
    sin: *const f32,
    out: *mut f32,
    half: usize,
) {
    // -0.0 on the first lane of each pair flips the sign of `sin` there.
    let sign = _mm256_setr_ps(-0.0, 0.0, -0.0, 0.0, -0.0, 0.0, -0.0, 0.0);
    let mut i = 0;
    // SAFETY: indices below `2 * half`; each block is loaded before the
    // store that may alias it.
    unsafe {
        while i + 4 <= half {
            let v = _mm256_loadu_ps(x.add(2 * i));
            let swapped = _mm256_permute_ps::<0b10_11_00_01>(v);
            let (c4, s4) = (_mm_loadu_ps(cos.add(i)), _mm_loadu_ps(sin.add(i)));
            let c = _mm256_set_m128(_mm_unpackhi_ps(c4, c4), _mm_unpacklo_ps(c4, c4));
            let s = _mm256_xor_ps(_mm256_set_m128(_mm_unpackhi_ps(s4, s4), _mm_unpacklo_ps(s4, s4)), sign);
            _mm256_storeu_ps(out.add(2 * i), _mm256_add_ps(_mm256_mul_ps(v, c), _mm256_mul_ps(swapped, s)));
            i += 4;
        }
        let tail = half - i;
        scalar::rotate_interleaved(x.add(2 * i), cos.add(i), sin.add(i), out.add(2 * i), tail);
    }
}
