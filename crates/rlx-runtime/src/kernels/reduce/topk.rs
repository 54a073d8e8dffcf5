//! The `k` largest or smallest entries of each row.

use std::cmp::Ordering;

use super::arg::write_index;

pub use rlx_core::plan::top_k_scratch_bytes;

/// Total order on values with NaN above `+inf` (as PyTorch's `topk`);
/// `-0.0` and `0.0` are equal.
fn value_order(x: f32, y: f32) -> Ordering {
    match (x.is_nan(), y.is_nan()) {
        (true, true) => Ordering::Equal,
        (true, false) => Ordering::Greater,
        (false, true) => Ordering::Less,
        (false, false) => x.partial_cmp(&y).unwrap_or(Ordering::Equal),
    }
}

/// For each of `outer` rows of `axis_dim` f32: the indices of the `k`
/// largest entries (`largest`) or smallest, best first, to `dst` (i64 when
/// `indices_i64`, else f32), and their values to `values` unless it is
/// null.
///
/// Order: by value (NaN ranks above `+inf`, so it comes first for
/// `largest` and last otherwise), equal values by lower index first (ONNX
/// `TopK`). Every index appears at most once per row: a repeated argmax
/// would re-select index 0 once a row had fewer than `k` values above
/// `-inf`; here a row is ranked as a whole (a partial selection, then a
/// sort of the first `k`), so `-inf` and NaN entries are ranked like any
/// other. Rows run serially (they share the scratch).
///
/// `k` should not exceed `axis_dim` (the validator checks it); if it does,
/// the slots past `axis_dim` get index -1 and value NaN.
///
/// # Safety
///
/// `src` valid for reads of `outer * axis_dim` f32; `dst` for writes of
/// `outer * k` i64 (or f32), aligned for that type; `values` null or valid
/// for writes of `outer * k` f32; `scratch` valid for
/// [`top_k_scratch_bytes`] bytes, 4-byte aligned; no two of the written
/// ranges, `src` and `scratch` overlap.
pub unsafe fn top_k_f32(
    src: *const f32,
    dst: *mut u8,
    values: *mut f32,
    outer: usize,
    axis_dim: usize,
    k: usize,
    largest: bool,
    indices_i64: bool,
    scratch: *mut u32,
) {
    // SAFETY: forwarded contract.
    unsafe { top_k(src, dst, values, (outer, axis_dim, k), largest, indices_i64, scratch, value_order, f32::NAN) }
}

/// [`top_k_f32`] of i64 data: exact, ranked by value, equal values by
/// lower index first; the slots past `axis_dim` (if `k` exceeds it) get
/// index -1 and value 0.
///
/// # Safety
///
/// As [`top_k_f32`] with `src` and `values` of i64.
pub unsafe fn top_k_i64(
    src: *const i64,
    dst: *mut u8,
    values: *mut i64,
    outer: usize,
    axis_dim: usize,
    k: usize,
    largest: bool,
    indices_i64: bool,
    scratch: *mut u32,
) {
    // SAFETY: forwarded contract.
    unsafe { top_k(src, dst, values, (outer, axis_dim, k), largest, indices_i64, scratch, |a: i64, b| a.cmp(&b), 0) }
}

/// The shared body: rows ranked by `order` (then index), `missing` for
/// the value slots past the row.
///
/// # Safety
///
/// As [`top_k_f32`], for `T`.
#[allow(clippy::too_many_arguments)]
unsafe fn top_k<T: Copy>(
    src: *const T,
    dst: *mut u8,
    values: *mut T,
    (outer, axis_dim, k): (usize, usize, usize),
    largest: bool,
    indices_i64: bool,
    scratch: *mut u32,
    order: fn(T, T) -> Ordering,
    missing: T,
) {
    let n = axis_dim;
    debug_assert!(u32::try_from(n).is_ok(), "row of {n} elements");
    let taken = k.min(n);
    for o in 0..outer {
        // SAFETY: row `o` of the source.
        let row = unsafe { std::slice::from_raw_parts(src.add(o * n), n) };
        let rank = |&a: &u32, &b: &u32| {
            let (a, b) = (a as usize, b as usize);
            let by_value = if largest { order(row[b], row[a]) } else { order(row[a], row[b]) };
            by_value.then(a.cmp(&b))
        };
        if taken > 0 {
            // SAFETY: the caller's scratch holds `n` u32, used by no one
            // else during this call.
            let idx = unsafe { std::slice::from_raw_parts_mut(scratch, n) };
            for (i, slot) in idx.iter_mut().enumerate() {
                *slot = i as u32;
            }
            // Neither call allocates.
            if taken < n {
                idx.select_nth_unstable_by(taken - 1, rank);
            }
            idx[..taken].sort_unstable_by(rank);
            for (j, &i) in idx[..taken].iter().enumerate() {
                // SAFETY: slot `(o, j)` of the outputs.
                unsafe {
                    write_index(dst, o * k + j, i as i64, indices_i64);
                    if !values.is_null() {
                        *values.add(o * k + j) = row[i as usize];
                    }
                }
            }
        }
        for j in taken..k {
            // SAFETY: as above.
            unsafe {
                write_index(dst, o * k + j, -1, indices_i64);
                if !values.is_null() {
                    *values.add(o * k + j) = missing;
                }
            }
        }
    }
}
