//! AVX2 activation kernels: bit-exact with `crate::math`, except the
//! exact GELU, which is a polynomial approximation (in `transcendental`).
//!
//! Each other activation is written with the same IEEE operations, operand order
//! and NaN behaviour as its scalar definition: `_mm256_max_ps(a, b)` is
//! `a > b ? a : b` and `_mm256_min_ps(a, b)` is `a < b ? a : b` (the second
//! operand wins on NaN and on equal values), which is exactly how `math`
//! spells `relu`, `clip` and `hard_sigmoid`. Loads and stores are
//! unaligned; 8 lanes per step, the last `len % 8` elements go through the
//! scalar function itself.

use std::arch::x86_64::*;

use crate::math;
use rlx_core::ActKind;

/// Whether `act` has an AVX2 form here.
pub(super) fn supports(act: ActKind) -> bool {
    matches!(
        act,
        ActKind::Identity
            | ActKind::Relu
            | ActKind::LeakyRelu { .. }
            | ActKind::Clip { .. }
            | ActKind::HardSigmoid { .. }
            | ActKind::HardSwish
            | ActKind::Abs
            | ActKind::Neg
            | ActKind::Square
            | ActKind::Recip
            | ActKind::Sqrt
            | ActKind::Rsqrt
            | ActKind::Floor
            | ActKind::Ceil
            | ActKind::Round
            | ActKind::Sign
            | ActKind::Softsign
            | ActKind::ThresholdedRelu { .. }
            | ActKind::Shrink { .. }
            | ActKind::Not
            | ActKind::Gelu
    )
}

/// Whether the AVX2 form of `act` gives exactly the bits of `math`
/// (every supported kind but the polynomial GELU).
pub(super) fn is_bit_exact(act: ActKind) -> bool {
    supports(act) && act != ActKind::Gelu
}

/// An activation's 8-lane form and its scalar form (`math`).
trait Act8 {
    /// # Safety
    /// Only called from `#[target_feature(enable = "avx2,fma")]` code.
    unsafe fn v(&self, x: __m256) -> __m256;
    fn s(&self, x: f32) -> f32;
}

/// `dst[i] = a(src[i])`, 8 lanes at a time, scalar tail.
///
/// # Safety
/// AVX2 available; `src` readable and `dst` writable for `len` f32;
/// `dst == src` or no overlap.
#[inline(always)]
unsafe fn map<A: Act8>(a: &A, src: *const f32, dst: *mut f32, len: usize) {
    let mut i = 0;
    while i + 8 <= len {
        // SAFETY: `i + 8 <= len` keeps the 8 lanes inside both extents; `map` is
        // only called from `avx2_act_f32`, whose caller guarantees AVX2 and FMA, as
        // `a.v` requires; each block is loaded before it is stored, so an exact
        // alias is fine.
        unsafe { _mm256_storeu_ps(dst.add(i), a.v(_mm256_loadu_ps(src.add(i)))) };
        i += 8;
    }
    while i < len {
        // SAFETY: `i < len`, inside both caller-promised extents; element `i` is
        // read before it is written.
        unsafe { *dst.add(i) = a.s(*src.add(i)) };
        i += 1;
    }
}

macro_rules! act8 {
    ($name:ident, |$x:ident| $v:expr, $s:expr) => {
        struct $name;
        impl Act8 for $name {
            #[inline(always)]
            #[allow(unused_unsafe)]
            unsafe fn v(&self, $x: __m256) -> __m256 {
                // SAFETY: the lane expression only uses AVX intrinsics on registers (no
                // memory access), and the `Act8::v` contract guarantees AVX2 and FMA.
                unsafe { $v }
            }
            #[inline(always)]
            fn s(&self, x: f32) -> f32 {
                $s(x)
            }
        }
    };
}

act8!(Identity, |x| x, math::identity);
// relu: x < 0 ? 0 : x  ==  0 > x ? 0 : x.
act8!(Relu, |x| _mm256_max_ps(_mm256_setzero_ps(), x), math::relu);
act8!(Abs, |x| _mm256_andnot_ps(_mm256_set1_ps(-0.0), x), math::abs);
act8!(Neg, |x| _mm256_xor_ps(_mm256_set1_ps(-0.0), x), math::neg);
act8!(Square, |x| _mm256_mul_ps(x, x), math::square);
act8!(Recip, |x| _mm256_div_ps(_mm256_set1_ps(1.0), x), math::recip);
act8!(Sqrt, |x| _mm256_sqrt_ps(x), math::sqrt);
act8!(Rsqrt, |x| _mm256_div_ps(_mm256_set1_ps(1.0), _mm256_sqrt_ps(x)), math::rsqrt);
act8!(Floor, |x| _mm256_round_ps::<{ _MM_FROUND_TO_NEG_INF | _MM_FROUND_NO_EXC }>(x), math::floor);
act8!(Ceil, |x| _mm256_round_ps::<{ _MM_FROUND_TO_POS_INF | _MM_FROUND_NO_EXC }>(x), math::ceil);
act8!(Round, |x| _mm256_round_ps::<{ _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC }>(x), math::round);
act8!(
    Sign,
    |x| {
        let zero = _mm256_setzero_ps();
        let pos = _mm256_cmp_ps::<_CMP_GT_OQ>(x, zero);
        let neg = _mm256_cmp_ps::<_CMP_LT_OQ>(x, zero);
        let r = _mm256_blendv_ps(x, _mm256_set1_ps(1.0), pos);
        _mm256_blendv_ps(r, _mm256_set1_ps(-1.0), neg)
    },
    math::sign
);
act8!(Not, |x| _mm256_and_ps(_mm256_cmp_ps::<_CMP_EQ_OQ>(x, _mm256_setzero_ps()), _mm256_set1_ps(1.0)), math::not);

// softsign: x / (1 + |x|), with infinite lanes set to +-1 (the limit).
act8!(
    Softsign,
    |x| {
        let sign = _mm256_set1_ps(-0.0);
        let ax = _mm256_andnot_ps(sign, x);
        let q = _mm256_div_ps(x, _mm256_add_ps(_mm256_set1_ps(1.0), ax));
        let inf = _mm256_cmp_ps::<_CMP_EQ_OQ>(ax, _mm256_set1_ps(f32::INFINITY));
        let one = _mm256_or_ps(_mm256_and_ps(sign, x), _mm256_set1_ps(1.0));
        _mm256_blendv_ps(q, one, inf)
    },
    math::softsign
);

/// `hard_sigmoid` lanes: `t = 1 < y ? 1 : y; 0 > t ? 0 : t` with
/// `y = alpha * x + beta` (a multiply then an add, as `math`).
#[inline(always)]
unsafe fn hard_sigmoid8(x: __m256, alpha: __m256, beta: __m256) -> __m256 {
    // SAFETY: register-only AVX intrinsics; only called from `Act8::v`
    // implementations, whose contract guarantees AVX2 and FMA.
    unsafe {
        let y = _mm256_add_ps(_mm256_mul_ps(alpha, x), beta);
        let t = _mm256_min_ps(_mm256_set1_ps(1.0), y);
        _mm256_max_ps(_mm256_setzero_ps(), t)
    }
}

struct HardSwish;
impl Act8 for HardSwish {
    #[inline(always)]
    unsafe fn v(&self, x: __m256) -> __m256 {
        // SAFETY: register-only AVX intrinsics and `hard_sigmoid8`; the `Act8::v`
        // contract guarantees AVX2 and FMA.
        unsafe {
            let hs = hard_sigmoid8(x, _mm256_set1_ps(1.0 / 6.0), _mm256_set1_ps(0.5));
            // -inf lanes give -0 (the limit), as `math::hard_swish`.
            let ninf = _mm256_cmp_ps::<_CMP_EQ_OQ>(x, _mm256_set1_ps(f32::NEG_INFINITY));
            _mm256_blendv_ps(_mm256_mul_ps(x, hs), _mm256_set1_ps(-0.0), ninf)
        }
    }
    #[inline(always)]
    fn s(&self, x: f32) -> f32 {
        math::hard_swish(x)
    }
}

struct HardSigmoid {
    alpha: f32,
    beta: f32,
}
impl Act8 for HardSigmoid {
    #[inline(always)]
    unsafe fn v(&self, x: __m256) -> __m256 {
        // SAFETY: `hard_sigmoid8` and `_mm256_set1_ps` need AVX, which the
        // `Act8::v` contract guarantees.
        unsafe { hard_sigmoid8(x, _mm256_set1_ps(self.alpha), _mm256_set1_ps(self.beta)) }
    }
    #[inline(always)]
    fn s(&self, x: f32) -> f32 {
        math::hard_sigmoid(x, self.alpha, self.beta)
    }
}

struct LeakyRelu {
    alpha: f32,
}
impl Act8 for LeakyRelu {
    #[inline(always)]
    unsafe fn v(&self, x: __m256) -> __m256 {
        // SAFETY: register-only AVX intrinsics; the `Act8::v` contract guarantees
        // AVX2 and FMA.
        unsafe {
            let neg = _mm256_cmp_ps::<_CMP_LT_OQ>(x, _mm256_setzero_ps());
            _mm256_blendv_ps(x, _mm256_mul_ps(_mm256_set1_ps(self.alpha), x), neg)
        }
    }
    #[inline(always)]
    fn s(&self, x: f32) -> f32 {
        math::leaky_relu(x, self.alpha)
    }
}

struct ThresholdedRelu {
    alpha: f32,
}
impl Act8 for ThresholdedRelu {
    #[inline(always)]
    unsafe fn v(&self, x: __m256) -> __m256 {
        // SAFETY: register-only AVX intrinsics; the `Act8::v` contract guarantees
        // AVX2 and FMA.
        unsafe {
            // x > alpha ? x : +0 (false for NaN, as `math`).
            let keep = _mm256_cmp_ps::<_CMP_GT_OQ>(x, _mm256_set1_ps(self.alpha));
            _mm256_and_ps(keep, x)
        }
    }
    #[inline(always)]
    fn s(&self, x: f32) -> f32 {
        math::thresholded_relu(x, self.alpha)
    }
}

struct Shrink {
    bias: f32,
    lambd: f32,
}
impl Act8 for Shrink {
    #[inline(always)]
    unsafe fn v(&self, x: __m256) -> __m256 {
        // SAFETY: register-only AVX intrinsics; the `Act8::v` contract guarantees
        // AVX2 and FMA.
        unsafe {
            let bias = _mm256_set1_ps(self.bias);
            // x < -lambd wins over x > lambd (a negative lambd makes both
            // true), and neither (or NaN) gives +0, as `math::shrink`.
            let lo = _mm256_cmp_ps::<_CMP_LT_OQ>(x, _mm256_set1_ps(-self.lambd));
            let hi = _mm256_cmp_ps::<_CMP_GT_OQ>(x, _mm256_set1_ps(self.lambd));
            let r = _mm256_and_ps(hi, _mm256_sub_ps(x, bias));
            _mm256_blendv_ps(r, _mm256_add_ps(x, bias), lo)
        }
    }
    #[inline(always)]
    fn s(&self, x: f32) -> f32 {
        math::shrink(x, self.bias, self.lambd)
    }
}

struct Clip {
    min: f32,
    max: f32,
}
impl Act8 for Clip {
    #[inline(always)]
    unsafe fn v(&self, x: __m256) -> __m256 {
        // SAFETY: register-only AVX intrinsics; the `Act8::v` contract guarantees
        // AVX2 and FMA.
        unsafe {
            // x < min ? min : x  ==  min > x ? min : x; then t > max ? max : t.
            let t = _mm256_max_ps(_mm256_set1_ps(self.min), x);
            _mm256_min_ps(_mm256_set1_ps(self.max), t)
        }
    }
    #[inline(always)]
    fn s(&self, x: f32) -> f32 {
        math::clip(x, self.min, self.max)
    }
}

/// `dst[i] = act(src[i])` for an activation [`supports`] accepts; any
/// other kind falls back to the scalar kernel.
///
/// # Safety
/// AVX2 and FMA available; `src` readable and `dst` writable for `len`
/// f32; `dst == src` or no overlap.
#[target_feature(enable = "avx2,fma")]
pub(super) unsafe fn avx2_act_f32(act: ActKind, src: *const f32, dst: *mut f32, len: usize) {
    // SAFETY: the caller guarantees AVX2 and FMA, and `len`-element extents
    // with `dst == src` or no overlap: what `map` and `gelu_map` require
    // (`scalar_act_f32` needs only the extents and aliasing).
    unsafe {
        match act {
            ActKind::Identity => map(&Identity, src, dst, len),
            ActKind::Relu => map(&Relu, src, dst, len),
            ActKind::Abs => map(&Abs, src, dst, len),
            ActKind::Neg => map(&Neg, src, dst, len),
            ActKind::Square => map(&Square, src, dst, len),
            ActKind::Recip => map(&Recip, src, dst, len),
            ActKind::Sqrt => map(&Sqrt, src, dst, len),
            ActKind::Rsqrt => map(&Rsqrt, src, dst, len),
            ActKind::Floor => map(&Floor, src, dst, len),
            ActKind::Ceil => map(&Ceil, src, dst, len),
            ActKind::Round => map(&Round, src, dst, len),
            ActKind::Sign => map(&Sign, src, dst, len),
            ActKind::Softsign => map(&Softsign, src, dst, len),
            ActKind::ThresholdedRelu { alpha } => map(&ThresholdedRelu { alpha }, src, dst, len),
            ActKind::Shrink { bias, lambd } => map(&Shrink { bias, lambd }, src, dst, len),
            ActKind::Not => map(&Not, src, dst, len),
            ActKind::HardSwish => map(&HardSwish, src, dst, len),
            ActKind::HardSigmoid { alpha, beta } => map(&HardSigmoid { alpha, beta }, src, dst, len),
            ActKind::LeakyRelu { alpha } => map(&LeakyRelu { alpha }, src, dst, len),
            ActKind::Clip { min, max } => map(&Clip { min, max }, src, dst, len),
            ActKind::Gelu => super::transcendental::avx2_gelu_f32(src, dst, len),
            // No exact vector form: scalar. `act_with` sends the kinds
            // `transcendental::supports` to their approximate forms
            // before it gets here.
            ActKind::GeluTanh
            | ActKind::Silu
            | ActKind::Sigmoid
            | ActKind::Tanh
            | ActKind::Exp
            | ActKind::Log
            | ActKind::Erf
            | ActKind::Softplus
            | ActKind::Mish
            | ActKind::Sin
            | ActKind::Cos
            | ActKind::Tan
            | ActKind::Asin
            | ActKind::Acos
            | ActKind::Atan
            | ActKind::Sinh
            | ActKind::Cosh
            | ActKind::Asinh
            | ActKind::Acosh
            | ActKind::Atanh
            | ActKind::Elu { .. }
            | ActKind::Selu { .. }
            | ActKind::Celu { .. } => super::scalar_act_f32(act, src, dst, len),
        }
    }
}
