//! `IntGemmPacked`'s AVX-512 VNNI tiles: up to 8 rows times 3 weight
//! blocks (48 columns) of accumulators, 24 of the 32 zmm registers. Per
//! quad of k: 3 weight vectors loaded, 8 words of `a` broadcast from
//! memory, 24 `vpdpbusd` (64 multiply-adds each). Against 8 x 2 blocks,
//! 4 % faster on MiniLM's products (this machine).
//!
//! With AVX-VNNI only (the VEX form on 256-bit registers: Alder Lake and
//! later client cores, without AVX-512), tiles of 6 rows by one block: 12
//! accumulators, two weight vectors and the broadcast, `vpdpbusd` on ymm.
//!
//! Without VNNI, AVX2 tiles of 4 rows by half a block: per quad, 32
//! weight bytes widened to two vectors of i16 (4 columns by 4 k each) and
//! each row's quad, widened once per call into the scratch, broadcast
//! with one load; `vpmaddwd` adds pairs of k into 8 i32 per vector
//! (exact: `255 * 128 * 2` fits), and one `vphaddd` per 8 columns folds
//! the pairs at the end.

use std::arch::x86_64::*;
use std::ops::Range;

use super::{Product, Store, LANES, QUAD_BYTES};

/// Rows per tile.
pub(super) const ROWS: usize = 8;
/// Weight blocks (of 16 columns) per tile.
pub(super) const BLOCKS: usize = 3;

/// Rows `rows` (at most [`ROWS`]) times blocks `blocks` (at most
/// [`BLOCKS`]) of the product.
///
/// # Safety
/// AVX-512 F, BW and VNNI available; `rows` inside `0..m`, `blocks`
/// inside `0..ceil(n / 16)`; `p`'s extents.
pub(super) unsafe fn task_vnni(p: &Product, rows: Range<usize>, blocks: Range<usize>) {
    let mut r = rows.start;
    while r < rows.end {
        let left = rows.end - r;
        let take = if left >= 8 {
            8
        } else if left >= 4 {
            4
        } else if left >= 2 {
            2
        } else {
            1
        };
        // SAFETY: rows `r..r + take` and `blocks` are the caller's.
        unsafe {
            match (take, blocks.len(), p.flip != 0) {
                (8, 3, false) => tile::<8, 3, false>(p, r, blocks.start),
                (8, 2, false) => tile::<8, 2, false>(p, r, blocks.start),
                (8, _, false) => tile::<8, 1, false>(p, r, blocks.start),
                (4, 3, false) => tile::<4, 3, false>(p, r, blocks.start),
                (4, 2, false) => tile::<4, 2, false>(p, r, blocks.start),
                (4, _, false) => tile::<4, 1, false>(p, r, blocks.start),
                (2, 3, false) => tile::<2, 3, false>(p, r, blocks.start),
                (2, 2, false) => tile::<2, 2, false>(p, r, blocks.start),
                (2, _, false) => tile::<2, 1, false>(p, r, blocks.start),
                (_, 3, false) => tile::<1, 3, false>(p, r, blocks.start),
                (_, 2, false) => tile::<1, 2, false>(p, r, blocks.start),
                (_, _, false) => tile::<1, 1, false>(p, r, blocks.start),
                (8, 3, true) => tile::<8, 3, true>(p, r, blocks.start),
                (8, 2, true) => tile::<8, 2, true>(p, r, blocks.start),
                (8, _, true) => tile::<8, 1, true>(p, r, blocks.start),
                (4, 3, true) => tile::<4, 3, true>(p, r, blocks.start),
                (4, 2, true) => tile::<4, 2, true>(p, r, blocks.start),
                (4, _, true) => tile::<4, 1, true>(p, r, blocks.start),
                (2, 3, true) => tile::<2, 3, true>(p, r, blocks.start),
                (2, 2, true) => tile::<2, 2, true>(p, r, blocks.start),
                (2, _, true) => tile::<2, 1, true>(p, r, blocks.start),
                (_, 3, true) => tile::<1, 3, true>(p, r, blocks.start),
                (_, 2, true) => tile::<1, 2, true>(p, r, blocks.start),
                (_, _, true) => tile::<1, 1, true>(p, r, blocks.start),
            }
        }
        r += take;
    }
}

/// `R` rows from `row0` times `V` blocks from `block0`; `FLIP` when `a`
/// is i8 (each word xored into u8 as a vector, so the u8 case broadcasts
/// straight from memory).
///
/// # Safety
/// As [`task_vnni`], for these rows and blocks.
#[target_feature(enable = "avx512f,avx512bw,avx512vnni")]
unsafe fn tile<const R: usize, const V: usize, const FLIP: bool>(p: &Product, row0: usize, block0: usize) {
    let quads = p.quads();
    // SAFETY: the blocks are inside the packed weight (caller).
    let w: [*const i8; V] = std::array::from_fn(|v| unsafe { p.block(block0 + v) });
    let mut acc = [[_mm512_setzero_si512(); V]; R];
    // SAFETY: rows `row0..row0 + R` are inside `a` (caller).
    let rows: [*const u8; R] = std::array::from_fn(|r| unsafe { p.a.add((row0 + r) * p.k) });
    // Whole quads read straight from the rows, with index loops over the
    // const bounds (unrolled: the accumulators stay in registers).
    let whole = p.k / 4;
    let flip = _mm512_set1_epi32(p.flip as i32);
    for q in 0..whole {
        // SAFETY: quad `q` of each block and of each row is inside the
        // extents (caller).
        unsafe {
            let wv: [__m512i; V] = std::array::from_fn(|v| _mm512_loadu_si512(w[v].add(q * QUAD_BYTES).cast()));
            #[allow(clippy::needless_range_loop)]
            for r in 0..R {
                let mut av = _mm512_set1_epi32(rows[r].add(4 * q).cast::<i32>().read_unaligned());
                if FLIP {
                    av = _mm512_xor_si512(av, flip);
                }
                for v in 0..V {
                    acc[r][v] = _mm512_dpbusd_epi32(acc[r][v], av, wv[v]);
                }
            }
        }
    }
    if whole < quads {
        // SAFETY: the partial last quad, read byte by byte (`Product::quad`).
        unsafe {
            let wv: [__m512i; V] = std::array::from_fn(|v| _mm512_loadu_si512(w[v].add(whole * QUAD_BYTES).cast()));
            #[allow(clippy::needless_range_loop)]
            for r in 0..R {
                let av = _mm512_set1_epi32(p.quad(row0 + r, whole) as i32);
                for v in 0..V {
                    acc[r][v] = _mm512_dpbusd_epi32(acc[r][v], av, wv[v]);
                }
            }
        }
    }
    // The sums leave the accumulators through a buffer: the store below is
    // too large to unroll, and a loop indexing `acc` would keep every
    // accumulator in memory, stored at each step of the k loop.
    let mut sums = [[[0i32; LANES]; V]; R];
    #[allow(clippy::needless_range_loop)]
    for r in 0..R {
        for v in 0..V {
            // SAFETY: a local buffer of 16 i32.
            unsafe { _mm512_storeu_si512(sums[r][v].as_mut_ptr().cast(), acc[r][v]) };
        }
    }
    for (r, sums) in sums.iter().enumerate() {
        for (v, sums) in sums.iter().enumerate() {
            let j = (block0 + v) * LANES;
            // SAFETY: row `row0 + r` and the block's columns (masked to
            // those below `n`) are inside the extents (caller).
            unsafe { store(p, row0 + r, j, _mm512_loadu_si512(sums.as_ptr().cast())) };
        }
    }
}

/// Corrects one vector of row `r`'s sums (columns `j..j + 16`, the ones
/// below `n`) for the zero points and stores it as `p.store` says.
///
/// # Safety
/// As [`tile`]; `r < m`, `j < n`.
#[target_feature(enable = "avx512f,avx512bw")]
unsafe fn store(p: &Product, r: usize, j: usize, acc: __m512i) {
    let lanes = LANES.min(p.n - j);
    let mask = if lanes == LANES { !0 } else { (1u16 << lanes) - 1 };
    // SAFETY: the masked lanes are columns below `n`; row `r < m`.
    unsafe {
        let w_sums = _mm512_maskz_loadu_epi32(mask, p.w_sums.add(j).cast());
        let mut sum = _mm512_sub_epi32(acc, _mm512_mullo_epi32(_mm512_set1_epi32(p.a_zero), w_sums));
        if !p.w_zero.is_null() {
            let zw = if p.w_zero_per_column {
                _mm512_maskz_loadu_epi32(mask, p.w_zero.add(j).cast())
            } else {
                _mm512_set1_epi32(*p.w_zero)
            };
            sum = _mm512_sub_epi32(sum, _mm512_mullo_epi32(zw, _mm512_set1_epi32(*p.row_terms.add(r))));
        }
        match p.store {
            Store::Sums(c) => _mm512_mask_storeu_epi32(c.add(r * p.n + j).cast(), mask, sum),
            Store::Dequant { c, scale, scale_per_column, bias } => {
                let scale =
                    if scale_per_column { _mm512_maskz_loadu_ps(mask, scale.add(j)) } else { _mm512_set1_ps(*scale) };
                let mut v = _mm512_mul_ps(_mm512_cvtepi32_ps(sum), scale);
                if !bias.is_null() {
                    v = _mm512_add_ps(v, _mm512_maskz_loadu_ps(mask, bias.add(j)));
                }
                _mm512_mask_storeu_ps(c.add(r * p.n + j), mask, v);
            }
        }
    }
}

/// Rows per AVX-VNNI tile.
pub(super) const AVX_VNNI_ROWS: usize = 6;

/// Rows `rows` times blocks `blocks` on AVX-VNNI, tiles of up to 6 rows
/// by one block.
///
/// # Safety
/// AVX2 and AVX-VNNI available; `rows` inside `0..m`, `blocks` inside
/// `0..ceil(n / 16)`; `p`'s extents.
#[target_feature(enable = "avx2,avxvnni")]
pub(super) unsafe fn task_avx_vnni(p: &Product, rows: Range<usize>, blocks: Range<usize>) {
    for block in blocks {
        let mut r = rows.start;
        while r < rows.end {
            let take = (rows.end - r).min(AVX_VNNI_ROWS);
            // SAFETY: rows `r..r + take` and `block` are the caller's.
            unsafe {
                match (take, p.flip != 0) {
                    (6, false) => tile_avx_vnni::<6, false>(p, r, block),
                    (5, false) => tile_avx_vnni::<5, false>(p, r, block),
                    (4, false) => tile_avx_vnni::<4, false>(p, r, block),
                    (3, false) => tile_avx_vnni::<3, false>(p, r, block),
                    (2, false) => tile_avx_vnni::<2, false>(p, r, block),
                    (_, false) => tile_avx_vnni::<1, false>(p, r, block),
                    (6, true) => tile_avx_vnni::<6, true>(p, r, block),
                    (5, true) => tile_avx_vnni::<5, true>(p, r, block),
                    (4, true) => tile_avx_vnni::<4, true>(p, r, block),
                    (3, true) => tile_avx_vnni::<3, true>(p, r, block),
                    (2, true) => tile_avx_vnni::<2, true>(p, r, block),
                    (_, true) => tile_avx_vnni::<1, true>(p, r, block),
                }
            }
            r += take;
        }
    }
}

/// `R` rows from `row0` times block `block` on AVX-VNNI; `FLIP` as in
/// [`tile`].
///
/// # Safety
/// As [`task_avx_vnni`], for these rows and this block.
#[target_feature(enable = "avx2,avxvnni")]
unsafe fn tile_avx_vnni<const R: usize, const FLIP: bool>(p: &Product, row0: usize, block: usize) {
    let quads = p.quads();
    // SAFETY: the block is inside the packed weight (caller).
    let w = unsafe { p.block(block) };
    let mut acc = [[_mm256_setzero_si256(); 2]; R];
    // SAFETY: rows `row0..row0 + R` are inside `a` (caller).
    let rows: [*const u8; R] = std::array::from_fn(|r| unsafe { p.a.add((row0 + r) * p.k) });
    let whole = p.k / 4;
    let flip = _mm256_set1_epi32(p.flip as i32);
    for q in 0..whole {
        // SAFETY: quad `q` of the block and of each row (caller).
        unsafe {
            let wq = w.add(q * QUAD_BYTES);
            let wv = [_mm256_loadu_si256(wq.cast()), _mm256_loadu_si256(wq.add(32).cast())];
            #[allow(clippy::needless_range_loop)]
            for r in 0..R {
                let mut av = _mm256_set1_epi32(rows[r].add(4 * q).cast::<i32>().read_unaligned());
                if FLIP {
                    av = _mm256_xor_si256(av, flip);
                }
                acc[r][0] = _mm256_dpbusd_avx_epi32(acc[r][0], av, wv[0]);
                acc[r][1] = _mm256_dpbusd_avx_epi32(acc[r][1], av, wv[1]);
            }
        }
    }
    if whole < quads {
        // SAFETY: the partial last quad, read byte by byte (`Product::quad`).
        unsafe {
            let wq = w.add(whole * QUAD_BYTES);
            let wv = [_mm256_loadu_si256(wq.cast()), _mm256_loadu_si256(wq.add(32).cast())];
            #[allow(clippy::needless_range_loop)]
            for r in 0..R {
                let av = _mm256_set1_epi32(p.quad(row0 + r, whole) as i32);
                acc[r][0] = _mm256_dpbusd_avx_epi32(acc[r][0], av, wv[0]);
                acc[r][1] = _mm256_dpbusd_avx_epi32(acc[r][1], av, wv[1]);
            }
        }
    }
    // Out through a buffer, as in [`tile`].
    let mut sums = [[0i32; LANES]; R];
    #[allow(clippy::needless_range_loop)]
    for r in 0..R {
        for h in 0..2 {
            // SAFETY: 8 i32 of a local buffer.
            unsafe { _mm256_storeu_si256(sums[r].as_mut_ptr().add(8 * h).cast(), acc[r][h]) };
        }
    }
    let j = block * LANES;
    for (r, sums) in sums.iter().enumerate() {
        // SAFETY: row `row0 + r`, columns `j..` below `n` (caller).
        unsafe { store_avx2(p, row0 + r, j, sums) };
    }
}

/// Corrects row `r`'s sums for columns `j..j + 16` for the zero points and
/// stores them as `p.store` says: on two vectors of 8 for a whole block,
/// through [`Product::finish`] for the last, partial one.
///
/// # Safety
/// AVX2 available; `r < m`, `j < n`; `p`'s extents.
#[target_feature(enable = "avx2")]
unsafe fn store_avx2(p: &Product, r: usize, j: usize, sums: &[i32; LANES]) {
    if p.n - j < LANES {
        // SAFETY: row `r`, columns `j..n` (caller).
        unsafe { p.finish(r, j, p.n - j, sums) };
        return;
    }
    // SAFETY: columns `j..j + 16` are below `n`, row `r < m`: inside every
    // per-column and per-row operand and the output (caller).
    unsafe {
        let a_zero = _mm256_set1_epi32(p.a_zero);
        let row_term = if p.w_zero.is_null() { _mm256_setzero_si256() } else { _mm256_set1_epi32(*p.row_terms.add(r)) };
        for h in 0..2 {
            let col = j + 8 * h;
            let acc = _mm256_loadu_si256(sums.as_ptr().add(8 * h).cast());
            let w_sums = _mm256_loadu_si256(p.w_sums.add(col).cast());
            let mut sum = _mm256_sub_epi32(acc, _mm256_mullo_epi32(a_zero, w_sums));
            if !p.w_zero.is_null() {
                let zw = if p.w_zero_per_column {
                    _mm256_loadu_si256(p.w_zero.add(col).cast())
                } else {
                    _mm256_set1_epi32(*p.w_zero)
                };
                sum = _mm256_sub_epi32(sum, _mm256_mullo_epi32(zw, row_term));
            }
            match p.store {
                Store::Sums(c) => _mm256_storeu_si256(c.add(r * p.n + col).cast(), sum),
                Store::Dequant { c, scale, scale_per_column, bias } => {
                    let scale = if scale_per_column { _mm256_loadu_ps(scale.add(col)) } else { _mm256_set1_ps(*scale) };
                    // A product then a sum, as the scalar steps (no fused
                    // multiply-add).
                    let mut v = _mm256_mul_ps(_mm256_cvtepi32_ps(sum), scale);
                    if !bias.is_null() {
                        v = _mm256_add_ps(v, _mm256_loadu_ps(bias.add(col)));
                    }
                    _mm256_storeu_ps(c.add(r * p.n + col), v);
                }
            }
        }
    }
}

/// Rows `rows` (at most 4) times blocks `blocks` on AVX2, one block at a
/// time.
///
/// # Safety
/// AVX2 available; `rows` inside `0..m`, `blocks` inside `0..ceil(n /
/// 16)`; `p`'s extents, `p.widened` filled.
#[target_feature(enable = "avx2")]
pub(super) unsafe fn task_avx2(p: &Product, rows: Range<usize>, blocks: Range<usize>) {
    for block in blocks {
        // SAFETY: rows and `block` are the caller's.
        unsafe {
            match rows.len() {
                4 => tile_avx2::<4>(p, rows.start, block),
                3 => tile_avx2::<3>(p, rows.start, block),
                2 => tile_avx2::<2>(p, rows.start, block),
                _ => tile_avx2::<1>(p, rows.start, block),
            }
        }
    }
}

/// `R` rows from `row0` times block `block`, one half of 8 columns at a
/// time: per row, two accumulators of 4 columns by 2 pairs of k.
///
/// # Safety
/// As [`task_avx2`], for these rows and this block.
#[target_feature(enable = "avx2")]
unsafe fn tile_avx2<const R: usize>(p: &Product, row0: usize, block: usize) {
    let quads = p.quads();
    // SAFETY: the block is inside the packed weight (caller).
    let w = unsafe { p.block(block) };
    // SAFETY: rows `row0..row0 + R` of the widened quads (caller).
    let rows: [*const u64; R] = std::array::from_fn(|r| unsafe { p.widened.add((row0 + r) * quads) });
    let mut sums = [[0i32; LANES]; R];
    for half in 0..2 {
        let mut acc = [[_mm256_setzero_si256(); 2]; R];
        for q in 0..quads {
            // SAFETY: quad `q` of the block and of each row (caller).
            unsafe {
                let wq = w.add(q * QUAD_BYTES + half * QUAD_BYTES / 2);
                let w0 = _mm256_cvtepi8_epi16(_mm_loadu_si128(wq.cast()));
                let w1 = _mm256_cvtepi8_epi16(_mm_loadu_si128(wq.add(16).cast()));
                #[allow(clippy::needless_range_loop)]
                for r in 0..R {
                    let av = _mm256_set1_epi64x(rows[r].add(q).read() as i64);
                    acc[r][0] = _mm256_add_epi32(acc[r][0], _mm256_madd_epi16(w0, av));
                    acc[r][1] = _mm256_add_epi32(acc[r][1], _mm256_madd_epi16(w1, av));
                }
            }
        }
        // Each pair of accumulators holds 8 columns as adjacent pairs of
        // partial sums: `vphaddd` folds them (in 128-bit halves: columns 0
        // 1 4 5 | 2 3 6 7) and the permute restores the order.
        #[allow(clippy::needless_range_loop)]
        for r in 0..R {
            let folded = _mm256_permute4x64_epi64::<0b11_01_10_00>(_mm256_hadd_epi32(acc[r][0], acc[r][1]));
            // SAFETY: 8 i32 of a local buffer.
            unsafe { _mm256_storeu_si256(sums[r].as_mut_ptr().add(8 * half).cast(), folded) };
        }
    }
    let j = block * LANES;
    for (r, sums) in sums.iter().enumerate() {
        // SAFETY: row `row0 + r`, columns `j..` below `n` (caller).
        unsafe { store_avx2(p, row0 + r, j, sums) };
    }
}
