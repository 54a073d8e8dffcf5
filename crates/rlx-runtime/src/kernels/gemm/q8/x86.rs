//! AVX-512 and AVX2 kernels. Per block: the panel's 16 scales in one
//! (AVX-512) or two (AVX2) vectors, then 32 rows of 16 `i8`, each
//! sign-extended to i32 (`vpmovsxbd`) and converted to f32 in registers,
//! FMA'd against the broadcast `a[p]` into block sums that start at 0;
//! at the block's end one FMA adds sum times scale into the tile's
//! accumulators. All loads unaligned; panels are full width (padding
//! columns have scale 0), so there is no tail.

use std::arch::x86_64::*;

use rlx_core::pack::PANEL;
use rlx_core::q8::{BLOCK, BLOCK_BYTES};

use super::{Q8Tile, GROUP};

/// `R` rows by `Q` panels on AVX-512: a block sum and an accumulator per
/// row and panel (at most 16 registers).
#[target_feature(enable = "avx512f")]
unsafe fn tile_avx512<const R: usize, const Q: usize>(t: &Q8Tile, q0: usize) {
    let Q8Tile { blocks, a, lda, b, panel_stride, c, .. } = *t;
    let b = b.wrapping_add(q0 * panel_stride);
    let c = c.wrapping_add(q0 * PANEL);
    // SAFETY: the extents of `Q8Kernel` for panels `q0..q0 + Q`.
    unsafe {
        let mut acc: [[__m512; Q]; R] =
            std::array::from_fn(|r| std::array::from_fn(|q| _mm512_loadu_ps(c.add(r * GROUP + q * PANEL))));
        for blk in 0..blocks {
            let at: [*const u8; Q] = std::array::from_fn(|q| b.add(q * panel_stride + blk * BLOCK_BYTES));
            let mut s = [[_mm512_setzero_ps(); Q]; R];
            for p in 0..BLOCK {
                let bv: [__m512; Q] = std::array::from_fn(|q| {
                    let raw = _mm_loadu_si128(at[q].add(PANEL * 4 + p * PANEL).cast());
                    _mm512_cvtepi32_ps(_mm512_cvtepi8_epi32(raw))
                });
                for (r, row) in s.iter_mut().enumerate() {
                    let av = _mm512_set1_ps(*a.add(r * lda + blk * BLOCK + p));
                    for (v, bq) in row.iter_mut().zip(bv) {
                        *v = _mm512_fmadd_ps(av, bq, *v);
                    }
                }
            }
            for (acc_row, s_row) in acc.iter_mut().zip(&s) {
                for q in 0..Q {
                    let d = _mm512_loadu_ps(at[q].cast());
                    acc_row[q] = _mm512_fmadd_ps(s_row[q], d, acc_row[q]);
                }
            }
        }
        for (r, row) in acc.iter().enumerate() {
            for (q, v) in row.iter().enumerate() {
                _mm512_storeu_ps(c.add(r * GROUP + q * PANEL), *v);
            }
        }
    }
}

/// # Safety
///
/// As [`super::Q8Kernel`] (rows 1 or 2), on a CPU with AVX-512F.
pub(super) unsafe fn avx512(t: &Q8Tile) {
    // SAFETY: forwarded contract; every call covers panels inside `t`.
    unsafe {
        match (t.rows, t.panels) {
            (1, 1) => tile_avx512::<1, 1>(t, 0),
            (1, 2) => tile_avx512::<1, 2>(t, 0),
            (1, 3) => tile_avx512::<1, 3>(t, 0),
            (1, 4) => tile_avx512::<1, 4>(t, 0),
            (2, 1) => tile_avx512::<2, 1>(t, 0),
            (2, 2) => tile_avx512::<2, 2>(t, 0),
            (2, 3) => tile_avx512::<2, 3>(t, 0),
            (2, 4) => tile_avx512::<2, 4>(t, 0),
            _ => unreachable!("rows 1..=2, panels 1..=4"),
        }
    }
}

/// `R` rows by `Q` panels on AVX2: two 8-lane halves per panel, a block
/// sum and an accumulator per row, panel and half (at most 8 registers,
/// so `R * Q <= 2`).
#[target_feature(enable = "avx2,fma")]
unsafe fn tile_avx2<const R: usize, const Q: usize>(t: &Q8Tile, q0: usize) {
    let Q8Tile { blocks, a, lda, b, panel_stride, c, .. } = *t;
    let b = b.wrapping_add(q0 * panel_stride);
    let c = c.wrapping_add(q0 * PANEL);
    // SAFETY: the extents of `Q8Kernel` for panels `q0..q0 + Q`.
    unsafe {
        let mut acc: [[[__m256; 2]; Q]; R] = std::array::from_fn(|r| {
            std::array::from_fn(|q| std::array::from_fn(|h| _mm256_loadu_ps(c.add(r * GROUP + q * PANEL + 8 * h))))
        });
        for blk in 0..blocks {
            let at: [*const u8; Q] = std::array::from_fn(|q| b.add(q * panel_stride + blk * BLOCK_BYTES));
            let mut s = [[[_mm256_setzero_ps(); 2]; Q]; R];
            for p in 0..BLOCK {
                let bv: [[__m256; 2]; Q] = std::array::from_fn(|q| {
                    std::array::from_fn(|h| {
                        let raw = _mm_loadl_epi64(at[q].add(PANEL * 4 + p * PANEL + 8 * h).cast());
                        _mm256_cvtepi32_ps(_mm256_cvtepi8_epi32(raw))
                    })
                });
                for (r, row) in s.iter_mut().enumerate() {
                    let av = _mm256_broadcast_ss(&*a.add(r * lda + blk * BLOCK + p));
                    for (halves, bq) in row.iter_mut().zip(&bv) {
                        for (v, bh) in halves.iter_mut().zip(bq) {
                            *v = _mm256_fmadd_ps(av, *bh, *v);
                        }
                    }
                }
            }
            for (acc_row, s_row) in acc.iter_mut().zip(&s) {
                for q in 0..Q {
                    for h in 0..2 {
                        let d = _mm256_loadu_ps(at[q].cast::<f32>().add(8 * h));
                        acc_row[q][h] = _mm256_fmadd_ps(s_row[q][h], d, acc_row[q][h]);
                    }
                }
            }
        }
        for (r, row) in acc.iter().enumerate() {
            for (q, halves) in row.iter().enumerate() {
                for (h, v) in halves.iter().enumerate() {
                    _mm256_storeu_ps(c.add(r * GROUP + q * PANEL + 8 * h), *v);
                }
            }
        }
    }
}

/// # Safety
///
/// As [`super::Q8Kernel`] (rows 1 or 2), on a CPU with AVX2 and FMA.
pub(super) unsafe fn avx2(t: &Q8Tile) {
    // SAFETY: forwarded contract; the calls cover panels `0..t.panels`.
    unsafe {
        match t.rows {
            1 => {
                let mut q = 0;
                while q + 2 <= t.panels {
                    tile_avx2::<1, 2>(t, q);
                    q += 2;
                }
                if q < t.panels {
                    tile_avx2::<1, 1>(t, q);
                }
            }
            2 => {
                for q in 0..t.panels {
                    tile_avx2::<2, 1>(t, q);
                }
            }
            _ => unreachable!("rows 1..=2"),
        }
    }
}
