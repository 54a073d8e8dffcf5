//! Scalar element functions: the single definition of every activation
//! and binary operator.
//!
//! The interpreter, the scalar kernels, the fused `ElementwiseRegion` loops
//! of generated code and GEMM epilogues all call these, so they agree bit
//! for bit. SIMD kernels are only used for functions whose vector form is
//! provably the same IEEE operations in the same order (see
//! `kernels::activation` and `kernels::elementwise`).
//!
//! Names follow the `.sched` spellings: an activation `act` is `act(x,
//! params...)` (`relu(x)`, `clip(x, min, max)`), a binary operator `op` is
//! `{op}_f32(a, b)` / `{op}_i64(a, b)` (`add_f32`, `bit_and_i64`).
//!
//! NaN conventions: activations propagate NaN unless stated (`not` maps it
//! to 0, `relu`/`clip` keep it); `max_f32`/`min_f32` ignore a NaN operand
//! like `f32::max`/`f32::min`.

pub use rlx_core::{ActKind, BinaryOp};

// ---------------------------------------------------------------- erf ----

/// Chebyshev coefficients of `erf(sqrt(s)) / sqrt(s)` on `s` in `[0, 1]`
/// (interpolation at 10 first-kind nodes; relative error below 3e-14).
const ERF_SMALL: [f64; 10] = [
    0.9754769393826542,
    -0.1422612051037134,
    0.010035582187599746,
    -0.0005768764699764616,
    2.7419931252192774e-05,
    -1.1043175513369973e-06,
    3.848875487211245e-08,
    -1.1808577227157003e-09,
    3.233439072047872e-11,
    -7.979061855678537e-13,
];

/// Chebyshev coefficients of `erfc(z) * exp(z^2)` on `z` in `[1, 2]`
/// (12 nodes; relative error below 1e-12).
const ERFC_1_2: [f64; 12] = [
    0.33142728163945195,
    -0.08500213770674313,
    0.009951127341466018,
    -0.0010810888102207779,
    0.00011023243631187267,
    -1.0636830518292081e-05,
    9.775012680031854e-07,
    -8.597922876441011e-08,
    7.267708296287978e-09,
    -5.923540917033657e-10,
    4.6682613793110526e-11,
    -3.547135964584077e-12,
];

/// Chebyshev coefficients of `erfc(z) * exp(z^2)` on `z` in `[2, 4]`
/// (14 nodes; relative error below 1e-12).
const ERFC_2_4: [f64; 14] = [
    0.18742956902622407,
    -0.05794652883669099,
    0.008595247387396516,
    -0.0012284613640242217,
    0.0001697436668617761,
    -2.273832933690529e-05,
    2.9598443787106e-06,
    -3.7513575585980596e-07,
    4.637282874364601e-08,
    -5.599455593641167e-09,
    6.613159186930062e-10,
    -7.648239977850072e-11,
    8.669656262735463e-12,
    -9.531775170744184e-13,
];

/// Chebyshev coefficients of `z * erfc(z) * exp(z^2)` as a function of
/// `t = 1 / z^2` on `z` in `[4, 10.5]` (10 nodes; relative error below
/// 1e-13). The function tends to `1/sqrt(pi)` and is smooth in `t`.
const ERFC_4_INF: [f64; 10] = [
    0.5547122843469251,
    -0.006830278826992475,
    0.00011898424781624506,
    -3.2741718422046873e-06,
    1.2003897774670592e-07,
    -5.403393610325935e-09,
    2.84725376609174e-10,
    -1.702650243018411e-11,
    1.1310175018763856e-12,
    -8.120726313620708e-14,
];

/// Past this `erfc(z) < 1e-49`: zero for any f32 result built from it.
const ERFC_ZERO_FROM: f64 = 10.5;

/// Sum of `c[j] * T_j(u)` for `u` in `[-1, 1]` (Clenshaw's recurrence).
#[inline]
fn chebyshev(c: &[f64], u: f64) -> f64 {
    let (mut b1, mut b2) = (0.0f64, 0.0f64);
    for &cj in c[1..].iter().rev() {
        let b0 = 2.0 * u * b1 - b2 + cj;
        b2 = b1;
        b1 = b0;
    }
    u * b1 - b2 + c[0]
}

/// `erfc(z)` for `z >= 1`, relative error below ~1e-12.
#[inline]
fn erfc_tail_f64(z: f64) -> f64 {
    if z >= ERFC_ZERO_FROM {
        0.0
    } else if z >= 4.0 {
        let t = 1.0 / (z * z);
        let (lo, hi) = (1.0 / (ERFC_ZERO_FROM * ERFC_ZERO_FROM), 1.0 / 16.0);
        let u = (2.0 * t - (lo + hi)) / (hi - lo);
        (-z * z).exp() / z * chebyshev(&ERFC_4_INF, u)
    } else if z >= 2.0 {
        (-z * z).exp() * chebyshev(&ERFC_2_4, z - 3.0)
    } else {
        (-z * z).exp() * chebyshev(&ERFC_1_2, 2.0 * z - 3.0)
    }
}

/// `erf(x)` in f64 with relative error below ~1e-12 (enough that the f32
/// results built on it are faithfully rounded).
#[inline]
fn erf_f64(x: f64) -> f64 {
    let z = x.abs();
    if z < 1.0 {
        x * chebyshev(&ERF_SMALL, 2.0 * z * z - 1.0)
    } else if z.is_nan() {
        x
    } else {
        (1.0 - erfc_tail_f64(z)).copysign(x)
    }
}

/// `erfc(x)` in f64 with relative error below ~1e-12.
#[inline]
fn erfc_f64(x: f64) -> f64 {
    if x >= 1.0 {
        erfc_tail_f64(x)
    } else if x > -1.0 {
        1.0 - erf_f64(x)
    } else if x.is_nan() {
        x
    } else {
        2.0 - erfc_tail_f64(-x)
    }
}

/// The error function. Evaluated in f64 from Chebyshev fits, so the f32
/// result is within 1 ulp of the true value (tested against an f64 series).
#[inline]
pub fn erf(x: f32) -> f32 {
    erf_f64(f64::from(x)) as f32
}

/// The complementary error function `1 - erf(x)`, accurate (within 1 ulp)
/// also where it is tiny, unlike `1.0 - erf(x)`.
#[inline]
pub fn erfc(x: f32) -> f32 {
    erfc_f64(f64::from(x)) as f32
}

// ---------------------------------------------------------- activations ----

/// `x`.
#[inline]
pub fn identity(x: f32) -> f32 {
    x
}

/// `0` for `x < 0`, else `x` (NaN and `-0.0` pass through).
#[inline]
pub fn relu(x: f32) -> f32 {
    if x < 0.0 {
        0.0
    } else {
        x
    }
}

/// `alpha * x` for `x < 0`, else `x`.
#[inline]
pub fn leaky_relu(x: f32, alpha: f32) -> f32 {
    if x < 0.0 {
        alpha * x
    } else {
        x
    }
}

/// `alpha * (exp(x) - 1)` for `x < 0`, else `x`.
#[inline]
pub fn elu(x: f32, alpha: f32) -> f32 {
    if x < 0.0 {
        alpha * x.exp_m1()
    } else {
        x
    }
}

/// Clamps to `[min, max]` as `t = x < min ? min : x; t > max ? max : t`, so
/// NaN passes through and `min > max` gives `max`.
#[inline]
pub fn clip(x: f32, min: f32, max: f32) -> f32 {
    let t = if x < min { min } else { x };
    if t > max {
        max
    } else {
        t
    }
}

/// `gamma * x` for `x > 0`, else `gamma * (alpha * exp_m1(x))` (ONNX
/// `Selu`; `exp_m1` keeps the small negative tail exact).
#[inline]
pub fn selu(x: f32, alpha: f32, gamma: f32) -> f32 {
    if x > 0.0 {
        gamma * x
    } else {
        gamma * (alpha * x.exp_m1())
    }
}

/// `x` for `x > 0`, else `alpha * exp_m1(x / alpha)` (ONNX `Celu`,
/// `max(0, x) + min(0, alpha * (exp(x / alpha) - 1))`).
#[inline]
pub fn celu(x: f32, alpha: f32) -> f32 {
    if x > 0.0 {
        x
    } else {
        alpha * (x / alpha).exp_m1()
    }
}

/// `x` for `x > alpha`, else `0`: NaN gives 0, as the ONNX formula
/// (`x > alpha` is false) and its reference do.
#[inline]
pub fn thresholded_relu(x: f32, alpha: f32) -> f32 {
    if x > alpha {
        x
    } else {
        0.0
    }
}

/// ONNX `Shrink`: `x + bias` for `x < -lambd`, else `x - bias` for
/// `x > lambd`, else `0` (so NaN gives 0, as the spec's formula).
#[inline]
pub fn shrink(x: f32, bias: f32, lambd: f32) -> f32 {
    if x < -lambd {
        x + bias
    } else if x > lambd {
        x - bias
    } else {
        0.0
    }
}

/// `max(0, min(1, alpha * x + beta))` with two roundings (no fused
/// multiply-add) and NaN passing through.
#[inline]
pub fn hard_sigmoid(x: f32, alpha: f32, beta: f32) -> f32 {
    let y = alpha * x + beta;
    let t = if y > 1.0 { 1.0 } else { y };
    if t < 0.0 {
        0.0
    } else {
        t
    }
}

/// ONNX `HardSwish`: `x * hard_sigmoid(x, 1/6, 0.5)`; `hard_swish(-inf) =
/// -0`, its limit (the product alone would be NaN).
#[inline]
pub fn hard_swish(x: f32) -> f32 {
    if x == f32::NEG_INFINITY {
        return -0.0;
    }
    x * hard_sigmoid(x, 1.0 / 6.0, 0.5)
}

/// `1 / (1 + exp(-x))`, evaluated as `e / (1 + e)` with `e = exp(x)` for
/// negative `x`, so `exp` never overflows and tiny results keep their
/// precision.
#[inline]
pub fn sigmoid(x: f32) -> f32 {
    if x >= 0.0 {
        1.0 / (1.0 + (-x).exp())
    } else {
        let e = x.exp();
        e / (1.0 + e)
    }
}

/// `x * sigmoid(x)`: `x / (1 + exp(-x))` for `x >= 0`, `x * e / (1 + e)` with
/// `e = exp(x)` below (no overflow); `silu(-inf) = -0`, its limit.
#[inline]
pub fn silu(x: f32) -> f32 {
    if x >= 0.0 {
        x / (1.0 + (-x).exp())
    } else if x == f32::NEG_INFINITY {
        -0.0
    } else {
        let e = x.exp();
        x * e / (1.0 + e)
    }
}

/// Exact GELU `x * Phi(x) = 0.5 * x * erfc(-x / sqrt(2))`, evaluated in f64
/// (within 1 ulp, also in the far negative tail where `1 + erf` would
/// cancel); `gelu(-inf) = -0`.
#[inline]
pub fn gelu(x: f32) -> f32 {
    if x == f32::NEG_INFINITY {
        return -0.0;
    }
    let x = f64::from(x);
    (0.5 * x * erfc_f64(-x * std::f64::consts::FRAC_1_SQRT_2)) as f32
}

/// `2 * sqrt(2 / pi)`.
const GELU_TANH_2C: f32 = (2.0 * std::f64::consts::FRAC_2_SQRT_PI * std::f64::consts::FRAC_1_SQRT_2) as f32;

/// The tanh approximation `0.5 * x * (1 + tanh(sqrt(2/pi) * (x + 0.044715 x^3)))`,
/// evaluated in f32 as the identical `x * sigmoid(2u)` (as [`silu`] does
/// it), which does not cancel for negative `x`; `gelu_tanh(-inf) = -0`.
#[inline]
pub fn gelu_tanh(x: f32) -> f32 {
    let u2 = GELU_TANH_2C * (x + 0.044715 * x * x * x);
    if u2 >= 0.0 {
        x / (1.0 + (-u2).exp())
    } else if x == f32::NEG_INFINITY {
        -0.0
    } else {
        let e = u2.exp();
        x * e / (1.0 + e)
    }
}

/// `tanh(x)`.
#[inline]
pub fn tanh(x: f32) -> f32 {
    x.tanh()
}

/// `exp(x)`.
#[inline]
pub fn exp(x: f32) -> f32 {
    x.exp()
}

/// Natural logarithm (`-inf` at 0, NaN below).
#[inline]
pub fn log(x: f32) -> f32 {
    x.ln()
}

/// Square root (NaN below 0).
#[inline]
pub fn sqrt(x: f32) -> f32 {
    x.sqrt()
}

/// `1 / sqrt(x)`, two correctly rounded operations (not an estimate).
#[inline]
pub fn rsqrt(x: f32) -> f32 {
    1.0 / x.sqrt()
}

/// `-x` (flips the sign bit, also of NaN and zero).
#[inline]
pub fn neg(x: f32) -> f32 {
    -x
}

/// `|x|` (clears the sign bit).
#[inline]
pub fn abs(x: f32) -> f32 {
    x.abs()
}

/// `1 / x`.
#[inline]
pub fn recip(x: f32) -> f32 {
    1.0 / x
}

/// `x * x`.
#[inline]
pub fn square(x: f32) -> f32 {
    x * x
}

/// `ln(1 + exp(x))`, evaluated as `max(x, 0) + ln_1p(exp(-|x|))` so it
/// neither overflows nor loses the small tail.
#[inline]
pub fn softplus(x: f32) -> f32 {
    let pos = if x > 0.0 { x } else { 0.0 };
    pos + (-x.abs()).exp().ln_1p()
}

/// `x * tanh(softplus(x))`; `mish(-inf) = -0`.
#[inline]
pub fn mish(x: f32) -> f32 {
    if x == f32::NEG_INFINITY {
        return -0.0;
    }
    x * softplus(x).tanh()
}

/// `sin(x)`.
#[inline]
pub fn sin(x: f32) -> f32 {
    x.sin()
}

/// `cos(x)`.
#[inline]
pub fn cos(x: f32) -> f32 {
    x.cos()
}

/// `tan(x)`, evaluated in f64 and rounded once (so within half an ulp
/// plus the f64 function's own error, and finite wherever the result is:
/// the f32 forms of some of these overflow in intermediate steps).
#[inline]
pub fn tan(x: f32) -> f32 {
    f64::from(x).tan() as f32
}

/// `asin(x)`, evaluated in f64 and rounded once.
#[inline]
pub fn asin(x: f32) -> f32 {
    f64::from(x).asin() as f32
}

/// `acos(x)`, evaluated in f64 and rounded once.
#[inline]
pub fn acos(x: f32) -> f32 {
    f64::from(x).acos() as f32
}

/// `atan(x)`, evaluated in f64 and rounded once.
#[inline]
pub fn atan(x: f32) -> f32 {
    f64::from(x).atan() as f32
}

/// `sinh(x)`, evaluated in f64 and rounded once.
#[inline]
pub fn sinh(x: f32) -> f32 {
    f64::from(x).sinh() as f32
}

/// `cosh(x)`, evaluated in f64 and rounded once.
#[inline]
pub fn cosh(x: f32) -> f32 {
    f64::from(x).cosh() as f32
}

/// `asinh(x)`, evaluated in f64 and rounded once.
#[inline]
pub fn asinh(x: f32) -> f32 {
    f64::from(x).asinh() as f32
}

/// `acosh(x)`, evaluated in f64 and rounded once.
#[inline]
pub fn acosh(x: f32) -> f32 {
    f64::from(x).acosh() as f32
}

/// `atanh(x)`, evaluated in f64 and rounded once.
#[inline]
pub fn atanh(x: f32) -> f32 {
    f64::from(x).atanh() as f32
}

/// Rounds toward minus infinity.
#[inline]
pub fn floor(x: f32) -> f32 {
    x.floor()
}

/// Rounds toward plus infinity.
#[inline]
pub fn ceil(x: f32) -> f32 {
    x.ceil()
}

/// Rounds to the nearest integer, ties to even (ONNX `Round`).
#[inline]
pub fn round(x: f32) -> f32 {
    x.round_ties_even()
}

/// `1` above 0, `-1` below, else `x` itself (keeps `-0.0` and NaN).
#[inline]
pub fn sign(x: f32) -> f32 {
    if x > 0.0 {
        1.0
    } else if x < 0.0 {
        -1.0
    } else {
        x
    }
}

/// `x / (1 + |x|)`; `softsign(±inf) = ±1`, its limit (the quotient alone
/// would be NaN).
#[inline]
pub fn softsign(x: f32) -> f32 {
    if x.is_infinite() {
        return 1f32.copysign(x);
    }
    x / (1.0 + x.abs())
}

/// Logical not of a 0/1 value held in f32: `1` for `±0`, else `0` (NaN
/// gives 0).
#[inline]
pub fn not(x: f32) -> f32 {
    if x == 0.0 {
        1.0
    } else {
        0.0
    }
}

/// Applies an activation. With a constant `act` (generated code) the match
/// folds away; the interpreter and kernels that take the kind at run time
/// use it per element only in scalar fallbacks.
#[inline]
pub fn act_f32(act: ActKind, x: f32) -> f32 {
    match act {
        ActKind::Identity => identity(x),
        ActKind::Relu => relu(x),
        ActKind::Gelu => gelu(x),
        ActKind::GeluTanh => gelu_tanh(x),
        ActKind::Silu => silu(x),
        ActKind::Sigmoid => sigmoid(x),
        ActKind::Tanh => tanh(x),
        ActKind::Exp => exp(x),
        ActKind::Log => log(x),
        ActKind::Sqrt => sqrt(x),
        ActKind::Rsqrt => rsqrt(x),
        ActKind::Neg => neg(x),
        ActKind::Abs => abs(x),
        ActKind::Recip => recip(x),
        ActKind::Square => square(x),
        ActKind::Erf => erf(x),
        ActKind::Softplus => softplus(x),
        ActKind::Mish => mish(x),
        ActKind::HardSwish => hard_swish(x),
        ActKind::Sin => sin(x),
        ActKind::Cos => cos(x),
        ActKind::Tan => tan(x),
        ActKind::Asin => asin(x),
        ActKind::Acos => acos(x),
        ActKind::Atan => atan(x),
        ActKind::Sinh => sinh(x),
        ActKind::Cosh => cosh(x),
        ActKind::Asinh => asinh(x),
        ActKind::Acosh => acosh(x),
        ActKind::Atanh => atanh(x),
        ActKind::Floor => floor(x),
        ActKind::Ceil => ceil(x),
        ActKind::Round => round(x),
        ActKind::Sign => sign(x),
        ActKind::Softsign => softsign(x),
        ActKind::Not => not(x),
        ActKind::LeakyRelu { alpha } => leaky_relu(x, alpha),
        ActKind::Elu { alpha } => elu(x, alpha),
        ActKind::Selu { alpha, gamma } => selu(x, alpha, gamma),
        ActKind::Celu { alpha } => celu(x, alpha),
        ActKind::ThresholdedRelu { alpha } => thresholded_relu(x, alpha),
        ActKind::Shrink { bias, lambd } => shrink(x, bias, lambd),
        ActKind::HardSigmoid { alpha, beta } => hard_sigmoid(x, alpha, beta),
        ActKind::Clip { min, max } => clip(x, min, max),
    }
}

// ------------------------------------------------------- binary f32 ----

/// `a + b`.
#[inline]
pub fn add_f32(a: f32, b: f32) -> f32 {
    a + b
}

/// `a - b`.
#[inline]
pub fn sub_f32(a: f32, b: f32) -> f32 {
    a - b
}

/// `a * b`.
#[inline]
pub fn mul_f32(a: f32, b: f32) -> f32 {
    a * b
}

/// `a / b` (IEEE: `x / 0` is `±inf` or NaN).
#[inline]
pub fn div_f32(a: f32, b: f32) -> f32 {
    a / b
}

/// The larger of `a` and `b`, ignoring a NaN operand like `f32::max`.
/// Spelled out (rather than `f32::max`, whose choice between `-0.0` and
/// `+0.0` is unspecified) so SIMD kernels reproduce it exactly: equal
/// operands, including `±0`, give `b`.
#[inline]
pub fn max_f32(a: f32, b: f32) -> f32 {
    if b.is_nan() || a > b {
        a
    } else {
        b
    }
}

/// The smaller of `a` and `b`, ignoring a NaN operand like `f32::min`;
/// equal operands, including `±0`, give `b`.
#[inline]
pub fn min_f32(a: f32, b: f32) -> f32 {
    if b.is_nan() || a < b {
        a
    } else {
        b
    }
}

/// `a^b` (`f32::powf`).
#[inline]
pub fn pow_f32(a: f32, b: f32) -> f32 {
    a.powf(b)
}

/// Truncated remainder `a % b` (sign of `a`, as C `fmodf`).
#[inline]
pub fn mod_f32(a: f32, b: f32) -> f32 {
    a % b
}

/// Floored remainder: `a % b` moved by `b` when their signs differ, so
/// the result has the sign of `b` (numpy `mod`; a zero result is a zero
/// of `b`'s sign).
#[inline]
pub fn floor_mod_f32(a: f32, b: f32) -> f32 {
    let r = a % b;
    if r == 0.0 {
        0f32.copysign(b)
    } else if (r < 0.0) != (b < 0.0) {
        r + b
    } else {
        r
    }
}

/// `atan2(a, b)`.
#[inline]
pub fn atan2_f32(a: f32, b: f32) -> f32 {
    a.atan2(b)
}

/// Bitwise and of the operands truncated to i64 (saturating, NaN to 0),
/// back to f32.
#[inline]
pub fn bit_and_f32(a: f32, b: f32) -> f32 {
    bit_and_i64(a as i64, b as i64) as f32
}

/// Bitwise or through i64, as [`bit_and_f32`].
#[inline]
pub fn bit_or_f32(a: f32, b: f32) -> f32 {
    bit_or_i64(a as i64, b as i64) as f32
}

/// Bitwise xor through i64, as [`bit_and_f32`].
#[inline]
pub fn bit_xor_f32(a: f32, b: f32) -> f32 {
    bit_xor_i64(a as i64, b as i64) as f32
}

/// `a` truncated to i64 shifted left by `b as u32` (saturating; the shift
/// wraps modulo 64), back to f32.
#[inline]
pub fn shl_f32(a: f32, b: f32) -> f32 {
    (a as i64).wrapping_shl(b as u32) as f32
}

/// Arithmetic right shift through i64, as [`shl_f32`].
#[inline]
pub fn shr_f32(a: f32, b: f32) -> f32 {
    (a as i64).wrapping_shr(b as u32) as f32
}

/// Applies a binary operator to f32 operands.
#[inline]
pub fn binary_f32(op: BinaryOp, a: f32, b: f32) -> f32 {
    match op {
        BinaryOp::Add => add_f32(a, b),
        BinaryOp::Sub => sub_f32(a, b),
        BinaryOp::Mul => mul_f32(a, b),
        BinaryOp::Div => div_f32(a, b),
        BinaryOp::Max => max_f32(a, b),
        BinaryOp::Min => min_f32(a, b),
        BinaryOp::Pow => pow_f32(a, b),
        BinaryOp::Mod => mod_f32(a, b),
        BinaryOp::Atan2 => atan2_f32(a, b),
        BinaryOp::BitAnd => bit_and_f32(a, b),
        BinaryOp::BitOr => bit_or_f32(a, b),
        BinaryOp::BitXor => bit_xor_f32(a, b),
        BinaryOp::Shl => shl_f32(a, b),
        BinaryOp::Shr => shr_f32(a, b),
        BinaryOp::FloorMod => floor_mod_f32(a, b),
    }
}

// ------------------------------------------------------- binary i64 ----

/// Wrapping `a + b`.
#[inline]
pub fn add_i64(a: i64, b: i64) -> i64 {
    a.wrapping_add(b)
}

/// Wrapping `a - b`.
#[inline]
pub fn sub_i64(a: i64, b: i64) -> i64 {
    a.wrapping_sub(b)
}

/// Wrapping `a * b`.
#[inline]
pub fn mul_i64(a: i64, b: i64) -> i64 {
    a.wrapping_mul(b)
}

/// Truncating `a / b`; division by zero gives 0 and `MIN / -1` wraps to
/// `MIN`, so no input traps.
#[inline]
pub fn div_i64(a: i64, b: i64) -> i64 {
    if b == 0 {
        0
    } else {
        a.wrapping_div(b)
    }
}

/// The larger of `a` and `b`.
#[inline]
pub fn max_i64(a: i64, b: i64) -> i64 {
    a.max(b)
}

/// The smaller of `a` and `b`.
#[inline]
pub fn min_i64(a: i64, b: i64) -> i64 {
    a.min(b)
}

/// `a^b` modulo 2^64 (wrapping); a negative exponent is clamped to 0, so
/// it gives 1.
#[inline]
pub fn pow_i64(a: i64, b: i64) -> i64 {
    // Square-and-multiply over the whole u64 exponent: exact modulo 2^64
    // for every exponent, where `wrapping_pow` takes only a u32.
    let mut exp = b.max(0) as u64;
    let (mut base, mut acc) = (a, 1i64);
    while exp > 0 {
        if exp & 1 == 1 {
            acc = acc.wrapping_mul(base);
        }
        base = base.wrapping_mul(base);
        exp >>= 1;
    }
    acc
}

/// Truncated remainder (sign of `a`); remainder by zero gives 0 and
/// `MIN % -1` gives 0, so no input traps.
#[inline]
pub fn mod_i64(a: i64, b: i64) -> i64 {
    if b == 0 {
        0
    } else {
        a.wrapping_rem(b)
    }
}

/// Floored remainder (sign of `b`, as Python's `%`); remainder by zero
/// gives 0 and `MIN % -1` gives 0, as [`mod_i64`]. Exact: `r + b` cannot
/// overflow because `r` and `b` have opposite signs.
#[inline]
pub fn floor_mod_i64(a: i64, b: i64) -> i64 {
    let r = mod_i64(a, b);
    if r != 0 && (r < 0) != (b < 0) {
        r + b
    } else {
        r
    }
}

/// `atan2` of the operands as f64, truncated back to i64.
#[inline]
pub fn atan2_i64(a: i64, b: i64) -> i64 {
    (a as f64).atan2(b as f64) as i64
}

/// `a & b`.
#[inline]
pub fn bit_and_i64(a: i64, b: i64) -> i64 {
    a & b
}

/// `a | b`.
#[inline]
pub fn bit_or_i64(a: i64, b: i64) -> i64 {
    a | b
}

/// `a ^ b`.
#[inline]
pub fn bit_xor_i64(a: i64, b: i64) -> i64 {
    a ^ b
}

/// `a << (b mod 64)`.
#[inline]
pub fn shl_i64(a: i64, b: i64) -> i64 {
    a.wrapping_shl(b as u32)
}

/// Arithmetic `a >> (b mod 64)`.
#[inline]
pub fn shr_i64(a: i64, b: i64) -> i64 {
    a.wrapping_shr(b as u32)
}

/// Applies a binary operator to i64 operands.
#[inline]
pub fn binary_i64(op: BinaryOp, a: i64, b: i64) -> i64 {
    match op {
        BinaryOp::Add => add_i64(a, b),
        BinaryOp::Sub => sub_i64(a, b),
        BinaryOp::Mul => mul_i64(a, b),
        BinaryOp::Div => div_i64(a, b),
        BinaryOp::Max => max_i64(a, b),
        BinaryOp::Min => min_i64(a, b),
        BinaryOp::Pow => pow_i64(a, b),
        BinaryOp::Mod => mod_i64(a, b),
        BinaryOp::Atan2 => atan2_i64(a, b),
        BinaryOp::BitAnd => bit_and_i64(a, b),
        BinaryOp::BitOr => bit_or_i64(a, b),
        BinaryOp::BitXor => bit_xor_i64(a, b),
        BinaryOp::Shl => shl_i64(a, b),
        BinaryOp::Shr => shr_i64(a, b),
        BinaryOp::FloorMod => floor_mod_i64(a, b),
    }
}

/// One step of a fused chain: `acc = op(acc, arg)` (or `op(arg, acc)` when
/// `reversed`) or `acc = act(acc)`. `input(n)` yields the current element
/// of region input `n`.
#[inline]
pub fn step_f32(step: &rlx_core::Step, acc: f32, input: impl Fn(usize) -> f32) -> f32 {
    use rlx_core::{Step, StepArg};
    match *step {
        Step::Act(act) => act_f32(act, acc),
        Step::Binary { op, arg, reversed } => {
            let v = match arg {
                StepArg::Input(n) => input(n),
                StepArg::Const(c) => c,
            };
            if reversed {
                binary_f32(op, v, acc)
            } else {
                binary_f32(op, acc, v)
            }
        }
    }
}
