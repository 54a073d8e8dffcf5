//! NEON row primitives of the norm kernels: [`super::vector`]'s bodies
//! compiled with NEON enabled.

use std::arch::aarch64::float32x4_t;

use super::vector;

/// `sum(x[i])`, bit-identical to the scalar spec.
///
/// # Safety
/// NEON available; `x` readable for `n` f32.
#[target_feature(enable = "neon")]
pub(super) unsafe fn neon_sum(x: *const f32, n: usize) -> f32 {
    // SAFETY: forwarded contract; the features `float32x4_t` lanes need are enabled.
    unsafe { vector::sum::<float32x4_t>(x, n) }
}

/// `sum((x[i] - mean)^2)`, bit-identical to the scalar spec.
///
/// # Safety
/// NEON available; `x` readable for `n` f32.
#[target_feature(enable = "neon")]
pub(super) unsafe fn neon_sum_sq_dev(x: *const f32, n: usize, mean: f32) -> f32 {
    // SAFETY: forwarded contract; the features `float32x4_t` lanes need are enabled.
    unsafe { vector::sum_sq_dev::<float32x4_t>(x, n, mean) }
}

/// `out[i] = (x[i] + res[i]) + bias[i]`.
///
/// # Safety
/// NEON available; inputs readable, `out` writable for `n` f32; `out` may equal `x`
/// or `res` exactly.
#[target_feature(enable = "neon")]
pub(super) unsafe fn neon_add(x: *const f32, res: *const f32, bias: Option<*const f32>, out: *mut f32, n: usize) {
    // SAFETY: forwarded contract; the features `float32x4_t` lanes need are enabled.
    unsafe { vector::add::<float32x4_t>(x, res, bias, out, n) }
}

/// `out[i] = ((x[i] - mean) * scale) * g[i] + b[i]`.
///
/// # Safety
/// NEON available; inputs readable, `out` writable for `n` f32; `out` may equal `x`
/// exactly.
#[target_feature(enable = "neon")]
pub(super) unsafe fn neon_normalize(
    x: *const f32,
    mean: f32,
    scale: f32,
    g: *const f32,
    b: Option<*const f32>,
    out: *mut f32,
    n: usize,
) {
    // SAFETY: forwarded contract; the features `float32x4_t` lanes need are enabled.
    unsafe { vector::normalize::<float32x4_t>(x, mean, scale, g, b, out, n) }
}
