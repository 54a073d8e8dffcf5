//! Interpreter arms for the gemm family.
//!
//! Each arm decides, through `rlx_sched::plan`, whether the output needs a
//! temporary (the byte ranges of `c` and an input overlap) and whether to
//! split work over threads, then calls the kernel entry the code generator
//! emits for the same decision.

use super::Memory;
use crate::kernels::gemm;
use rlx_sched::plan::{gemm_needs_temp, parallel};
use rlx_sched::{Operand, Thunk};

const F32: usize = 4;
const HALF: usize = 2;

pub(super) fn sgemm(mem: &mut Memory<'_>, t: &Thunk<Operand>) {
    let Thunk::Sgemm { a, b, c, m, k, n } = t else { unreachable!("sgemm arm got {:?}", t.kind()) };
    let (m, k, n) = (*m, *k, *n);
    let (ap, bp, cp) = (mem.ptr::<f32>(*a), mem.ptr::<f32>(*b), mem.ptr::<f32>(*c));
    // SAFETY: the validator checked every extent; the plan routes
    // overlapping outputs through scratch sized by `plan::scratch_bytes`.
    unsafe {
        if gemm_needs_temp(a, m * k * F32, b, k * n * F32, c, m * n * F32) {
            gemm::sgemm_f32_via(mem.scratch(), ap, bp, cp, m, k, n);
        } else {
            gemm::sgemm_f32(ap, bp, cp, m, k, n);
        }
    }
}

pub(super) fn sgemm_t(mem: &mut Memory<'_>, t: &Thunk<Operand>) {
    let Thunk::SgemmT { a, b, c, m, k, n, ta, tb } = t else { unreachable!("sgemm_t arm got {:?}", t.kind()) };
    let (m, k, n) = (*m, *k, *n);
    let (ap, bp, cp) = (mem.ptr::<f32>(*a), mem.ptr::<f32>(*b), mem.ptr::<f32>(*c));
    // SAFETY: as in `sgemm`; a transposed operand has the same extent.
    unsafe {
        if gemm_needs_temp(a, m * k * F32, b, k * n * F32, c, m * n * F32) {
            gemm::sgemm_t_f32_via(mem.scratch(), ap, bp, cp, m, k, n, *ta, *tb);
        } else {
            gemm::sgemm_t_f32(ap, bp, cp, m, k, n, *ta, *tb);
        }
    }
}

/// Which half-precision format an arm's weights use.
#[derive(Clone, Copy)]
enum Half {
    F16,
    Bf16,
}

fn sgemm_half(mem: &mut Memory<'_>, half: Half, a: &Operand, b: &Operand, c: &Operand, m: usize, k: usize, n: usize) {
    let (ap, bp, cp) = (mem.ptr::<f32>(*a), mem.ptr::<u16>(*b), mem.ptr::<f32>(*c));
    let par = parallel(k * n);
    let via = gemm_needs_temp(a, m * k * F32, b, k * n * HALF, c, m * n * F32);
    let temp = if via { m * n } else { 0 };
    // A hard check: a scratch buffer sized by an outdated plan would
    // otherwise be overrun.
    assert!(
        mem.scratch_len() >= (temp + gemm::half_weight_scratch_elems(m, k, n)) * F32,
        "scratch of {} bytes is too small for a half-weight gemm {m}x{k}x{n}",
        mem.scratch_len()
    );
    let scratch = mem.scratch::<f32>();
    // SAFETY: validated extents; scratch holds the temporary (when `via`)
    // followed by the widened weights (see `half_weight_scratch_elems`).
    unsafe {
        match (half, via) {
            (Half::F16, true) => gemm::sgemm_f16w_via(scratch, ap, bp, cp, m, k, n, par),
            (Half::F16, false) => gemm::sgemm_f16w(ap, bp, cp, m, k, n, scratch, par),
            (Half::Bf16, true) => gemm::sgemm_bf16w_via(scratch, ap, bp, cp, m, k, n, par),
            (Half::Bf16, false) => gemm::sgemm_bf16w(ap, bp, cp, m, k, n, scratch, par),
        }
    }
}

pub(super) fn sgemm_f16(mem: &mut Memory<'_>, t: &Thunk<Operand>) {
    let Thunk::SgemmF16 { a, b, c, m, k, n } = t else { unreachable!("sgemm_f16 arm got {:?}", t.kind()) };
    sgemm_half(mem, Half::F16, a, b, c, *m, *k, *n);
}

pub(super) fn sgemm_bf16(mem: &mut Memory<'_>, t: &Thunk<Operand>) {
    let Thunk::SgemmBf16 { a, b, c, m, k, n } = t else { unreachable!("sgemm_bf16 arm got {:?}", t.kind()) };
    sgemm_half(mem, Half::Bf16, a, b, c, *m, *k, *n);
}

pub(super) fn batched_sgemm(mem: &mut Memory<'_>, t: &Thunk<Operand>) {
    let Thunk::BatchedSgemm { a, b, c, batch, m, k, n, a_bcast, b_bcast } = t else {
        unreachable!("batched_sgemm arm got {:?}", t.kind())
    };
    let (batch, m, k, n) = (*batch, *m, *k, *n);
    let a_count = if *a_bcast { 1 } else { batch };
    let b_count = if *b_bcast { 1 } else { batch };
    let (ap, bp, cp) = (mem.ptr::<f32>(*a), mem.ptr::<f32>(*b), mem.ptr::<f32>(*c));
    let par = batch > 1 && parallel(batch * m * k * n);
    // SAFETY: validated extents (broadcast operands hold one matrix);
    // overlap anywhere between `c` and an input goes through scratch.
    unsafe {
        if gemm_needs_temp(a, a_count * m * k * F32, b, b_count * k * n * F32, c, batch * m * n * F32) {
            gemm::batched_sgemm_f32_via(mem.scratch(), ap, bp, cp, batch, m, k, n, *a_bcast, *b_bcast, par);
        } else {
            gemm::batched_sgemm_f32(ap, bp, cp, batch, m, k, n, *a_bcast, *b_bcast, par);
        }
    }
}

pub(super) fn fused_mm_bias_act(mem: &mut Memory<'_>, t: &Thunk<Operand>) {
    let Thunk::FusedMmBiasAct { a, w, bias, c, m, k, n, act } = t else {
        unreachable!("fused_mm_bias_act arm got {:?}", t.kind())
    };
    let (m, k, n) = (*m, *k, *n);
    let (ap, wp, biasp, cp) = (mem.ptr::<f32>(*a), mem.ptr::<f32>(*w), mem.ptr::<f32>(*bias), mem.ptr::<f32>(*c));
    let par = parallel(m * n);
    // SAFETY: validated extents; overlapping outputs go through scratch.
    unsafe {
        if gemm_needs_temp(a, m * k * F32, w, k * n * F32, c, m * n * F32) {
            gemm::fused_mm_bias_act_f32_via(mem.scratch(), ap, wp, biasp, cp, m, k, n, *act, par);
        } else {
            gemm::fused_mm_bias_act_f32(ap, wp, biasp, cp, m, k, n, *act, par);
        }
    }
}

pub(super) fn bias_add(mem: &mut Memory<'_>, t: &Thunk<Operand>) {
    let Thunk::BiasAdd { src, bias, dst, rows, cols } = t else { unreachable!("bias_add arm got {:?}", t.kind()) };
    let (rows, cols) = (*rows, *cols);
    let (sp, bp, dp) = (mem.ptr::<f32>(*src), mem.ptr::<f32>(*bias), mem.ptr::<f32>(*dst));
    // SAFETY: validated extents; the validator allows `dst` to alias `src`
    // only exactly, which the kernel supports (in place).
    unsafe { gemm::bias_add_f32(sp, bp, dp, rows, cols, parallel(rows * cols)) }
}

#[cfg(test)]
mod tests;
