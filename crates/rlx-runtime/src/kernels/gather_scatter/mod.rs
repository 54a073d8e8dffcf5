//! Gathers and scatters by run-time indices: ONNX `GatherElements`,
//! `GatherND`, `ScatterElements` and `ScatterND`.
//!
//! Index rules, the same as `Gather`'s (`kernels::movement`): a negative
//! index counts from the end of its axis; an index still outside the axis
//! never reads or writes out of bounds and is never clamped. A gather
//! writes **zero** for it (a zero element, or a zero slice when any entry
//! of a `GatherNd` tuple is out of range); a scatter **skips** that update
//! (a `ScatterNd` tuple with any entry out of range skips its whole slice).
//! ONNX calls such indices an error; the kernels cannot report one, so they
//! take the choice that never faults and is easy to see in the output.
//!
//! Scatters copy `data` to `dst` (nothing to do when they are the same
//! bytes: in place), then apply the updates **serially in index order**
//! (row-major over the indices). Duplicate indices with reduction `none`
//! therefore leave the last update; with a reduction they combine in that
//! order, which fixes the rounding of f32 sums. Gathers move bytes only, so
//! their serial and parallel forms write identical bytes.
//!
//! [`scalar`] holds the reference: the same rules, one element at a time,
//! with every coordinate decomposed from scratch.

pub mod scalar;
mod value;

#[cfg(test)]
mod tests;

pub use value::ScatterValue;

use std::ptr;

use super::movement::{copy_bytes, GatherIndex, SharedPtr, PAR_CHUNK};
use crate::threads::par_for;
use rlx_core::ScatterReduction;

/// The row-major stride of data axis `axis`, in elements.
fn axis_stride(data_dims: &[usize], axis: usize) -> usize {
    data_dims[axis + 1..].iter().product()
}

/// The data offset of row `row` of the elements kinds (a row is the last
/// index dim): its index coordinates before the last, dotted with the
/// data's strides, leaving out `axis`. Computed without allocating: the
/// interpreter's runs allocate nothing.
fn row_base(row: usize, index_dims: &[usize], data_dims: &[usize], axis: usize) -> usize {
    let rank = index_dims.len();
    let (mut rest, mut base, mut stride) = (row, 0, data_dims[rank - 1]);
    for d in (0..rank - 1).rev() {
        let c = rest % index_dims[d];
        rest /= index_dims[d];
        if d != axis {
            base += c * stride;
        }
        stride *= data_dims[d];
    }
    base
}

/// An element moved as its bits, by width.
trait Word: Copy {}
impl Word for u8 {}
impl Word for u16 {}
impl Word for u32 {}
impl Word for u64 {}
impl Word for [u64; 2] {}

/// The arguments of [`gather_elements`] but `elem_bytes`.
type GatherElementsArgs<'a, I> = (*const u8, *const I, *mut u8, &'a [usize], &'a [usize], usize, bool);

/// `GatherElements` on words `W`: output rows are the rows of the last
/// index dim; parallel over rows with `par`.
///
/// # Safety
/// As [`gather_elements`], with `W` of `elem_bytes` bytes.
unsafe fn gather_elements_words<W: Word, I: GatherIndex>(
    (data, indices, dst, data_dims, index_dims, axis, par): GatherElementsArgs<'_, I>,
) {
    let rank = index_dims.len();
    let last = index_dims[rank - 1];
    let rows: usize = index_dims[..rank - 1].iter().product();
    if rows == 0 || last == 0 {
        return;
    }
    let (axis_dim, axis_stride) = (data_dims[axis], axis_stride(data_dims, axis));
    let (src, ix, out) = (SharedPtr(data.cast_mut()), SharedPtr(indices.cast_mut()), SharedPtr(dst));
    let run = |start: usize, len: usize| {
        for row in start..start + len {
            let base = row_base(row, index_dims, data_dims, axis);
            for j in 0..last {
                let at = row * last + j;
                let col = if axis == rank - 1 { 0 } else { j };
                // SAFETY: `at` is inside indices and dst; a resolved index
                // is below `axis_dim` and every other coordinate below its
                // data dim (validated), so the source is inside `data`.
                unsafe {
                    let w = match ix.get().add(at).read_unaligned().resolve(axis_dim) {
                        Some(k) => src.get().cast::<W>().add(base + col + k * axis_stride).read_unaligned(),
                        None => std::mem::zeroed(),
                    };
                    out.get().cast::<W>().add(at).write_unaligned(w);
                }
            }
        }
    };
    if par {
        par_for(rows, (PAR_CHUNK / last).max(1), &run);
    } else {
        run(0, rows);
    }
}

/// `GatherElements`: for every coordinate `c` of `index_dims`, `dst[c] =
/// data[c']` with `c'` equal to `c` except `c'[axis] = indices[c]`
/// (index rules in the module docs). Elements of `elem_bytes` bytes.
///
/// # Safety
/// `data_dims` and `index_dims` of one rank ≥ 1, `axis` below it, every
/// index dim but `axis` at most the data's; `data` readable for
/// `product(data_dims)` elements, `indices` for `product(index_dims)`,
/// `dst` writable for as many elements and overlapping neither input;
/// `elem_bytes` one of 1, 2, 4, 8, 16.
pub unsafe fn gather_elements<I: GatherIndex>(
    data: *const u8,
    indices: *const I,
    dst: *mut u8,
    data_dims: &[usize],
    index_dims: &[usize],
    axis: usize,
    elem_bytes: usize,
    par: bool,
) {
    let args = (data, indices, dst, data_dims, index_dims, axis, par);
    // SAFETY: forwarded contract, with the word of `elem_bytes` bytes.
    unsafe {
        match elem_bytes {
            1 => gather_elements_words::<u8, I>(args),
            2 => gather_elements_words::<u16, I>(args),
            4 => gather_elements_words::<u32, I>(args),
            8 => gather_elements_words::<u64, I>(args),
            _ => gather_elements_words::<[u64; 2], I>(args),
        }
    }
}

/// The flat slice index a tuple of `data_dims.len()` indices selects, or
/// `None` when an entry is out of range.
///
/// # Safety
/// `tuple` readable for `data_dims.len()` elements.
unsafe fn resolve_tuple<I: GatherIndex>(tuple: *const I, data_dims: &[usize]) -> Option<usize> {
    let mut at = 0usize;
    for (d, &dim) in data_dims.iter().enumerate() {
        // SAFETY: `d` is inside the tuple by the contract.
        let k = unsafe { tuple.add(d).read_unaligned() }.resolve(dim)?;
        at = at * dim + k;
    }
    Some(at)
}

/// `GatherND`: `data` is `[batch, product(data_dims), slice_len]` and
/// `indices` `[batch, lookups, depth]` with `depth = data_dims.len()`;
/// `dst[b, l, :]` is the slice of batch `b` that tuple `(b, l)` selects,
/// or zeros (index rules in the module docs). Parallel over slices.
///
/// # Safety
/// `data` readable for `batch * product(data_dims) * slice_len` elements of
/// `elem_bytes`, `indices` for `batch * lookups * depth`, `dst` writable
/// for `batch * lookups * slice_len` elements and overlapping neither.
pub unsafe fn gather_nd<I: GatherIndex>(
    data: *const u8,
    indices: *const I,
    dst: *mut u8,
    batch: usize,
    lookups: usize,
    data_dims: &[usize],
    slice_len: usize,
    elem_bytes: usize,
    par: bool,
) {
    let (rows, slice) = (batch * lookups, slice_len * elem_bytes);
    if rows == 0 || slice == 0 {
        return;
    }
    let (depth, block) = (data_dims.len(), data_dims.iter().product::<usize>());
    let (src, ix, out) = (SharedPtr(data.cast_mut()), SharedPtr(indices.cast_mut()), SharedPtr(dst));
    let run = |start: usize, len: usize| {
        for r in start..start + len {
            // SAFETY: tuple `r` and slice `r` lie inside indices and dst; a
            // resolved tuple is below `block`, so the source slice lies in
            // batch `r / lookups` of `data`.
            unsafe {
                let to = out.get().add(r * slice);
                match resolve_tuple(ix.get().add(r * depth), data_dims) {
                    Some(at) => {
                        let from = src.get().add(((r / lookups) * block + at) * slice);
                        ptr::copy_nonoverlapping(from, to, slice);
                    }
                    None => ptr::write_bytes(to, 0, slice),
                }
            }
        }
    };
    if par {
        par_for(rows, (PAR_CHUNK / slice).max(1), &run);
    } else {
        run(0, rows);
    }
}

/// `dst = data` unless they are the same bytes.
///
/// # Safety
/// Both valid for `len` elements; equal or disjoint.
unsafe fn copy_data<T>(data: *const T, dst: *mut T, len: usize, par: bool) {
    // SAFETY: disjoint or equal (then `copy_bytes` returns at once).
    unsafe { copy_bytes(data.cast(), dst.cast(), len * size_of::<T>(), par) }
}

/// The combine function of a reduction.
fn combiner<T: ScatterValue>(reduction: ScatterReduction) -> fn(T, T) -> T {
    match reduction {
        ScatterReduction::None => |_, u| u,
        ScatterReduction::Add => T::add,
        ScatterReduction::Mul => T::mul,
        ScatterReduction::Max => T::max,
        ScatterReduction::Min => T::min,
    }
}

/// `dst[at] = f(dst[at], u)`.
///
/// # Safety
/// `dst.add(at)` valid for reads and writes.
#[inline(always)]
unsafe fn combine_at<T: ScatterValue>(dst: *mut T, at: usize, u: T, f: fn(T, T) -> T) {
    // SAFETY: forwarded contract.
    unsafe {
        let p = dst.add(at);
        p.write_unaligned(f(p.read_unaligned(), u));
    }
}

/// `ScatterElements`: `dst = data`, then for every coordinate `c` of
/// `index_dims` in row-major order, `dst[c'] = reduction(dst[c'],
/// updates[c])` with `c'` as in [`gather_elements`]; an out-of-range index
/// skips its update. With `par` only the copy is split over threads.
///
/// # Safety
/// Dims as [`gather_elements`]; `data` readable and `dst` writable for
/// `product(data_dims)` elements, the same bytes or disjoint; `indices`
/// and `updates` readable for `product(index_dims)` elements and
/// overlapping `dst` nowhere.
pub unsafe fn scatter_elements<T: ScatterValue, I: GatherIndex>(
    data: *const T,
    indices: *const I,
    updates: *const T,
    dst: *mut T,
    data_dims: &[usize],
    index_dims: &[usize],
    axis: usize,
    reduction: ScatterReduction,
    par: bool,
) {
    // SAFETY: extents by the contract.
    unsafe { copy_data(data, dst, data_dims.iter().product(), par) };
    let rank = index_dims.len();
    let last = index_dims[rank - 1];
    let rows: usize = index_dims[..rank - 1].iter().product();
    if rows == 0 || last == 0 {
        return;
    }
    let (axis_dim, axis_stride, f) = (data_dims[axis], axis_stride(data_dims, axis), combiner::<T>(reduction));
    for row in 0..rows {
        let base = row_base(row, index_dims, data_dims, axis);
        for j in 0..last {
            let at = row * last + j;
            let col = if axis == rank - 1 { 0 } else { j };
            // SAFETY: `at` is inside indices and updates; the target is
            // inside dst as in `gather_elements`.
            unsafe {
                if let Some(k) = indices.add(at).read_unaligned().resolve(axis_dim) {
                    combine_at(dst, base + col + k * axis_stride, updates.add(at).read_unaligned(), f);
                }
            }
        }
    }
}

/// `ScatterND`: `dst = data` (`[product(data_dims), slice_len]`), then for
/// each tuple `l` of `indices` (`[lookups, depth]`) in order, the slice it
/// selects becomes `reduction(slice, updates[l, :])`; a tuple with an
/// out-of-range entry skips its update. With `par` only the copy is split.
///
/// # Safety
/// `data` readable and `dst` writable for `product(data_dims) * slice_len`
/// elements, the same bytes or disjoint; `indices` readable for `lookups *
/// data_dims.len()`, `updates` for `lookups * slice_len`, neither
/// overlapping `dst`.
pub unsafe fn scatter_nd<T: ScatterValue, I: GatherIndex>(
    data: *const T,
    indices: *const I,
    updates: *const T,
    dst: *mut T,
    lookups: usize,
    data_dims: &[usize],
    slice_len: usize,
    reduction: ScatterReduction,
    par: bool,
) {
    // SAFETY: extents by the contract.
    unsafe { copy_data(data, dst, data_dims.iter().product::<usize>() * slice_len, par) };
    if slice_len == 0 {
        return;
    }
    let (depth, f) = (data_dims.len(), combiner::<T>(reduction));
    for l in 0..lookups {
        // SAFETY: tuple `l` and update row `l` lie inside their operands;
        // a resolved tuple selects a slice inside dst.
        unsafe {
            let Some(at) = resolve_tuple(indices.add(l * depth), data_dims) else { continue };
            for j in 0..slice_len {
                combine_at(dst, at * slice_len + j, updates.add(l * slice_len + j).read_unaligned(), f);
            }
        }
    }
}
