//! Interpreter arms for the norm family.

use super::Memory;
use rlx_sched::{Operand, Thunk};

pub(super) fn layer_norm(mem: &mut Memory<'_>, t: &Thunk<Operand>) {
    let _ = (mem, t);
    todo!("LayerNorm")
}

pub(super) fn rms_norm(mem: &mut Memory<'_>, t: &Thunk<Operand>) {
    let _ = (mem, t);
    todo!("RmsNorm")
}

pub(super) fn fused_residual_ln(mem: &mut Memory<'_>, t: &Thunk<Operand>) {
    let _ = (mem, t);
    todo!("FusedResidualLN")
}

pub(super) fn fused_residual_rms_norm(mem: &mut Memory<'_>, t: &Thunk<Operand>) {
    let _ = (mem, t);
    todo!("FusedResidualRmsNorm")
}

pub(super) fn batch_norm_inference(mem: &mut Memory<'_>, t: &Thunk<Operand>) {
    let _ = (mem, t);
    todo!("BatchNormInference")
}

pub(super) fn rope(mem: &mut Memory<'_>, t: &Thunk<Operand>) {
    let _ = (mem, t);
    todo!("Rope")
}
