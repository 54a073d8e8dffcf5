//! The reference activation kernel: `math::act_f32` element by element,
//! with the activation chosen once per call rather than per element.

use crate::math;
use rlx_core::ActKind;

/// `dst[i] = f(src[i])`.
///
/// # Safety
/// `src` readable and `dst` writable for `len` f32; they are equal or do
/// not overlap.
#[inline(always)]
unsafe fn map(src: *const f32, dst: *mut f32, len: usize, f: impl Fn(f32) -> f32) {
    for i in 0..len {
        // SAFETY: `i < len`, inside both caller-promised extents; element `i` is
        // read before it is written, so an exact alias is fine.
        unsafe { *dst.add(i) = f(*src.add(i)) };
    }
}

/// `dst[i] = act(src[i])` for `i < len`.
///
/// # Safety
/// `src` readable and `dst` writable for `len` f32; `dst == src` or no
/// overlap.
pub unsafe fn scalar_act_f32(act: ActKind, src: *const f32, dst: *mut f32, len: usize) {
    // One arm per kind, so each loop is compiled for its function.
    // SAFETY: every arm calls `map` with this function's `src`, `dst` and
    // `len`, whose contract (extents, `dst == src` or no overlap) is `map`'s.
    unsafe {
        match act {
            ActKind::Identity => map(src, dst, len, math::identity),
            ActKind::Relu => map(src, dst, len, math::relu),
            ActKind::Gelu => map(src, dst, len, math::gelu),
            ActKind::GeluTanh => map(src, dst, len, math::gelu_tanh),
            ActKind::Silu => map(src, dst, len, math::silu),
            ActKind::Sigmoid => map(src, dst, len, math::sigmoid),
            ActKind::Tanh => map(src, dst, len, math::tanh),
            ActKind::Exp => map(src, dst, len, math::exp),
            ActKind::Log => map(src, dst, len, math::log),
            ActKind::Sqrt => map(src, dst, len, math::sqrt),
            ActKind::Rsqrt => map(src, dst, len, math::rsqrt),
            ActKind::Neg => map(src, dst, len, math::neg),
            ActKind::Abs => map(src, dst, len, math::abs),
            ActKind::Recip => map(src, dst, len, math::recip),
            ActKind::Square => map(src, dst, len, math::square),
            ActKind::Erf => map(src, dst, len, math::erf),
            ActKind::Softplus => map(src, dst, len, math::softplus),
            ActKind::Mish => map(src, dst, len, math::mish),
            ActKind::HardSwish => map(src, dst, len, math::hard_swish),
            ActKind::Sin => map(src, dst, len, math::sin),
            ActKind::Cos => map(src, dst, len, math::cos),
            ActKind::Tan => map(src, dst, len, math::tan),
            ActKind::Asin => map(src, dst, len, math::asin),
            ActKind::Acos => map(src, dst, len, math::acos),
            ActKind::Atan => map(src, dst, len, math::atan),
            ActKind::Sinh => map(src, dst, len, math::sinh),
            ActKind::Cosh => map(src, dst, len, math::cosh),
            ActKind::Asinh => map(src, dst, len, math::asinh),
            ActKind::Acosh => map(src, dst, len, math::acosh),
            ActKind::Atanh => map(src, dst, len, math::atanh),
            ActKind::Floor => map(src, dst, len, math::floor),
            ActKind::Ceil => map(src, dst, len, math::ceil),
            ActKind::Round => map(src, dst, len, math::round),
            ActKind::Sign => map(src, dst, len, math::sign),
            ActKind::Softsign => map(src, dst, len, math::softsign),
            ActKind::Not => map(src, dst, len, math::not),
            ActKind::LeakyRelu { alpha } => map(src, dst, len, |x| math::leaky_relu(x, alpha)),
            ActKind::Elu { alpha } => map(src, dst, len, |x| math::elu(x, alpha)),
            ActKind::Selu { alpha, gamma } => map(src, dst, len, |x| math::selu(x, alpha, gamma)),
            ActKind::Celu { alpha } => map(src, dst, len, |x| math::celu(x, alpha)),
            ActKind::ThresholdedRelu { alpha } => map(src, dst, len, |x| math::thresholded_relu(x, alpha)),
            ActKind::Shrink { bias, lambd } => map(src, dst, len, |x| math::shrink(x, bias, lambd)),
            ActKind::HardSigmoid { alpha, beta } => map(src, dst, len, |x| math::hard_sigmoid(x, alpha, beta)),
            ActKind::Clip { min, max } => map(src, dst, len, |x| math::clip(x, min, max)),
        }
    }
}
