//! aarch64 NEON microkernel: up to 6 pixels x 1 block, four 4-lane
//! vectors each (24 accumulators of the 32 registers). `vfmaq_n_f32` is
//! one fused multiply-add per lane, the scalar reference's operation in
//! its order, so results are bit-identical to it.

use std::arch::aarch64::*;

use super::{Kernel, Tile, B};
use crate::kernels::prefetch::prefetch_l2;

/// The NEON kernel.
pub(super) const NEON: Kernel = Kernel {
    name: "neon",
    max_r: 6,
    max_acc: 6,
    max_q: 1,
    pair_r: 0,
    pair_acc: 0,
    micro: micro_neon,
    half: None,
    unit_step: None,
};

/// See [`super::Microkernel`].
///
/// # Safety
///
/// As [`super::Microkernel`] with `r <= 6`, `q == 1`; the CPU must
/// support NEON.
unsafe fn micro_neon(t: &Tile) {
    // SAFETY: forwarded contract.
    unsafe {
        match t.r {
            1 => tile::<1>(t),
            2 => tile::<2>(t),
            3 => tile::<3>(t),
            4 => tile::<4>(t),
            5 => tile::<5>(t),
            6 => tile::<6>(t),
            r => unreachable!("no {r}-pixel tile"),
        }
    }
}

/// `R` pixels x one block.
///
/// # Safety
///
/// As [`micro_neon`] with `r == R`.
#[target_feature(enable = "neon")]
unsafe fn tile<const R: usize>(t: &Tile) {
    let taps = t.kh * t.kw;
    let mut acc = [[vdupq_n_f32(0.0); 4]; R];
    // SAFETY: every address is one of the tile's formula (the caller's
    // extents), for block 0 and pixels `i < R`.
    unsafe {
        if t.load {
            for (i, row) in acc.iter_mut().enumerate() {
                for (k, a) in row.iter_mut().enumerate() {
                    *a = vld1q_f32(t.out.add(i * B + 4 * k));
                }
            }
        } else if !t.bias.is_null() {
            let b = [vld1q_f32(t.bias), vld1q_f32(t.bias.add(4)), vld1q_f32(t.bias.add(8)), vld1q_f32(t.bias.add(12))];
            acc = [b; R];
        }
        for ci in 0..t.c_in {
            let xc = t.x.add((ci / B) * t.x_block + (ci % B) * t.x_lane);
            let mut wp = t.w.add(ci * taps * B);
            let prefetch = t.prefetch != 0 && (t.prefetch_from..t.prefetch_to).contains(&ci);
            for ki in 0..t.kh {
                let xr = xc.add(ki * t.x_dh);
                for kj in 0..t.kw {
                    let xp = xr.add(kj * t.x_dw);
                    let wv = [vld1q_f32(wp), vld1q_f32(wp.add(4)), vld1q_f32(wp.add(8)), vld1q_f32(wp.add(12))];
                    if prefetch {
                        prefetch_l2(wp.wrapping_offset(t.prefetch));
                    }
                    for (i, row) in acc.iter_mut().enumerate() {
                        let xv = *xp.add(i * t.x_step);
                        for (a, &wq) in row.iter_mut().zip(&wv) {
                            *a = vfmaq_n_f32(*a, wq, xv);
                        }
                    }
                    wp = wp.add(B);
                }
            }
        }
        if t.residual.is_null() && t.clamp.is_none() {
            for (i, row) in acc.iter().enumerate() {
                for (k, a) in row.iter().enumerate() {
                    vst1q_f32(t.out.add(i * B + 4 * k), *a);
                }
            }
        } else {
            finish::<R>(acc, t);
        }
    }
}

/// Stores a tile's accumulators plus the residual, clamped. Not inlined,
/// so the bounds take no register in the tile's loop.
///
/// # Safety
///
/// As [`tile`] for the same tile.
#[target_feature(enable = "neon")]
#[inline(never)]
unsafe fn finish<const R: usize>(acc: [[float32x4_t; 4]; R], t: &Tile) {
    let clamp = t.clamp.map(|(lo, hi)| (vdupq_n_f32(lo), vdupq_n_f32(hi)));
    // SAFETY: the tile's outputs and the residual at their offsets.
    unsafe {
        for (i, row) in acc.iter().enumerate() {
            for (k, &a) in row.iter().enumerate() {
                let mut v = a;
                if !t.residual.is_null() {
                    v = vaddq_f32(v, vld1q_f32(t.residual.add(i * B + 4 * k)));
                }
                if let Some((lo, hi)) = clamp {
                    // `math::clip` by compare and select (NEON's max/min
                    // would turn a NaN bound's comparison around).
                    let u = vbslq_f32(vcltq_f32(v, lo), lo, v);
                    v = vbslq_f32(vcgtq_f32(u, hi), hi, u);
                }
                vst1q_f32(t.out.add(i * B + 4 * k), v);
            }
        }
    }
}
