//! The exact GELU on 16 lanes: [`super::avx2`]'s `gelu8` operation for
//! operation (the same constants, IEEE operations and order, with mask
//! registers where AVX2 blends on sign vectors), so both give the same
//! bits for every input; GELU models spend a few percent of their time
//! here, and 16 lanes halve it.

use std::arch::x86_64::*;

use super::avx2::{ERF_P, GELU_CLAMP, GELU_G, GELU_SPLIT, GELU_V0};
use crate::kernels::vexp::{horner16, times_pow2_16, EXP_P, LN2_HI, LN2_LO};

/// `x` with the sign bit flipped (`vxorps` needs AVX-512DQ; this is F).
#[inline(always)]
fn flip_sign(x: __m512) -> __m512 {
    // SAFETY: register-only AVX-512F intrinsics; only called from `gelu16`,
    // whose callers guarantee AVX-512F.
    unsafe { _mm512_castsi512_ps(_mm512_xor_si512(_mm512_castps_si512(x), _mm512_set1_epi32(i32::MIN))) }
}

/// `gelu8` of 16 lanes; see it for the two routes and their accuracy.
///
/// # Safety
/// AVX-512F available.
#[inline]
#[target_feature(enable = "avx512f")]
unsafe fn gelu16(x: __m512) -> __m512 {
    let half = _mm512_set1_ps(0.5);
    let one = _mm512_set1_ps(1.0);
    let ax = _mm512_castsi512_ps(_mm512_and_si512(_mm512_castps_si512(x), _mm512_set1_epi32(i32::MAX)));
    let p = horner16(&ERF_P, _mm512_mul_ps(x, x));
    let near = _mm512_mul_ps(_mm512_mul_ps(half, x), _mm512_fmadd_ps(x, p, one));
    let a = _mm512_min_ps(_mm512_max_ps(ax, _mm512_set1_ps(GELU_SPLIT)), _mm512_set1_ps(GELU_CLAMP));
    let s = _mm512_div_ps(one, _mm512_fmadd_ps(_mm512_set1_ps(0.75), a, one));
    let g = horner16(&GELU_G, _mm512_sub_ps(s, _mm512_set1_ps(GELU_V0)));
    // -a^2 / 2 = hh + ll exactly.
    let h = _mm512_mul_ps(a, a);
    let l = _mm512_fmsub_ps(a, a, h);
    let hh = _mm512_mul_ps(h, _mm512_set1_ps(-0.5));
    let ll = _mm512_mul_ps(l, _mm512_set1_ps(-0.5));
    let n = _mm512_roundscale_ps::<{ _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC }>(_mm512_mul_ps(
        hh,
        _mm512_set1_ps(std::f32::consts::LOG2_E),
    ));
    let r = _mm512_fnmadd_ps(n, _mm512_set1_ps(LN2_HI), hh);
    let r = _mm512_fnmadd_ps(n, _mm512_set1_ps(LN2_LO), r);
    let r = _mm512_add_ps(r, ll);
    let pe = horner16(&EXP_P, r);
    let e_r = _mm512_add_ps(_mm512_fmadd_ps(pe, _mm512_mul_ps(r, r), r), one);
    // 2^n = 2^n1 * 2^n2 with n1, n2 >= -82: both normal.
    let m = flip_sign(times_pow2_16(_mm512_mul_ps(g, e_r), n));
    let neg = _mm512_cmp_ps_mask::<_CMP_LT_OQ>(x, _mm512_setzero_ps());
    let far = _mm512_mask_blend_ps(neg, _mm512_add_ps(x, m), m);
    _mm512_mask_blend_ps(_mm512_cmp_ps_mask::<_CMP_LT_OQ>(ax, _mm512_set1_ps(GELU_SPLIT)), far, near)
}

/// `dst[i] = gelu(src[i])`, 16 lanes at a time; the last `len % 16`
/// through the same [`gelu16`] with a masked load (absent lanes read 0)
/// and a masked store.
///
/// # Safety
/// AVX-512F available; `src` readable and `dst` writable for `len` f32;
/// `dst == src` or no overlap.
#[target_feature(enable = "avx512f")]
pub(super) unsafe fn gelu_map(src: *const f32, dst: *mut f32, len: usize) {
    let mut i = 0;
    while i + 16 <= len {
        // SAFETY: `i + 16 <= len` keeps the block inside both extents;
        // each block is loaded before it is stored (an exact alias is fine).
        unsafe { _mm512_storeu_ps(dst.add(i), gelu16(_mm512_loadu_ps(src.add(i)))) };
        i += 16;
    }
    if i < len {
        let mask: __mmask16 = (1u16 << (len - i)) - 1;
        // SAFETY: masked-off lanes are neither read nor written.
        unsafe { _mm512_mask_storeu_ps(dst.add(i), mask, gelu16(_mm512_maskz_loadu_ps(mask, src.add(i)))) };
    }
}
