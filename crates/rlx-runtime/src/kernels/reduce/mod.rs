//! Reductions over the middle axis of `[outer, axis_dim, inner]`: reduce,
//! arg-reduce, cumulative sum and top-k.
//!
//! `reduce_f32` semantics per op over the `n = axis_dim` values: `sum`,
//! `mean` (`sum / n`), `prod`, `l1` (`sum |x|`), `sum_square`, `l2`
//! (`sqrt(sum x^2)`), `max` / `min` (NaN-propagating: a NaN anywhere gives
//! NaN), `log_sum_exp` (`m + ln(sum exp(x - m))` with `m` the NaN-
//! propagating maximum; a non-finite `m` is the result). An empty axis
//! gives the identity: 0 (`sum`, `l1`, `l2`, `sum_square`), NaN (`mean`,
//! `0 / 0`), `-inf` (`max`, `log_sum_exp`), `+inf` (`min`), 1 (`prod`).
//!
//! Rows (`inner == 1`) of the sum family and `max` / `min` use SIMD with
//! lane-wise partial sums (see `avx2.rs` for the order), so sums differ
//! from the sequential reference by rounding; columns (`inner > 1`) are
//! vectorised across `inner` and equal the reference bit for bit. The
//! variant is chosen once per process.

mod arg;
mod cumsum;
pub(crate) mod scalar;
mod topk;

#[cfg(target_arch = "x86_64")]
mod avx2;

#[cfg(test)]
mod tests;

pub use arg::arg_reduce_f32;
pub use cumsum::{cumsum_f32, cumulative, CumElem};
/// Re-exported so generated code names one crate.
pub use rlx_core::{ArgOp, ReduceOp};
pub use topk::{top_k_f32, top_k_i64, top_k_scratch_bytes};

use crate::kernels::variants::variants;
use scalar::BLOCK;

type RowFn = unsafe fn(ReduceOp, *const f32, usize) -> f32;
type ColumnsFn = unsafe fn(ReduceOp, *const f32, usize, usize, usize, *mut f32);

#[derive(Clone, Copy)]
struct Kernels {
    row: RowFn,
    columns: ColumnsFn,
}

variants! {
    /// The kernels, best first.
    static KERNELS: Kernels = [
        #[cfg(target_arch = "x86_64")]
        "avx2" if cpu::avx2_fma() => Kernels { row: avx2::avx2_reduce_row, columns: avx2::avx2_reduce_columns },
        "scalar" => Kernels { row: scalar_row, columns: scalar::scalar_reduce_columns },
    ];
}

#[inline]
fn kernels() -> Kernels {
    *KERNELS.best()
}

/// The scalar row reduction behind a raw pointer.
///
/// # Safety
///
/// `x` valid for reads of `n` f32 (and non-null, aligned).
unsafe fn scalar_row(op: ReduceOp, x: *const f32, n: usize) -> f32 {
    // SAFETY: forwarded contract.
    scalar::reduce_row(op, unsafe { std::slice::from_raw_parts(x, n) })
}

/// Work units of at least this many input elements per parallel chunk.
pub(crate) fn units_per_chunk(elems_per_unit: usize) -> usize {
    (rlx_core::plan::PAR_MIN_ELEMS / 4 / elems_per_unit.max(1)).max(1)
}

/// Shares raw base pointers with pool threads.
#[derive(Clone, Copy)]
pub(crate) struct SendPtr<T>(pub *mut T);
// SAFETY: every user splits work so threads touch disjoint outputs and
// only read shared inputs.
unsafe impl<T> Sync for SendPtr<T> {}
// SAFETY: as above.
unsafe impl<T> Send for SendPtr<T> {}

impl<T> SendPtr<T> {
    /// The pointer. A method, so closures capture the whole (`Sync`)
    /// wrapper rather than the raw field.
    pub(crate) fn get(self) -> *mut T {
        self.0
    }
}

/// `dst[o, i] = op(src[o, 0..axis_dim, i])` for a `[outer, axis_dim,
/// inner]` source; see the module docs for each op.
///
/// `par` (the caller's `rlx_core::plan::parallel(outer * axis_dim *
/// inner)`) splits independent outputs over the pool; bit-identical either
/// way.
///
/// # Safety
///
/// `src` valid for reads of `outer * axis_dim * inner` f32, `dst` for
/// writes of `outer * inner` f32, not overlapping; both non-null and
/// aligned.
pub unsafe fn reduce_f32(
    src: *const f32,
    dst: *mut f32,
    outer: usize,
    axis_dim: usize,
    inner: usize,
    op: ReduceOp,
    par: bool,
) {
    if outer == 0 || inner == 0 {
        return;
    }
    let k = kernels();
    let (src, dst) = (SendPtr(src.cast_mut()), SendPtr(dst));
    let n = axis_dim;
    if inner == 1 {
        let run = |start: usize, len: usize| {
            for o in start..start + len {
                // SAFETY: row `o` lies inside the extents.
                unsafe { *dst.get().add(o) = (k.row)(op, src.get().add(o * n), n) };
            }
        };
        if par {
            crate::threads::par_for(outer, units_per_chunk(n), &run);
        } else {
            run(0, outer);
        }
        return;
    }
    let blocks = inner.div_ceil(BLOCK);
    let run = |start: usize, len: usize| {
        for u in start..start + len {
            let (o, c0) = (u / blocks, u % blocks * BLOCK);
            let cols = BLOCK.min(inner - c0);
            // SAFETY: columns `c0..c0 + cols` of slice `o`.
            unsafe {
                (k.columns)(op, src.get().add(o * n * inner + c0), inner, n, cols, dst.get().add(o * inner + c0))
            };
        }
    };
    if par {
        crate::threads::par_for(outer * blocks, units_per_chunk(n * BLOCK), &run);
    } else {
        run(0, outer * blocks);
    }
}
