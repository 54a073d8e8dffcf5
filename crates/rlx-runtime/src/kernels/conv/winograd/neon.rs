//! aarch64 NEON kernels: products of up to 6 tiles x 1 block, four 4-lane
//! vectors each (24 accumulators of the 32 registers); the transforms on
//! four 4-lane quarters of a block. `vfmaq_f32` is one fused
//! multiply-add per lane, the scalar reference's operation in its order,
//! so the bits are the same. Unaligned loads and stores; no tails.

use std::arch::aarch64::*;

use super::{grid6, wino_in_1d, wino_input, wino_out_1d, wino_output, Gemm, Kernel, OutTile, B, P};
use crate::kernels::prefetch::prefetch_l2;

/// The NEON kernels.
pub(super) const NEON: Kernel =
    Kernel { name: "neon", max_r: 6, max_q: 1, gemm: gemm_neon, input: input_neon, output: output_neon };

/// `a * b + c`, one rounding, in the transform macros' argument order.
#[inline]
#[target_feature(enable = "neon")]
fn fma(a: float32x4_t, b: float32x4_t, c: float32x4_t) -> float32x4_t {
    vfmaq_f32(c, a, b)
}

/// See [`super::GemmFn`].
///
/// # Safety
///
/// As [`super::GemmFn`] with `r <= 6`, `q == 1`; the CPU must support
/// NEON.
unsafe fn gemm_neon(g: &Gemm) {
    // SAFETY: forwarded contract.
    unsafe {
        match g.r {
            1 => product::<1>(g),
            2 => product::<2>(g),
            3 => product::<3>(g),
            4 => product::<4>(g),
            5 => product::<5>(g),
            6 => product::<6>(g),
            r => unreachable!("no {r}-tile product"),
        }
    }
}

/// `R` tiles x one block.
///
/// # Safety
///
/// As [`gemm_neon`] with `r == R`.
#[target_feature(enable = "neon")]
unsafe fn product<const R: usize>(g: &Gemm) {
    debug_assert_eq!(g.q, 1);
    let mut acc = [[vdupq_n_f32(0.0); 4]; R];
    // SAFETY: every address is one of the formula's, for block 0 and
    // tiles `i < R`.
    unsafe {
        let mut c0 = 0;
        while c0 < g.c_in {
            let lanes = B.min(g.c_in - c0);
            let v = g.v.add((c0 / B) * g.v_block);
            let u = g.u.add(c0 * B);
            for l in 0..lanes {
                let w = u.add(l * B);
                let wv = [vld1q_f32(w), vld1q_f32(w.add(4)), vld1q_f32(w.add(8)), vld1q_f32(w.add(12))];
                if g.prefetch != 0 {
                    prefetch_l2(w.wrapping_offset(g.prefetch));
                }
                for (i, row) in acc.iter_mut().enumerate() {
                    let xv = vdupq_n_f32(*v.add(i * g.v_tile + l));
                    for (a, &wq) in row.iter_mut().zip(&wv) {
                        *a = vfmaq_f32(*a, xv, wq);
                    }
                }
            }
            c0 += lanes;
        }
        for (i, row) in acc.iter().enumerate() {
            for (k, a) in row.iter().enumerate() {
                vst1q_f32(g.m.add(i * B + 4 * k), *a);
            }
        }
    }
}

/// See [`super::InputFn`].
///
/// # Safety
///
/// As [`super::InputFn`]; the CPU must support NEON.
#[target_feature(enable = "neon")]
unsafe fn input_neon(src: *const f32, src_row: usize, dst: *mut f32, dst_step: usize) {
    for quarter in [0, 4, 8, 12] {
        // SAFETY: the patch's pixels.
        let d = unsafe { grid6!(|k| vld1q_f32(src.add((k / P) * src_row + (k % P) * B + quarter))) };
        let k = (vdupq_n_f32(4.0), vdupq_n_f32(-4.0), vdupq_n_f32(-5.0));
        let v = wino_input!(vaddq_f32, vsubq_f32, fma, k, d);
        for (i, x) in v.iter().flatten().enumerate() {
            // SAFETY: point `i`'s 16 lanes.
            unsafe { vst1q_f32(dst.add(i * dst_step + quarter), *x) };
        }
    }
}

/// See [`super::OutputFn`].
///
/// # Safety
///
/// As [`super::OutputFn`]; the CPU must support NEON.
#[target_feature(enable = "neon")]
unsafe fn output_neon(o: &OutTile) {
    for quarter in [0, 4, 8, 12] {
        // SAFETY: the 36 products of the formula.
        let m = unsafe { grid6!(|k| vld1q_f32(o.m.add(k * o.m_step + quarter))) };
        let k = (vdupq_n_f32(2.0), vdupq_n_f32(4.0), vdupq_n_f32(8.0));
        let y = wino_output!(vaddq_f32, vsubq_f32, fma, k, m);
        // SAFETY: the bias block, and pixels `(i, j) < (rows, cols)` of the
        // tile in the output and the residual.
        unsafe {
            let bias = if o.bias.is_null() { vdupq_n_f32(0.0) } else { vld1q_f32(o.bias.add(quarter)) };
            for (i, row) in y.iter().enumerate().take(o.rows) {
                for (j, &v) in row.iter().enumerate().take(o.cols) {
                    let at = i * o.out_row + j * B + quarter;
                    let v = if o.bias.is_null() { v } else { vaddq_f32(v, bias) };
                    let v = if o.res.is_null() { v } else { vaddq_f32(v, vld1q_f32(o.res.add(at))) };
                    vst1q_f32(o.out.add(at), v);
                }
            }
        }
    }
}
