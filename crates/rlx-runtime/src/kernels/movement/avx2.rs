//! AVX2 plane transpose of 4-byte elements.
//!
//! The plane is walked in `TILE`-square tiles; inside a tile, full 8x8
//! blocks go through an in-register transpose (unpack, shuffle, then a
//! 128-bit lane exchange) and the ragged edges fall back to the scalar
//! loop. Only shuffles touch the data, so the result is bit-exact for any
//! 4-byte type (NaN payloads included). Loads and stores are unaligned.

use std::arch::x86_64::*;

use super::scalar::{transpose_plane, TILE};

/// 8x8 block: `dst[i * dst_ld + j] = src[j * src_ld + i]` for `i, j < 8`.
///
/// # Safety
/// AVX2 available; 8 rows of 8 elements readable at `src` (stride
/// `src_ld`) and writable at `dst` (stride `dst_ld`).
#[inline]
#[target_feature(enable = "avx2")]
unsafe fn block8(src: *const f32, dst: *mut f32, src_ld: usize, dst_ld: usize) {
    // SAFETY: 8 rows of 8 in bounds by the contract.
    unsafe {
        let r0 = _mm256_loadu_ps(src);
        let r1 = _mm256_loadu_ps(src.add(src_ld));
        let r2 = _mm256_loadu_ps(src.add(2 * src_ld));
        let r3 = _mm256_loadu_ps(src.add(3 * src_ld));
        let r4 = _mm256_loadu_ps(src.add(4 * src_ld));
        let r5 = _mm256_loadu_ps(src.add(5 * src_ld));
        let r6 = _mm256_loadu_ps(src.add(6 * src_ld));
        let r7 = _mm256_loadu_ps(src.add(7 * src_ld));
        // Pairs of rows interleaved: t0 = [a00 a10 a01 a11 | a04 a14 a05 a15].
        let t0 = _mm256_unpacklo_ps(r0, r1);
        let t1 = _mm256_unpackhi_ps(r0, r1);
        let t2 = _mm256_unpacklo_ps(r2, r3);
        let t3 = _mm256_unpackhi_ps(r2, r3);
        let t4 = _mm256_unpacklo_ps(r4, r5);
        let t5 = _mm256_unpackhi_ps(r4, r5);
        let t6 = _mm256_unpacklo_ps(r6, r7);
        let t7 = _mm256_unpackhi_ps(r6, r7);
        // Quads: s0 = [a00 a10 a20 a30 | a04 a14 a24 a34].
        let s0 = _mm256_shuffle_ps::<0x44>(t0, t2);
        let s1 = _mm256_shuffle_ps::<0xEE>(t0, t2);
        let s2 = _mm256_shuffle_ps::<0x44>(t1, t3);
        let s3 = _mm256_shuffle_ps::<0xEE>(t1, t3);
        let s4 = _mm256_shuffle_ps::<0x44>(t4, t6);
        let s5 = _mm256_shuffle_ps::<0xEE>(t4, t6);
        let s6 = _mm256_shuffle_ps::<0x44>(t5, t7);
        let s7 = _mm256_shuffle_ps::<0xEE>(t5, t7);
        // Low halves give columns 0-3, high halves columns 4-7.
        _mm256_storeu_ps(dst, _mm256_permute2f128_ps::<0x20>(s0, s4));
        _mm256_storeu_ps(dst.add(dst_ld), _mm256_permute2f128_ps::<0x20>(s1, s5));
        _mm256_storeu_ps(dst.add(2 * dst_ld), _mm256_permute2f128_ps::<0x20>(s2, s6));
        _mm256_storeu_ps(dst.add(3 * dst_ld), _mm256_permute2f128_ps::<0x20>(s3, s7));
        _mm256_storeu_ps(dst.add(4 * dst_ld), _mm256_permute2f128_ps::<0x31>(s0, s4));
        _mm256_storeu_ps(dst.add(5 * dst_ld), _mm256_permute2f128_ps::<0x31>(s1, s5));
        _mm256_storeu_ps(dst.add(6 * dst_ld), _mm256_permute2f128_ps::<0x31>(s2, s6));
        _mm256_storeu_ps(dst.add(7 * dst_ld), _mm256_permute2f128_ps::<0x31>(s3, s7));
    }
}

/// `dst[i * dst_ld + j] = src[j * src_ld + i]` for `i < rows`, `j < cols`.
///
/// # Safety
/// AVX2 available; `src` readable and `dst` writable at every index the
/// formula touches, not overlapping; no alignment required.
#[target_feature(enable = "avx2")]
pub(super) unsafe fn avx2_transpose_plane_u32(
    src: *const u32,
    dst: *mut u32,
    rows: usize,
    cols: usize,
    src_ld: usize,
    dst_ld: usize,
) {
    let (src_f, dst_f) = (src.cast::<f32>(), dst.cast::<f32>());
    let (rows8, cols8) = (rows / 8 * 8, cols / 8 * 8);
    for i0 in (0..rows8).step_by(TILE) {
        let i1 = (i0 + TILE).min(rows8);
        for j0 in (0..cols8).step_by(TILE) {
            let j1 = (j0 + TILE).min(cols8);
            for i in (i0..i1).step_by(8) {
                for j in (j0..j1).step_by(8) {
                    // SAFETY: i + 8 <= rows and j + 8 <= cols, in bounds.
                    unsafe { block8(src_f.add(j * src_ld + i), dst_f.add(i * dst_ld + j), src_ld, dst_ld) };
                }
            }
        }
    }
    // The right edge of the full rows, then the bottom rows entirely. An
    // empty edge's base may lie past the plane, hence `wrapping_add`.
    // SAFETY: the edges are sub-planes of the caller's plane.
    unsafe {
        let (rs, rd) = (src.wrapping_add(cols8 * src_ld), dst.wrapping_add(cols8));
        transpose_plane(rs, rd, rows8, cols - cols8, src_ld, dst_ld);
        let (bs, bd) = (src.wrapping_add(rows8), dst.wrapping_add(rows8 * dst_ld));
        transpose_plane(bs, bd, rows - rows8, cols, src_ld, dst_ld);
    }
}
