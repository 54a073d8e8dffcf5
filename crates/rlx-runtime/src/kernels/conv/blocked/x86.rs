//! x86_64 microkernels. AVX-512: up to 12 pixels x 2 blocks, 8 x 3 or 6 x 4
//! (at most 24 accumulators, plus the `q` weight vectors and a broadcast:
//! 29 of the 32 zmm registers), or two rows of up to 7 pixels x 2 blocks
//! (28 + 2 + 1). AVX2+FMA: up to 6 pixels x 1 block, two
//! ymm each (12 accumulators of 16). Each lane takes the scalar
//! reference's fused multiply-adds in the same order, so the results are
//! bit-identical to it. At most 8 output channels (one block, half of it
//! padding): up to 12 (AVX2+FMA) or 14 (AVX-512VL) pixels of one 8-lane
//! vector. A stride-1 or -2 (AVX-512; and an NCHW input's
//! stride 2) tile's pixel offsets are constants.

use std::arch::x86_64::*;

use super::{Kernel, Tile, B};
use crate::kernels::prefetch::prefetch_l2;

/// The AVX-512 kernel.
pub(super) const AVX512: Kernel = Kernel {
    name: "avx512",
    max_r: 12,
    max_acc: 24,
    max_q: 4,
    pair_r: 7,
    pair_acc: 28,
    micro: micro_avx512,
    half: Some(&HALF_AVX512),
    unit_step: None,
};
/// The AVX2+FMA kernel.
pub(super) const AVX2: Kernel = Kernel {
    name: "avx2",
    max_r: 6,
    max_acc: 6,
    max_q: 1,
    pair_r: 0,
    pair_acc: 0,
    micro: micro_avx2,
    half: Some(&HALF_AVX2),
    unit_step: None,
};
/// The kernels for at most 8 output channels: one 8-lane vector per
/// pixel, so twice the pixels per tile and half the multiply-adds.
const HALF_AVX512: Kernel = Kernel {
    name: "avx512 half",
    max_r: 14,
    max_acc: 14,
    max_q: 1,
    pair_r: 0,
    pair_acc: 0,
    micro: micro_half_avx512,
    half: None,
    unit_step: Some(&HALF_PAIRS_AVX512),
};
/// The AVX-512 kernel for at most 8 output channels whose pixel windows
/// are one float apart (an NCHW first layer at stride 1, LeNet's): lane
/// `2c + e` of a vector holds channel `c` of pixel `2i + e`, so one
/// 64-bit broadcast serves two pixels and each multiply-add does 16 useful
/// lanes, not 8.
const HALF_PAIRS_AVX512: Kernel = Kernel {
    name: "avx512 half pairs",
    max_r: 28,
    max_acc: 28,
    max_q: 1,
    pair_r: 0,
    pair_acc: 0,
    micro: micro_half_pairs_avx512,
    half: None,
    unit_step: None,
};
pub(super) const HALF_AVX2: Kernel = Kernel {
    name: "avx2 half",
    max_r: 12,
    max_acc: 12,
    max_q: 1,
    pair_r: 0,
    pair_acc: 0,
    micro: micro_half_avx2,
    half: None,
    unit_step: None,
};

/// Calls `$f::<R, Q, $step, $one, $rows>` for the tile's `(r, q)`, one arm
/// per pair listed (`r => [q, ..]`).
macro_rules! dispatch {
    ($t:expr, $f:ident, $step:ident, $one:ident, $rows:ident; $($r:literal => [$($q:literal),*]),* $(,)?) => {
        match ($t.r, $t.q) {
            $($(($r, $q) => $f::<$r, $q, $step, $one, $rows>($t),)*)*
            (r, q) => unreachable!("no {r} x {q} tile"),
        }
    };
}

/// See [`super::Microkernel`].
///
/// # Safety
///
/// As [`super::Microkernel`] with `r <= 12`, `q <= AVX512.q_for(r)` (or
/// two rows, `r <= 14`, `q <= AVX512.pair_q(r)`); the CPU must support
/// AVX-512F.
unsafe fn micro_avx512(t: &Tile) {
    // SAFETY: forwarded contract.
    unsafe {
        if t.rows == 2 {
            return match t.x_step {
                B => pairs_rows2::<B>(t),
                STEP2 => pairs_rows2::<STEP2>(t),
                _ => pairs_rows2::<0>(t),
            };
        }
        match (t.x_step, t.kh * t.kw) {
            (B, 1) => pairs_avx512::<B, true>(t),
            (B, _) => pairs_avx512::<B, false>(t),
            (STEP2, _) => pairs_avx512::<STEP2, false>(t),
            // An NCHW input's stride-2 first layer.
            (2, _) => pairs_avx512::<2, false>(t),
            _ => pairs_avx512::<0, false>(t),
        }
    }
}

/// # Safety
///
/// As [`micro_avx512`], with `STEP` the floats from one pixel's window to
/// the next (the tile's `x_step`) or 0 (read from the tile),
/// `ONE` only for a 1x1 window.
unsafe fn pairs_avx512<const STEP: usize, const ONE: bool>(t: &Tile) {
    // SAFETY: forwarded contract; the pairs are those `q_for` allows.
    unsafe {
        dispatch!(t, tile_avx512, STEP, ONE, ROW1;
            1 => [1, 2, 3, 4], 2 => [1, 2, 3, 4], 3 => [1, 2, 3, 4],
            4 => [1, 2, 3, 4], 5 => [1, 2, 3, 4], 6 => [1, 2, 3, 4],
            7 => [1, 2, 3], 8 => [1, 2, 3],
            9 => [1, 2], 10 => [1, 2], 11 => [1, 2], 12 => [1, 2],
        )
    }
}

/// Two-row tiles, as [`pairs_avx512`] without `ONE`.
///
/// # Safety
///
/// As [`micro_avx512`] with `rows == 2`.
unsafe fn pairs_rows2<const STEP: usize>(t: &Tile) {
    // SAFETY: forwarded contract; the pairs are those `pair_q` allows.
    unsafe {
        dispatch!(t, tile_avx512, STEP, NOT_ONE, ROW2;
            2 => [1, 2, 3, 4], 4 => [1, 2, 3, 4], 6 => [1, 2, 3, 4],
            8 => [1, 2, 3], 10 => [1, 2], 12 => [1, 2], 14 => [1, 2],
        )
    }
}

const NOT_ONE: bool = false;
/// The pixel step of a stride-2 blocked input, in floats.
const STEP2: usize = 2 * B;
const ROW1: usize = 1;
const ROW2: usize = 2;

/// `R` pixels (`R / ROWS` on each of `ROWS` rows) x `Q` blocks; pixel
/// windows `STEP` floats apart, or `x_step` when `STEP == 0`; `ONE`: a
/// 1x1 window, no tap loops.
///
/// # Safety
///
/// As [`micro_avx512`] with `r == R`, `q == Q`, `rows == ROWS`, and
/// `kh == kw == 1` when `ONE`.
#[target_feature(enable = "avx512f")]
unsafe fn tile_avx512<const R: usize, const Q: usize, const STEP: usize, const ONE: bool, const ROWS: usize>(t: &Tile) {
    let step = if STEP == 0 { t.x_step } else { STEP };
    // Pixel `i`: row `i / per_row`, column `i % per_row`.
    let per_row = R / ROWS;
    let x_at = |i: usize| (i / per_row) * t.x_row + (i % per_row) * step;
    let out_at = |i: usize, j: usize| j * t.out_block + (i / per_row) * t.out_row + (i % per_row) * B;
    let (kh, kw) = if ONE { (1, 1) } else { (t.kh, t.kw) };
    let taps = kh * kw;
    let mut acc = [[_mm512_setzero_ps(); Q]; R];
    // SAFETY: every address is one of the tile's formula (the caller's
    // extents): input channel `ci` of pixel `i` at each tap, weights of
    // block `j`, the bias and outputs of blocks `j < Q`, pixels `i < R`.
    unsafe {
        if t.load {
            for (i, row) in acc.iter_mut().enumerate() {
                for (j, a) in row.iter_mut().enumerate() {
                    *a = _mm512_loadu_ps(t.out.add(out_at(i, j)));
                }
            }
        } else if !t.bias.is_null() {
            let mut b = [_mm512_setzero_ps(); Q];
            for (j, v) in b.iter_mut().enumerate() {
                *v = _mm512_loadu_ps(t.bias.add(j * B));
            }
            acc = [b; R];
        }
        for ci in 0..t.c_in {
            let xc = t.x.add((ci / B) * t.x_block + (ci % B) * t.x_lane);
            let mut wp = t.w.add(ci * taps * B);
            let prefetch = t.prefetch != 0 && (t.prefetch_from..t.prefetch_to).contains(&ci);
            for ki in 0..kh {
                let xr = xc.add(ki * t.x_dh);
                for kj in 0..kw {
                    let xp = xr.add(kj * t.x_dw);
                    let mut wv = [_mm512_setzero_ps(); Q];
                    for (j, v) in wv.iter_mut().enumerate() {
                        *v = _mm512_loadu_ps(wp.add(j * t.w_block));
                        if prefetch {
                            prefetch_l2(wp.wrapping_offset(t.prefetch).wrapping_add(j * t.w_block));
                        }
                    }
                    for (i, row) in acc.iter_mut().enumerate() {
                        let xv = _mm512_set1_ps(*xp.add(x_at(i)));
                        for (a, &wj) in row.iter_mut().zip(&wv) {
                            *a = _mm512_fmadd_ps(xv, wj, *a);
                        }
                    }
                    wp = wp.add(B);
                }
            }
        }
        if t.residual.is_null() && t.clamp.is_none() {
            for (i, row) in acc.iter().enumerate() {
                for (j, a) in row.iter().enumerate() {
                    _mm512_storeu_ps(t.out.add(out_at(i, j)), *a);
                }
            }
        } else {
            finish_avx512::<R, Q, ROWS>(acc, t);
        }
    }
}

/// Stores a tile's accumulators plus the residual, clamped. Not inlined:
/// in the tile's loop the two bounds would take registers its
/// accumulators need (two-row tiles use 31 of 32). The accumulators come
/// by value: a reference would pin them to memory for the whole loop.
///
/// # Safety
///
/// As [`tile_avx512`] for the same tile.
#[target_feature(enable = "avx512f")]
#[inline(never)]
unsafe fn finish_avx512<const R: usize, const Q: usize, const ROWS: usize>(acc: [[__m512; Q]; R], t: &Tile) {
    let per_row = R / ROWS;
    let out_at = |i: usize, j: usize| j * t.out_block + (i / per_row) * t.out_row + (i % per_row) * B;
    let clamp = t.clamp.map(|(lo, hi)| (_mm512_set1_ps(lo), _mm512_set1_ps(hi)));
    // SAFETY: the tile's outputs and the residual at their offsets.
    unsafe {
        for (i, row) in acc.iter().enumerate() {
            for (j, &a) in row.iter().enumerate() {
                let mut v = a;
                if !t.residual.is_null() {
                    v = _mm512_add_ps(v, _mm512_loadu_ps(t.residual.add(out_at(i, j))));
                }
                if let Some((lo, hi)) = clamp {
                    // `math::clip`: `max(lo, v)` is `lo > v ? lo : v`.
                    v = _mm512_min_ps(hi, _mm512_max_ps(lo, v));
                }
                _mm512_storeu_ps(t.out.add(out_at(i, j)), v);
            }
        }
    }
}

/// See [`super::Microkernel`].
///
/// # Safety
///
/// As [`super::Microkernel`] with `r <= 6`, `q == 1`; the CPU must
/// support AVX2 and FMA.
unsafe fn micro_avx2(t: &Tile) {
    // SAFETY: forwarded contract.
    unsafe {
        match (t.x_step, t.kh * t.kw) {
            (B, 1) => pairs_avx2::<B, true>(t),
            (B, _) => pairs_avx2::<B, false>(t),
            _ => pairs_avx2::<0, false>(t),
        }
    }
}

/// # Safety
///
/// As [`micro_avx2`], with `STEP` the tile's `x_step` or 0 (read from the
/// tile), `ONE`
/// only for a 1x1 window.
unsafe fn pairs_avx2<const STEP: usize, const ONE: bool>(t: &Tile) {
    // SAFETY: forwarded contract; the pairs are those `q_for` allows.
    unsafe { dispatch!(t, tile_avx2, STEP, ONE, ROW1; 1 => [1], 2 => [1], 3 => [1], 4 => [1], 5 => [1], 6 => [1]) }
}

/// `R` pixels x one block as two 8-lane halves.
///
/// # Safety
///
/// As [`micro_avx2`] with `r == R`, `Q == q == 1`, `ROWS == rows == 1`, and `kh == kw == 1`
/// when `ONE`.
#[target_feature(enable = "avx2,fma")]
unsafe fn tile_avx2<const R: usize, const Q: usize, const STEP: usize, const ONE: bool, const ROWS: usize>(t: &Tile) {
    debug_assert!(Q == 1 && ROWS == 1 && t.rows == 1);
    let step = if STEP == 0 { t.x_step } else { STEP };
    let (kh, kw) = if ONE { (1, 1) } else { (t.kh, t.kw) };
    let taps = kh * kw;
    let mut lo = [_mm256_setzero_ps(); R];
    let mut hi = [_mm256_setzero_ps(); R];
    // SAFETY: as in `tile_avx512`, for block 0.
    unsafe {
        if t.load {
            for i in 0..R {
                lo[i] = _mm256_loadu_ps(t.out.add(i * B));
                hi[i] = _mm256_loadu_ps(t.out.add(i * B + 8));
            }
        } else if !t.bias.is_null() {
            lo = [_mm256_loadu_ps(t.bias); R];
            hi = [_mm256_loadu_ps(t.bias.add(8)); R];
        }
        for ci in 0..t.c_in {
            let xc = t.x.add((ci / B) * t.x_block + (ci % B) * t.x_lane);
            let mut wp = t.w.add(ci * taps * B);
            let prefetch = t.prefetch != 0 && (t.prefetch_from..t.prefetch_to).contains(&ci);
            for ki in 0..kh {
                let xr = xc.add(ki * t.x_dh);
                for kj in 0..kw {
                    let xp = xr.add(kj * t.x_dw);
                    let (w0, w1) = (_mm256_loadu_ps(wp), _mm256_loadu_ps(wp.add(8)));
                    if prefetch {
                        prefetch_l2(wp.wrapping_offset(t.prefetch));
                    }
                    for i in 0..R {
                        let xv = _mm256_broadcast_ss(&*xp.add(i * step));
                        lo[i] = _mm256_fmadd_ps(xv, w0, lo[i]);
                        hi[i] = _mm256_fmadd_ps(xv, w1, hi[i]);
                    }
                    wp = wp.add(B);
                }
            }
        }
        if t.residual.is_null() && t.clamp.is_none() {
            for i in 0..R {
                _mm256_storeu_ps(t.out.add(i * B), lo[i]);
                _mm256_storeu_ps(t.out.add(i * B + 8), hi[i]);
            }
        } else {
            finish_avx2::<R>(lo, hi, t);
        }
    }
}

/// [`finish_avx512`] for [`tile_avx2`] (whose loop uses 15 of 16 ymm).
///
/// # Safety
///
/// As [`tile_avx2`] for the same tile.
#[target_feature(enable = "avx2,fma")]
#[inline(never)]
unsafe fn finish_avx2<const R: usize>(lo: [__m256; R], hi: [__m256; R], t: &Tile) {
    let clamp = t.clamp.map(|(floor, ceil)| (_mm256_set1_ps(floor), _mm256_set1_ps(ceil)));
    // SAFETY: the tile's outputs and the residual at their offsets.
    unsafe {
        for i in 0..R {
            for (half, v) in [(0, lo[i]), (8, hi[i])] {
                let mut v = v;
                if !t.residual.is_null() {
                    v = _mm256_add_ps(v, _mm256_loadu_ps(t.residual.add(i * B + half)));
                }
                if let Some((floor, ceil)) = clamp {
                    v = _mm256_min_ps(ceil, _mm256_max_ps(floor, v));
                }
                _mm256_storeu_ps(t.out.add(i * B + half), v);
            }
        }
    }
}

/// Defines a half-block microkernel (`$micro`, over `$tile`) for one
/// instruction set: the AVX2 one holds 12 accumulators in its 16 ymm
/// registers, the AVX-512 one (VL: 32 registers, broadcasts folded into
/// the multiply-adds) 14.
macro_rules! half_kernel {
    ($micro:ident, $tile:ident, $features:literal, $($r:literal)*) => {
        /// See [`super::Microkernel`].
        ///
        /// # Safety
        ///
        /// As [`super::Microkernel`] with `r` one of the listed widths,
        /// `q == 1`, `rows == 1`, every weight and bias lane from 8 on zero
        /// (at most 8 output channels); the CPU must have the features
        /// this kernel is compiled for.
        unsafe fn $micro(t: &Tile) {
            // SAFETY: forwarded contract.
            unsafe {
                match (t.x_step, t.r) {
                    // An NCHW first layer, stride 1 (LeNet's 6 filters).
                    $((1, $r) => $tile::<$r, 1>(t),)*
                    $((B, $r) => $tile::<$r, B>(t),)*
                    $((_, $r) => $tile::<$r, 0>(t),)*
                    (_, r) => unreachable!("no {r}-pixel half tile"),
                }
            }
        }

        /// `R` pixels x the lower 8 lanes of one block; pixel windows
        /// `STEP` floats apart, or `x_step` when `STEP == 0`. The upper
        /// lanes take no multiply-add: each is its start value (bias, +0.0
        /// or its own) plus the residual, clamped, which is what the
        /// reference computes from zero weights for finite inputs (padding
        /// lanes are never read into a real output either way).
        ///
        /// # Safety
        ///
        /// As the microkernel with `r == R`.
        #[target_feature(enable = $features)]
        unsafe fn $tile<const R: usize, const STEP: usize>(t: &Tile) {
            let step = if STEP == 0 { t.x_step } else { STEP };
            let taps = t.kh * t.kw;
            let mut acc = [_mm256_setzero_ps(); R];
            // SAFETY: as in `tile_avx2`, lanes 0..8 of block 0; lanes 8..16
            // in `finish_half`.
            unsafe {
                if t.load {
                    for (i, a) in acc.iter_mut().enumerate() {
                        *a = _mm256_loadu_ps(t.out.add(i * B));
                    }
                } else if !t.bias.is_null() {
                    acc = [_mm256_loadu_ps(t.bias); R];
                }
                for ci in 0..t.c_in {
                    let xc = t.x.add((ci / B) * t.x_block + (ci % B) * t.x_lane);
                    let mut wp = t.w.add(ci * taps * B);
                    for ki in 0..t.kh {
                        let xr = xc.add(ki * t.x_dh);
                        for kj in 0..t.kw {
                            let xp = xr.add(kj * t.x_dw);
                            let wv = _mm256_loadu_ps(wp);
                            for (i, a) in acc.iter_mut().enumerate() {
                                *a = _mm256_fmadd_ps(_mm256_broadcast_ss(&*xp.add(i * step)), wv, *a);
                            }
                            wp = wp.add(B);
                        }
                    }
                }
                finish_half(&acc, t);
            }
        }
    };
}

half_kernel!(micro_half_avx2, tile_half_avx2, "avx2,fma", 1 2 3 4 5 6 7 8 9 10 11 12);
half_kernel!(micro_half_avx512, tile_half_avx512, "avx2,fma,avx512f,avx512vl", 1 2 3 4 5 6 7 8 9 10 11 12 13 14);

/// See [`super::Microkernel`].
///
/// # Safety
///
/// As [`super::Microkernel`] with `x_step == 1`, `1 <= r <= 28`, `q ==
/// 1`, `rows == 1`, every weight and bias lane from 8 on zero; the CPU
/// must have AVX-512F.
unsafe fn micro_half_pairs_avx512(t: &Tile) {
    debug_assert_eq!(t.x_step, 1, "pixel windows one float apart");
    // SAFETY: forwarded contract.
    unsafe {
        match t.r {
            1 => tile_half_pairs::<0, true>(t),
            2 => tile_half_pairs::<1, false>(t),
            3 => tile_half_pairs::<1, true>(t),
            4 => tile_half_pairs::<2, false>(t),
            5 => tile_half_pairs::<2, true>(t),
            6 => tile_half_pairs::<3, false>(t),
            7 => tile_half_pairs::<3, true>(t),
            8 => tile_half_pairs::<4, false>(t),
            9 => tile_half_pairs::<4, true>(t),
            10 => tile_half_pairs::<5, false>(t),
            11 => tile_half_pairs::<5, true>(t),
            12 => tile_half_pairs::<6, false>(t),
            13 => tile_half_pairs::<6, true>(t),
            14 => tile_half_pairs::<7, false>(t),
            15 => tile_half_pairs::<7, true>(t),
            16 => tile_half_pairs::<8, false>(t),
            17 => tile_half_pairs::<8, true>(t),
            18 => tile_half_pairs::<9, false>(t),
            19 => tile_half_pairs::<9, true>(t),
            20 => tile_half_pairs::<10, false>(t),
            21 => tile_half_pairs::<10, true>(t),
            22 => tile_half_pairs::<11, false>(t),
            23 => tile_half_pairs::<11, true>(t),
            24 => tile_half_pairs::<12, false>(t),
            25 => tile_half_pairs::<12, true>(t),
            26 => tile_half_pairs::<13, false>(t),
            27 => tile_half_pairs::<13, true>(t),
            28 => tile_half_pairs::<14, false>(t),
            r => unreachable!("no {r}-pixel half-pairs tile"),
        }
    }
}

/// `2P` pixels as `P` vectors of two pixels' lower 8 lanes (lane `2c + e`:
/// channel `c` of pixel `2i + e`), plus one 8-lane vector for a last pixel
/// when `ODD`. Each lane takes the same multiply-adds in the same order as
/// in the half tile; stores go through [`finish_half`].
///
/// # Safety
///
/// As [`micro_half_pairs_avx512`] with `r == 2P + ODD`.
#[target_feature(enable = "avx2,fma,avx512f")]
unsafe fn tile_half_pairs<const P: usize, const ODD: bool>(t: &Tile) {
    let taps = t.kh * t.kw;
    // Channel `c` to lanes `2c` and `2c + 1`, and back.
    let spread = _mm512_setr_epi32(0, 0, 1, 1, 2, 2, 3, 3, 4, 4, 5, 5, 6, 6, 7, 7);
    let interleave = _mm512_setr_epi32(0, 16, 1, 17, 2, 18, 3, 19, 4, 20, 5, 21, 6, 22, 7, 23);
    let gather = _mm512_setr_epi32(0, 2, 4, 6, 8, 10, 12, 14, 1, 3, 5, 7, 9, 11, 13, 15);
    let mut acc = [_mm512_setzero_ps(); P];
    let mut last = _mm256_setzero_ps();
    // SAFETY: as in the half tile: lanes 0..8 of pixels `0..r` of block 0
    // (an 8-byte read at pixel `2i` covers the windows of pixels `2i` and
    // `2i + 1`, both in the tile); lanes 8..16 in `finish_half`.
    unsafe {
        if t.load {
            for (i, a) in acc.iter_mut().enumerate() {
                let even = _mm512_castps256_ps512(_mm256_loadu_ps(t.out.add(2 * i * B)));
                let odd = _mm512_castps256_ps512(_mm256_loadu_ps(t.out.add((2 * i + 1) * B)));
                *a = _mm512_permutex2var_ps(even, interleave, odd);
            }
            if ODD {
                last = _mm256_loadu_ps(t.out.add(2 * P * B));
            }
        } else if !t.bias.is_null() {
            last = _mm256_loadu_ps(t.bias);
            acc = [_mm512_permutexvar_ps(spread, _mm512_castps256_ps512(last)); P];
        }
        for ci in 0..t.c_in {
            let xc = t.x.add((ci / B) * t.x_block + (ci % B) * t.x_lane);
            let mut wp = t.w.add(ci * taps * B);
            for ki in 0..t.kh {
                let xr = xc.add(ki * t.x_dh);
                for kj in 0..t.kw {
                    let xp = xr.add(kj * t.x_dw);
                    let wv = _mm256_loadu_ps(wp);
                    let wide = _mm512_permutexvar_ps(spread, _mm512_castps256_ps512(wv));
                    for (i, a) in acc.iter_mut().enumerate() {
                        let two = xp.add(2 * i).cast::<f64>().read_unaligned();
                        *a = _mm512_fmadd_ps(_mm512_castpd_ps(_mm512_set1_pd(two)), wide, *a);
                    }
                    if ODD {
                        last = _mm256_fmadd_ps(_mm256_broadcast_ss(&*xp.add(2 * P)), wv, last);
                    }
                    wp = wp.add(B);
                }
            }
        }
        // One 8-lane vector per pixel, in registers until `finish_half`
        // (a loop of calls over `acc` would keep it in memory).
        let mut pixels = [_mm256_setzero_ps(); 28];
        for (i, &a) in acc.iter().enumerate() {
            let split = _mm512_castps_pd(_mm512_permutexvar_ps(gather, a));
            pixels[2 * i] = _mm256_castpd_ps(_mm512_castpd512_pd256(split));
            pixels[2 * i + 1] = _mm256_castpd_ps(_mm512_extractf64x4_pd(split, 1));
        }
        if ODD {
            pixels[2 * P] = last;
        }
        finish_half(&pixels[..2 * P + usize::from(ODD)], t);
    }
}

/// Stores a half tile's lower lanes and the upper lanes' start values,
/// each plus the residual, clamped.
///
/// # Safety
///
/// As the half tile's kernel for the same tile.
#[target_feature(enable = "avx2,fma")]
#[inline(never)]
unsafe fn finish_half(acc: &[__m256], t: &Tile) {
    let clamp = t.clamp.map(|(floor, ceil)| (_mm256_set1_ps(floor), _mm256_set1_ps(ceil)));
    // SAFETY: the tile's outputs, bias and residual at their offsets.
    unsafe {
        let upper_start = if t.bias.is_null() { _mm256_setzero_ps() } else { _mm256_loadu_ps(t.bias.add(8)) };
        for (i, &lower) in acc.iter().enumerate() {
            let upper = if t.load { _mm256_loadu_ps(t.out.add(i * B + 8)) } else { upper_start };
            for (half, v) in [(0, lower), (8, upper)] {
                let mut v = v;
                if !t.residual.is_null() {
                    v = _mm256_add_ps(v, _mm256_loadu_ps(t.residual.add(i * B + half)));
                }
                if let Some((floor, ceil)) = clamp {
                    v = _mm256_min_ps(ceil, _mm256_max_ps(floor, v));
                }
                _mm256_storeu_ps(t.out.add(i * B + half), v);
            }
        }
    }
}
