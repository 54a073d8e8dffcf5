//! Tiles of the packed 16-bit product. AVX2: 4 rows by 16 columns per tile
//! (8 accumulators), `vpmaddwd` multiplying a broadcast pair of `a`'s k
//! columns by 8 columns' interleaved pairs of `b`'s k rows, then `vpaddd`.
//! AVX-512 VNNI: 4 rows by 64 columns (16 accumulators), `vpdpwssd` doing
//! both in one instruction on 16 columns.

use std::arch::x86_64::*;

use super::columns_product;

/// [`super::rows_product`] with AVX2.
///
/// # Safety
/// AVX2 available; the extents of [`super::rows_product`].
#[target_feature(enable = "avx2")]
pub(super) unsafe fn rows_product_avx2(
    a_pairs: *const i32,
    packed_b: *const i16,
    c: *mut i32,
    rows: usize,
    kp: usize,
    n: usize,
    width: usize,
) {
    // SAFETY: the caller's contract; AVX2 is enabled here.
    unsafe { columns_avx2(a_pairs, packed_b, c, rows, kp, n, width, 0) }
}

/// Columns `from..width` of [`super::rows_product`]: AVX2 tiles of 4 rows
/// (then single rows) by 16 columns, the last `(width - from) % 16`
/// columns by the portable tail.
///
/// # Safety
/// AVX2; the extents of [`super::rows_product`]; `from <= width`.
#[allow(clippy::too_many_arguments)]
#[target_feature(enable = "avx2")]
unsafe fn columns_avx2(
    a_pairs: *const i32,
    packed_b: *const i16,
    c: *mut i32,
    rows: usize,
    kp: usize,
    n: usize,
    width: usize,
    from: usize,
) {
    let full = from + (width - from) / 16 * 16;
    let mut r = 0;
    // SAFETY: every call below keeps its rows and columns inside the
    // caller's extents; AVX2 is enabled in this function.
    unsafe {
        while r + 4 <= rows {
            tiles_from::<4>(a_pairs.add(r * kp), packed_b, c.add(r * n), kp, n, from, full);
            r += 4;
        }
        while r < rows {
            tiles_from::<1>(a_pairs.add(r * kp), packed_b, c.add(r * n), kp, n, from, full);
            r += 1;
        }
        if full < width {
            columns_product(a_pairs, packed_b, c, rows, kp, n, full..width);
        }
    }
}

/// `R` rows by columns `from..full` (`full - from` a multiple of 16).
///
/// # Safety
/// AVX2; `a_pairs` readable for `R * kp` i32, `packed_b` for `kp * n * 2`
/// i16, `c` writable for `R` rows of `n`.
#[target_feature(enable = "avx2")]
unsafe fn tiles_from<const R: usize>(
    a_pairs: *const i32,
    packed_b: *const i16,
    c: *mut i32,
    kp: usize,
    n: usize,
    from: usize,
    full: usize,
) {
    let mut j = from;
    while j < full {
        let mut acc = [[_mm256_setzero_si256(); 2]; R];
        for q in 0..kp {
            // SAFETY: pair `q` of columns `j..j + 16` is 32 i16 inside
            // `packed_b`; `a_pairs` row `r` has `kp` entries.
            unsafe {
                let bp = packed_b.add((q * n + j) * 2);
                let b0 = _mm256_loadu_si256(bp.cast());
                let b1 = _mm256_loadu_si256(bp.add(16).cast());
                for (row, acc) in acc.iter_mut().enumerate() {
                    let av = _mm256_set1_epi32(*a_pairs.add(row * kp + q));
                    acc[0] = _mm256_add_epi32(acc[0], _mm256_madd_epi16(av, b0));
                    acc[1] = _mm256_add_epi32(acc[1], _mm256_madd_epi16(av, b1));
                }
            }
        }
        for (row, acc) in acc.iter().enumerate() {
            // SAFETY: columns `j..j + 16` of row `row` are inside `c`.
            unsafe {
                let out = c.add(row * n + j);
                _mm256_storeu_si256(out.cast(), acc[0]);
                _mm256_storeu_si256(out.add(8).cast(), acc[1]);
            }
        }
        j += 16;
    }
}

/// [`super::rows_product`] with AVX-512 VNNI; columns past the last full
/// 64 go through the AVX2 tiles and the portable tail.
///
/// # Safety
/// AVX-512 F, BW and VNNI available; the extents of [`super::rows_product`].
#[target_feature(enable = "avx512f,avx512bw,avx512vnni,avx2")]
pub(super) unsafe fn rows_product_avx512(
    a_pairs: *const i32,
    packed_b: *const i16,
    c: *mut i32,
    rows: usize,
    kp: usize,
    n: usize,
    width: usize,
) {
    let wide = width / 64 * 64;
    let mut r = 0;
    // SAFETY: every call below keeps its rows and columns inside the
    // caller's extents; the features are enabled in this function.
    unsafe {
        while r + 4 <= rows {
            tiles512::<4>(a_pairs.add(r * kp), packed_b, c.add(r * n), kp, n, wide);
            r += 4;
        }
        while r < rows {
            tiles512::<1>(a_pairs.add(r * kp), packed_b, c.add(r * n), kp, n, wide);
            r += 1;
        }
        // The remaining columns: AVX2 tiles, then the portable tail.
        columns_avx2(a_pairs, packed_b, c, rows, kp, n, width, wide);
    }
}

/// `R` rows by columns `0..wide` (a multiple of 64) with `vpdpwssd`.
///
/// # Safety
/// AVX-512 F/BW/VNNI; extents as [`tiles_from`].
#[target_feature(enable = "avx512f,avx512bw,avx512vnni")]
unsafe fn tiles512<const R: usize>(
    a_pairs: *const i32,
    packed_b: *const i16,
    c: *mut i32,
    kp: usize,
    n: usize,
    wide: usize,
) {
    let mut j = 0;
    while j < wide {
        let mut acc = [[_mm512_setzero_si512(); 4]; R];
        for q in 0..kp {
            // SAFETY: pair `q` of columns `j..j + 64` is 128 i16 inside
            // `packed_b`; `a_pairs` row `r` has `kp` entries.
            unsafe {
                let bp = packed_b.add((q * n + j) * 2);
                let b = [
                    _mm512_loadu_si512(bp.cast()),
                    _mm512_loadu_si512(bp.add(32).cast()),
                    _mm512_loadu_si512(bp.add(64).cast()),
                    _mm512_loadu_si512(bp.add(96).cast()),
                ];
                for (row, acc) in acc.iter_mut().enumerate() {
                    let av = _mm512_set1_epi32(*a_pairs.add(row * kp + q));
                    for (acc, b) in acc.iter_mut().zip(&b) {
                        *acc = _mm512_dpwssd_epi32(*acc, av, *b);
                    }
                }
            }
        }
        for (row, acc) in acc.iter().enumerate() {
            for (v, acc) in acc.iter().enumerate() {
                // SAFETY: columns `j + 16v..j + 16v + 16` of row `row` are inside `c`.
                unsafe { _mm512_storeu_si512(c.add(row * n + j + 16 * v).cast(), *acc) };
            }
        }
        j += 64;
    }
}
