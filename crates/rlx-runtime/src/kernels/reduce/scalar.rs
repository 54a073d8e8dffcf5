//! The reference reductions: the spec the SIMD variants follow.
//!
//! Rows (`inner == 1`) are reduced in index order. Columns (`inner > 1`)
//! are reduced a block of [`BLOCK`] columns at a time, each column in
//! axis order, with the block's accumulators on the stack: the loop over
//! the block is contiguous, so it vectorises, and every column still sees
//! the same sequence of operations as a one-column loop.

use rlx_core::ReduceOp;

/// Columns reduced together.
pub(crate) const BLOCK: usize = 64;

/// `max` that propagates NaN (once NaN, always NaN).
#[inline(always)]
pub(crate) fn max_nan(acc: f32, x: f32) -> f32 {
    if x.is_nan() || x > acc {
        x
    } else {
        acc
    }
}

/// `min` that propagates NaN.
#[inline(always)]
pub(crate) fn min_nan(acc: f32, x: f32) -> f32 {
    if x.is_nan() || x < acc {
        x
    } else {
        acc
    }
}

/// The starting value of an accumulator.
pub(crate) fn identity(op: ReduceOp) -> f32 {
    match op {
        ReduceOp::Max | ReduceOp::LogSumExp => f32::NEG_INFINITY,
        ReduceOp::Min => f32::INFINITY,
        ReduceOp::Prod => 1.0,
        ReduceOp::Sum | ReduceOp::Mean | ReduceOp::L1 | ReduceOp::L2 | ReduceOp::SumSquare => 0.0,
    }
}

/// Turns a finished accumulator into the result (`n` is the axis length).
#[inline(always)]
pub(crate) fn finish(op: ReduceOp, acc: f32, n: usize) -> f32 {
    match op {
        ReduceOp::Mean => acc / n as f32,
        ReduceOp::L2 => acc.sqrt(),
        _ => acc,
    }
}

/// `log(sum exp(x - m)) + m` from the maximum `m` and the shifted sum;
/// a non-finite maximum is the answer itself (`-inf` for an empty or
/// all-`-inf` axis, `+inf`, NaN).
#[inline(always)]
pub(crate) fn lse_finish(m: f32, sum: f32) -> f32 {
    if m.is_finite() {
        m + sum.ln()
    } else {
        m
    }
}

/// The shift used before `exp`: the maximum when finite, else 0 (the sum
/// is then unused).
#[inline(always)]
pub(crate) fn lse_shift(m: f32) -> f32 {
    if m.is_finite() {
        m
    } else {
        0.0
    }
}

/// Reduces one contiguous row of `n` f32.
pub(crate) fn reduce_row(op: ReduceOp, x: &[f32]) -> f32 {
    let n = x.len();
    let acc = match op {
        ReduceOp::Sum | ReduceOp::Mean => x.iter().fold(0.0, |a, &v| a + v),
        ReduceOp::SumSquare | ReduceOp::L2 => x.iter().fold(0.0, |a, &v| a + v * v),
        ReduceOp::L1 => x.iter().fold(0.0, |a, &v| a + v.abs()),
        ReduceOp::Max => x.iter().fold(f32::NEG_INFINITY, |a, &v| max_nan(a, v)),
        ReduceOp::Min => x.iter().fold(f32::INFINITY, |a, &v| min_nan(a, v)),
        ReduceOp::Prod => x.iter().fold(1.0, |a, &v| a * v),
        ReduceOp::LogSumExp => {
            let m = x.iter().fold(f32::NEG_INFINITY, |a, &v| max_nan(a, v));
            let shift = lse_shift(m);
            let sum = x.iter().fold(0.0f32, |a, &v| a + (v - shift).exp());
            return lse_finish(m, sum);
        }
    };
    finish(op, acc, n)
}

/// Reduces `cols <= BLOCK` adjacent columns over `n` axis steps: column
/// `c` reads `src[a * stride + c]` for `a < n` and the result goes to
/// `dst[c]`. Written so the block loop vectorises; `#[inline(always)]` so
/// the SIMD variants can compile the same body with their target features
/// (same operations in the same order: bit-identical results).
///
/// # Safety
///
/// `src` must be valid for reads at `a * stride + c` for `a < n`, `c <
/// cols`, and `dst` for writes of `cols` f32, not overlapping `src`.
#[inline(always)]
pub(crate) unsafe fn reduce_columns(
    op: ReduceOp,
    src: *const f32,
    stride: usize,
    n: usize,
    cols: usize,
    dst: *mut f32,
) {
    debug_assert!(cols <= BLOCK);
    let mut acc = [identity(op); BLOCK];
    let acc = &mut acc[..cols];
    // SAFETY: every call has `a < n`, and the caller makes
    // `src + a * stride .. + cols` readable (`# Safety` above); the slice is
    // only read while no write to `src` happens (`dst` does not overlap it).
    let row = |a: usize| unsafe { std::slice::from_raw_parts(src.add(a * stride), cols) };
    match op {
        ReduceOp::Sum | ReduceOp::Mean => {
            for a in 0..n {
                acc.iter_mut().zip(row(a)).for_each(|(s, &v)| *s += v);
            }
        }
        ReduceOp::SumSquare | ReduceOp::L2 => {
            for a in 0..n {
                acc.iter_mut().zip(row(a)).for_each(|(s, &v)| *s += v * v);
            }
        }
        ReduceOp::L1 => {
            for a in 0..n {
                acc.iter_mut().zip(row(a)).for_each(|(s, &v)| *s += v.abs());
            }
        }
        ReduceOp::Max => {
            for a in 0..n {
                acc.iter_mut().zip(row(a)).for_each(|(s, &v)| *s = max_nan(*s, v));
            }
        }
        ReduceOp::Min => {
            for a in 0..n {
                acc.iter_mut().zip(row(a)).for_each(|(s, &v)| *s = min_nan(*s, v));
            }
        }
        ReduceOp::Prod => {
            for a in 0..n {
                acc.iter_mut().zip(row(a)).for_each(|(s, &v)| *s *= v);
            }
        }
        ReduceOp::LogSumExp => {
            for a in 0..n {
                acc.iter_mut().zip(row(a)).for_each(|(s, &v)| *s = max_nan(*s, v));
            }
            let mut sum = [0.0f32; BLOCK];
            let sum = &mut sum[..cols];
            for a in 0..n {
                for ((s, &m), &v) in sum.iter_mut().zip(acc.iter()).zip(row(a)) {
                    *s += (v - lse_shift(m)).exp();
                }
            }
            for (c, (&m, &s)) in acc.iter().zip(sum.iter()).enumerate() {
                // SAFETY: `c < cols`.
                unsafe { *dst.add(c) = lse_finish(m, s) };
            }
            return;
        }
    }
    for (c, &a) in acc.iter().enumerate() {
        // SAFETY: `c < cols`.
        unsafe { *dst.add(c) = finish(op, a, n) };
    }
}

/// The scalar column reduction (the body above, baseline features).
///
/// # Safety
///
/// As [`reduce_columns`].
pub(crate) unsafe fn scalar_reduce_columns(
    op: ReduceOp,
    src: *const f32,
    stride: usize,
    n: usize,
    cols: usize,
    dst: *mut f32,
) {
    // SAFETY: forwarded contract.
    unsafe { reduce_columns(op, src, stride, n, cols, dst) }
}
