//! Scalar reference for the row primitives of the norm kernels: the spec
//! the SIMD variants reproduce bit for bit.
//!
//! Sums follow one fixed order on every ISA (see [`reduce`]) and products
//! and sums are rounded separately (never fused), so scalar, AVX2 and NEON
//! give identical results and a model's output does not depend on the CPU
//! it runs on.

/// Sums `f(x[i])` for `i < n` in the family's fixed order:
/// 1. 32 lanes: lane `j` accumulates `f(x[32c + j])` over full blocks `c`;
/// 2. fold to 8 lanes: `b[l] = (a[l] + a[8 + l]) + (a[16 + l] + a[24 + l])`;
/// 3. each remaining full block of 8 adds lane-wise into `b`;
/// 4. tree: `t[k] = b[k] + b[k + 4]`, then `(t[0] + t[2]) + (t[1] + t[3])`;
/// 5. the last `n % 8` terms are added one by one.
///
/// # Safety
/// `x` readable for `n` f32.
#[inline(always)]
unsafe fn reduce(x: *const f32, n: usize, f: impl Fn(f32) -> f32) -> f32 {
    // SAFETY: every read is below `n`.
    let at = |i: usize| f(unsafe { *x.add(i) });
    let mut a = [0f32; 32];
    let mut i = 0;
    while i + 32 <= n {
        for (j, lane) in a.iter_mut().enumerate() {
            *lane += at(i + j);
        }
        i += 32;
    }
    let mut b = [0f32; 8];
    for (l, lane) in b.iter_mut().enumerate() {
        *lane = (a[l] + a[8 + l]) + (a[16 + l] + a[24 + l]);
    }
    while i + 8 <= n {
        for (l, lane) in b.iter_mut().enumerate() {
            *lane += at(i + l);
        }
        i += 8;
    }
    let t = [b[0] + b[4], b[1] + b[5], b[2] + b[6], b[3] + b[7]];
    let mut s = (t[0] + t[2]) + (t[1] + t[3]);
    while i < n {
        s += at(i);
        i += 1;
    }
    s
}

/// `sum(x[i])` in the fixed order of [`reduce`].
///
/// # Safety
/// `x` readable for `n` f32.
pub(super) unsafe fn sum(x: *const f32, n: usize) -> f32 {
    // SAFETY: forwarded contract.
    unsafe { reduce(x, n, |v| v) }
}

/// `sum((x[i] - mean)^2)` in the fixed order of [`reduce`]; with
/// `mean == 0` it is the sum of squares (`v - 0.0` is exactly `v`).
///
/// # Safety
/// `x` readable for `n` f32.
pub(super) unsafe fn sum_sq_dev(x: *const f32, n: usize, mean: f32) -> f32 {
    // SAFETY: forwarded contract.
    unsafe {
        reduce(x, n, |v| {
            let d = v - mean;
            d * d
        })
    }
}

/// `out[i] = (x[i] + res[i]) + bias[i]` (no bias term when `None`).
///
/// # Safety
/// Inputs readable, `out` writable for `n` f32; `out` may equal `x` or
/// `res` exactly (each element is read before it is written).
pub(super) unsafe fn add(x: *const f32, res: *const f32, bias: Option<*const f32>, out: *mut f32, n: usize) {
    // SAFETY: every access is below `n`.
    unsafe {
        match bias {
            Some(bias) => {
                for i in 0..n {
                    *out.add(i) = (*x.add(i) + *res.add(i)) + *bias.add(i);
                }
            }
            None => {
                for i in 0..n {
                    *out.add(i) = *x.add(i) + *res.add(i);
                }
            }
        }
    }
}

/// `out[i] = ((x[i] - mean) * scale) * g[i] + b[i]` (no shift when
/// `None`).
///
/// # Safety
/// Inputs readable, `out` writable for `n` f32; `out` may equal `x`.
pub(super) unsafe fn normalize(
    x: *const f32,
    mean: f32,
    scale: f32,
    g: *const f32,
    b: Option<*const f32>,
    out: *mut f32,
    n: usize,
) {
    // SAFETY: every access is below `n`.
    unsafe {
        match b {
            Some(b) => {
                for i in 0..n {
                    *out.add(i) = ((*x.add(i) - mean) * scale) * *g.add(i) + *b.add(i);
                }
            }
            None => {
                for i in 0..n {
                    *out.add(i) = ((*x.add(i) - mean) * scale) * *g.add(i);
                }
            }
        }
    }
}
