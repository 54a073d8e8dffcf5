//! AVX2+FMA reductions.
//!
//! Rows (`inner == 1`) of the sum family (`sum`, `mean`, `sum_square`,
//! `l1`, `l2`) and `max` / `min`: element `i` of a 32-element block goes to
//! lane `i % 8` of accumulator `(i % 32) / 8`; after the blocks, 8-element steps go to accumulator 0 and the masked tail to
//! accumulator 1; the accumulators are combined as `(a0 + a1) + (a2 + a3)`
//! and the 8 lanes pairwise. `sum_square` uses FMA. `max` / `min` track
//! NaN in a separate mask so it propagates like the reference. `prod` and
//! `log_sum_exp` rows use the scalar reference.
//!
//! Columns (`inner > 1`) compile the scalar block body with AVX2 enabled:
//! the same operations in the same order, so the results equal the
//! reference bit for bit.

use std::arch::x86_64::*;

use rlx_core::ReduceOp;

use super::scalar;
use crate::kernels::softmax::avx2::{hsum, tail_mask};

/// Element transforms of the sum family.
const PLAIN: u8 = 0;
const SQUARE: u8 = 1;
const ABS: u8 = 2;

#[inline]
#[target_feature(enable = "avx2,fma")]
fn accumulate<const MAP: u8>(acc: __m256, x: __m256) -> __m256 {
    match MAP {
        SQUARE => _mm256_fmadd_ps(x, x, acc),
        ABS => _mm256_add_ps(acc, _mm256_andnot_ps(_mm256_set1_ps(-0.0), x)),
        _ => _mm256_add_ps(acc, x),
    }
}

/// Sum of `map(x[i])` over a row, in the lane order of the module docs.
///
/// # Safety
///
/// AVX2+FMA; `x` valid for reads of `n` f32.
#[target_feature(enable = "avx2,fma")]
unsafe fn sum_row<const MAP: u8>(x: *const f32, n: usize) -> f32 {
    let mut acc = [_mm256_setzero_ps(); 4];
    let mut i = 0;
    while i + 32 <= n {
        for (j, a) in acc.iter_mut().enumerate() {
            // SAFETY: `i + 8 * j + 8 <= n`.
            *a = accumulate::<MAP>(*a, unsafe { _mm256_loadu_ps(x.add(i + 8 * j)) });
        }
        i += 32;
    }
    while i + 8 <= n {
        // SAFETY: `i + 8 <= n`.
        acc[0] = accumulate::<MAP>(acc[0], unsafe { _mm256_loadu_ps(x.add(i)) });
        i += 8;
    }
    if i < n {
        // SAFETY: masked lanes stay below `n`; the others load 0, which
        // every map sends to 0.
        acc[1] = accumulate::<MAP>(acc[1], unsafe { _mm256_maskload_ps(x.add(i), tail_mask(n - i)) });
    }
    hsum(_mm256_add_ps(_mm256_add_ps(acc[0], acc[1]), _mm256_add_ps(acc[2], acc[3])))
}

/// Maximum (`MAX`) or minimum of a row, NaN-propagating.
///
/// # Safety
///
/// AVX2+FMA; `x` valid for reads of `n` f32.
#[target_feature(enable = "avx2,fma")]
unsafe fn extreme_row<const MAX: bool>(x: *const f32, n: usize) -> f32 {
    let init = _mm256_set1_ps(if MAX { f32::NEG_INFINITY } else { f32::INFINITY });
    // `max_ps(v, acc)` returns `acc` when `v` is NaN; NaN is tracked apart.
    let step = |acc: __m256, v: __m256| {
        if MAX {
            _mm256_max_ps(v, acc)
        } else {
            _mm256_min_ps(v, acc)
        }
    };
    let mut acc = [init; 4];
    let mut nan = _mm256_setzero_ps();
    let mut i = 0;
    while i + 32 <= n {
        for (j, a) in acc.iter_mut().enumerate() {
            // SAFETY: `i + 8 * j + 8 <= n`.
            let v = unsafe { _mm256_loadu_ps(x.add(i + 8 * j)) };
            *a = step(*a, v);
            nan = _mm256_or_ps(nan, _mm256_cmp_ps::<_CMP_UNORD_Q>(v, v));
        }
        i += 32;
    }
    while i < n {
        let mask = tail_mask((n - i).min(8));
        // SAFETY: masked lanes stay below `n`; the others are replaced by
        // the identity.
        let v = _mm256_blendv_ps(init, unsafe { _mm256_maskload_ps(x.add(i), mask) }, _mm256_castsi256_ps(mask));
        acc[0] = step(acc[0], v);
        nan = _mm256_or_ps(nan, _mm256_cmp_ps::<_CMP_UNORD_Q>(v, v));
        i += 8;
    }
    if _mm256_movemask_ps(nan) != 0 {
        return f32::NAN;
    }
    let mut lanes = [0.0f32; 8];
    // SAFETY: 8 f32 of stack.
    unsafe { _mm256_storeu_ps(lanes.as_mut_ptr(), step(step(acc[0], acc[1]), step(acc[2], acc[3]))) };
    lanes
        .iter()
        .fold(if MAX { f32::NEG_INFINITY } else { f32::INFINITY }, |a, &v| if MAX { a.max(v) } else { a.min(v) })
}

/// Reduces one contiguous row of `n` f32.
///
/// # Safety
///
/// AVX2+FMA; `x` valid for reads of `n` f32 (and non-null, aligned).
#[target_feature(enable = "avx2,fma")]
pub(crate) unsafe fn avx2_reduce_row(op: ReduceOp, x: *const f32, n: usize) -> f32 {
    // SAFETY: the caller guarantees AVX2 and FMA (enabled here) and `n`
    // readable f32 at `x`, non-null and aligned: what `sum_row` and
    // `extreme_row` require, and what `from_raw_parts` needs for the slice
    // handed to the scalar row reduction.
    unsafe {
        match op {
            ReduceOp::Sum | ReduceOp::Mean => scalar::finish(op, sum_row::<PLAIN>(x, n), n),
            ReduceOp::SumSquare | ReduceOp::L2 => scalar::finish(op, sum_row::<SQUARE>(x, n), n),
            ReduceOp::L1 => sum_row::<ABS>(x, n),
            ReduceOp::Max => extreme_row::<true>(x, n),
            ReduceOp::Min => extreme_row::<false>(x, n),
            ReduceOp::Prod | ReduceOp::LogSumExp => scalar::reduce_row(op, std::slice::from_raw_parts(x, n)),
        }
    }
}

/// The column reduction compiled for AVX2 (bit-identical to scalar).
///
/// # Safety
///
/// AVX2+FMA; as [`scalar::reduce_columns`].
#[target_feature(enable = "avx2,fma")]
pub(crate) unsafe fn avx2_reduce_columns(
    op: ReduceOp,
    src: *const f32,
    stride: usize,
    n: usize,
    cols: usize,
    dst: *mut f32,
) {
    // SAFETY: forwarded contract.
    unsafe { scalar::reduce_columns(op, src, stride, n, cols, dst) }
}
