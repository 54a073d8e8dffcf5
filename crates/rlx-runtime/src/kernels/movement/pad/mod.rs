//! `Pad`: one pass over the output, a row at a time.
//!
//! The entry takes the canonical form of `rlx_core::plan::canonical_pad`:
//! lead axes, then the row axis (the last padded one) whose positions are
//! `unit` contiguous elements. Each output row is written left to right:
//! the `before` border, the source row (one `memcpy`), the `after` border.
//! A border position is the value (`constant`) or a copy of the unit that
//! `plan::pad_source` names; a lead coordinate outside the source in
//! `constant` mode makes the whole row the value. Rows are independent,
//! so they split over threads in chunks of about `PAR_CHUNK` elements, as
//! the transposes do, and the bytes never depend on the split.
//!
//! Elements move as bits with unaligned accesses (a 16-byte element may
//! sit in an f32 buffer aligned to 4).

pub mod scalar;

use std::ptr;

use rlx_core::plan::{pad_source, PAD_MAX_RANK};
use rlx_core::PadMode;

use super::{copy_bytes, Elem, SharedPtr, PAR_CHUNK};
use crate::threads::par_for;

/// The row walk's fixed facts, shared by every task.
struct Rows<'a> {
    /// Lead axes: source dims, pads, the output dims and the source
    /// stride of each (in elements).
    dims: &'a [usize],
    before: &'a [usize],
    out_dims: [usize; PAD_MAX_RANK],
    src_strides: [usize; PAD_MAX_RANK],
    /// The row axis' source length and pads, in units.
    len: usize,
    left: usize,
    right: usize,
    unit: usize,
    mode: PadMode,
}

impl Rows<'_> {
    /// Output elements per row.
    fn row_elems(&self) -> usize {
        (self.left + self.len + self.right) * self.unit
    }

    /// The source offset of the row at lead output coordinates `coord`, or
    /// `None` when the row is all value.
    fn source_row(&self, coord: &[usize]) -> Option<usize> {
        let mut off = 0;
        for (d, &c) in coord.iter().enumerate() {
            off += pad_source(self.mode, c, self.before[d], self.dims[d])? * self.src_strides[d];
        }
        Some(off)
    }
}

/// `Pad` of `src` (canonical `dims`, `before`, `after`, `unit`) into
/// `dst`; `value` is the `constant` mode's element (zero bits when null).
///
/// # Safety
/// `dims`, `before` and `after` have one length, 1 to `PAD_MAX_RANK`;
/// `src` readable for `product(dims) * unit` elements, `dst` writable for
/// `product(dims[d] + before[d] + after[d]) * unit`, not overlapping it;
/// `value` null or readable for one element; every position reads inside
/// the source (`plan::pad_source` is `Some` wherever a mode other than
/// `constant` reads: a non-empty output has a non-empty source).
pub unsafe fn pad<T: Elem + Default>(
    src: *const T,
    value: *const T,
    dst: *mut T,
    dims: &[usize],
    before: &[usize],
    after: &[usize],
    unit: usize,
    mode: PadMode,
    par: bool,
) {
    debug_assert!(!dims.is_empty() && dims.len() <= PAD_MAX_RANK);
    debug_assert!(before.len() == dims.len() && after.len() == dims.len());
    let lead = dims.len() - 1;
    // SAFETY: `value` is null or readable by the contract.
    let fill = if value.is_null() { T::default() } else { unsafe { value.read_unaligned() } };
    let mut rows = Rows {
        dims,
        before,
        out_dims: [0; PAD_MAX_RANK],
        src_strides: [0; PAD_MAX_RANK],
        len: dims[lead],
        left: before[lead],
        right: after[lead],
        unit,
        mode,
    };
    let mut stride = rows.len * unit;
    for d in (0..lead).rev() {
        rows.out_dims[d] = dims[d] + before[d] + after[d];
        rows.src_strides[d] = stride;
        stride *= dims[d];
    }
    let count: usize = rows.out_dims[..lead].iter().product();
    let row_elems = rows.row_elems();
    if count == 0 || row_elems == 0 {
        return;
    }
    let (s, o) = (SharedPtr(src.cast_mut()), SharedPtr(dst));
    let walk = |start: usize, n: usize, par_copy: bool| {
        let lead_dims = &rows.out_dims[..lead];
        let mut coord = [0usize; PAD_MAX_RANK];
        let mut rem = start;
        for d in (0..lead).rev() {
            coord[d] = rem % lead_dims[d];
            rem /= lead_dims[d];
        }
        for r in start..start + n {
            // SAFETY: row `r` of the output and the source row it reads
            // are in bounds by the contract; chunks own disjoint rows.
            unsafe {
                let out = o.get().add(r * row_elems);
                match rows.source_row(&coord[..lead]) {
                    Some(at) => write_row(&rows, s.get().add(at), out, fill, par_copy),
                    None => splat(out, fill, row_elems),
                }
            }
            for d in (0..lead).rev() {
                coord[d] += 1;
                if coord[d] < lead_dims[d] {
                    break;
                }
                coord[d] = 0;
            }
        }
    };
    if par && count > 1 {
        par_for(count, (PAR_CHUNK / row_elems).max(1), &|start, n| walk(start, n, false));
    } else {
        // One row: its source copy may still split over threads.
        walk(0, count, par);
    }
}

/// One output row: borders around the source row `from`.
///
/// # Safety
/// `from` readable for `rows.len * rows.unit` elements (and the borders'
/// reads inside it, as `pad_source` maps them), `out` writable for
/// `rows.row_elems()`; no overlap.
unsafe fn write_row<T: Elem>(rows: &Rows<'_>, from: *const T, out: *mut T, fill: T, par: bool) {
    let Rows { len, left, right, unit, mode, .. } = *rows;
    // SAFETY: positions `0..left + len + right` of `out` (in units) are
    // writable and source units `pad_source` returns (below `len`) readable
    // by the contract.
    unsafe {
        let border = |p: usize| {
            let to = out.add(p * unit);
            match pad_source(mode, p, left, len) {
                Some(i) => copy_units(from.add(i * unit), to, unit),
                None => splat(to, fill, unit),
            }
        };
        for p in 0..left {
            border(p);
        }
        let (row, to) = (len * unit * size_of::<T>(), out.add(left * unit).cast::<u8>());
        if par {
            copy_bytes(from.cast(), to, row, true);
        } else {
            ptr::copy_nonoverlapping(from.cast::<u8>(), to, row);
        }
        for p in left + len..left + len + right {
            border(p);
        }
    }
}

/// Copies `n` elements; one element as a plain load and store (a border
/// position of an unblocked row).
///
/// # Safety
/// `from` readable and `to` writable for `n` elements, not overlapping.
#[inline]
unsafe fn copy_units<T: Elem>(from: *const T, to: *mut T, n: usize) {
    // SAFETY: forwarded contract.
    unsafe {
        if n == 1 {
            to.write_unaligned(from.read_unaligned());
        } else {
            ptr::copy_nonoverlapping(from.cast::<u8>(), to.cast::<u8>(), n * size_of::<T>());
        }
    }
}

/// Writes `v` to `n` elements.
///
/// # Safety
/// `to` writable for `n` elements.
#[inline]
unsafe fn splat<T: Elem>(to: *mut T, v: T, n: usize) {
    for i in 0..n {
        // SAFETY: `i < n`.
        unsafe { to.add(i).write_unaligned(v) };
    }
}
