//! Normalisations: `LayerNormalization` (with its optional statistics
//! outputs) and `BatchNormalization` (inference, and training mode with
//! batch statistics).

use rlx_sched::{ActKind, DType, ReduceOp, Thunk};

use crate::error::ImportError;
use crate::lower::arith::shape::normalize_axis;
use crate::lower::build::{binary_thunk, numel, only_first_output, permute_thunk, R};
use crate::lower::{Lowerer, NodeCtx, Value};
use crate::tensor::{ConstData, ConstTensor};
use rlx_sched::thunk::{Activation, BatchNormInference, LayerNorm, Reduce, RmsNorm};

/// A scale or shift of `LayerNormalization`: exactly the normalised dims
/// (leading 1s allowed); broadcasting inside them is not supported.
fn normalized_operand(ctx: &NodeCtx<'_>, what: &str, shape: &[usize], dims: &[usize]) -> R {
    let core = &shape[shape.iter().take_while(|&&d| d == 1).count()..];
    let want = &dims[dims.iter().take_while(|&&d| d == 1).count()..];
    if core != want {
        return Err(ctx.err(format!("{what} has shape {shape:?}; expected {dims:?}")));
    }
    Ok(())
}

/// The optional `Mean` and `InvStdDev` outputs of `LayerNormalization`,
/// computed as the spec's reference does: `mean(x)`, then
/// `1 / sqrt(mean((x - mean)^2) + eps)`, each of shape `[rows]` seen with
/// 1s for the normalised axes.
fn layer_norm_statistics(lw: &mut Lowerer, ctx: &NodeCtx<'_>, x: usize, shape: &[usize], a: usize, eps: f32) -> R {
    let rows = numel(ctx, &shape[..a])?;
    let h = numel(ctx, &shape[a..])?;
    let stat_shape: Vec<usize> = shape[..a].iter().copied().chain(std::iter::repeat_n(1, shape.len() - a)).collect();
    let name = ctx.node.output[0].clone();
    let wanted = |i: usize| ctx.node.output.get(i).is_some_and(|o| !o.is_empty());
    let stat = |lw: &mut Lowerer, i: usize, what: &str| {
        if wanted(i) {
            lw.output_storage(ctx, i, stat_shape.clone())
        } else {
            lw.scratch_storage(&format!("{name}.{what}"), stat_shape.clone(), DType::F32)
        }
    };
    let mean = stat(lw, 1, "mean")?;
    lw.emit(ctx, Thunk::Reduce(Reduce { src: x, dst: mean, outer: rows, axis_dim: h, inner: 1, op: ReduceOp::Mean }));
    let centered = lw.scratch_storage(&format!("{name}.centered"), vec![rows, h], DType::F32)?;
    let sub =
        binary_thunk(ctx, (x, &[rows, h]), (mean, &[rows, 1]), centered, &[rows, h], rlx_sched::BinaryOp::Sub, 4)?;
    lw.emit(ctx, sub);
    let square = binary_thunk(
        ctx,
        (centered, &[rows, h]),
        (centered, &[rows, h]),
        centered,
        &[rows, h],
        rlx_sched::BinaryOp::Mul,
        4,
    )?;
    lw.emit(ctx, square);
    let inv = stat(lw, 2, "inv_std_dev")?;
    lw.emit(
        ctx,
        Thunk::Reduce(Reduce { src: centered, dst: inv, outer: rows, axis_dim: h, inner: 1, op: ReduceOp::Mean }),
    );
    let eps_param =
        lw.add_param(&format!("{name}.epsilon"), &ConstTensor { shape: vec![], data: ConstData::F32(vec![eps]) })?;
    let add = binary_thunk(ctx, (inv, &[rows]), (eps_param, &[]), inv, &[rows], rlx_sched::BinaryOp::Add, 4)?;
    lw.emit(ctx, add);
    lw.emit(ctx, Thunk::Activation(Activation { src: inv, dst: inv, len: rows, act: ActKind::Sqrt }));
    lw.emit(ctx, Thunk::Activation(Activation { src: inv, dst: inv, len: rows, act: ActKind::Recip }));
    if wanted(1) {
        lw.define(ctx, 1, Value::Data { storage: mean, shape: stat_shape.clone() })?;
    }
    if wanted(2) {
        lw.define(ctx, 2, Value::Data { storage: inv, shape: stat_shape })?;
    }
    Ok(())
}

/// Input 0 of a row normalisation seen as `[rows, h]`: the axes from
/// `axis` (default -1) on are normalised together.
struct Rows {
    x: usize,
    shape: Vec<usize>,
    /// The first normalised axis.
    a: usize,
    rows: usize,
    h: usize,
    eps: f32,
}

/// The `axis`, `stash_type` and `epsilon` rules `LayerNormalization` and
/// `RMSNormalization` share.
fn rows_of(lw: &mut Lowerer, ctx: &NodeCtx<'_>) -> Result<Rows, ImportError> {
    let (x, shape) = lw.data_input(ctx, 0)?;
    let rank = shape.len();
    let axis = ctx.int_attr("axis", -1)?;
    let a = normalize_axis(axis, rank, 0)
        .ok_or_else(|| ctx.bad_attr("axis", format!("is {axis}, out of range for rank {rank}")))?;
    let stash = ctx.int_attr("stash_type", 1)?;
    if stash != 1 {
        return Err(ctx.bad_attr("stash_type", format!("is {stash}; only 1 (float) is supported")));
    }
    let eps = ctx.epsilon_attr()?;
    let h = numel(ctx, &shape[a..])?;
    let rows = numel(ctx, &shape[..a])?;
    if h == 0 || rows == 0 {
        return Err(ctx.err(format!("input shape {shape:?} is empty")));
    }
    Ok(Rows { x, shape, a, rows, h, eps })
}

/// `LayerNormalization` over the axes from `axis` on → `LayerNorm`.
pub(crate) fn layer_norm(lw: &mut Lowerer, ctx: &NodeCtx<'_>) -> R {
    ctx.expect_arity(2, 3)?;
    let Rows { x, shape, a, rows, h, eps } = rows_of(lw, ctx)?;
    let (g, gs) = lw.data_input(ctx, 1)?;
    normalized_operand(ctx, "Scale", &gs, &shape[a..])?;
    let b = match ctx.input_name(2) {
        Some(_) => {
            let (b, bs) = lw.data_input(ctx, 2)?;
            normalized_operand(ctx, "B", &bs, &shape[a..])?;
            Some(b)
        }
        None => None,
    };
    let out = lw.output_storage(ctx, 0, shape.clone())?;
    lw.emit(ctx, Thunk::LayerNorm(LayerNorm { x, g, b, out, rows, h, eps }));
    lw.define(ctx, 0, Value::Data { storage: out, shape: shape.clone() })?;
    let wanted = |i: usize| ctx.node.output.get(i).is_some_and(|o| !o.is_empty());
    if wanted(1) || wanted(2) {
        layer_norm_statistics(lw, ctx, x, &shape, a, eps)?;
    }
    Ok(())
}

/// `RMSNormalization` over the axes from `axis` on → `RmsNorm`:
/// `x / sqrt(mean(x^2) + epsilon) * scale`.
pub(crate) fn rms_norm(lw: &mut Lowerer, ctx: &NodeCtx<'_>) -> R {
    ctx.expect_arity(2, 2)?;
    let Rows { x, shape, a, rows, h, eps } = rows_of(lw, ctx)?;
    let (g, gs) = lw.data_input(ctx, 1)?;
    normalized_operand(ctx, "scale", &gs, &shape[a..])?;
    let out = lw.output_storage(ctx, 0, shape.clone())?;
    lw.emit(ctx, Thunk::RmsNorm(RmsNorm { x, g, out, rows, h, eps }));
    lw.define(ctx, 0, Value::Data { storage: out, shape })?;
    Ok(())
}

/// `BatchNormalization` in inference mode → `BatchNormInference`.
pub(crate) fn batch_norm(lw: &mut Lowerer, ctx: &NodeCtx<'_>) -> R {
    ctx.expect_arity(5, 5)?;
    let training = match ctx.int_attr("training_mode", 0)? {
        0 => false,
        1 => true,
        v => return Err(ctx.bad_attr("training_mode", format!("is {v}; must be 0 or 1"))),
    };
    if !training {
        only_first_output(ctx)?;
    }
    if lw.opset < 7 && ctx.int_attr("is_test", 0)? == 0 {
        return Err(ctx.bad_attr("is_test", "must be 1 before opset 7; only inference is supported"));
    }
    if lw.opset < 9 && ctx.int_attr("spatial", 1)? != 1 {
        return Err(ctx.bad_attr("spatial", "must be 1; per-activation statistics are not supported"));
    }
    let eps = ctx.epsilon_attr()?;
    let (x, shape) = lw.data_input(ctx, 0)?;
    if shape.len() < 2 {
        return Err(ctx.err(format!("X has shape {shape:?}; expected [N, C, ...]")));
    }
    let (n, c) = (shape[0], shape[1]);
    let hw = numel(ctx, &shape[2..])?;
    if n * c * hw == 0 {
        return Err(ctx.err(format!("X has the empty shape {shape:?}")));
    }
    let mut per = [0usize; 4];
    for (k, what) in ["scale", "B", "input_mean", "input_var"].iter().enumerate() {
        let (id, s) = lw.data_input(ctx, k + 1)?;
        if s != [c] {
            return Err(ctx.err(format!("{what} has shape {s:?}; expected [{c}]")));
        }
        per[k] = id;
    }
    let [scale, bias, mut mean, mut var] = per;
    let running = if training {
        let (batch_mean, batch_var) = batch_statistics(lw, ctx, x, [n, c, hw])?;
        let old = (mean, var);
        (mean, var) = (batch_mean, batch_var);
        Some((old, (batch_mean, batch_var)))
    } else {
        None
    };
    let out = lw.output_storage(ctx, 0, shape.clone())?;
    lw.emit(ctx, Thunk::BatchNormInference(BatchNormInference { x, scale, bias, mean, var, out, n, c, hw, eps }));
    lw.define(ctx, 0, Value::Data { storage: out, shape })?;
    if let Some(((old_mean, old_var), (batch_mean, batch_var))) = running {
        // running = old * momentum + batch * (1 - momentum), per channel.
        let momentum = ctx.float_attr("momentum", 0.9)?;
        for (i, old, batch) in [(1, old_mean, batch_mean), (2, old_var, batch_var)] {
            if ctx.node.output.get(i).is_none_or(|o| o.is_empty()) {
                continue;
            }
            let name = &ctx.node.output[i];
            let m = lw.add_param(
                &format!("{name}.momentum"),
                &ConstTensor { shape: vec![], data: ConstData::F32(vec![momentum]) },
            )?;
            let rest = lw.add_param(
                &format!("{name}.rest"),
                &ConstTensor { shape: vec![], data: ConstData::F32(vec![1.0 - momentum]) },
            )?;
            let dst = lw.output_storage(ctx, i, vec![c])?;
            let scaled = lw.scratch_storage(&format!("{name}.scaled"), vec![c], DType::F32)?;
            let mul = |a: usize, b: usize, d: usize| {
                binary_thunk(ctx, (a, &[c]), (b, &[]), d, &[c], rlx_sched::BinaryOp::Mul, 4)
            };
            lw.emit(ctx, mul(old, m, dst)?);
            lw.emit(ctx, mul(batch, rest, scaled)?);
            lw.emit(ctx, binary_thunk(ctx, (dst, &[c]), (scaled, &[c]), dst, &[c], rlx_sched::BinaryOp::Add, 4)?);
            lw.define(ctx, i, Value::Data { storage: dst, shape: vec![c] })?;
        }
    }
    Ok(())
}

/// Per-channel mean and (population) variance of `x` seen as
/// `[n, c, hw]`: channels moved first, then `Reduce` mean of the values and
/// of the squared deviations.
fn batch_statistics(
    lw: &mut Lowerer,
    ctx: &NodeCtx<'_>,
    x: usize,
    [n, c, hw]: [usize; 3],
) -> Result<(usize, usize), ImportError> {
    let name = ctx.node.output[0].clone();
    let per_channel = lw.scratch_storage(&format!("{name}.by_channel"), vec![c, n, hw], DType::F32)?;
    let t = permute_thunk(ctx, x, &[n, c, hw], &[1, 0, 2], per_channel)?;
    lw.emit(ctx, t);
    let mean = lw.scratch_storage(&format!("{name}.batch_mean"), vec![c], DType::F32)?;
    lw.emit(
        ctx,
        Thunk::Reduce(Reduce { src: per_channel, dst: mean, outer: c, axis_dim: n * hw, inner: 1, op: ReduceOp::Mean }),
    );
    let dev = lw.scratch_storage(&format!("{name}.deviation"), vec![c, n * hw], DType::F32)?;
    let sub = binary_thunk(
        ctx,
        (per_channel, &[c, n * hw]),
        (mean, &[c, 1]),
        dev,
        &[c, n * hw],
        rlx_sched::BinaryOp::Sub,
        4,
    )?;
    lw.emit(ctx, sub);
    let sq =
        binary_thunk(ctx, (dev, &[c, n * hw]), (dev, &[c, n * hw]), dev, &[c, n * hw], rlx_sched::BinaryOp::Mul, 4)?;
    lw.emit(ctx, sq);
    let var = lw.scratch_storage(&format!("{name}.batch_var"), vec![c], DType::F32)?;
    lw.emit(
        ctx,
        Thunk::Reduce(Reduce { src: dev, dst: var, outer: c, axis_dim: n * hw, inner: 1, op: ReduceOp::Mean }),
    );
    Ok((mean, var))
}
