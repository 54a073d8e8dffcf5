//! AVX2 row primitives of the norm kernels: [`super::vector`]'s bodies
//! compiled with AVX2 enabled.

use std::arch::x86_64::__m256;

use super::vector;

/// `sum(x[i])`, bit-identical to the scalar spec.
///
/// # Safety
/// AVX2 and FMA available; `x` readable for `n` f32.
#[target_feature(enable = "avx2,fma")]
pub(super) unsafe fn avx2_sum(x: *const f32, n: usize) -> f32 {
    // SAFETY: forwarded contract; the features `__m256` lanes need are enabled.
    unsafe { vector::sum::<__m256>(x, n) }
}

/// `sum((x[i] - mean)^2)`, bit-identical to the scalar spec.
///
/// # Safety
/// AVX2 and FMA available; `x` readable for `n` f32.
#[target_feature(enable = "avx2,fma")]
pub(super) unsafe fn avx2_sum_sq_dev(x: *const f32, n: usize, mean: f32) -> f32 {
    // SAFETY: forwarded contract; the features `__m256` lanes need are enabled.
    unsafe { vector::sum_sq_dev::<__m256>(x, n, mean) }
}

/// `out[i] = (x[i] + res[i]) + bias[i]`.
///
/// # Safety
/// AVX2 and FMA available; inputs readable, `out` writable for `n` f32; `out` may equal `x`
/// or `res` exactly.
#[target_feature(enable = "avx2,fma")]
pub(super) unsafe fn avx2_add(x: *const f32, res: *const f32, bias: Option<*const f32>, out: *mut f32, n: usize) {
    // SAFETY: forwarded contract; the features `__m256` lanes need are enabled.
    unsafe { vector::add::<__m256>(x, res, bias, out, n) }
}

/// `out[i] = ((x[i] - mean) * scale) * g[i] + b[i]`.
///
/// # Safety
/// AVX2 and FMA available; inputs readable, `out` writable for `n` f32; `out` may equal `x`
/// exactly.
#[target_feature(enable = "avx2,fma")]
pub(super) unsafe fn avx2_normalize(
    x: *const f32,
    mean: f32,
    scale: f32,
    g: *const f32,
    b: Option<*const f32>,
    out: *mut f32,
    n: usize,
) {
    // SAFETY: forwarded contract; the features `__m256` lanes need are enabled.
    unsafe { vector::normalize::<__m256>(x, mean, scale, g, b, out, n) }
}
