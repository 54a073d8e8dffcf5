//! The AVX2 row of `Requantize`.

use std::arch::x86_64::*;

use crate::kernels::quant::IntElem;

/// [`super::row`] 8 elements at a time: the same operations lane by lane
/// (`vcvtdq2ps`, `vmulps`, `vroundps` to nearest even, `vaddps`, `vmaxps`,
/// `vminps`, then an exact conversion of the saturated integers), the
/// last `len % 8` by [`super::row`].
#[target_feature(enable = "avx2,fma")]
pub(super) fn row_avx2<Q: IntElem>(src: &[i32], dst: &mut [Q], bias: i32, scale: f32, zero: f32) {
    let full = src.len().min(dst.len()) / 8 * 8;
    let (b, s, z) = (_mm256_set1_epi32(bias), _mm256_set1_ps(scale), _mm256_set1_ps(zero));
    let (lo, hi) = (_mm256_set1_ps(Q::MIN), _mm256_set1_ps(Q::MAX));
    let mut lanes = [0i32; 8];
    for i in (0..full).step_by(8) {
        // SAFETY: elements `i..i + 8` are inside both slices.
        unsafe {
            let sum = _mm256_add_epi32(_mm256_loadu_si256(src.as_ptr().add(i).cast()), b);
            let scaled = _mm256_mul_ps(_mm256_cvtepi32_ps(sum), s);
            let rounded = _mm256_round_ps::<{ _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC }>(scaled);
            let saturated = _mm256_min_ps(_mm256_max_ps(_mm256_add_ps(rounded, z), lo), hi);
            _mm256_storeu_si256(lanes.as_mut_ptr().cast(), _mm256_cvtps_epi32(saturated));
        }
        for (d, &v) in dst[i..i + 8].iter_mut().zip(&lanes) {
            *d = Q::from_i32(v);
        }
    }
    super::row(&src[full..], &mut dst[full..], bias, scale, zero)
}
