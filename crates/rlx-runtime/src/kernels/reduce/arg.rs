//! Index of the maximum or minimum along the middle axis.

use rlx_core::ArgOp;

use super::scalar::BLOCK;
use super::{units_per_chunk, SendPtr};

/// Whether `x` (a later element) replaces the current `best`.
///
/// NaN counts as the extreme for both `max` and `min`, as in NumPy and
/// PyTorch: the first NaN wins (the last with `select_last`). Otherwise
/// the first occurrence of the extreme wins, or the last with
/// `select_last`; `-0.0` and `0.0` tie.
#[inline(always)]
fn replaces(op: ArgOp, select_last: bool, x: f32, best: f32) -> bool {
    if x.is_nan() {
        return !best.is_nan() || select_last;
    }
    if best.is_nan() {
        return false;
    }
    match op {
        ArgOp::Max => x > best || (select_last && x == best),
        ArgOp::Min => x < best || (select_last && x == best),
    }
}

/// Writes index `idx` as element `at` of an i64 or f32 index array.
///
/// # Safety
///
/// `dst` valid for writes of element `at` of the chosen type, aligned.
#[inline(always)]
pub(super) unsafe fn write_index(dst: *mut u8, at: usize, idx: i64, indices_i64: bool) {
    // SAFETY: forwarded contract.
    unsafe {
        if indices_i64 {
            *dst.cast::<i64>().add(at) = idx;
        } else {
            *dst.cast::<f32>().add(at) = idx as f32;
        }
    }
}

/// `dst[o, i]` = the index along the middle axis of the max (`ArgOp::Max`)
/// or min of `src[o, .., i]` for a `[outer, axis_dim, inner]` source;
/// see [`replaces`] for ties and NaN. An empty axis gives index 0. Indices
/// are written as i64 when `indices_i64`, else as f32 (exact below 2^24).
///
/// `par` (the caller's `rlx_core::plan::parallel(outer * axis_dim *
/// inner)`) splits independent outputs over the pool.
///
/// # Safety
///
/// `src` valid for reads of `outer * axis_dim * inner` f32; `dst` valid
/// for writes of `outer * inner` i64 (or f32), aligned for that type, not
/// overlapping `src`.
pub unsafe fn arg_reduce_f32(
    src: *const f32,
    dst: *mut u8,
    outer: usize,
    axis_dim: usize,
    inner: usize,
    op: ArgOp,
    select_last: bool,
    indices_i64: bool,
    par: bool,
) {
    if outer == 0 || inner == 0 {
        return;
    }
    let (src, dst) = (SendPtr(src.cast_mut()), SendPtr(dst));
    let n = axis_dim;
    let blocks = inner.div_ceil(BLOCK);
    let run = |start: usize, len: usize| {
        for u in start..start + len {
            let (o, c0) = (u / blocks, u % blocks * BLOCK);
            let cols = BLOCK.min(inner - c0);
            let base = src.get().cast_const().wrapping_add(o * n * inner + c0);
            let mut best_v = [f32::NAN; BLOCK];
            let mut best_i = [0usize; BLOCK];
            if n > 0 {
                // SAFETY: axis step 0 of this block.
                best_v[..cols].copy_from_slice(unsafe { std::slice::from_raw_parts(base, cols) });
            }
            for a in 1..n {
                // SAFETY: axis step `a` of this block.
                let row = unsafe { std::slice::from_raw_parts(base.add(a * inner), cols) };
                for ((bv, bi), &x) in best_v.iter_mut().zip(best_i.iter_mut()).zip(row) {
                    if replaces(op, select_last, x, *bv) {
                        *bv = x;
                        *bi = a;
                    }
                }
            }
            for (c, &i) in best_i[..cols].iter().enumerate() {
                // SAFETY: output `(o, c0 + c)` is inside `dst`.
                unsafe { write_index(dst.get(), o * inner + c0 + c, i as i64, indices_i64) };
            }
        }
    };
    if par {
        crate::threads::par_for(outer * blocks, units_per_chunk(n * BLOCK), &run);
    } else {
        run(0, outer * blocks);
    }
}
