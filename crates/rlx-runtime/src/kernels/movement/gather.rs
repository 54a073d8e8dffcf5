//! `Gather` (embedding rows) and `GatherAxis` (ONNX `Gather` on a middle
//! axis).
//!
//! Index rules, shared by both: a negative index counts from the end
//! (`-1` is the last row); an index still outside `0..len` selects a zero
//! row instead of reading out of bounds (the only choice that never
//! faults, whatever a run-time index holds). f32 indices truncate toward zero with Rust's
//! saturating `as` (NaN gives 0, as the cast thunks do).

use std::ptr;

use super::{sealed, SharedPtr, PAR_CHUNK};
use crate::threads::par_for;

/// An index element type of `Gather`/`GatherAxis`: `i64`, `i32` or `f32`.
pub trait GatherIndex: Copy + Send + Sync + 'static + sealed::Sealed {
    /// The row this index selects among `len`, or `None` when it is out of
    /// range after counting negative indices from the end.
    fn resolve(self, len: usize) -> Option<usize>;
}

/// The shared rule on an index widened to i64.
fn resolve_i64(i: i64, len: usize) -> Option<usize> {
    let i = i as i128;
    let len = len as i128;
    let i = if i < 0 { i + len } else { i };
    (0..len).contains(&i).then_some(i as usize)
}

impl GatherIndex for i64 {
    fn resolve(self, len: usize) -> Option<usize> {
        resolve_i64(self, len)
    }
}

impl GatherIndex for i32 {
    fn resolve(self, len: usize) -> Option<usize> {
        resolve_i64(i64::from(self), len)
    }
}

impl GatherIndex for f32 {
    fn resolve(self, len: usize) -> Option<usize> {
        // `as` truncates toward zero, saturates, and maps NaN to 0.
        resolve_i64(self as i64, len)
    }
}

/// `dst[o, j, :] = src[o, indices[j], :]` over rows of `row_bytes`, or a
/// zero row for an out-of-range index; parallel over `(o, j)` with `par`.
///
/// # Safety
/// As [`gather_axis`] with `inner * elem_bytes == row_bytes`.
unsafe fn gather_rows<I: GatherIndex>(
    src: *const u8,
    indices: *const I,
    dst: *mut u8,
    outer: usize,
    axis_dim: usize,
    num_indices: usize,
    row_bytes: usize,
    par: bool,
) {
    let total = outer * num_indices;
    if total == 0 || row_bytes == 0 {
        return;
    }
    let (s, ix, d) = (SharedPtr(src.cast_mut()), SharedPtr(indices.cast_mut()), SharedPtr(dst));
    let rows = |start: usize, len: usize| {
        for r in start..start + len {
            let (o, j) = (r / num_indices, r % num_indices);
            // SAFETY: `j < num_indices`; rows in bounds by the contract;
            // indices may be unaligned views, so read them unaligned.
            unsafe {
                let to = d.get().add(r * row_bytes);
                match ix.get().add(j).read_unaligned().resolve(axis_dim) {
                    Some(k) => ptr::copy_nonoverlapping(s.get().add((o * axis_dim + k) * row_bytes), to, row_bytes),
                    None => ptr::write_bytes(to, 0, row_bytes),
                }
            }
        }
    };
    if par {
        par_for(total, (PAR_CHUNK / row_bytes).max(1), &rows);
    } else {
        rows(0, total);
    }
}

/// `Gather`: `dst[i, :] = table[indices[i], :]`, rows of `row_len` f32 from
/// a `[vocab, row_len]` table (index rules in the module docs). With `par`,
/// rows are split across threads.
///
/// # Safety
/// `table` readable for `vocab * row_len` f32, `indices` for `num_indices`
/// elements, `dst` writable for `num_indices * row_len` f32; `dst` overlaps
/// neither input.
pub unsafe fn gather_f32<I: GatherIndex>(
    table: *const f32,
    indices: *const I,
    dst: *mut f32,
    num_indices: usize,
    row_len: usize,
    vocab: usize,
    par: bool,
) {
    // SAFETY: forwarded contract; one outer slice of `vocab` rows.
    unsafe { gather_rows(table.cast(), indices, dst.cast(), 1, vocab, num_indices, row_len * 4, par) }
}

/// `GatherAxis`: `dst[o, j, i] = src[o, indices[j], i]` for a
/// `[outer, axis_dim, inner]` source of `elem_bytes` elements (index rules
/// in the module docs). With `par`, output rows are split across threads.
///
/// # Safety
/// `src` readable for `outer * axis_dim * inner` elements, `indices` for
/// `num_indices`, `dst` writable for `outer * num_indices * inner`; `dst`
/// overlaps neither input.
pub unsafe fn gather_axis<I: GatherIndex>(
    src: *const u8,
    indices: *const I,
    dst: *mut u8,
    outer: usize,
    axis_dim: usize,
    inner: usize,
    num_indices: usize,
    elem_bytes: usize,
    par: bool,
) {
    // SAFETY: forwarded contract.
    unsafe { gather_rows(src, indices, dst, outer, axis_dim, num_indices, inner * elem_bytes, par) }
}
