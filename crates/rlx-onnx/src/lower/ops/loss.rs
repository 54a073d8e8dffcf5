//! The training losses `NegativeLogLikelihoodLoss` and
//! `SoftmaxCrossEntropyLoss` (a log-softmax over the class axis, then the
//! former), composed of existing kinds the way the spec's function body
//! spells them out.
//!
//! Over `input [N, C, d...]` (seen as `[N, C, D]`) and `target [N, d...]`:
//! a target equal to `ignore_index` is replaced by 0 before any lookup
//! (`Where`), so an `ignore_index` outside `[0, C)` never indexes; then
//! `-input[n, target, d]` (`GatherElements`, `Activation neg`), zeroed
//! where ignored, times the target's class weight (`Gather` from
//! `weight`, zeroed where ignored). `sum` and `mean` reduce that: `mean` is
//! the sum divided by the sum of the weights of the targets not ignored
//! (by their count without `weight`; by `N * D` without either).
//!
//! A target outside `[0, C)` that is not `ignore_index` is undefined by
//! the spec; here it follows `GatherElements`: a negative one counts from
//! the end, one still out of range reads 0 (a loss of 0, and a weight of 0
//! from `Gather`). Nothing is read out of bounds.

use rlx_sched::{ActKind, BinaryOp, CmpOp, DType, ReduceOp, Thunk};

use crate::error::ImportError;
use crate::lower::build::{binary_thunk, compare_thunk, log_softmax_into, numel, widen_to_i64, R};
use crate::lower::{Lowerer, NodeCtx, Value};
use crate::tensor::{ConstData, ConstTensor};
use rlx_sched::thunk::{Activation, Gather, GatherElements, Reduce, Where};

/// The `reduction` attribute of the losses.
#[derive(Clone, Copy, PartialEq)]
enum Reduction {
    None,
    Sum,
    Mean,
}

fn reduction_attr(ctx: &NodeCtx<'_>) -> Result<Reduction, ImportError> {
    let name = ctx.string_attr("reduction")?.unwrap_or_else(|| "mean".to_string());
    match name.as_str() {
        "none" => Ok(Reduction::None),
        "sum" => Ok(Reduction::Sum),
        "mean" => Ok(Reduction::Mean),
        other => Err(ctx.bad_attr("reduction", format!("is `{other}`; expected none, sum or mean"))),
    }
}

/// `NegativeLogLikelihoodLoss(input, target, weight?)`.
pub(crate) fn nll_loss(lw: &mut Lowerer, ctx: &NodeCtx<'_>) -> R {
    ctx.expect_arity(2, 3)?;
    if ctx.node.output.len() > 1 {
        return Err(ctx.err("has one output (loss)"));
    }
    let (x, shape) = lw.data_input(ctx, 0)?;
    nll(lw, ctx, x, &shape)
}

/// `SoftmaxCrossEntropyLoss(scores, labels, weights?)` with the optional
/// `log_prob` output: a log-softmax over axis 1, then the NLL loss of it.
pub(crate) fn softmax_cross_entropy(lw: &mut Lowerer, ctx: &NodeCtx<'_>) -> R {
    ctx.expect_arity(2, 3)?;
    if ctx.node.output.len() > 2 {
        return Err(ctx.err("has at most two outputs (loss, log_prob)"));
    }
    let (x, shape) = lw.data_input(ctx, 0)?;
    let dims = loss_dims(ctx, &shape)?;
    let wanted = ctx.node.output.get(1).is_some_and(|o| !o.is_empty());
    let log_prob = if wanted {
        lw.output_storage(ctx, 1, shape.clone())?
    } else {
        lw.scratch_storage(&format!("{}.log_prob", ctx.node.output[0]), shape.clone(), DType::F32)?
    };
    log_softmax_into(lw, ctx, x, dims, log_prob)?;
    if wanted {
        lw.define(ctx, 1, Value::Data { storage: log_prob, shape: shape.clone() })?;
    }
    nll(lw, ctx, log_prob, &shape)
}

/// `[N, C, D]` of an `[N, C, d...]` input (`D` the product of `d...`, 1
/// for a 2-D input).
fn loss_dims(ctx: &NodeCtx<'_>, shape: &[usize]) -> Result<[usize; 3], ImportError> {
    if shape.len() < 2 {
        return Err(ctx.err(format!("input has shape {shape:?}; expected [N, C] or [N, C, d1, ...]")));
    }
    if shape[1] == 0 {
        return Err(ctx.err(format!("input has shape {shape:?}, with no classes")));
    }
    Ok([shape[0], shape[1], numel(ctx, &shape[2..])?])
}

/// The loss of `x` (`[N, C, d...]`, f32 log-probabilities) against input 1
/// (the target) with optional weights (input 2), into output 0.
fn nll(lw: &mut Lowerer, ctx: &NodeCtx<'_>, x: usize, x_shape: &[usize]) -> R {
    let [n, c, d] = loss_dims(ctx, x_shape)?;
    let reduction = reduction_attr(ctx)?;
    let ignore = if ctx.has_attr("ignore_index") { Some(ctx.int_attr("ignore_index", 0)?) } else { None };
    let (target, t_shape, t_dtype) = lw.typed_input(ctx, 1)?;
    if !matches!(t_dtype, DType::I64 | DType::I32) {
        return Err(ctx.err(format!("target is {}; i64 or i32 are supported", t_dtype.name())));
    }
    let want: Vec<usize> = x_shape.iter().take(1).chain(x_shape.iter().skip(2)).copied().collect();
    if t_shape != want {
        return Err(ctx.err(format!("target has shape {t_shape:?}; input {x_shape:?} needs {want:?}")));
    }
    let weight = match ctx.input_name(2) {
        Some(_) => {
            let (w, ws) = lw.data_input(ctx, 2)?;
            if ws != [c] {
                return Err(ctx.err(format!("weight has shape {ws:?}; expected [{c}]")));
            }
            Some(w)
        }
        None => None,
    };
    let count = n * d;
    let name = ctx.node.output[0].clone();
    let scalar_f32 = |lw: &mut Lowerer, what: &str, v: f32| {
        lw.add_param(&format!("{name}.{what}"), &ConstTensor { shape: vec![], data: ConstData::F32(vec![v]) })
    };
    if count == 0 {
        // No targets: an empty loss, a sum of 0, a mean of 0 / 0.
        let c = match reduction {
            Reduction::None => ConstTensor { shape: t_shape, data: ConstData::F32(vec![]) },
            Reduction::Sum => ConstTensor { shape: vec![], data: ConstData::F32(vec![0.0]) },
            Reduction::Mean => ConstTensor { shape: vec![], data: ConstData::F32(vec![f32::NAN]) },
        };
        return lw.define(ctx, 0, Value::Const(c));
    }
    let target = match t_dtype {
        DType::I32 => widen_to_i64(lw, ctx, target, &t_shape, DType::I32)?,
        _ => target,
    };
    // Where the target is `ignore_index`: a mask, and the target replaced
    // by 0 so that it indexes nothing outside the classes.
    let ignored = match ignore {
        Some(ii) => {
            let ii = lw.add_param(
                &format!("{name}.ignore_index"),
                &ConstTensor { shape: vec![], data: ConstData::I64(vec![ii]) },
            )?;
            let mask = lw.scratch_storage(&format!("{name}.ignored"), vec![count], DType::Bool)?;
            lw.emit(ctx, compare_thunk(ctx, (target, &[count]), (ii, &[]), mask, &[count], CmpOp::Eq, 8)?);
            let zero = lw.add_param(
                &format!("{name}.zero_target"),
                &ConstTensor { shape: vec![], data: ConstData::I64(vec![0]) },
            )?;
            let safe = lw.scratch_storage(&format!("{name}.target"), vec![count], DType::I64)?;
            lw.emit(ctx, where_thunk(mask, (zero, true), (target, false), safe, count, 8));
            Some((mask, safe))
        }
        None => None,
    };
    let index = ignored.map_or(target, |(_, safe)| safe);
    let loss = match reduction {
        Reduction::None => lw.output_storage(ctx, 0, t_shape.clone())?,
        _ => lw.scratch_storage(&format!("{name}.loss"), vec![count], DType::F32)?,
    };
    let picked = lw.scratch_storage(&format!("{name}.picked"), vec![n, 1, d], DType::F32)?;
    lw.emit(
        ctx,
        Thunk::GatherElements(GatherElements {
            data: x,
            indices: index,
            dst: picked,
            data_dims: vec![n, c, d],
            index_dims: vec![n, 1, d],
            axis: 1,
            elem_bytes: 4,
            index_dtype: DType::I64,
        }),
    );
    // Negated before masking, so an ignored target's loss is +0 as in the
    // spec's reference.
    let neg_dst = if ignored.is_none() && weight.is_none() { loss } else { picked };
    lw.emit(ctx, Thunk::Activation(Activation { src: picked, dst: neg_dst, len: count, act: ActKind::Neg }));
    let zero = if ignored.is_some() { Some(scalar_f32(lw, "zero", 0.0)?) } else { None };
    if let (Some((mask, _)), Some(zero)) = (ignored, zero) {
        let dst = if weight.is_some() { picked } else { loss };
        lw.emit(ctx, where_thunk(mask, (zero, true), (picked, false), dst, count, 4));
    }
    // The weight of each target (zero where ignored), which the mean
    // divides by; `None` when every target weighs 1.
    let weights = match (weight, ignored, zero) {
        (Some(w), _, _) => {
            let wt = lw.scratch_storage(&format!("{name}.weights"), vec![count], DType::F32)?;
            lw.emit(
                ctx,
                Thunk::Gather(Gather {
                    table: w,
                    indices: index,
                    dst: wt,
                    num_indices: count,
                    row_len: 1,
                    vocab: c,
                    index_dtype: DType::I64,
                }),
            );
            if let (Some((mask, _)), Some(zero)) = (ignored, zero) {
                lw.emit(ctx, where_thunk(mask, (zero, true), (wt, false), wt, count, 4));
            }
            lw.emit(ctx, binary_thunk(ctx, (picked, &[count]), (wt, &[count]), loss, &[count], BinaryOp::Mul, 4)?);
            Some(wt)
        }
        (None, Some((mask, _)), Some(zero)) if reduction == Reduction::Mean => {
            let one = scalar_f32(lw, "one", 1.0)?;
            let wt = lw.scratch_storage(&format!("{name}.weights"), vec![count], DType::F32)?;
            lw.emit(ctx, where_thunk(mask, (zero, true), (one, true), wt, count, 4));
            Some(wt)
        }
        _ => None,
    };
    let whole = |src: usize, dst: usize, op: ReduceOp| {
        Thunk::Reduce(Reduce { src, dst, outer: 1, axis_dim: count, inner: 1, op })
    };
    match (reduction, weights) {
        (Reduction::None, _) => lw.define(ctx, 0, Value::Data { storage: loss, shape: t_shape }),
        (Reduction::Sum, _) => {
            let out = lw.output_storage(ctx, 0, vec![])?;
            lw.emit(ctx, whole(loss, out, ReduceOp::Sum));
            lw.define(ctx, 0, Value::Data { storage: out, shape: vec![] })
        }
        (Reduction::Mean, None) => {
            let out = lw.output_storage(ctx, 0, vec![])?;
            lw.emit(ctx, whole(loss, out, ReduceOp::Mean));
            lw.define(ctx, 0, Value::Data { storage: out, shape: vec![] })
        }
        (Reduction::Mean, Some(wt)) => {
            let total = lw.scratch_storage(&format!("{name}.total"), vec![], DType::F32)?;
            lw.emit(ctx, whole(loss, total, ReduceOp::Sum));
            let weight_sum = lw.scratch_storage(&format!("{name}.weight_sum"), vec![], DType::F32)?;
            lw.emit(ctx, whole(wt, weight_sum, ReduceOp::Sum));
            let out = lw.output_storage(ctx, 0, vec![])?;
            lw.emit(ctx, binary_thunk(ctx, (total, &[]), (weight_sum, &[]), out, &[], BinaryOp::Div, 4)?);
            lw.define(ctx, 0, Value::Data { storage: out, shape: vec![] })
        }
    }
}

/// `dst[i] = cond[i] ? on_true : on_false` over `len` values of
/// `elem_bytes`; each value operand with whether it is one element.
fn where_thunk(
    cond: usize,
    (on_true, true_scalar): (usize, bool),
    (on_false, false_scalar): (usize, bool),
    dst: usize,
    len: usize,
    elem_bytes: usize,
) -> Thunk<usize> {
    Thunk::Where(Where {
        cond,
        on_true,
        on_false,
        dst,
        len,
        elem_bytes,
        cond_elem_bytes: 1,
        cond_scalar: false,
        true_scalar: true_scalar && len != 1,
        false_scalar: false_scalar && len != 1,
    })
}
