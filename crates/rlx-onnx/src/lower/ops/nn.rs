//! Activations with parameters (`Clip`, `LeakyRelu`, `HardSigmoid`,
//! `Gelu`, `Elu`, `Selu`, `Celu`, `ThresholdedRelu`, `Shrink`), `PRelu`,
//! inference `Dropout`, and the helpers the other op families share.

use rlx_sched::{ActKind, BinaryOp, CmpOp, DType, Thunk};

use crate::error::ImportError;
use crate::lower::arith::fold;
use crate::lower::arith::shape::broadcast;
use crate::lower::build::{activation, binary_thunk, compare_thunk, define_if_empty, numel, R};
use crate::lower::{Lowerer, NodeCtx, Value};
use crate::tensor::{ConstData, ConstTensor};
use rlx_sched::thunk::Where;

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
pub(crate) fn clip(lw: &mut Lowerer, ctx: &NodeCtx<'_>) -> R {
    if lw.opset >= 11 && integer_data(lw, ctx)? {
        return clip_integers(lw, ctx);
    }
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
    let act = ActKind::Clip { min, max };
    // Shape arithmetic (TF-style "same" padding computed from the input
    // size) clamps constants: fold them so what follows stays constant.
    if let Some(folded) = lw.const_input(ctx, 0)?.and_then(|c| fold::unary(act, &c)) {
        return lw.define(ctx, 0, Value::Const(folded));
    }
    activation(lw, ctx, act)
}

/// Whether input 0 holds integers (the narrow types arrive widened to i64).
fn integer_data(lw: &Lowerer, ctx: &NodeCtx<'_>) -> Result<bool, ImportError> {
    let (_, value) = lw.input(ctx, 0)?;
    Ok(match value {
        Value::Data { storage, .. } => lw.storages[storage].dtype != DType::F32,
        Value::Const(c) => c.data.ints().is_some(),
    })
}

/// `Clip` of integers: `Max` with `min`, then `Min` with `max` (each when
/// given), exact in the integers' own arithmetic.
fn clip_integers(lw: &mut Lowerer, ctx: &NodeCtx<'_>) -> R {
    ctx.expect_arity(1, 3)?;
    let out = ctx.node.output[0].clone();
    let mut cur = ctx.node.input[0].clone();
    let bounds = [(1, "Max", "at_least"), (2, "Min", "at_most")];
    let last = bounds.iter().rposition(|&(i, _, _)| ctx.input_name(i).is_some());
    for (n, &(i, op, what)) in bounds.iter().enumerate() {
        let Some(bound) = ctx.input_name(i) else { continue };
        let next = if Some(n) == last { out.clone() } else { lw.internal_name(&out, what) };
        lw.lower_part(ctx, op, &[&cur, bound], &[&next], Vec::new())?;
        cur = next;
    }
    if last.is_none() {
        lw.lower_part(ctx, "Identity", &[&cur], &[&out], Vec::new())?;
    }
    Ok(())
}

/// `LeakyRelu` (alpha 0.01 by default).
pub(crate) fn leaky_relu(lw: &mut Lowerer, ctx: &NodeCtx<'_>) -> R {
    ctx.expect_arity(1, 1)?;
    activation(lw, ctx, ActKind::LeakyRelu { alpha: ctx.float_attr("alpha", 0.01)? })
}

/// `HardSigmoid` (alpha 0.2, beta 0.5 by default).
pub(crate) fn hard_sigmoid(lw: &mut Lowerer, ctx: &NodeCtx<'_>) -> R {
    ctx.expect_arity(1, 1)?;
    let (alpha, beta) = (ctx.float_attr("alpha", 0.2)?, ctx.float_attr("beta", 0.5)?);
    activation(lw, ctx, ActKind::HardSigmoid { alpha, beta })
}

/// `Gelu` (opset 20): exact, or the tanh approximation.
pub(crate) fn gelu(lw: &mut Lowerer, ctx: &NodeCtx<'_>) -> R {
    ctx.expect_arity(1, 1)?;
    let act = match ctx.string_attr("approximate")?.as_deref() {
        None | Some("none") => ActKind::Gelu,
        Some("tanh") => ActKind::GeluTanh,
        Some(other) => return Err(ctx.bad_attr("approximate", format!("is `{other}`; expected `none` or `tanh`"))),
    };
    activation(lw, ctx, act)
}

/// `Elu` (alpha 1 by default).
pub(crate) fn elu(lw: &mut Lowerer, ctx: &NodeCtx<'_>) -> R {
    ctx.expect_arity(1, 1)?;
    activation(lw, ctx, ActKind::Elu { alpha: ctx.float_attr("alpha", 1.0)? })
}

/// `Selu`, with the spec's defaults (the f32 values of the constants of
/// Klambauer et al.).
pub(crate) fn selu(lw: &mut Lowerer, ctx: &NodeCtx<'_>) -> R {
    ctx.expect_arity(1, 1)?;
    let alpha = ctx.float_attr("alpha", 1.673_263_2)?;
    let gamma = ctx.float_attr("gamma", 1.050_701)?;
    activation(lw, ctx, ActKind::Selu { alpha, gamma })
}

/// `Celu` (alpha 1 by default; it divides `x`, so 0 is refused).
pub(crate) fn celu(lw: &mut Lowerer, ctx: &NodeCtx<'_>) -> R {
    ctx.expect_arity(1, 1)?;
    let alpha = ctx.float_attr("alpha", 1.0)?;
    if alpha == 0.0 || !alpha.is_finite() {
        return Err(ctx.bad_attr("alpha", format!("is {alpha}; it must be finite and not 0")));
    }
    activation(lw, ctx, ActKind::Celu { alpha })
}

/// `ThresholdedRelu` (alpha 1 by default).
pub(crate) fn thresholded_relu(lw: &mut Lowerer, ctx: &NodeCtx<'_>) -> R {
    ctx.expect_arity(1, 1)?;
    activation(lw, ctx, ActKind::ThresholdedRelu { alpha: ctx.float_attr("alpha", 1.0)? })
}

/// `Shrink` of f32 data (bias 0, lambd 0.5 by default).
pub(crate) fn shrink(lw: &mut Lowerer, ctx: &NodeCtx<'_>) -> R {
    ctx.expect_arity(1, 1)?;
    let (bias, lambd) = (ctx.float_attr("bias", 0.0)?, ctx.float_attr("lambd", 0.5)?);
    activation(lw, ctx, ActKind::Shrink { bias, lambd })
}

/// `PRelu`: `x < 0 ? slope * x : x`, with `slope` broadcast to `x`'s shape
/// (unidirectionally). Three thunks: the product into the output, a
/// `Compare` for the sign, and a `Where` that puts `x` back where it is not
/// negative (so NaN and `-0.0` pass through, as the spec's formula).
pub(crate) fn prelu(lw: &mut Lowerer, ctx: &NodeCtx<'_>) -> R {
    ctx.expect_arity(2, 2)?;
    let (x, xs) = lw.data_input(ctx, 0)?;
    let (slope, ss) = lw.data_input(ctx, 1)?;
    if broadcast(&xs, &ss).as_deref() != Some(xs.as_slice()) {
        return Err(ctx.err(format!("slope of shape {ss:?} does not broadcast to X of shape {xs:?}")));
    }
    if define_if_empty(lw, ctx, &xs, DType::F32)? {
        return Ok(());
    }
    let name = ctx.node.output[0].clone();
    let y = lw.output_storage(ctx, 0, xs.clone())?;
    lw.emit(ctx, binary_thunk(ctx, (x, &xs), (slope, &ss), y, &xs, BinaryOp::Mul, 4)?);
    let zero =
        lw.add_param(&format!("{name}.zero"), &ConstTensor { shape: vec![], data: ConstData::F32(vec![0.0]) })?;
    let negative = lw.scratch_storage(&format!("{name}.negative"), xs.clone(), DType::Bool)?;
    lw.emit(ctx, compare_thunk(ctx, (x, &xs), (zero, &[]), negative, &xs, CmpOp::Lt, 4)?);
    let len = numel(ctx, &xs)?;
    lw.emit(
        ctx,
        Thunk::Where(Where {
            cond: negative,
            on_true: y,
            on_false: x,
            dst: y,
            len,
            elem_bytes: 4,
            cond_elem_bytes: 1,
            cond_scalar: false,
            true_scalar: false,
            false_scalar: false,
        }),
    );
    lw.define(ctx, 0, Value::Data { storage: y, shape: xs })
}

/// Input `i`, when present, as a bool scalar constant.
fn const_bool(lw: &Lowerer, ctx: &NodeCtx<'_>, i: usize) -> Result<Option<bool>, ImportError> {
    if ctx.input_name(i).is_none() {
        return Ok(None);
    }
    let (name, value) = lw.input(ctx, i)?;
    match value {
        Value::Const(ConstTensor { data: ConstData::Bool(v), .. }) if v.len() == 1 => Ok(Some(v[0])),
        _ => Err(ctx.err(format!("input `{name}` must be a bool scalar constant known at import time"))),
    }
}

/// `Dropout` at inference: the output is the input (a view) and the
/// optional mask is all true. Training mode (`training_mode` true from
/// opset 12, `is_test = 0` before opset 7) drops at random, which is
/// refused unless the ratio is 0, where it is the identity too.
pub(crate) fn dropout(lw: &mut Lowerer, ctx: &NodeCtx<'_>) -> R {
    let (training, ratio) = if lw.opset >= 12 {
        ctx.expect_arity(1, 3)?;
        (const_bool(lw, ctx, 2)?.unwrap_or(false), const_scalar(lw, ctx, 1)?.unwrap_or(0.5))
    } else {
        ctx.expect_arity(1, 1)?;
        let training = lw.opset < 7 && ctx.int_attr("is_test", 0)? == 0;
        (training, ctx.float_attr("ratio", 0.5)?)
    };
    if training && ratio != 0.0 {
        return Err(ctx.err(format!(
            "training mode drops elements at random (ratio {ratio}); only inference (or ratio 0) is supported"
        )));
    }
    let (_, input) = lw.input(ctx, 0)?;
    let (shape, dtype) = match &input {
        Value::Data { storage, shape } => (shape.clone(), lw.storages[*storage].dtype),
        Value::Const(c) => (c.shape.clone(), c.data.dtype()),
    };
    lw.define(ctx, 0, input)?;
    if ctx.node.output.get(1).is_some_and(|o| !o.is_empty()) {
        // The mask is bool from opset 10, of the input's type before.
        let one = if lw.opset >= 10 {
            ConstData::Bool(vec![true])
        } else {
            match dtype {
                DType::F32 => ConstData::F32(vec![1.0]),
                other => return Err(ctx.err(format!("a {} mask before opset 10 is not supported", other.name()))),
            }
        };
        fold::check_size(ctx, &shape, one.dtype())?;
        lw.define(ctx, 1, Value::Const(fold::fill(&shape, &one)))?;
    }
    Ok(())
}
