//! Pieces of the vector `exp` shared by the softmax and the exact GELU,
//! on 8 (AVX2+FMA) and 16 (AVX-512F) lanes: Cody-Waite reduction
//! constants, the Cephes `expf` polynomial, Horner evaluation, and the
//! final scaling by `2^n`. The 8- and 16-lane forms are the same
//! operations per lane, which is what lets each kernel's AVX-512 variant
//! give its AVX2 variant's bits.

use std::arch::x86_64::*;

/// `ln 2` split so `n * LN2_HI` is exact for `|n| <= 256` (Cody-Waite).
pub(crate) const LN2_HI: f32 = 0.693_359_4;
pub(crate) const LN2_LO: f32 = -2.121_944_4e-4;
/// Cephes `expf`: `exp(r) ~ 1 + r + r^2 * P(r)` on `|r| <= ln2 / 2`,
/// highest degree first.
pub(crate) const EXP_P: [f32; 6] = [1.987_569_1e-4, 1.398_199_9e-3, 8.333_452e-3, 4.166_579_6e-2, 0.166_666_65, 0.5];

/// Horner evaluation of `c` (highest degree first) at `v`, 8 lanes.
#[inline]
#[target_feature(enable = "avx2,fma")]
pub(crate) fn horner8<const N: usize>(c: &[f32; N], v: __m256) -> __m256 {
    let mut p = _mm256_set1_ps(c[0]);
    for &k in &c[1..] {
        p = _mm256_fmadd_ps(p, v, _mm256_set1_ps(k));
    }
    p
}

/// [`horner8`] on 16 lanes.
#[inline]
#[target_feature(enable = "avx512f")]
pub(crate) fn horner16<const N: usize>(c: &[f32; N], v: __m512) -> __m512 {
    let mut p = _mm512_set1_ps(c[0]);
    for &k in &c[1..] {
        p = _mm512_fmadd_ps(p, v, _mm512_set1_ps(k));
    }
    p
}

/// `v * 2^n` for integral `n` in `[-252, 254]`, 8 lanes: `2^n` as two
/// normal factors `2^n1 * 2^n2` (`n1 = n >> 1`), applied one after the
/// other, so neither overflows the exponent field and a subnormal result
/// is rounded once, by the last product.
#[inline]
#[target_feature(enable = "avx2,fma")]
pub(crate) fn times_pow2_8(v: __m256, n: __m256) -> __m256 {
    let ni = _mm256_cvtps_epi32(n);
    let n1 = _mm256_srai_epi32::<1>(ni);
    let n2 = _mm256_sub_epi32(ni, n1);
    let bias = _mm256_set1_epi32(127);
    let s1 = _mm256_castsi256_ps(_mm256_slli_epi32::<23>(_mm256_add_epi32(n1, bias)));
    let s2 = _mm256_castsi256_ps(_mm256_slli_epi32::<23>(_mm256_add_epi32(n2, bias)));
    _mm256_mul_ps(_mm256_mul_ps(v, s1), s2)
}

/// [`times_pow2_8`] on 16 lanes.
#[inline]
#[target_feature(enable = "avx512f")]
pub(crate) fn times_pow2_16(v: __m512, n: __m512) -> __m512 {
    let ni = _mm512_cvtps_epi32(n);
    let n1 = _mm512_srai_epi32::<1>(ni);
    let n2 = _mm512_sub_epi32(ni, n1);
    let bias = _mm512_set1_epi32(127);
    let s1 = _mm512_castsi512_ps(_mm512_slli_epi32::<23>(_mm512_add_epi32(n1, bias)));
    let s2 = _mm512_castsi512_ps(_mm512_slli_epi32::<23>(_mm512_add_epi32(n2, bias)));
    _mm512_mul_ps(_mm512_mul_ps(v, s1), s2)
}
