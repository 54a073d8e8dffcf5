//! The u8 x i8 product on quads of k with AVX-512 VNNI: `vpdpbusd`
//! multiplies 64 unsigned bytes of `b` (16 columns, 4 consecutive k each)
//! by a broadcast quad of `a`'s signed bytes and adds each column's four
//! products into its i32 lane: 64 multiply-adds per instruction, twice
//! the 16-bit pairs' (`x86.rs`).
//!
//! The operands are the raw 8-bit values (shifted into u8 and i8 by the
//! caller), so the zero points are applied once per output, at the store:
//! `sum (x - zx)(w - zw) = sum x w + row_fix[r] - zw[r] * col_sum[j]` with
//! `row_fix[r] = patch * zx * zw[r] - zx * sum w[r]` and `col_sum[j] =
//! sum x[., j]` (the last term only when some `zw` is not 0). All of it in
//! wrapping i32, so the result is the reference's exactly.

use std::arch::x86_64::*;

/// The per-output corrections of a block of rows and columns: `row_fix`
/// and `row_zero` for its first row, `col_sums` for its first column (null
/// when every `row_zero` is 0).
#[derive(Clone, Copy)]
pub(super) struct Fix {
    pub row_fix: *const i32,
    pub row_zero: *const i32,
    pub col_sums: *const i32,
}

/// `c[r][j] = sum over q < kq, t < 4 of b[(q * n + j) * 4 + t] (u8) *
/// a[r * kq + q] byte t (i8)`, plus the corrections, for `rows` rows and
/// columns `0..width`; `b`'s quad rows and `c`'s rows are `n` columns
/// apart.
///
/// # Safety
/// AVX-512 F, BW and VNNI available; `a` readable for `rows * kq` i32
/// (any alignment),
/// `b` for `kq` quad rows of `n` columns (the first `width` read), `c`
/// writable for `rows` rows of `n` (the first `width`), `fix` readable
/// for `rows` rows and `width` columns.
#[allow(clippy::too_many_arguments)]
#[target_feature(enable = "avx512f,avx512bw,avx512vnni")]
pub(super) unsafe fn quads_product(
    a: *const i32,
    b: *const u8,
    c: *mut i32,
    rows: usize,
    kq: usize,
    n: usize,
    width: usize,
    fix: Fix,
) {
    let (wide, narrow) = (width / 64 * 64, width / 16 * 16);
    // The last `width % 16` columns: one masked vector.
    let tail = (1u32 << (width - narrow)) as u16 - 1;
    let mut r = 0;
    // SAFETY: every call keeps its rows and columns inside the caller's
    // extents; the features are enabled in this function.
    unsafe {
        while r < rows {
            let here = Fix { row_fix: fix.row_fix.add(r), row_zero: fix.row_zero.add(r), ..fix };
            let (ar, cr) = (a.add(r * kq), c.add(r * n));
            if r + 4 <= rows {
                tiles::<4, 4>(ar, b, cr, kq, n, 0..wide, !0, here);
                tiles::<4, 1>(ar, b, cr, kq, n, wide..narrow, !0, here);
                if tail != 0 {
                    tiles::<4, 1>(ar, b, cr, kq, n, narrow..narrow + 16, tail, here);
                }
                r += 4;
            } else {
                tiles::<1, 4>(ar, b, cr, kq, n, 0..wide, !0, here);
                tiles::<1, 1>(ar, b, cr, kq, n, wide..narrow, !0, here);
                if tail != 0 {
                    tiles::<1, 1>(ar, b, cr, kq, n, narrow..narrow + 16, tail, here);
                }
                r += 1;
            }
        }
    }
}

/// `R` rows by the columns `cols` (a multiple of `16 * V` long), `V`
/// vectors of 16 columns per tile. With `V == 1`, `mask` picks the
/// columns of each vector that exist (all 16 but in the tail); nothing
/// outside them is read or written.
///
/// # Safety
/// As [`quads_product`], for `R` rows; the masked-in columns inside the
/// extents.
#[allow(clippy::too_many_arguments)]
#[target_feature(enable = "avx512f,avx512bw,avx512vnni")]
unsafe fn tiles<const R: usize, const V: usize>(
    a: *const i32,
    b: *const u8,
    c: *mut i32,
    kq: usize,
    n: usize,
    cols: std::ops::Range<usize>,
    mask: u16,
    fix: Fix,
) {
    // Four mask bits per column for the bytes of `b`.
    let byte_mask = (0..16).filter(|i| mask & (1 << i) != 0).fold(0u64, |m, i| m | (0xF << (4 * i)));
    let mut j = cols.start;
    while j < cols.end {
        let mut acc = [[_mm512_setzero_si512(); V]; R];
        for q in 0..kq {
            // SAFETY: quad row `q`, the masked-in columns of `j..j + 16V`
            // of `b` and entry `q` of each of the `R` rows of `a` are
            // inside the caller's extents.
            unsafe {
                let bp = b.add((q * n + j) * 4);
                let bv: [__m512i; V] = std::array::from_fn(|v| {
                    if mask == !0 {
                        _mm512_loadu_si512(bp.add(64 * v).cast())
                    } else {
                        _mm512_maskz_loadu_epi8(byte_mask, bp.add(64 * v).cast())
                    }
                });
                for (row, acc) in acc.iter_mut().enumerate() {
                    let av = _mm512_set1_epi32(a.add(row * kq + q).read_unaligned());
                    for (acc, bv) in acc.iter_mut().zip(&bv) {
                        *acc = _mm512_dpbusd_epi32(*acc, *bv, av);
                    }
                }
            }
        }
        for (row, acc) in acc.iter().enumerate() {
            // SAFETY: row `row` of the corrections and columns `j..j + 16V`
            // of `col_sums` and of `c` are inside the caller's extents.
            unsafe {
                let row_fix = _mm512_set1_epi32(*fix.row_fix.add(row));
                let row_zero = *fix.row_zero.add(row);
                for (v, acc) in acc.iter().enumerate() {
                    let mut out = _mm512_add_epi32(*acc, row_fix);
                    if !fix.col_sums.is_null() && row_zero != 0 {
                        let sums = _mm512_maskz_loadu_epi32(mask, fix.col_sums.add(j + 16 * v).cast());
                        out = _mm512_sub_epi32(out, _mm512_mullo_epi32(_mm512_set1_epi32(row_zero), sums));
                    }
                    _mm512_mask_storeu_epi32(c.add(row * n + j + 16 * v).cast(), mask, out);
                }
            }
        }
        j += 16 * V;
    }
}
