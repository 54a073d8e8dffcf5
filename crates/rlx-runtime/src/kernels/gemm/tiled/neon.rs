//! aarch64 NEON microkernel: 6 rows x four 4-lane vectors (24
//! accumulators of the 32 registers). `vfmaq_n_f32` is one fused
//! multiply-add per lane, the scalar reference's operation in its order,
//! so results are bit-identical to it.

use std::arch::aarch64::*;

use rlx_core::pack::PANEL;

use super::{narrow_tile, narrow_wide, Init, Tile};
use crate::kernels::prefetch::prefetch_l2;

/// Rows per call.
pub(super) const MR_NEON: usize = 6;

/// See [`super::Microkernel`].
///
/// # Safety
///
/// As [`super::Microkernel`], with `rows <= MR_NEON`; the CPU must support
/// NEON.
pub(super) unsafe fn micro_neon(t: &Tile) {
    // SAFETY: forwarded contract; a narrow tile goes through local copies.
    unsafe {
        if t.cols < PANEL {
            return narrow_tile(micro_neon, t);
        }
        match t.rows {
            1 => tile::<1>(t),
            2 => tile::<2>(t),
            3 => tile::<3>(t),
            4 => tile::<4>(t),
            5 => tile::<5>(t),
            6 => tile::<6>(t),
            _ => unreachable!("rows is 1..=MR_NEON"),
        }
    }
}

/// `R` rows x 16 columns.
///
/// # Safety
///
/// As [`micro_neon`] with `rows == R` and `cols == PANEL`.
#[target_feature(enable = "neon")]
unsafe fn tile<const R: usize>(t: &Tile) {
    let Tile { kc, a, lda, b, c, ldc, init, .. } = *t;
    let mut acc = [[vdupq_n_f32(0.0); 4]; R];
    // SAFETY: rows `r < R` of `a` (`kc` each) and `c` (16 each), `kc`
    // rows of 16 of `b`, 16 (column) or `R` (row) bias values: the
    // caller's extents.
    unsafe {
        match init {
            Init::Zero => {}
            Init::Load => {
                for (r, row) in acc.iter_mut().enumerate() {
                    for (q, v) in row.iter_mut().enumerate() {
                        *v = vld1q_f32(c.add(r * ldc + 4 * q));
                    }
                }
            }
            Init::ColBias(bias) => {
                let init = [vld1q_f32(bias), vld1q_f32(bias.add(4)), vld1q_f32(bias.add(8)), vld1q_f32(bias.add(12))];
                acc = [init; R];
            }
            Init::RowBias(bias) => {
                for (r, row) in acc.iter_mut().enumerate() {
                    *row = [vdupq_n_f32(*bias.add(r)); 4];
                }
            }
        }
        for p in 0..kc {
            let bp = b.add(p * PANEL);
            let bv = [vld1q_f32(bp), vld1q_f32(bp.add(4)), vld1q_f32(bp.add(8)), vld1q_f32(bp.add(12))];
            if t.prefetch != 0 && (t.prefetch_from..t.prefetch_to).contains(&p) {
                prefetch_l2(bp.wrapping_offset(t.prefetch));
            }
            for (r, row) in acc.iter_mut().enumerate() {
                let av = *a.add(r * lda + p);
                for (v, bq) in row.iter_mut().zip(bv) {
                    *v = vfmaq_n_f32(*v, bq, av);
                }
            }
        }
        for (r, row) in acc.iter().enumerate() {
            for (q, v) in row.iter().enumerate() {
                vst1q_f32(c.add(r * ldc + 4 * q), *v);
            }
        }
    }
}

/// A wide kernel (see [`super::Wide`]) for one row: up to four panels as
/// up to sixteen 4-lane accumulators.
///
/// # Safety
///
/// As [`super::Wide`]'s microkernel with `rows == 1` and `cols <= 4 *
/// PANEL`; the CPU must support NEON.
pub(super) unsafe fn wide_neon(t: &Tile) {
    // SAFETY: forwarded contract; a partial last panel goes through local
    // copies.
    unsafe {
        if !t.cols.is_multiple_of(PANEL) {
            return narrow_wide(wide_neon, t);
        }
        match t.cols / PANEL {
            1 => row_neon::<4>(t),
            2 => row_neon::<8>(t),
            3 => row_neon::<12>(t),
            4 => row_neon::<16>(t),
            _ => unreachable!("wide NEON tiles are 1..=4 panels"),
        }
    }
}

/// One row by `V / 4` full panels as `V` 4-lane accumulators.
///
/// # Safety
///
/// As [`wide_neon`] with `cols == V / 4 * PANEL`.
#[target_feature(enable = "neon")]
unsafe fn row_neon<const V: usize>(t: &Tile) {
    let Tile { kc, a, b, panel_stride, c, init, .. } = *t;
    // Vector `v` covers columns `4v..4v + 4`: panel `v / 4`, quarter `v % 4`.
    let offset = |v: usize| (v / 4) * panel_stride + (v % 4) * 4;
    let mut acc = [vdupq_n_f32(0.0); V];
    // SAFETY: one row of `a` and `c`, `kc` rows of `V / 4` panels, `4V`
    // columns (or one row) of bias: the caller's extents.
    unsafe {
        for (v, x) in acc.iter_mut().enumerate() {
            *x = match init {
                Init::Zero => vdupq_n_f32(0.0),
                Init::Load => vld1q_f32(c.add(4 * v)),
                Init::ColBias(bias) => vld1q_f32(bias.add(4 * v)),
                Init::RowBias(bias) => vdupq_n_f32(*bias),
            };
        }
        for p in 0..kc {
            let av = *a.add(p);
            for (v, x) in acc.iter_mut().enumerate() {
                *x = vfmaq_n_f32(*x, vld1q_f32(b.add(offset(v) + p * PANEL)), av);
            }
        }
        for (v, x) in acc.iter().enumerate() {
            vst1q_f32(c.add(4 * v), *x);
        }
    }
}
