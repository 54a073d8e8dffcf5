//! Interpreter arms for the gemm family.

use super::Memory;
use rlx_sched::{Operand, Thunk};

pub(super) fn sgemm(mem: &mut Memory<'_>, t: &Thunk<Operand>) {
    let _ = (mem, t);
    todo!("Sgemm")
}

pub(super) fn sgemm_t(mem: &mut Memory<'_>, t: &Thunk<Operand>) {
    let _ = (mem, t);
    todo!("SgemmT")
}

pub(super) fn sgemm_f16(mem: &mut Memory<'_>, t: &Thunk<Operand>) {
    let _ = (mem, t);
    todo!("SgemmF16")
}

pub(super) fn sgemm_bf16(mem: &mut Memory<'_>, t: &Thunk<Operand>) {
    let _ = (mem, t);
    todo!("SgemmBf16")
}

pub(super) fn batched_sgemm(mem: &mut Memory<'_>, t: &Thunk<Operand>) {
    let _ = (mem, t);
    todo!("BatchedSgemm")
}

pub(super) fn fused_mm_bias_act(mem: &mut Memory<'_>, t: &Thunk<Operand>) {
    let _ = (mem, t);
    todo!("FusedMmBiasAct")
}

pub(super) fn bias_add(mem: &mut Memory<'_>, t: &Thunk<Operand>) {
    let _ = (mem, t);
    todo!("BiasAdd")
}
