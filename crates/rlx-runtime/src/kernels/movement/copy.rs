//! Byte copies: `Copy`, `Narrow`, `Concat` and `KvAppend`.
//!
//! Row copies use `ptr::copy` (memmove): the validator forbids overlap
//! between these kernels' inputs and outputs, and memmove costs the same as
//! memcpy, so a validator slip gives defined (if wrong) bytes rather than
//! undefined behaviour.

use std::ptr;

use super::{SharedPtr, PAR_CHUNK};
use crate::threads::par_for;

/// Copies `n` bytes from `src` to `dst`, with memmove semantics when
/// serial; with `par`, disjoint chunks are copied on several threads.
///
/// # Safety
/// `src` readable and `dst` writable for `n` bytes. With `par` the two
/// ranges must not overlap (decide with `rlx_core::plan::copy_parallel`);
/// without it any overlap is allowed.
pub unsafe fn copy_bytes(src: *const u8, dst: *mut u8, n: usize, par: bool) {
    if n == 0 || ptr::eq(src, dst) {
        return;
    }
    if !par {
        // SAFETY: extents by the contract; `copy` allows overlap.
        unsafe { ptr::copy(src, dst, n) };
        return;
    }
    let (s, d) = (SharedPtr(src.cast_mut()), SharedPtr(dst));
    par_for(n, 4 * PAR_CHUNK, &|start, len| {
        // SAFETY: disjoint chunks of non-overlapping ranges.
        unsafe { ptr::copy_nonoverlapping(s.get().add(start), d.get().add(start), len) };
    });
}

/// `Copy`: `len` f32 from `src` to `dst` (memmove).
///
/// # Safety
/// As [`copy_bytes`] for `len * 4` bytes; pointers aligned to 4.
pub unsafe fn copy_f32(src: *const f32, dst: *mut f32, len: usize, par: bool) {
    // SAFETY: forwarded contract.
    unsafe { copy_bytes(src.cast(), dst.cast(), len * 4, par) }
}

/// `CopyF64`: `len` f64 from `src` to `dst` (memmove).
///
/// # Safety
/// As [`copy_bytes`] for `len * 8` bytes; pointers aligned to 8.
pub unsafe fn copy_f64(src: *const f64, dst: *mut f64, len: usize, par: bool) {
    // SAFETY: forwarded contract.
    unsafe { copy_bytes(src.cast(), dst.cast(), len * 8, par) }
}

/// `CopyI64`: `len` i64 from `src` to `dst` (memmove).
///
/// # Safety
/// As [`copy_bytes`] for `len * 8` bytes; pointers aligned to 8.
pub unsafe fn copy_i64(src: *const i64, dst: *mut i64, len: usize, par: bool) {
    // SAFETY: forwarded contract.
    unsafe { copy_bytes(src.cast(), dst.cast(), len * 8, par) }
}

/// `Narrow`: for `o < outer`, copies `inner` elements of `elem_bytes` from
/// `src + o * src_stride` to `dst + o * dst_stride` (strides in elements).
/// With `par`, rows are split across threads (decide with
/// `rlx_core::plan::narrow_parallel`, which requires disjoint output rows).
///
/// # Safety
/// Every source row readable and destination row writable; source and
/// destination do not overlap.
pub unsafe fn narrow(
    src: *const u8,
    dst: *mut u8,
    outer: usize,
    src_stride: usize,
    dst_stride: usize,
    inner: usize,
    elem_bytes: usize,
    par: bool,
) {
    let row = inner * elem_bytes;
    if row == 0 || outer == 0 {
        return;
    }
    let (ss, ds) = (src_stride * elem_bytes, dst_stride * elem_bytes);
    let (s, d) = (SharedPtr(src.cast_mut()), SharedPtr(dst));
    let rows = |start: usize, len: usize| {
        for o in start..start + len {
            // SAFETY: row `o` of each side is in bounds by the contract.
            unsafe { ptr::copy(s.get().add(o * ss), d.get().add(o * ds), row) };
        }
    };
    if par {
        par_for(outer, (PAR_CHUNK / row).max(1), &rows);
    } else {
        rows(0, outer);
    }
}

/// A list of input pointers that `par_for` workers may share.
struct Inputs<'a>(&'a [*const u8]);

// SAFETY: the inputs are only read, and `par_for` joins before return.
unsafe impl Sync for Inputs<'_> {}

/// `Concat`: for each `o < outer`, the output row is the inputs' rows back
/// to back; input `j` contributes `inner[j]` elements of `elem_bytes` per
/// row. With `par`, output rows (or, for one row, the bytes of each piece)
/// are split across threads.
///
/// # Safety
/// `inputs.len() == inner.len()`; input `j` readable for
/// `outer * inner[j]` elements; `dst` writable for
/// `outer * sum(inner)` elements; no input overlaps `dst`.
pub unsafe fn concat(inputs: &[*const u8], dst: *mut u8, outer: usize, inner: &[usize], elem_bytes: usize, par: bool) {
    debug_assert_eq!(inputs.len(), inner.len());
    let out_row: usize = inner.iter().sum::<usize>() * elem_bytes;
    if out_row == 0 || outer == 0 {
        return;
    }
    let ins = Inputs(inputs);
    let d = SharedPtr(dst);
    let rows = |start: usize, len: usize, par_pieces: bool| {
        let ins = &ins;
        for o in start..start + len {
            let mut at = o * out_row;
            for (&p, &n) in ins.0.iter().zip(inner) {
                let piece = n * elem_bytes;
                // SAFETY: row `o` of input `j` and its slot in the output
                // row are in bounds by the contract; they do not overlap.
                unsafe { copy_bytes(p.add(o * piece), d.get().add(at), piece, par_pieces) };
                at += piece;
            }
        }
    };
    if par && outer > 1 {
        par_for(outer, (PAR_CHUNK / out_row).max(1), &|start, len| rows(start, len, false));
    } else {
        rows(0, outer, par);
    }
}

/// `KvAppend`: writes `src` `[batch, new_len, row]` into `cache`
/// `[batch, max_len, row]` at sequence position `pos` (elements of
/// `elem_bytes`). Positions at or past `max_len` are dropped, so a cache
/// never overflows into the next batch. With `par`, batches (or, for one
/// batch, bytes) are split across threads.
///
/// # Safety
/// `src` readable for `batch * new_len * row` elements, `cache` writable
/// for `batch * max_len * row`; they do not overlap.
pub unsafe fn kv_append(
    src: *const u8,
    cache: *mut u8,
    batch: usize,
    new_len: usize,
    max_len: usize,
    row: usize,
    pos: usize,
    elem_bytes: usize,
    par: bool,
) {
    let kept = new_len.min(max_len.saturating_sub(pos));
    let row_bytes = row * elem_bytes;
    let bytes = kept * row_bytes;
    if bytes == 0 || batch == 0 {
        return;
    }
    let (s, c) = (SharedPtr(src.cast_mut()), SharedPtr(cache));
    let batches = |start: usize, len: usize, par_bytes: bool| {
        for b in start..start + len {
            let from = b * new_len * row_bytes;
            let to = (b * max_len + pos) * row_bytes;
            // SAFETY: in bounds since pos + kept <= max_len; no overlap.
            unsafe { copy_bytes(s.get().add(from), c.get().add(to), bytes, par_bytes) };
        }
    };
    if par && batch > 1 {
        par_for(batch, (PAR_CHUNK / bytes).max(1), &|start, len| batches(start, len, false));
    } else {
        batches(0, batch, par);
    }
}

/// [`kv_append`] of one sequence at the position of a decoder step, `p =
/// *pos` read at run time: rows `p..p + new_len` of `cache`. Writes nothing
/// when those rows do not fit in `max_len`.
///
/// # Safety
/// `src` readable for `new_len * row` elements of `elem_bytes`, `cache`
/// writable for `max_len * row`, `pos` readable for one i64; `src` and
/// `cache` do not overlap.
pub unsafe fn kv_write(
    src: *const u8,
    cache: *mut u8,
    pos: *const i64,
    new_len: usize,
    max_len: usize,
    row: usize,
    elem_bytes: usize,
    par: bool,
) {
    // SAFETY: `pos` is readable by the contract.
    if let Some(p) = unsafe { crate::kernels::step_position(pos, new_len, max_len) } {
        // SAFETY: one batch row; `p + new_len <= max_len`, and the rest is
        // the caller's contract.
        unsafe { kv_append(src, cache, 1, new_len, max_len, row, p, elem_bytes, par) }
    }
}
