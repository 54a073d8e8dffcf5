//! One vector interface over 8 lanes (AVX2+FMA, `__m256`), 16 lanes
//! (AVX-512F, `__m512`) and 4 lanes (NEON, `float32x4_t`), so the vector
//! math on it ([`super::vexp`], the transcendental activations) is written
//! once and every width runs the same IEEE operations in the same order
//! lane for lane: the AVX-512 form gives the AVX2 form's bits for every
//! input, and the NEON form the same bits wherever the operations agree.
//!
//! Every method maps to one instruction (or a fixed short sequence) with
//! the same semantics at every width: comparisons are ordered (false on
//! NaN), `round` is round-to-nearest-even, `fma`/`fnma`/`fms` round once.
//! `min`/`max` are x86's `minps`/`maxps` on x86 (the second operand when
//! either is NaN) and NEON's `fmin`/`fmax` on NEON (NaN when either is,
//! one instruction, not a compare and select): both agree when the
//! operand that may be NaN comes second, as in `splat(lo).max(x)`, and
//! for non-NaN operands other than a pair of zeros of different sign.

// On aarch64 only the softmax and the norms use lanes, not every operation.
#![cfg_attr(target_arch = "aarch64", allow(dead_code))]

#[cfg(target_arch = "aarch64")]
use std::arch::aarch64::*;
#[cfg(target_arch = "x86_64")]
use std::arch::x86_64::*;

/// A vector of f32 lanes and the operations the activations use.
///
/// # Safety
/// Every method may only run where the width's target features are
/// enabled: AVX2 and FMA for `__m256`, AVX-512F for `__m512`, NEON for
/// `float32x4_t`. The methods are `#[inline(always)]` so they are compiled
/// into the `#[target_feature]` function that calls them.
pub(crate) trait Lanes: Copy {
    /// A lane mask, as the comparisons return it.
    type Mask: Copy;
    /// Lanes per vector.
    const N: usize;
    /// # Safety
    /// The width's target features are enabled (see the trait).
    unsafe fn splat(v: f32) -> Self;
    /// # Safety
    /// As [`Lanes::splat`].
    unsafe fn add(self, b: Self) -> Self;
    /// # Safety
    /// As [`Lanes::splat`].
    unsafe fn sub(self, b: Self) -> Self;
    /// # Safety
    /// As [`Lanes::splat`].
    unsafe fn mul(self, b: Self) -> Self;
    /// # Safety
    /// As [`Lanes::splat`].
    unsafe fn div(self, b: Self) -> Self;
    /// `self * b + c`, rounded once.
    ///
    /// # Safety
    /// As [`Lanes::splat`].
    unsafe fn fma(self, b: Self, c: Self) -> Self;
    /// `c - self * b`, rounded once.
    ///
    /// # Safety
    /// As [`Lanes::splat`].
    unsafe fn fnma(self, b: Self, c: Self) -> Self;
    /// `self * b - c`, rounded once.
    ///
    /// # Safety
    /// As [`Lanes::splat`].
    unsafe fn fms(self, b: Self, c: Self) -> Self;
    /// `self < b ? self : b` per lane (NaN: see the module docs).
    ///
    /// # Safety
    /// As [`Lanes::splat`].
    unsafe fn min(self, b: Self) -> Self;
    /// `self > b ? self : b` per lane (NaN: see the module docs).
    ///
    /// # Safety
    /// As [`Lanes::splat`].
    unsafe fn max(self, b: Self) -> Self;
    /// The sign bit cleared.
    ///
    /// # Safety
    /// As [`Lanes::splat`].
    unsafe fn abs(self) -> Self;
    /// The sign bit flipped.
    ///
    /// # Safety
    /// As [`Lanes::splat`].
    unsafe fn neg(self) -> Self;
    /// `self` with the sign bit of `x` or-ed in.
    ///
    /// # Safety
    /// As [`Lanes::splat`].
    unsafe fn or_sign_of(self, x: Self) -> Self;
    /// Round to the nearest integer, ties to even.
    ///
    /// # Safety
    /// As [`Lanes::splat`].
    unsafe fn round(self) -> Self;
    /// `self * 2^n` for integral `n` in `[-252, 254]`: `2^n` as two
    /// normal factors `2^n1 * 2^n2` (`n1 = n >> 1`), applied one after the
    /// other, so neither overflows the exponent field and a subnormal
    /// result is rounded once, by the last product.
    ///
    /// # Safety
    /// As [`Lanes::splat`].
    unsafe fn pow2(self, n: Self) -> Self;
    /// Horner evaluation of `c` (highest degree first) at `self`.
    ///
    /// # Safety
    /// As [`Lanes::splat`].
    unsafe fn horner<const K: usize>(self, c: &[f32; K]) -> Self;
    /// `self < b` (false on NaN).
    ///
    /// # Safety
    /// As [`Lanes::splat`].
    unsafe fn lt(self, b: Self) -> Self::Mask;
    /// `self > b` (false on NaN).
    ///
    /// # Safety
    /// As [`Lanes::splat`].
    unsafe fn gt(self, b: Self) -> Self::Mask;
    /// `self >= b` (false on NaN).
    ///
    /// # Safety
    /// As [`Lanes::splat`].
    unsafe fn ge(self, b: Self) -> Self::Mask;
    /// `self == b` (false on NaN, so `x.eq(x)` is "not NaN").
    ///
    /// # Safety
    /// As [`Lanes::splat`].
    unsafe fn eq(self, b: Self) -> Self::Mask;
    /// `m ? t : f` per lane.
    ///
    /// # Safety
    /// As [`Lanes::splat`].
    unsafe fn select(m: Self::Mask, t: Self, f: Self) -> Self;
    /// The first `n < N` elements at `p`, the other lanes 0.
    ///
    /// # Safety
    /// As [`Lanes::splat`]; `p` readable for `n` f32.
    unsafe fn load_part(p: *const f32, n: usize) -> Self;
    /// Stores the first `n < N` lanes to `p`.
    ///
    /// # Safety
    /// As [`Lanes::splat`]; `p` writable for `n` f32.
    unsafe fn store_part(self, p: *mut f32, n: usize);
    /// The sum of the lanes, halves first: lane `i` of the upper half is
    /// added to lane `i` of the lower half until one lane is left (for 8
    /// lanes `(t0 + t2) + (t1 + t3)` with `t[k] = v[k] + v[k + 4]`), the
    /// same order at every width.
    ///
    /// # Safety
    /// As [`Lanes::splat`].
    unsafe fn hsum(self) -> f32;
    /// # Safety
    /// As [`Lanes::splat`]; `p` readable for `N` f32.
    unsafe fn load(p: *const f32) -> Self;
    /// # Safety
    /// As [`Lanes::splat`]; `p` writable for `N` f32.
    unsafe fn store(self, p: *mut f32);
}

/// Horner evaluation of `c` (highest degree first) at `v`, 8 lanes.
#[cfg(target_arch = "x86_64")]
#[inline]
#[target_feature(enable = "avx2,fma")]
fn horner8<const N: usize>(c: &[f32; N], v: __m256) -> __m256 {
    let mut p = _mm256_set1_ps(c[0]);
    for &k in &c[1..] {
        p = _mm256_fmadd_ps(p, v, _mm256_set1_ps(k));
    }
    p
}

/// [`horner8`] on 16 lanes.
#[cfg(target_arch = "x86_64")]
#[inline]
#[target_feature(enable = "avx512f")]
fn horner16<const N: usize>(c: &[f32; N], v: __m512) -> __m512 {
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
#[cfg(target_arch = "x86_64")]
#[inline]
#[target_feature(enable = "avx2,fma")]
fn times_pow2_8(v: __m256, n: __m256) -> __m256 {
    let ni = _mm256_cvtps_epi32(n);
    let n1 = _mm256_srai_epi32::<1>(ni);
    let n2 = _mm256_sub_epi32(ni, n1);
    let bias = _mm256_set1_epi32(127);
    let s1 = _mm256_castsi256_ps(_mm256_slli_epi32::<23>(_mm256_add_epi32(n1, bias)));
    let s2 = _mm256_castsi256_ps(_mm256_slli_epi32::<23>(_mm256_add_epi32(n2, bias)));
    _mm256_mul_ps(_mm256_mul_ps(v, s1), s2)
}

/// [`times_pow2_8`] on 16 lanes.
#[cfg(target_arch = "x86_64")]
#[inline]
#[target_feature(enable = "avx512f")]
fn times_pow2_16(v: __m512, n: __m512) -> __m512 {
    let ni = _mm512_cvtps_epi32(n);
    let n1 = _mm512_srai_epi32::<1>(ni);
    let n2 = _mm512_sub_epi32(ni, n1);
    let bias = _mm512_set1_epi32(127);
    let s1 = _mm512_castsi512_ps(_mm512_slli_epi32::<23>(_mm512_add_epi32(n1, bias)));
    let s2 = _mm512_castsi512_ps(_mm512_slli_epi32::<23>(_mm512_add_epi32(n2, bias)));
    _mm512_mul_ps(_mm512_mul_ps(v, s1), s2)
}

/// Lanes `< n` set, for the AVX2 masked tail.
///
/// # Safety
/// AVX2 enabled.
#[cfg(target_arch = "x86_64")]
#[inline(always)]
unsafe fn mask8(n: usize) -> __m256i {
    // SAFETY: register-only AVX2 intrinsics; the caller runs with AVX2.
    unsafe { _mm256_cmpgt_epi32(_mm256_set1_epi32(n as i32), _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7)) }
}

/// `(t0 + t2) + (t1 + t3)` of 4 lanes: the halves, then the last pair.
///
/// # Safety
/// SSE enabled (every x86_64 CPU).
#[cfg(target_arch = "x86_64")]
#[inline(always)]
unsafe fn hsum4(t: __m128) -> f32 {
    // SAFETY: register-only SSE intrinsics.
    unsafe {
        let u = _mm_add_ps(t, _mm_movehl_ps(t, t));
        _mm_cvtss_f32(_mm_add_ss(u, _mm_shuffle_ps::<1>(u, u)))
    }
}

#[cfg(target_arch = "x86_64")]
impl Lanes for __m256 {
    type Mask = __m256;
    const N: usize = 8;
    #[inline(always)]
    unsafe fn splat(v: f32) -> Self {
        // SAFETY: AVX2 and FMA enabled (the trait's contract).
        unsafe { _mm256_set1_ps(v) }
    }
    #[inline(always)]
    unsafe fn add(self, b: Self) -> Self {
        // SAFETY: AVX2 and FMA enabled (the trait's contract).
        unsafe { _mm256_add_ps(self, b) }
    }
    #[inline(always)]
    unsafe fn sub(self, b: Self) -> Self {
        // SAFETY: AVX2 and FMA enabled (the trait's contract).
        unsafe { _mm256_sub_ps(self, b) }
    }
    #[inline(always)]
    unsafe fn mul(self, b: Self) -> Self {
        // SAFETY: AVX2 and FMA enabled (the trait's contract).
        unsafe { _mm256_mul_ps(self, b) }
    }
    #[inline(always)]
    unsafe fn div(self, b: Self) -> Self {
        // SAFETY: AVX2 and FMA enabled (the trait's contract).
        unsafe { _mm256_div_ps(self, b) }
    }
    #[inline(always)]
    unsafe fn fma(self, b: Self, c: Self) -> Self {
        // SAFETY: AVX2 and FMA enabled (the trait's contract).
        unsafe { _mm256_fmadd_ps(self, b, c) }
    }
    #[inline(always)]
    unsafe fn fnma(self, b: Self, c: Self) -> Self {
        // SAFETY: AVX2 and FMA enabled (the trait's contract).
        unsafe { _mm256_fnmadd_ps(self, b, c) }
    }
    #[inline(always)]
    unsafe fn fms(self, b: Self, c: Self) -> Self {
        // SAFETY: AVX2 and FMA enabled (the trait's contract).
        unsafe { _mm256_fmsub_ps(self, b, c) }
    }
    #[inline(always)]
    unsafe fn min(self, b: Self) -> Self {
        // SAFETY: AVX2 and FMA enabled (the trait's contract).
        unsafe { _mm256_min_ps(self, b) }
    }
    #[inline(always)]
    unsafe fn max(self, b: Self) -> Self {
        // SAFETY: AVX2 and FMA enabled (the trait's contract).
        unsafe { _mm256_max_ps(self, b) }
    }
    #[inline(always)]
    unsafe fn abs(self) -> Self {
        // SAFETY: AVX2 and FMA enabled (the trait's contract).
        unsafe { _mm256_andnot_ps(_mm256_set1_ps(-0.0), self) }
    }
    #[inline(always)]
    unsafe fn neg(self) -> Self {
        // SAFETY: AVX2 and FMA enabled (the trait's contract).
        unsafe { _mm256_xor_ps(self, _mm256_set1_ps(-0.0)) }
    }
    #[inline(always)]
    unsafe fn or_sign_of(self, x: Self) -> Self {
        // SAFETY: AVX2 and FMA enabled (the trait's contract).
        unsafe { _mm256_or_ps(self, _mm256_and_ps(_mm256_set1_ps(-0.0), x)) }
    }
    #[inline(always)]
    unsafe fn round(self) -> Self {
        // SAFETY: AVX2 and FMA enabled (the trait's contract).
        unsafe { _mm256_round_ps::<{ _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC }>(self) }
    }
    #[inline(always)]
    unsafe fn pow2(self, n: Self) -> Self {
        // SAFETY: AVX2 and FMA enabled (the trait's contract).
        unsafe { times_pow2_8(self, n) }
    }
    #[inline(always)]
    unsafe fn horner<const K: usize>(self, c: &[f32; K]) -> Self {
        // SAFETY: AVX2 and FMA enabled (the trait's contract).
        unsafe { horner8(c, self) }
    }
    #[inline(always)]
    unsafe fn lt(self, b: Self) -> Self {
        // SAFETY: AVX2 and FMA enabled (the trait's contract).
        unsafe { _mm256_cmp_ps::<_CMP_LT_OQ>(self, b) }
    }
    #[inline(always)]
    unsafe fn gt(self, b: Self) -> Self {
        // SAFETY: AVX2 and FMA enabled (the trait's contract).
        unsafe { _mm256_cmp_ps::<_CMP_GT_OQ>(self, b) }
    }
    #[inline(always)]
    unsafe fn ge(self, b: Self) -> Self {
        // SAFETY: AVX2 and FMA enabled (the trait's contract).
        unsafe { _mm256_cmp_ps::<_CMP_GE_OQ>(self, b) }
    }
    #[inline(always)]
    unsafe fn eq(self, b: Self) -> Self {
        // SAFETY: AVX2 and FMA enabled (the trait's contract).
        unsafe { _mm256_cmp_ps::<_CMP_EQ_OQ>(self, b) }
    }
    #[inline(always)]
    unsafe fn select(m: Self, t: Self, f: Self) -> Self {
        // SAFETY: AVX2 and FMA enabled (the trait's contract).
        unsafe { _mm256_blendv_ps(f, t, m) }
    }
    #[inline(always)]
    unsafe fn load_part(p: *const f32, n: usize) -> Self {
        // SAFETY: AVX2 and FMA enabled (the trait's contract); the extent is the caller's.
        unsafe { _mm256_maskload_ps(p, mask8(n)) }
    }
    #[inline(always)]
    unsafe fn store_part(self, p: *mut f32, n: usize) {
        // SAFETY: AVX2 and FMA enabled (the trait's contract); the extent is the caller's.
        unsafe { _mm256_maskstore_ps(p, mask8(n), self) }
    }
    #[inline(always)]
    unsafe fn hsum(self) -> f32 {
        // SAFETY: AVX2 and FMA enabled (the trait's contract).
        unsafe { hsum4(_mm_add_ps(_mm256_castps256_ps128(self), _mm256_extractf128_ps::<1>(self))) }
    }
    #[inline(always)]
    unsafe fn load(p: *const f32) -> Self {
        // SAFETY: AVX2 and FMA enabled (the trait's contract); the extent is the caller's.
        unsafe { _mm256_loadu_ps(p) }
    }
    #[inline(always)]
    unsafe fn store(self, p: *mut f32) {
        // SAFETY: AVX2 and FMA enabled (the trait's contract); the extent is the caller's.
        unsafe { _mm256_storeu_ps(p, self) }
    }
}

/// `a op b` on the bits of two vectors (`vandps`/`vorps` on 512 bits need
/// AVX-512DQ; the integer forms are F).
#[cfg(target_arch = "x86_64")]
macro_rules! bits512 {
    ($op:ident, $a:expr, $b:expr) => {
        _mm512_castsi512_ps($op(_mm512_castps_si512($a), _mm512_castps_si512($b)))
    };
}

#[cfg(target_arch = "x86_64")]
impl Lanes for __m512 {
    type Mask = __mmask16;
    const N: usize = 16;
    #[inline(always)]
    unsafe fn splat(v: f32) -> Self {
        // SAFETY: AVX-512F enabled (the trait's contract).
        unsafe { _mm512_set1_ps(v) }
    }
    #[inline(always)]
    unsafe fn add(self, b: Self) -> Self {
        // SAFETY: AVX-512F enabled (the trait's contract).
        unsafe { _mm512_add_ps(self, b) }
    }
    #[inline(always)]
    unsafe fn sub(self, b: Self) -> Self {
        // SAFETY: AVX-512F enabled (the trait's contract).
        unsafe { _mm512_sub_ps(self, b) }
    }
    #[inline(always)]
    unsafe fn mul(self, b: Self) -> Self {
        // SAFETY: AVX-512F enabled (the trait's contract).
        unsafe { _mm512_mul_ps(self, b) }
    }
    #[inline(always)]
    unsafe fn div(self, b: Self) -> Self {
        // SAFETY: AVX-512F enabled (the trait's contract).
        unsafe { _mm512_div_ps(self, b) }
    }
    #[inline(always)]
    unsafe fn fma(self, b: Self, c: Self) -> Self {
        // SAFETY: AVX-512F enabled (the trait's contract).
        unsafe { _mm512_fmadd_ps(self, b, c) }
    }
    #[inline(always)]
    unsafe fn fnma(self, b: Self, c: Self) -> Self {
        // SAFETY: AVX-512F enabled (the trait's contract).
        unsafe { _mm512_fnmadd_ps(self, b, c) }
    }
    #[inline(always)]
    unsafe fn fms(self, b: Self, c: Self) -> Self {
        // SAFETY: AVX-512F enabled (the trait's contract).
        unsafe { _mm512_fmsub_ps(self, b, c) }
    }
    #[inline(always)]
    unsafe fn min(self, b: Self) -> Self {
        // SAFETY: AVX-512F enabled (the trait's contract).
        unsafe { _mm512_min_ps(self, b) }
    }
    #[inline(always)]
    unsafe fn max(self, b: Self) -> Self {
        // SAFETY: AVX-512F enabled (the trait's contract).
        unsafe { _mm512_max_ps(self, b) }
    }
    #[inline(always)]
    unsafe fn abs(self) -> Self {
        // SAFETY: AVX-512F enabled (the trait's contract).
        unsafe { bits512!(_mm512_and_si512, self, _mm512_castsi512_ps(_mm512_set1_epi32(i32::MAX))) }
    }
    #[inline(always)]
    unsafe fn neg(self) -> Self {
        // SAFETY: AVX-512F enabled (the trait's contract).
        unsafe { bits512!(_mm512_xor_si512, self, _mm512_castsi512_ps(_mm512_set1_epi32(i32::MIN))) }
    }
    #[inline(always)]
    unsafe fn or_sign_of(self, x: Self) -> Self {
        // SAFETY: AVX-512F enabled (the trait's contract).
        unsafe {
            let sign = bits512!(_mm512_and_si512, x, _mm512_castsi512_ps(_mm512_set1_epi32(i32::MIN)));
            bits512!(_mm512_or_si512, self, sign)
        }
    }
    #[inline(always)]
    unsafe fn round(self) -> Self {
        // SAFETY: AVX-512F enabled (the trait's contract).
        unsafe { _mm512_roundscale_ps::<{ _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC }>(self) }
    }
    #[inline(always)]
    unsafe fn pow2(self, n: Self) -> Self {
        // SAFETY: AVX-512F enabled (the trait's contract).
        unsafe { times_pow2_16(self, n) }
    }
    #[inline(always)]
    unsafe fn horner<const K: usize>(self, c: &[f32; K]) -> Self {
        // SAFETY: AVX-512F enabled (the trait's contract).
        unsafe { horner16(c, self) }
    }
    #[inline(always)]
    unsafe fn lt(self, b: Self) -> __mmask16 {
        // SAFETY: AVX-512F enabled (the trait's contract).
        unsafe { _mm512_cmp_ps_mask::<_CMP_LT_OQ>(self, b) }
    }
    #[inline(always)]
    unsafe fn gt(self, b: Self) -> __mmask16 {
        // SAFETY: AVX-512F enabled (the trait's contract).
        unsafe { _mm512_cmp_ps_mask::<_CMP_GT_OQ>(self, b) }
    }
    #[inline(always)]
    unsafe fn ge(self, b: Self) -> __mmask16 {
        // SAFETY: AVX-512F enabled (the trait's contract).
        unsafe { _mm512_cmp_ps_mask::<_CMP_GE_OQ>(self, b) }
    }
    #[inline(always)]
    unsafe fn eq(self, b: Self) -> __mmask16 {
        // SAFETY: AVX-512F enabled (the trait's contract).
        unsafe { _mm512_cmp_ps_mask::<_CMP_EQ_OQ>(self, b) }
    }
    #[inline(always)]
    unsafe fn select(m: __mmask16, t: Self, f: Self) -> Self {
        // SAFETY: AVX-512F enabled (the trait's contract).
        unsafe { _mm512_mask_blend_ps(m, f, t) }
    }
    #[inline(always)]
    unsafe fn load_part(p: *const f32, n: usize) -> Self {
        // SAFETY: AVX-512F enabled (the trait's contract); the extent is the caller's.
        unsafe { _mm512_maskz_loadu_ps((1u16 << n) - 1, p) }
    }
    #[inline(always)]
    unsafe fn store_part(self, p: *mut f32, n: usize) {
        // SAFETY: AVX-512F enabled (the trait's contract); the extent is the caller's.
        unsafe { _mm512_mask_storeu_ps(p, (1u16 << n) - 1, self) }
    }
    #[inline(always)]
    unsafe fn hsum(self) -> f32 {
        // SAFETY: AVX-512F enabled (the trait's contract), and with it AVX.
        unsafe {
            let high = _mm256_castpd_ps(_mm512_extractf64x4_pd::<1>(_mm512_castps_pd(self)));
            _mm256_add_ps(_mm512_castps512_ps256(self), high).hsum()
        }
    }
    #[inline(always)]
    unsafe fn load(p: *const f32) -> Self {
        // SAFETY: AVX-512F enabled (the trait's contract); the extent is the caller's.
        unsafe { _mm512_loadu_ps(p) }
    }
    #[inline(always)]
    unsafe fn store(self, p: *mut f32) {
        // SAFETY: AVX-512F enabled (the trait's contract); the extent is the caller's.
        unsafe { _mm512_storeu_ps(p, self) }
    }
}

#[cfg(target_arch = "aarch64")]
impl Lanes for float32x4_t {
    type Mask = uint32x4_t;
    const N: usize = 4;
    #[inline(always)]
    unsafe fn splat(v: f32) -> Self {
        // SAFETY: NEON enabled (the trait's contract).
        unsafe { vdupq_n_f32(v) }
    }
    #[inline(always)]
    unsafe fn add(self, b: Self) -> Self {
        // SAFETY: NEON enabled (the trait's contract).
        unsafe { vaddq_f32(self, b) }
    }
    #[inline(always)]
    unsafe fn sub(self, b: Self) -> Self {
        // SAFETY: NEON enabled (the trait's contract).
        unsafe { vsubq_f32(self, b) }
    }
    #[inline(always)]
    unsafe fn mul(self, b: Self) -> Self {
        // SAFETY: NEON enabled (the trait's contract).
        unsafe { vmulq_f32(self, b) }
    }
    #[inline(always)]
    unsafe fn div(self, b: Self) -> Self {
        // SAFETY: NEON enabled (the trait's contract).
        unsafe { vdivq_f32(self, b) }
    }
    #[inline(always)]
    unsafe fn fma(self, b: Self, c: Self) -> Self {
        // SAFETY: NEON enabled (the trait's contract).
        unsafe { vfmaq_f32(c, self, b) }
    }
    #[inline(always)]
    unsafe fn fnma(self, b: Self, c: Self) -> Self {
        // SAFETY: NEON enabled (the trait's contract).
        unsafe { vfmsq_f32(c, self, b) }
    }
    #[inline(always)]
    unsafe fn fms(self, b: Self, c: Self) -> Self {
        // `-c + self * b`: one rounding, and an exact cancellation gives +0
        // as `self * b - c` does.
        // SAFETY: NEON enabled (the trait's contract).
        unsafe { vfmaq_f32(vnegq_f32(c), self, b) }
    }
    #[inline(always)]
    unsafe fn min(self, b: Self) -> Self {
        // SAFETY: NEON enabled (the trait's contract).
        unsafe { vminq_f32(self, b) }
    }
    #[inline(always)]
    unsafe fn max(self, b: Self) -> Self {
        // SAFETY: NEON enabled (the trait's contract).
        unsafe { vmaxq_f32(self, b) }
    }
    #[inline(always)]
    unsafe fn abs(self) -> Self {
        // SAFETY: NEON enabled (the trait's contract).
        unsafe { vabsq_f32(self) }
    }
    #[inline(always)]
    unsafe fn neg(self) -> Self {
        // SAFETY: NEON enabled (the trait's contract).
        unsafe { vnegq_f32(self) }
    }
    #[inline(always)]
    unsafe fn or_sign_of(self, x: Self) -> Self {
        // SAFETY: NEON enabled (the trait's contract).
        unsafe {
            let sign = vandq_u32(vreinterpretq_u32_f32(x), vdupq_n_u32(1 << 31));
            vreinterpretq_f32_u32(vorrq_u32(vreinterpretq_u32_f32(self), sign))
        }
    }
    #[inline(always)]
    unsafe fn round(self) -> Self {
        // SAFETY: NEON enabled (the trait's contract).
        unsafe { vrndnq_f32(self) }
    }
    #[inline(always)]
    unsafe fn pow2(self, n: Self) -> Self {
        // SAFETY: NEON enabled (the trait's contract).
        unsafe {
            // `n` is integral, so truncating is exact.
            let ni = vcvtq_s32_f32(n);
            let n1 = vshrq_n_s32::<1>(ni);
            let n2 = vsubq_s32(ni, n1);
            let bias = vdupq_n_s32(127);
            let s1 = vreinterpretq_f32_s32(vshlq_n_s32::<23>(vaddq_s32(n1, bias)));
            let s2 = vreinterpretq_f32_s32(vshlq_n_s32::<23>(vaddq_s32(n2, bias)));
            vmulq_f32(vmulq_f32(self, s1), s2)
        }
    }
    #[inline(always)]
    unsafe fn horner<const K: usize>(self, c: &[f32; K]) -> Self {
        // SAFETY: NEON enabled (the trait's contract).
        unsafe {
            let mut p = vdupq_n_f32(c[0]);
            for &k in &c[1..] {
                p = vfmaq_f32(vdupq_n_f32(k), p, self);
            }
            p
        }
    }
    #[inline(always)]
    unsafe fn lt(self, b: Self) -> uint32x4_t {
        // SAFETY: NEON enabled (the trait's contract).
        unsafe { vcltq_f32(self, b) }
    }
    #[inline(always)]
    unsafe fn gt(self, b: Self) -> uint32x4_t {
        // SAFETY: NEON enabled (the trait's contract).
        unsafe { vcgtq_f32(self, b) }
    }
    #[inline(always)]
    unsafe fn ge(self, b: Self) -> uint32x4_t {
        // SAFETY: NEON enabled (the trait's contract).
        unsafe { vcgeq_f32(self, b) }
    }
    #[inline(always)]
    unsafe fn eq(self, b: Self) -> uint32x4_t {
        // SAFETY: NEON enabled (the trait's contract).
        unsafe { vceqq_f32(self, b) }
    }
    #[inline(always)]
    unsafe fn select(m: uint32x4_t, t: Self, f: Self) -> Self {
        // SAFETY: NEON enabled (the trait's contract).
        unsafe { vbslq_f32(m, t, f) }
    }
    #[inline(always)]
    unsafe fn load_part(p: *const f32, n: usize) -> Self {
        // No masked loads on NEON: through a zeroed buffer.
        let mut buf = [0.0f32; 4];
        // SAFETY: `p` readable for `n < 4` f32 (the caller's extent); NEON
        // enabled (the trait's contract).
        unsafe {
            std::ptr::copy_nonoverlapping(p, buf.as_mut_ptr(), n);
            vld1q_f32(buf.as_ptr())
        }
    }
    #[inline(always)]
    unsafe fn store_part(self, p: *mut f32, n: usize) {
        let mut buf = [0.0f32; 4];
        // SAFETY: `p` writable for `n < 4` f32 (the caller's extent); NEON
        // enabled (the trait's contract).
        unsafe {
            vst1q_f32(buf.as_mut_ptr(), self);
            std::ptr::copy_nonoverlapping(buf.as_ptr(), p, n);
        }
    }
    #[inline(always)]
    unsafe fn hsum(self) -> f32 {
        // SAFETY: NEON enabled (the trait's contract).
        unsafe {
            let pairs = vadd_f32(vget_low_f32(self), vget_high_f32(self));
            vget_lane_f32::<0>(pairs) + vget_lane_f32::<1>(pairs)
        }
    }
    #[inline(always)]
    unsafe fn load(p: *const f32) -> Self {
        // SAFETY: NEON enabled (the trait's contract); the extent is the caller's.
        unsafe { vld1q_f32(p) }
    }
    #[inline(always)]
    unsafe fn store(self, p: *mut f32) {
        // SAFETY: NEON enabled (the trait's contract); the extent is the caller's.
        unsafe { vst1q_f32(p, self) }
    }
}

/// One elementwise vector form, at any width. A trait rather than a
/// closure: closures do not inherit the `#[target_feature]`s of the map
/// they are passed to, and neither get inlined nor let the intrinsics
/// inside them be; `#[inline(always)]` methods all the way down do.
pub(crate) trait Form {
    /// The form of 1 vector.
    ///
    /// # Safety
    /// `V`'s target features are enabled.
    unsafe fn apply<V: Lanes>(&self, x: V) -> V;
}

/// `dst[i] = f(src[i])`, `V::N` lanes at a time; the last `len % N`
/// elements go through the same `f` with a masked load (absent lanes read
/// 0) and a masked store, so an element's result never depends on its
/// position or on the call's length.
///
/// # Safety
/// `V`'s target features are enabled; `src` readable and `dst` writable
/// for `len` f32; `dst == src` or no overlap.
#[inline(always)]
pub(crate) unsafe fn map<V: Lanes, F: Form>(src: *const f32, dst: *mut f32, len: usize, f: &F) {
    let mut i = 0;
    while i + V::N <= len {
        // SAFETY: `i + N <= len` keeps the block inside both extents; each
        // block is loaded before it is stored, so an exact alias is fine;
        // `V`'s features are the caller's contract.
        unsafe { f.apply(V::load(src.add(i))).store(dst.add(i)) };
        i += V::N;
    }
    if i < len {
        // SAFETY: `len - i < N` elements remain; masked-off lanes are neither
        // read nor written.
        unsafe { f.apply(V::load_part(src.add(i), len - i)).store_part(dst.add(i), len - i) };
    }
}
