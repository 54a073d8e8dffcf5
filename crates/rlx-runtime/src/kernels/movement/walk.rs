//! Odometer walks over strided lead dims, without heap allocation.

/// Ranks up to this walk with an on-stack odometer; deeper ones (never seen
/// in practice after canonicalisation) decompose each row index instead.
const MAX_ODOMETER_RANK: usize = 16;

/// The number of rows a walk over `dims` visits (1 for no dims).
pub(super) fn count_rows(dims: &[usize]) -> usize {
    dims.iter().product()
}

/// The source offset of row `row` of a row-major walk over `dims`.
pub(super) fn offset_of(dims: &[usize], strides: &[usize], mut row: usize) -> usize {
    let mut off = 0;
    for (&d, &s) in dims.iter().zip(strides).rev() {
        off += (row % d) * s;
        row /= d;
    }
    off
}

/// Calls `f(row, src_offset)` for rows `start..start + len` of a row-major
/// walk over `dims`, where `src_offset = sum(coord[d] * strides[d])`.
#[inline]
pub(super) fn for_each_row(
    dims: &[usize],
    strides: &[usize],
    start: usize,
    len: usize,
    mut f: impl FnMut(usize, usize),
) {
    debug_assert_eq!(dims.len(), strides.len());
    if len == 0 {
        return;
    }
    let rank = dims.len();
    if rank > MAX_ODOMETER_RANK {
        for row in start..start + len {
            f(row, offset_of(dims, strides, row));
        }
        return;
    }
    let mut idx = [0usize; MAX_ODOMETER_RANK];
    let mut rem = start;
    let mut off = 0;
    for d in (0..rank).rev() {
        idx[d] = rem % dims[d];
        rem /= dims[d];
        off += idx[d] * strides[d];
    }
    for row in start..start + len {
        f(row, off);
        // Step the odometer: carry into outer dims, undoing the stride
        // of each dim that wraps.
        for d in (0..rank).rev() {
            idx[d] += 1;
            off += strides[d];
            if idx[d] < dims[d] {
                break;
            }
            off -= strides[d] * dims[d];
            idx[d] = 0;
        }
    }
}
