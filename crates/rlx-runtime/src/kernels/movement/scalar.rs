//! Scalar reference for the 2-D plane transpose.

/// Side of the square tiles the plane is walked in: a 32x32 tile of 16-byte
/// elements is 16 KiB, so source and destination tiles stay in L1.
pub(super) const TILE: usize = 32;

/// `dst[i * dst_ld + j] = src[j * src_ld + i]` for `i < rows`, `j < cols`,
/// in `TILE`-square tiles so both sides stay cache-resident.
///
/// # Safety
/// `src` readable and `dst` writable at every index the formula touches,
/// not overlapping; no alignment required.
pub(super) unsafe fn transpose_plane<T: Copy>(
    src: *const T,
    dst: *mut T,
    rows: usize,
    cols: usize,
    src_ld: usize,
    dst_ld: usize,
) {
    for i0 in (0..rows).step_by(TILE) {
        let i1 = (i0 + TILE).min(rows);
        for j0 in (0..cols).step_by(TILE) {
            let j1 = (j0 + TILE).min(cols);
            for i in i0..i1 {
                for j in j0..j1 {
                    // SAFETY: in bounds by the caller's contract.
                    unsafe { dst.add(i * dst_ld + j).write_unaligned(src.add(j * src_ld + i).read_unaligned()) };
                }
            }
        }
    }
}
