//! Operator marker types: generated code names the operator of a binary or
//! comparison kernel as a type (`binary_same_f32::<ops::Add>`), so each
//! kernel is compiled for its operator and no loop matches on an enum per
//! element. The interpreter maps a `BinaryOp` / `CmpOp` to its marker with
//! one `match` per thunk.

#[cfg(target_arch = "aarch64")]
use std::arch::aarch64::*;
#[cfg(target_arch = "x86_64")]
use std::arch::x86_64::*;

use crate::math;
use rlx_core::{BinaryOp, CmpOp};

/// A binary operator: its f32 and i64 definitions (from `crate::math`) and,
/// where one is bit-exact, its SIMD form.
pub trait BinOp: Copy + Send + Sync + 'static {
    /// The operator this type stands for.
    const OP: BinaryOp;

    /// `op(a, b)` on f32.
    fn f32(a: f32, b: f32) -> f32;

    /// `op(a, b)` on i64.
    fn i64(a: i64, b: i64) -> i64;

    /// Whether [`BinOp::avx2`] is worth calling (a real vector form).
    #[cfg(target_arch = "x86_64")]
    const AVX2: bool = false;

    /// Eight lanes of `op`, bit-exact with [`BinOp::f32`]. The default
    /// applies the scalar definition lane by lane.
    ///
    /// # Safety
    /// Only called from code compiled with AVX2 enabled.
    #[cfg(target_arch = "x86_64")]
    #[inline(always)]
    unsafe fn avx2(a: __m256, b: __m256) -> __m256 {
        let (mut x, mut y) = ([0f32; 8], [0f32; 8]);
        // SAFETY: `x` and `y` are 8-f32 stack arrays (unaligned stores); the
        // caller runs with AVX2 (this method's contract).
        unsafe {
            _mm256_storeu_ps(x.as_mut_ptr(), a);
            _mm256_storeu_ps(y.as_mut_ptr(), b);
        }
        for (x, y) in x.iter_mut().zip(y) {
            *x = Self::f32(*x, y);
        }
        // SAFETY: `x` holds 8 f32 (unaligned load); AVX2 as above.
        unsafe { _mm256_loadu_ps(x.as_ptr()) }
    }

    /// Whether [`BinOp::neon`] is worth calling.
    #[cfg(target_arch = "aarch64")]
    const NEON: bool = false;

    /// Four lanes of `op`, bit-exact with [`BinOp::f32`]; the default
    /// applies the scalar definition lane by lane.
    ///
    /// # Safety
    /// NEON is always present on aarch64; callers pass any values.
    #[cfg(target_arch = "aarch64")]
    #[inline(always)]
    unsafe fn neon(a: float32x4_t, b: float32x4_t) -> float32x4_t {
        let (mut x, mut y) = ([0f32; 4], [0f32; 4]);
        // SAFETY: `x` and `y` are 4-f32 stack arrays; NEON is baseline on
        // aarch64.
        unsafe {
            vst1q_f32(x.as_mut_ptr(), a);
            vst1q_f32(y.as_mut_ptr(), b);
        }
        for (x, y) in x.iter_mut().zip(y) {
            *x = Self::f32(*x, y);
        }
        // SAFETY: `x` holds 4 f32; NEON is baseline on aarch64.
        unsafe { vld1q_f32(x.as_ptr()) }
    }
}

macro_rules! bin_op {
    ($(#[$doc:meta])* $name:ident, $op:ident, $f32:path, $i64:path
     $(, avx2: |$a:ident, $b:ident| $avx2:expr)? $(, neon: $neon:path)?) => {
        $(#[$doc])*
        #[derive(Clone, Copy, Debug, Default)]
        pub struct $name;
        impl BinOp for $name {
            const OP: BinaryOp = BinaryOp::$op;
            #[inline(always)]
            fn f32(a: f32, b: f32) -> f32 {
                $f32(a, b)
            }
            #[inline(always)]
            fn i64(a: i64, b: i64) -> i64 {
                $i64(a, b)
            }
            $(
                #[cfg(target_arch = "x86_64")]
                const AVX2: bool = true;
                #[cfg(target_arch = "x86_64")]
                #[inline(always)]
                unsafe fn avx2($a: __m256, $b: __m256) -> __m256 {
                    // SAFETY: the operator's lane expression only uses AVX intrinsics on
                    // registers, and the `BinOp::avx2` contract guarantees AVX2.
                    unsafe { $avx2 }
                }
            )?
            $(
                #[cfg(target_arch = "aarch64")]
                const NEON: bool = true;
                #[cfg(target_arch = "aarch64")]
                #[inline(always)]
                unsafe fn neon(a: float32x4_t, b: float32x4_t) -> float32x4_t {
                    // SAFETY: a NEON lane operation on registers; NEON is baseline on
                    // aarch64.
                    unsafe { $neon(a, b) }
                }
            )?
        }
    };
}

bin_op! {
    /// `a + b`.
    Add, Add, math::add_f32, math::add_i64, avx2: |a, b| _mm256_add_ps(a, b), neon: vaddq_f32
}
bin_op! {
    /// `a - b`.
    Sub, Sub, math::sub_f32, math::sub_i64, avx2: |a, b| _mm256_sub_ps(a, b), neon: vsubq_f32
}
bin_op! {
    /// `a * b`.
    Mul, Mul, math::mul_f32, math::mul_i64, avx2: |a, b| _mm256_mul_ps(a, b), neon: vmulq_f32
}
bin_op! {
    /// `a / b`.
    Div, Div, math::div_f32, math::div_i64, avx2: |a, b| _mm256_div_ps(a, b), neon: vdivq_f32
}
// `_mm256_max_ps(a, b)` is `a > b ? a : b`, which returns `b` when `b` is
// NaN; `math::max_f32` then takes `a`, so blend it back in for NaN lanes.
bin_op! {
    /// `math::max_f32` / `i64::max`.
    Max, Max, math::max_f32, math::max_i64,
    avx2: |a, b| _mm256_blendv_ps(_mm256_max_ps(a, b), a, _mm256_cmp_ps::<_CMP_UNORD_Q>(b, b))
}
bin_op! {
    /// `math::min_f32` / `i64::min`.
    Min, Min, math::min_f32, math::min_i64,
    avx2: |a, b| _mm256_blendv_ps(_mm256_min_ps(a, b), a, _mm256_cmp_ps::<_CMP_UNORD_Q>(b, b))
}
bin_op! {
    /// `a^b`.
    Pow, Pow, math::pow_f32, math::pow_i64
}
bin_op! {
    /// Truncated remainder.
    Mod, Mod, math::mod_f32, math::mod_i64
}
bin_op! {
    /// Floored remainder (sign of the divisor).
    FloorMod, FloorMod, math::floor_mod_f32, math::floor_mod_i64
}
bin_op! {
    /// `atan2(a, b)`.
    Atan2, Atan2, math::atan2_f32, math::atan2_i64
}
bin_op! {
    /// Bitwise and (f32 through i64).
    BitAnd, BitAnd, math::bit_and_f32, math::bit_and_i64
}
bin_op! {
    /// Bitwise or (f32 through i64).
    BitOr, BitOr, math::bit_or_f32, math::bit_or_i64
}
bin_op! {
    /// Bitwise xor (f32 through i64).
    BitXor, BitXor, math::bit_xor_f32, math::bit_xor_i64
}
bin_op! {
    /// Shift left (f32 through i64).
    Shl, Shl, math::shl_f32, math::shl_i64
}
bin_op! {
    /// Arithmetic shift right (f32 through i64).
    Shr, Shr, math::shr_f32, math::shr_i64
}

/// Calls `$body` with `$t` bound to the marker type of a `BinaryOp`: the
/// interpreter's one `match` from an operator value to a kernel instance.
macro_rules! with_bin_op {
    ($op:expr, $t:ident => $body:expr) => {{
        use $crate::kernels::elementwise::ops as __ops;
        match $op {
            ::rlx_core::BinaryOp::Add => {
                type $t = __ops::Add;
                $body
            }
            ::rlx_core::BinaryOp::Sub => {
                type $t = __ops::Sub;
                $body
            }
            ::rlx_core::BinaryOp::Mul => {
                type $t = __ops::Mul;
                $body
            }
            ::rlx_core::BinaryOp::Div => {
                type $t = __ops::Div;
                $body
            }
            ::rlx_core::BinaryOp::Max => {
                type $t = __ops::Max;
                $body
            }
            ::rlx_core::BinaryOp::Min => {
                type $t = __ops::Min;
                $body
            }
            ::rlx_core::BinaryOp::Pow => {
                type $t = __ops::Pow;
                $body
            }
            ::rlx_core::BinaryOp::Mod => {
                type $t = __ops::Mod;
                $body
            }
            ::rlx_core::BinaryOp::Atan2 => {
                type $t = __ops::Atan2;
                $body
            }
            ::rlx_core::BinaryOp::BitAnd => {
                type $t = __ops::BitAnd;
                $body
            }
            ::rlx_core::BinaryOp::BitOr => {
                type $t = __ops::BitOr;
                $body
            }
            ::rlx_core::BinaryOp::BitXor => {
                type $t = __ops::BitXor;
                $body
            }
            ::rlx_core::BinaryOp::Shl => {
                type $t = __ops::Shl;
                $body
            }
            ::rlx_core::BinaryOp::Shr => {
                type $t = __ops::Shr;
                $body
            }
            ::rlx_core::BinaryOp::FloorMod => {
                type $t = __ops::FloorMod;
                $body
            }
        }
    }};
}
pub(crate) use with_bin_op;

/// A comparison operator.
pub trait Cmp: Copy + Send + Sync + 'static {
    /// The operator this type stands for.
    const OP: CmpOp;

    /// `a op b` (IEEE for floats: every comparison with NaN is false except
    /// `Ne`).
    fn cmp<T: PartialOrd>(a: T, b: T) -> bool;
}

macro_rules! cmp_op {
    ($(#[$doc:meta])* $name:ident, |$a:ident, $b:ident| $e:expr) => {
        $(#[$doc])*
        #[derive(Clone, Copy, Debug, Default)]
        pub struct $name;
        impl Cmp for $name {
            const OP: CmpOp = CmpOp::$name;
            #[inline(always)]
            fn cmp<T: PartialOrd>($a: T, $b: T) -> bool {
                $e
            }
        }
    };
}

cmp_op! {
    /// `a == b`.
    Eq, |a, b| a == b
}
cmp_op! {
    /// `a != b`.
    Ne, |a, b| a != b
}
cmp_op! {
    /// `a < b`.
    Lt, |a, b| a < b
}
cmp_op! {
    /// `a <= b`.
    Le, |a, b| a <= b
}
cmp_op! {
    /// `a > b`.
    Gt, |a, b| a > b
}
cmp_op! {
    /// `a >= b`.
    Ge, |a, b| a >= b
}
