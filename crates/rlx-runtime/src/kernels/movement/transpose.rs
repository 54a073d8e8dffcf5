//! `Transpose`: one entry per path of `rlx_core::plan::TransposePath`.
//!
//! Output element `c` (over the canonical output dims) reads input element
//! `sum(c[d] * strides[d])`. Every entry writes the output in row-major
//! order, one independent element per position, so parallel chunks never
//! share an output byte. Sources are validated at gen time to lie within
//! the input; no index wraps.

#[cfg(test)]
use rlx_core::plan::TransposePath;

use super::scalar::TILE;
use super::walk::{count_rows, for_each_row, offset_of};
use super::{copy_bytes, Elem, SharedPtr, PAR_CHUNK};
use crate::threads::par_for;

/// Output rows per parallel unit of the plane transposes: several tiles.
const ROW_BLOCK: usize = 2 * TILE;

/// Rows per parallel chunk so a chunk moves about `PAR_CHUNK` elements.
fn min_rows(row: usize) -> usize {
    (PAR_CHUNK / row.max(1)).max(1)
}

/// Runs `f(start, len)` over `0..n`, on several threads when `par`.
fn split(n: usize, min_chunk: usize, par: bool, f: &(dyn Fn(usize, usize) + Sync)) {
    if par {
        par_for(n, min_chunk, f);
    } else if n > 0 {
        f(0, n);
    }
}

/// Runs whichever entry `path` names: a test helper (executors call the
/// entry `rlx_core::lower` chose).
///
/// # Safety
/// As the entry `path` selects, with `path` computed by
/// `rlx_core::plan::transpose_path` from the thunk's fields.
#[cfg(test)]
pub(crate) unsafe fn transpose<T: Elem>(src: *const T, dst: *mut T, path: &TransposePath, par: bool) {
    // SAFETY: forwarded contract.
    unsafe {
        match path {
            TransposePath::Empty => {}
            TransposePath::Copy { len } => transpose_copy(src, dst, *len, par),
            TransposePath::Splat { len } => transpose_splat(src, dst, *len, par),
            TransposePath::BroadcastRuns { lead_dims, lead_strides, run } => {
                transpose_broadcast_runs(src, dst, lead_dims, lead_strides, *run, par)
            }
            TransposePath::InnerRows { lead_dims, lead_strides, row } => {
                transpose_inner_rows(src, dst, lead_dims, lead_strides, *row, par)
            }
            TransposePath::BatchedSwap { lead_dims, lead_strides, rows, cols, src_ld } => {
                transpose_batched_swap(src, dst, lead_dims, lead_strides, *rows, *cols, *src_ld, par)
            }
            TransposePath::Rank2 { rows, cols, s0, s1 } => transpose_rank2(src, dst, *rows, *cols, *s0, *s1, par),
            TransposePath::General { dims, strides } => transpose_general(src, dst, dims, strides, par),
        }
    }
}

/// Path `Copy`: `dst[i] = src[i]` for `i < len`.
///
/// # Safety
/// `src` readable and `dst` writable for `len` elements, not overlapping.
pub unsafe fn transpose_copy<T: Elem>(src: *const T, dst: *mut T, len: usize, par: bool) {
    // SAFETY: forwarded contract.
    unsafe { copy_bytes(src.cast(), dst.cast(), len * size_of::<T>(), par) }
}

/// Path `Splat`: `dst[i] = src[0]` for `i < len`.
///
/// # Safety
/// `src` readable for one element, `dst` writable for `len`, not
/// overlapping.
pub unsafe fn transpose_splat<T: Elem>(src: *const T, dst: *mut T, len: usize, par: bool) {
    if len == 0 {
        return;
    }
    // SAFETY: one element readable.
    let v = unsafe { src.read_unaligned() };
    let d = SharedPtr(dst);
    split(len, PAR_CHUNK, par, &|start, n| {
        for i in start..start + n {
            // SAFETY: `i < len`.
            unsafe { d.get().add(i).write_unaligned(v) };
        }
    });
}

/// Path `BroadcastRuns`: for lead row `r` reading offset `o` of the walk
/// over `lead_dims`/`lead_strides`, `dst[r * run + k] = src[o]` for
/// `k < run`.
///
/// # Safety
/// `lead_dims.len() == lead_strides.len()`; `src` readable at every walk
/// offset; `dst` writable for `count_rows(lead_dims) * run` elements; no overlap.
pub unsafe fn transpose_broadcast_runs<T: Elem>(
    src: *const T,
    dst: *mut T,
    lead_dims: &[usize],
    lead_strides: &[usize],
    run: usize,
    par: bool,
) {
    if run == 0 {
        return;
    }
    let (s, d) = (SharedPtr(src.cast_mut()), SharedPtr(dst));
    split(count_rows(lead_dims), min_rows(run), par, &|start, n| {
        for_each_row(lead_dims, lead_strides, start, n, |r, off| {
            // SAFETY: offsets and run slots in bounds by the contract.
            unsafe {
                let v = s.get().add(off).read_unaligned();
                let out = d.get().add(r * run);
                for k in 0..run {
                    out.add(k).write_unaligned(v);
                }
            }
        });
    });
}

/// Path `InnerRows`: for lead row `r` reading offset `o`,
/// `dst[r * row .. (r + 1) * row]` is a copy of `src[o .. o + row]`.
///
/// # Safety
/// `lead_dims.len() == lead_strides.len()`; `src` readable for `row`
/// elements at every walk offset; `dst` writable for
/// `count_rows(lead_dims) * row` elements; no overlap.
pub unsafe fn transpose_inner_rows<T: Elem>(
    src: *const T,
    dst: *mut T,
    lead_dims: &[usize],
    lead_strides: &[usize],
    row: usize,
    par: bool,
) {
    if row == 0 {
        return;
    }
    let (s, d) = (SharedPtr(src.cast_mut()), SharedPtr(dst));
    split(count_rows(lead_dims), min_rows(row), par, &|start, n| {
        for_each_row(lead_dims, lead_strides, start, n, |r, off| {
            // Copied as bytes: typed copies would require alignment.
            // SAFETY: rows in bounds by the contract, not overlapping.
            unsafe {
                let (from, to) = (s.get().add(off).cast::<u8>(), d.get().add(r * row).cast::<u8>());
                std::ptr::copy_nonoverlapping(from, to, row * size_of::<T>());
            }
        });
    });
}

/// Path `BatchedSwap`: for lead row `b` reading offset `o`, the output
/// plane `dst[b * rows * cols ..]` of `[rows, cols]` is
/// `plane[i, j] = src[o + i + j * src_ld]`. Planes of 4-byte elements use
/// the AVX2 8x8 block transpose where available.
///
/// # Safety
/// `lead_dims.len() == lead_strides.len()`; `src` readable at every index
/// the formula reads; `dst` writable for `count_rows(lead_dims) * rows * cols`
/// elements; no overlap.
pub unsafe fn transpose_batched_swap<T: Elem>(
    src: *const T,
    dst: *mut T,
    lead_dims: &[usize],
    lead_strides: &[usize],
    rows: usize,
    cols: usize,
    src_ld: usize,
    par: bool,
) {
    let plane = rows * cols;
    if plane == 0 {
        return;
    }
    let (s, d) = (SharedPtr(src.cast_mut()), SharedPtr(dst));
    // One unit is a block of ROW_BLOCK output rows of one plane, so even a
    // single plane splits across threads.
    let blocks = rows.div_ceil(ROW_BLOCK);
    let units = count_rows(lead_dims) * blocks;
    split(units, (PAR_CHUNK / (ROW_BLOCK * cols)).max(1), par, &|start, n| {
        for u in start..start + n {
            let (b, blk) = (u / blocks, u % blocks);
            let i0 = blk * ROW_BLOCK;
            let i1 = (i0 + ROW_BLOCK).min(rows);
            let base = offset_of(lead_dims, lead_strides, b);
            // SAFETY: the block is a sub-plane of plane `b`, in bounds by
            // the contract.
            unsafe {
                T::transpose_plane(
                    s.get().add(base + i0),
                    d.get().add(b * plane + i0 * cols),
                    i1 - i0,
                    cols,
                    src_ld,
                    cols,
                )
            };
        }
    });
}

/// Path `Rank2`: `dst[i * cols + j] = src[i * s0 + j * s1]` for
/// `i < rows`, `j < cols`, walked in cache tiles.
///
/// # Safety
/// `src` readable at every index the formula reads; `dst` writable for
/// `rows * cols` elements; no overlap.
pub unsafe fn transpose_rank2<T: Elem>(
    src: *const T,
    dst: *mut T,
    rows: usize,
    cols: usize,
    s0: usize,
    s1: usize,
    par: bool,
) {
    if rows == 0 || cols == 0 {
        return;
    }
    let (s, d) = (SharedPtr(src.cast_mut()), SharedPtr(dst));
    let blocks = rows.div_ceil(TILE);
    split(blocks, (PAR_CHUNK / (TILE * cols)).max(1), par, &|start, n| {
        let (i_start, i_end) = (start * TILE, ((start + n) * TILE).min(rows));
        for i0 in (i_start..i_end).step_by(TILE) {
            let i1 = (i0 + TILE).min(rows);
            for j0 in (0..cols).step_by(TILE) {
                let j1 = (j0 + TILE).min(cols);
                for i in i0..i1 {
                    for j in j0..j1 {
                        // SAFETY: in bounds by the contract.
                        unsafe {
                            d.get().add(i * cols + j).write_unaligned(s.get().add(i * s0 + j * s1).read_unaligned())
                        };
                    }
                }
            }
        }
    });
}

/// Path `General`: an odometer over all dims but the last and a strided
/// loop over the last: `dst[r * n + k] = src[o + k * s]` where `n`, `s`
/// are the last dim and stride and `o` the walk offset of row `r`.
///
/// # Safety
/// `dims.len() == strides.len() >= 1`; `src` readable at every index the
/// formula reads; `dst` writable for `product(dims)` elements; no overlap.
pub unsafe fn transpose_general<T: Elem>(src: *const T, dst: *mut T, dims: &[usize], strides: &[usize], par: bool) {
    debug_assert!(!dims.is_empty() && dims.len() == strides.len());
    let Some((&n, lead_dims)) = dims.split_last() else { return };
    let Some((&step, lead_strides)) = strides.split_last() else { return };
    if n == 0 {
        return;
    }
    let (s, d) = (SharedPtr(src.cast_mut()), SharedPtr(dst));
    split(count_rows(lead_dims), min_rows(n), par, &|start, count| {
        for_each_row(lead_dims, lead_strides, start, count, |r, off| {
            // SAFETY: in bounds by the contract.
            unsafe {
                let (from, out) = (s.get().add(off), d.get().add(r * n));
                for k in 0..n {
                    out.add(k).write_unaligned(from.add(k * step).read_unaligned());
                }
            }
        });
    });
}
