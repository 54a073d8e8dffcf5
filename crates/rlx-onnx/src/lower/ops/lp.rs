//! The `p`-norm ops on existing kinds: `LpNormalization` (a `Reduce` `l1`
//! or `l2` and a broadcast division) and `LpPool` (`|x|^p` summed over each
//! window by the shifted strided reads of [`crate::lower::build::pool_nd`], then the
//! `p`-th root).

use rlx_sched::{ActKind, BinaryOp, CmpOp, DType, ReduceOp, Thunk};

use crate::lower::arith::shape::normalize_axis;
use crate::lower::build::pool_nd::pool_nd;
use crate::lower::build::window::pool_windows;
use crate::lower::build::{binary_thunk, compare_thunk, define_if_empty, numel, only_first_output, R};
use crate::lower::{Lowerer, NodeCtx, Value};
use crate::tensor::{ConstData, ConstTensor};
use rlx_sched::thunk::{Activation, Reduce, Where};

/// `LpNormalization`: `x / norm_p(x)` along `axis` (default -1), `p` 1 or
/// 2 (default 2). A row of zeros stays zeros (the spec defines 0 there).
pub(crate) fn lp_normalization(lw: &mut Lowerer, ctx: &NodeCtx<'_>) -> R {
    ctx.expect_arity(1, 1)?;
    only_first_output(ctx)?;
    let op = match ctx.int_attr("p", 2)? {
        1 => ReduceOp::L1,
        2 => ReduceOp::L2,
        p => return Err(ctx.bad_attr("p", format!("is {p}; only 1 and 2 are supported"))),
    };
    let (x, shape) = lw.data_input(ctx, 0)?;
    let rank = shape.len();
    let axis = ctx.int_attr("axis", -1)?;
    let a = normalize_axis(axis, rank, 0)
        .ok_or_else(|| ctx.bad_attr("axis", format!("is {axis}, out of range for rank {rank}")))?;
    if define_if_empty(lw, ctx, &shape, DType::F32)? {
        return Ok(());
    }
    let (outer, axis_dim, inner) = (numel(ctx, &shape[..a])?, shape[a], numel(ctx, &shape[a + 1..])?);
    let name = ctx.node.output[0].clone();
    let norm = lw.scratch_storage(&format!("{name}.norm"), vec![outer, 1, inner], DType::F32)?;
    lw.emit(ctx, Thunk::Reduce(Reduce { src: x, dst: norm, outer, axis_dim, inner, op }));
    // A zero norm (a row of zeros) divides by 1 instead: the row stays 0,
    // as the spec defines it, not 0 / 0.
    let rows = outer * inner;
    let zero =
        lw.add_param(&format!("{name}.zero"), &ConstTensor { shape: vec![], data: ConstData::F32(vec![0.0]) })?;
    let one = lw.add_param(&format!("{name}.one"), &ConstTensor { shape: vec![], data: ConstData::F32(vec![1.0]) })?;
    let is_zero = lw.scratch_storage(&format!("{name}.zero_norm"), vec![rows], DType::Bool)?;
    lw.emit(ctx, compare_thunk(ctx, (norm, &[rows]), (zero, &[]), is_zero, &[rows], CmpOp::Eq, 4)?);
    lw.emit(
        ctx,
        Thunk::Where(Where {
            cond: is_zero,
            on_true: one,
            on_false: norm,
            dst: norm,
            len: rows,
            elem_bytes: 4,
            cond_elem_bytes: 1,
            cond_scalar: false,
            true_scalar: rows != 1,
            false_scalar: false,
        }),
    );
    let y = lw.output_storage(ctx, 0, shape.clone())?;
    let full = [outer, axis_dim, inner];
    lw.emit(ctx, binary_thunk(ctx, (x, &full), (norm, &[outer, 1, inner]), y, &full, BinaryOp::Div, 4)?);
    lw.define(ctx, 0, Value::Data { storage: y, shape })
}

/// `LpPool`: `(sum over the window of |x|^p)^(1/p)` over any number of
/// spatial axes, with `kernel_shape`, `strides`, `pads` / `auto_pad`,
/// `dilations` and `ceil_mode` as the other poolings. Padding adds nothing
/// to the sum. `p` (default 2; a float before opset 2) must be positive:
/// 1 and 2 are `abs` and `square` / `sqrt`, others `pow`.
pub(crate) fn lp_pool(lw: &mut Lowerer, ctx: &NodeCtx<'_>) -> R {
    ctx.expect_arity(1, 1)?;
    only_first_output(ctx)?;
    let p = if lw.opset < 2 { ctx.float_attr("p", 2.0)? } else { ctx.int_attr("p", 2)? as f32 };
    if !(p.is_finite() && p > 0.0) {
        return Err(ctx.bad_attr("p", format!("is {p}; it must be positive")));
    }
    let (x, xs) = lw.data_input(ctx, 0)?;
    if xs.len() < 3 || xs.contains(&0) {
        return Err(ctx.err(format!("X has shape {xs:?}; only non-empty [N, C, spatial...] tensors are supported")));
    }
    let windows = pool_windows(ctx, &xs)?;
    let name = ctx.node.output[0].clone();
    let len = numel(ctx, &xs)?;
    let scalar = |lw: &mut Lowerer, what: &str, v: f32| {
        lw.add_param(&format!("{name}.{what}"), &ConstTensor { shape: vec![], data: ConstData::F32(vec![v]) })
    };
    let powered = lw.scratch_storage(&format!("{name}.powered"), xs.clone(), DType::F32)?;
    if p == 2.0 {
        lw.emit(ctx, Thunk::Activation(Activation { src: x, dst: powered, len, act: ActKind::Square }));
    } else {
        lw.emit(ctx, Thunk::Activation(Activation { src: x, dst: powered, len, act: ActKind::Abs }));
        if p != 1.0 {
            let e = scalar(lw, "p", p)?;
            lw.emit(ctx, binary_thunk(ctx, (powered, &xs), (e, &[]), powered, &xs, BinaryOp::Pow, 4)?);
        }
    }
    pool_nd(lw, ctx, powered, &xs, &windows, ReduceOp::Sum, false, false)?;
    let Value::Data { storage: y, shape } = lw.value(ctx, &name)?.clone() else {
        return Err(ctx.err("the pooled sum folded to a constant"));
    };
    let out_len = numel(ctx, &shape)?;
    if p == 2.0 {
        lw.emit(ctx, Thunk::Activation(Activation { src: y, dst: y, len: out_len, act: ActKind::Sqrt }));
    } else if p != 1.0 {
        let e = scalar(lw, "inv_p", 1.0 / p)?;
        lw.emit(ctx, binary_thunk(ctx, (y, &shape), (e, &[]), y, &shape, BinaryOp::Pow, 4)?);
    }
    Ok(())
}
