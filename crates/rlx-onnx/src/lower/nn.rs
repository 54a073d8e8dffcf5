//! Activations with parameters (`Clip`, `LeakyRelu`, `HardSigmoid`,
//! `Gelu`) and the helpers the other op families share.

use rlx_sched::ActKind;

use super::ops::{activation, R};
use super::{Lowerer, NodeCtx, Value};
use crate::error::ImportError;
use crate::tensor::{ConstData, ConstTensor};

/// Errors when the node asks for an output beyond the first (`Mean`,
/// `InvStdDev`, `Indices`, ...), which no thunk writes.
pub(super) fn only_first_output(ctx: &NodeCtx<'_>) -> R {
    if let Some(extra) = ctx.node.output.iter().skip(1).find(|o| !o.is_empty()) {
        return Err(ctx.err(format!("output `{extra}` is not supported; only the first output is")));
    }
    Ok(())
}

/// Input `i`, when present, as an f32 scalar constant.
fn const_scalar(lw: &Lowerer, ctx: &NodeCtx<'_>, i: usize) -> Result<Option<f32>, ImportError> {
    if ctx.input_name(i).is_none() {
        return Ok(None);
    }
    let (name, value) = lw.input(ctx, i)?;
    match value {
        Value::Const(ConstTensor { data: ConstData::F32(v), .. }) if v.len() == 1 => Ok(Some(v[0])),
        _ => Err(ctx.err(format!("input `{name}` must be an f32 scalar constant known at import time"))),
    }
}

/// `Clip`: bounds from constant inputs (opset 11+) or attributes (before);
/// a missing bound is the f32 limit, as the spec's `numeric_limits`.
pub(super) fn clip(lw: &mut Lowerer, ctx: &NodeCtx<'_>) -> R {
    let (min, max) = if lw.opset >= 11 {
        ctx.expect_arity(1, 3)?;
        for attr in ["min", "max"] {
            if ctx.has_attr(attr) {
                return Err(ctx.bad_attr(attr, "is an input since opset 11, not an attribute"));
            }
        }
        (const_scalar(lw, ctx, 1)?.unwrap_or(f32::MIN), const_scalar(lw, ctx, 2)?.unwrap_or(f32::MAX))
    } else {
        ctx.expect_arity(1, 1)?;
        (ctx.float_attr("min", f32::MIN)?, ctx.float_attr("max", f32::MAX)?)
    };
    activation(lw, ctx, ActKind::Clip { min, max })
}

/// `LeakyRelu` (alpha 0.01 by default).
pub(super) fn leaky_relu(lw: &mut Lowerer, ctx: &NodeCtx<'_>) -> R {
    ctx.expect_arity(1, 1)?;
    activation(lw, ctx, ActKind::LeakyRelu { alpha: ctx.float_attr("alpha", 0.01)? })
}

/// `HardSigmoid` (alpha 0.2, beta 0.5 by default).
pub(super) fn hard_sigmoid(lw: &mut Lowerer, ctx: &NodeCtx<'_>) -> R {
    ctx.expect_arity(1, 1)?;
    let (alpha, beta) = (ctx.float_attr("alpha", 0.2)?, ctx.float_attr("beta", 0.5)?);
    activation(lw, ctx, ActKind::HardSigmoid { alpha, beta })
}

/// `Gelu` (opset 20): exact, or the tanh approximation.
pub(super) fn gelu(lw: &mut Lowerer, ctx: &NodeCtx<'_>) -> R {
    ctx.expect_arity(1, 1)?;
    let act = match ctx.string_attr("approximate")?.as_deref() {
        None | Some("none") => ActKind::Gelu,
        Some("tanh") => ActKind::GeluTanh,
        Some(other) => return Err(ctx.bad_attr("approximate", format!("is `{other}`; expected `none` or `tanh`"))),
    };
    activation(lw, ctx, act)
}
