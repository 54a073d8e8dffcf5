//! x86_64 microkernels: AVX2+FMA (6 rows x two 8-lane vectors: 12
//! accumulators) and AVX-512 (12 rows x one 16-lane vector, or x two
//! panels: 24 accumulators). Each element
//! takes the scalar reference's fused multiply-adds in the same order, so
//! the results are bit-identical to it.

use std::arch::x86_64::*;

use rlx_core::pack::PANEL;

use super::{narrow_tile, narrow_wide, Init, Tile};
use crate::kernels::prefetch::prefetch_l2;

/// Rows per AVX2 call.
pub(super) const MR_AVX2: usize = 6;
/// Rows per AVX-512 call.
pub(super) const MR_AVX512: usize = 12;

/// See [`super::Microkernel`].
///
/// # Safety
///
/// As [`super::Microkernel`], with `rows <= MR_AVX2`; the CPU must support
/// AVX2 and FMA.
pub(super) unsafe fn micro_avx2(t: &Tile) {
    // SAFETY: forwarded contract; a narrow tile goes through local copies.
    unsafe {
        if t.cols < PANEL {
            return narrow_tile(micro_avx2, t);
        }
        match t.rows {
            1 => tile_avx2::<1>(t),
            2 => tile_avx2::<2>(t),
            3 => tile_avx2::<3>(t),
            4 => tile_avx2::<4>(t),
            5 => tile_avx2::<5>(t),
            6 => tile_avx2::<6>(t),
            _ => unreachable!("rows is 1..=MR_AVX2"),
        }
    }
}

/// `R` rows x 16 columns.
///
/// # Safety
///
/// As [`micro_avx2`] with `rows == R` and `cols == PANEL`.
#[target_feature(enable = "avx2,fma")]
unsafe fn tile_avx2<const R: usize>(t: &Tile) {
    let Tile { kc, a, lda, b, c, ldc, init, .. } = *t;
    let mut lo = [_mm256_setzero_ps(); R];
    let mut hi = [_mm256_setzero_ps(); R];
    // SAFETY: rows `r < R` of `a` (`kc` each) and `c` (16 each), `kc`
    // rows of 16 of `b`, 16 (column) or `R` (row) bias values: the
    // caller's extents.
    unsafe {
        match init {
            Init::Zero => {}
            Init::Load => {
                for r in 0..R {
                    lo[r] = _mm256_loadu_ps(c.add(r * ldc));
                    hi[r] = _mm256_loadu_ps(c.add(r * ldc + 8));
                }
            }
            Init::ColBias(bias) => {
                lo = [_mm256_loadu_ps(bias); R];
                hi = [_mm256_loadu_ps(bias.add(8)); R];
            }
            Init::RowBias(bias) => {
                for r in 0..R {
                    lo[r] = _mm256_set1_ps(*bias.add(r));
                    hi[r] = lo[r];
                }
            }
        }
        for p in 0..kc {
            let b0 = _mm256_loadu_ps(b.add(p * PANEL));
            let b1 = _mm256_loadu_ps(b.add(p * PANEL + 8));
            if t.prefetch != 0 && (t.prefetch_from..t.prefetch_to).contains(&p) {
                prefetch_l2(b.wrapping_offset(t.prefetch).wrapping_add(p * PANEL));
            }
            for r in 0..R {
                let av = _mm256_broadcast_ss(&*a.add(r * lda + p));
                lo[r] = _mm256_fmadd_ps(av, b0, lo[r]);
                hi[r] = _mm256_fmadd_ps(av, b1, hi[r]);
            }
        }
        for r in 0..R {
            _mm256_storeu_ps(c.add(r * ldc), lo[r]);
            _mm256_storeu_ps(c.add(r * ldc + 8), hi[r]);
        }
    }
}

/// See [`super::Microkernel`].
///
/// # Safety
///
/// As [`super::Microkernel`], with `rows <= MR_AVX512`; the CPU must
/// support AVX-512F.
pub(super) unsafe fn micro_avx512(t: &Tile) {
    // SAFETY: forwarded contract; a narrow tile goes through local copies.
    unsafe {
        if t.cols < PANEL {
            return narrow_tile(micro_avx512, t);
        }
        match t.rows {
            1 => tile_avx512::<1>(t),
            2 => tile_avx512::<2>(t),
            3 => tile_avx512::<3>(t),
            4 => tile_avx512::<4>(t),
            5 => tile_avx512::<5>(t),
            6 => tile_avx512::<6>(t),
            7 => tile_avx512::<7>(t),
            8 => tile_avx512::<8>(t),
            9 => tile_avx512::<9>(t),
            10 => tile_avx512::<10>(t),
            11 => tile_avx512::<11>(t),
            12 => tile_avx512::<12>(t),
            _ => unreachable!("rows is 1..=MR_AVX512"),
        }
    }
}

/// `R` rows x 16 columns.
///
/// # Safety
///
/// As [`micro_avx512`] with `rows == R` and `cols == PANEL`.
#[target_feature(enable = "avx512f")]
unsafe fn tile_avx512<const R: usize>(t: &Tile) {
    let Tile { kc, a, lda, b, c, ldc, init, .. } = *t;
    let mut acc = [_mm512_setzero_ps(); R];
    // SAFETY: as in `tile_avx2`.
    unsafe {
        match init {
            Init::Zero => {}
            Init::Load => {
                for (r, v) in acc.iter_mut().enumerate() {
                    *v = _mm512_loadu_ps(c.add(r * ldc));
                }
            }
            Init::ColBias(bias) => acc = [_mm512_loadu_ps(bias); R],
            Init::RowBias(bias) => {
                for (r, v) in acc.iter_mut().enumerate() {
                    *v = _mm512_set1_ps(*bias.add(r));
                }
            }
        }
        for p in 0..kc {
            let bv = _mm512_loadu_ps(b.add(p * PANEL));
            if t.prefetch != 0 && (t.prefetch_from..t.prefetch_to).contains(&p) {
                prefetch_l2(b.wrapping_offset(t.prefetch).wrapping_add(p * PANEL));
            }
            for (r, v) in acc.iter_mut().enumerate() {
                *v = _mm512_fmadd_ps(_mm512_set1_ps(*a.add(r * lda + p)), bv, *v);
            }
        }
        for (r, v) in acc.iter().enumerate() {
            _mm512_storeu_ps(c.add(r * ldc), *v);
        }
    }
}

/// A wide kernel (see [`super::Wide`]): `rows <= 2` rows by up to eight
/// panels, eight to sixteen accumulators.
///
/// # Safety
///
/// As [`super::Wide`]'s microkernel with `rows <= 2` and `cols <= 8 *
/// PANEL`; the CPU must support AVX-512F.
pub(super) unsafe fn wide_avx512(t: &Tile) {
    // SAFETY: forwarded contract; a partial last panel goes through local
    // copies.
    unsafe {
        if !t.cols.is_multiple_of(PANEL) {
            return narrow_wide(wide_avx512, t);
        }
        match (t.rows, t.cols / PANEL) {
            (1, 1) => panels_avx512::<1, 1>(t),
            (1, 2) => panels_avx512::<1, 2>(t),
            (1, 3) => panels_avx512::<1, 3>(t),
            (1, 4) => panels_avx512::<1, 4>(t),
            (1, 5) => panels_avx512::<1, 5>(t),
            (1, 6) => panels_avx512::<1, 6>(t),
            (1, 7) => panels_avx512::<1, 7>(t),
            (1, 8) => panels_avx512::<1, 8>(t),
            (2, 1) => panels_avx512::<2, 1>(t),
            (2, 2) => panels_avx512::<2, 2>(t),
            (2, 3) => panels_avx512::<2, 3>(t),
            (2, 4) => panels_avx512::<2, 4>(t),
            (2, 5) => panels_avx512::<2, 5>(t),
            (2, 6) => panels_avx512::<2, 6>(t),
            (2, 7) => panels_avx512::<2, 7>(t),
            (2, 8) => panels_avx512::<2, 8>(t),
            _ => unreachable!("wide tiles are 1..=2 rows by 1..=8 panels"),
        }
    }
}

/// A pair kernel (see `super::Kernel::pair`): up to 12 rows by two full
/// panels, 24 accumulators: per step of `k` two loads of `B` and one
/// broadcast per row feed twice the multiply-adds of [`tile_avx512`].
///
/// # Safety
///
/// As [`super::Microkernel`] with `rows <= MR_AVX512`, `cols == 2 *
/// PANEL` and panel 1 at `b + panel_stride`; the CPU must support
/// AVX-512F.
pub(super) unsafe fn pair_avx512(t: &Tile) {
    // SAFETY: forwarded contract.
    unsafe {
        match t.rows {
            1 => panels_avx512::<1, 2>(t),
            2 => panels_avx512::<2, 2>(t),
            3 => panels_avx512::<3, 2>(t),
            4 => panels_avx512::<4, 2>(t),
            5 => panels_avx512::<5, 2>(t),
            6 => panels_avx512::<6, 2>(t),
            7 => panels_avx512::<7, 2>(t),
            8 => panels_avx512::<8, 2>(t),
            9 => panels_avx512::<9, 2>(t),
            10 => panels_avx512::<10, 2>(t),
            11 => panels_avx512::<11, 2>(t),
            12 => panels_avx512::<12, 2>(t),
            _ => unreachable!("rows is 1..=MR_AVX512"),
        }
    }
}

/// `R` rows by `Q` full panels, `R * Q` accumulators.
///
/// # Safety
///
/// As [`super::Microkernel`] with `rows == R`, `cols == Q * PANEL` and
/// panel `q` at `b + q * panel_stride`; the CPU must support AVX-512F.
#[target_feature(enable = "avx512f")]
unsafe fn panels_avx512<const R: usize, const Q: usize>(t: &Tile) {
    let Tile { kc, a, lda, b, panel_stride, c, ldc, init, .. } = *t;
    let mut acc = [[_mm512_setzero_ps(); Q]; R];
    // SAFETY: rows `r < R` of `a` and `c`, `kc` rows of `Q` panels, the
    // `Q * 16` columns (or `R` rows) of bias: the caller's extents.
    unsafe {
        for (r, row) in acc.iter_mut().enumerate() {
            for (q, v) in row.iter_mut().enumerate() {
                *v = match init {
                    Init::Zero => _mm512_setzero_ps(),
                    Init::Load => _mm512_loadu_ps(c.add(r * ldc + q * PANEL)),
                    Init::ColBias(bias) => _mm512_loadu_ps(bias.add(q * PANEL)),
                    Init::RowBias(bias) => _mm512_set1_ps(*bias.add(r)),
                };
            }
        }
        for p in 0..kc {
            let bv: [__m512; Q] = std::array::from_fn(|q| _mm512_loadu_ps(b.add(q * panel_stride + p * PANEL)));
            if t.prefetch != 0 && (t.prefetch_from..t.prefetch_to).contains(&p) {
                for q in 0..Q {
                    prefetch_l2(b.wrapping_offset(t.prefetch).wrapping_add(q * panel_stride + p * PANEL));
                }
            }
            for (r, row) in acc.iter_mut().enumerate() {
                let av = _mm512_set1_ps(*a.add(r * lda + p));
                for (v, bq) in row.iter_mut().zip(bv) {
                    *v = _mm512_fmadd_ps(av, bq, *v);
                }
            }
        }
        for (r, row) in acc.iter().enumerate() {
            for (q, v) in row.iter().enumerate() {
                _mm512_storeu_ps(c.add(r * ldc + q * PANEL), *v);
            }
        }
    }
}

/// A wide kernel (see [`super::Wide`]) for one row: up to four panels as
/// up to eight 8-lane accumulators.
///
/// # Safety
///
/// As [`super::Wide`]'s microkernel with `rows == 1` and `cols <= 4 *
/// PANEL`; the CPU must support AVX2 and FMA.
pub(super) unsafe fn wide_avx2(t: &Tile) {
    // SAFETY: forwarded contract; a partial last panel goes through local
    // copies.
    unsafe {
        if !t.cols.is_multiple_of(PANEL) {
            return narrow_wide(wide_avx2, t);
        }
        match t.cols / PANEL {
            1 => row_avx2::<2>(t),
            2 => row_avx2::<4>(t),
            3 => row_avx2::<6>(t),
            4 => row_avx2::<8>(t),
            _ => unreachable!("wide AVX2 tiles are 1..=4 panels"),
        }
    }
}

/// One row by `V / 2` full panels as `V` 8-lane accumulators.
///
/// # Safety
///
/// As [`wide_avx2`] with `cols == V / 2 * PANEL`.
#[target_feature(enable = "avx2,fma")]
unsafe fn row_avx2<const V: usize>(t: &Tile) {
    let Tile { kc, a, b, panel_stride, c, init, .. } = *t;
    // Vector `v` covers columns `8v..8v + 8`: panel `v / 2`, half `v % 2`.
    let offset = |v: usize| (v / 2) * panel_stride + (v % 2) * 8;
    let mut acc = [_mm256_setzero_ps(); V];
    // SAFETY: one row of `a` and `c`, `kc` rows of `V / 2` panels, `8V`
    // columns (or one row) of bias: the caller's extents.
    unsafe {
        for (v, x) in acc.iter_mut().enumerate() {
            *x = match init {
                Init::Zero => _mm256_setzero_ps(),
                Init::Load => _mm256_loadu_ps(c.add(8 * v)),
                Init::ColBias(bias) => _mm256_loadu_ps(bias.add(8 * v)),
                Init::RowBias(bias) => _mm256_set1_ps(*bias),
            };
        }
        for p in 0..kc {
            let av = _mm256_broadcast_ss(&*a.add(p));
            for (v, x) in acc.iter_mut().enumerate() {
                *x = _mm256_fmadd_ps(av, _mm256_loadu_ps(b.add(offset(v) + p * PANEL)), *x);
            }
        }
        for (v, x) in acc.iter().enumerate() {
            _mm256_storeu_ps(c.add(8 * v), *x);
        }
    }
}
