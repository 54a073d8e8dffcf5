//! Reductions along axes: `Reduce*`, `ArgMax` / `ArgMin`, `TopK`, `CumSum`,
//! `CumProd`.

use rlx_sched::{ActKind, ArgOp, BinaryOp, DType, ReduceOp, Thunk};

use crate::lower::arith::fold;
use crate::lower::arith::shape::normalize_axis;
use crate::lower::build::{cast_thunk, define_if_empty, numel, permute_thunk, widen_to_i64, R};
use crate::lower::{Lowerer, NodeCtx, Value};
use crate::tensor::ConstData;
use rlx_sched::thunk::{Activation, ArgReduce, Cast, Cumulative, Reduce, TopK, TopKI64, Transpose};

/// `ReduceLogSum`: `ReduceSum` then `log` in place (over no elements,
/// `log(0) = -inf`).
pub(crate) fn reduce_log_sum(lw: &mut Lowerer, ctx: &NodeCtx<'_>) -> R {
    reduce_then(lw, ctx, ReduceOp::Sum, Some(ActKind::Log))
}

/// `ReduceMean`, `ReduceSum`, `ReduceMax`, `ReduceMin`, `ReduceProd`,
/// `ReduceL1`, `ReduceL2`, `ReduceSumSquare`, `ReduceLogSumExp`.
pub(crate) fn reduce(lw: &mut Lowerer, ctx: &NodeCtx<'_>, op: ReduceOp) -> R {
    reduce_then(lw, ctx, op, None)
}

/// A reduction over one contiguous range of axes → `Reduce` over
/// `[outer, axis_dim, inner]`, then `post` on the result when given.
fn reduce_then(lw: &mut Lowerer, ctx: &NodeCtx<'_>, op: ReduceOp, post: Option<ActKind>) -> R {
    ctx.expect_arity(1, 2)?;
    let (orig, shape, dtype) = lw.typed_input(ctx, 0)?;
    let rank = shape.len();
    // `ReduceSum` took its axes as an input from opset 13, the others
    // from opset 18.
    let input_since = if ctx.node.op_type == "ReduceSum" { 13 } else { 18 };
    let listed: Option<Vec<i64>> = if lw.opset >= input_since {
        if ctx.has_attr("axes") {
            return Err(ctx.bad_attr("axes", format!("is an input since opset {input_since}, not an attribute")));
        }
        match ctx.input_name(1) {
            Some(_) => Some(lw.const_ints(ctx, 1)?.1),
            None => None,
        }
    } else {
        if ctx.input_name(1).is_some() {
            return Err(ctx.err(format!("axes are an attribute before opset {input_since}, not an input")));
        }
        ctx.ints_attr("axes")?.map(<[i64]>::to_vec)
    };
    let keepdims = ctx.int_attr("keepdims", 1)? != 0;
    let noop = ctx.int_attr("noop_with_empty_axes", 0)? != 0;
    let mut axes: Vec<usize> = match listed {
        Some(list) if !list.is_empty() => list
            .iter()
            .map(|&ax| {
                normalize_axis(ax, rank, 0).ok_or_else(|| ctx.err(format!("axis {ax} is out of range for rank {rank}")))
            })
            .collect::<Result<_, _>>()?,
        // No axes with `noop_with_empty_axes`: the identity, a view.
        _ if noop => return lw.define(ctx, 0, Value::Data { storage: orig, shape }),
        _ => (0..rank).collect(),
    };
    axes.sort_unstable();
    axes.dedup();
    let out_shape: Vec<usize> = (0..rank)
        .filter_map(|d| match (axes.contains(&d), keepdims) {
            (false, _) => Some(shape[d]),
            (true, true) => Some(1),
            (true, false) => None,
        })
        .collect();
    // Integer constants (shape arithmetic) fold.
    if let Some(c) = lw.const_input(ctx, 0)?.filter(|_| post.is_none()) {
        if let Some(folded) = fold::reduce_ints(op, &c, &axes, &out_shape) {
            return lw.define(ctx, 0, Value::Const(folded));
        }
    }
    // Max and min of bools are any/all: exact through f32 0/1.
    let src = orig;
    let bools =
        dtype == DType::Bool && matches!(op, ReduceOp::Max | ReduceOp::Min) && post.is_none() && !shape.contains(&0);
    let src = if bools {
        let t = lw.scratch_storage(&format!("{}.f32", ctx.node.output[0]), shape.clone(), DType::F32)?;
        lw.emit(ctx, Thunk::Cast(Cast { src, dst: t, len: numel(ctx, &shape)?, from: DType::Bool, to: DType::F32 }));
        t
    } else if dtype != DType::F32 {
        return Err(
            ctx.err(format!("input is {} data; this reduction supports f32 (and bool for max/min)", dtype.name()))
        );
    } else {
        src
    };
    if shape.contains(&0) {
        // Nothing to read: the output is known. A reduction over no
        // elements is its identity (0 for sums, -inf for max, NaN for the
        // mean's 0/0); no output elements is an empty tensor.
        let fill = match op {
            ReduceOp::Sum | ReduceOp::L1 | ReduceOp::L2 | ReduceOp::SumSquare => 0.0,
            ReduceOp::Prod => 1.0,
            ReduceOp::Max => f32::NEG_INFINITY,
            ReduceOp::Min => f32::INFINITY,
            ReduceOp::Mean => f32::NAN,
            ReduceOp::LogSumExp => f32::NEG_INFINITY,
        };
        let fill = match post {
            Some(ActKind::Log) => fill.ln(),
            None => fill,
            Some(other) => return Err(ctx.err(format!("no fill rule for a reduction followed by {}", other.name()))),
        };
        fold::check_size(ctx, &out_shape, DType::F32)?;
        let c = fold::fill(&out_shape, &ConstData::F32(vec![fill]));
        return lw.define(ctx, 0, Value::Const(c));
    }
    // A scalar is a reduction over its one element (`|x|` for L1, `x^2`
    // for SumSquare), not the identity.
    let (first, last) = if rank == 0 { (0, 0) } else { (axes[0], axes[axes.len() - 1]) };
    let (src, outer, axis_dim, inner) = if rank == 0 {
        (src, 1, 1, 1)
    } else if last - first + 1 == axes.len() {
        (src, numel(ctx, &shape[..first])?, numel(ctx, &shape[first..=last])?, numel(ctx, &shape[last + 1..])?)
    } else {
        // Scattered axes: move them last (in order), then one reduction.
        let perm: Vec<usize> = (0..rank).filter(|d| !axes.contains(d)).chain(axes.iter().copied()).collect();
        let moved: Vec<usize> = perm.iter().map(|&p| shape[p]).collect();
        let t = lw.scratch_storage(&format!("{}.moved", ctx.node.output[0]), moved, DType::F32)?;
        let thunk = permute_thunk(ctx, src, &shape, &perm, t)?;
        lw.emit(ctx, thunk);
        let kept: Vec<usize> = (0..rank).filter(|d| !axes.contains(d)).map(|d| shape[d]).collect();
        let reduced: Vec<usize> = axes.iter().map(|&d| shape[d]).collect();
        (t, numel(ctx, &kept)?, numel(ctx, &reduced)?, 1)
    };
    if bools {
        let t = lw.scratch_storage(&format!("{}.f32max", ctx.node.output[0]), out_shape.clone(), DType::F32)?;
        lw.emit(ctx, Thunk::Reduce(Reduce { src, dst: t, outer, axis_dim, inner, op }));
        let dst = lw.output_storage_typed(ctx, 0, out_shape.clone(), DType::Bool)?;
        lw.emit(ctx, Thunk::Cast(Cast { src: t, dst, len: outer * inner, from: DType::F32, to: DType::Bool }));
        return lw.define(ctx, 0, Value::Data { storage: dst, shape: out_shape });
    }
    let dst = lw.output_storage(ctx, 0, out_shape.clone())?;
    lw.emit(ctx, Thunk::Reduce(Reduce { src, dst, outer, axis_dim, inner, op }));
    if let Some(act) = post {
        lw.emit(ctx, Thunk::Activation(Activation { src: dst, dst, len: outer * inner, act }));
    }
    lw.define(ctx, 0, Value::Data { storage: dst, shape: out_shape })
}

/// `ArgMax` / `ArgMin` along one axis → `ArgReduce` writing int64 indices.
pub(crate) fn arg_reduce(lw: &mut Lowerer, ctx: &NodeCtx<'_>, op: ArgOp) -> R {
    ctx.expect_arity(1, 1)?;
    let (src, shape) = lw.data_input(ctx, 0)?;
    let rank = shape.len();
    let axis = ctx.int_attr("axis", 0)?;
    let a = normalize_axis(axis, rank, 0)
        .ok_or_else(|| ctx.bad_attr("axis", format!("is {axis}, out of range for rank {rank}")))?;
    let keepdims = ctx.int_attr("keepdims", 1)? != 0;
    let select_last = match ctx.int_attr("select_last_index", 0)? {
        0 => false,
        1 => true,
        v => return Err(ctx.bad_attr("select_last_index", format!("is {v}; must be 0 or 1"))),
    };
    let outer = numel(ctx, &shape[..a])?;
    let inner = numel(ctx, &shape[a + 1..])?;
    let axis_dim = shape[a];
    if outer * axis_dim * inner == 0 {
        return Err(ctx.err(format!("input shape {shape:?} is empty")));
    }
    let mut out_shape = shape.clone();
    if keepdims {
        out_shape[a] = 1;
    } else {
        out_shape.remove(a);
    }
    let dst = lw.output_storage_typed(ctx, 0, out_shape.clone(), DType::I64)?;
    lw.emit(ctx, Thunk::ArgReduce(ArgReduce { src, dst, outer, axis_dim, inner, op, select_last, indices_i64: true }));
    lw.define(ctx, 0, Value::Data { storage: dst, shape: out_shape })
}

/// `TopK` along one axis: values (f32) and int64 indices, largest first
/// (or smallest with `largest = 0`), always sorted (which `sorted = 0`
/// permits). A non-last axis is moved last and back with transposes.
pub(crate) fn top_k(lw: &mut Lowerer, ctx: &NodeCtx<'_>) -> R {
    ctx.expect_arity(2, 2)?;
    let (x, shape, in_dtype) = lw.typed_input(ctx, 0)?;
    // Integers rank exactly on the i64 kernel (i32 widened to i64 and the
    // values narrowed back); f32 on the f32 one.
    let wd = match in_dtype {
        DType::F32 => DType::F32,
        DType::I64 | DType::I32 => DType::I64,
        other => return Err(ctx.err(format!("{} data is not supported; f32, i64 and i32 are", other.name()))),
    };
    let (_, k) = lw.const_ints(ctx, 1)?;
    let rank = shape.len();
    let axis = ctx.int_attr("axis", -1)?;
    let a = normalize_axis(axis, rank, 0)
        .ok_or_else(|| ctx.bad_attr("axis", format!("is {axis}, out of range for rank {rank}")))?;
    let k = match k.as_slice() {
        [k] => usize::try_from(*k).ok().filter(|&k| k <= shape[a]),
        _ => None,
    }
    .ok_or_else(|| ctx.err(format!("K {k:?} must be one value in 0..={}", shape[a])))?;
    let largest = ctx.int_attr("largest", 1)? != 0;
    let mut out_shape = shape.clone();
    out_shape[a] = k;
    if out_shape.contains(&0) {
        for (i, dtype) in [(0, in_dtype), (1, DType::I64)] {
            let c = fold::empty(&out_shape, dtype).expect("f32, i64 and i32 are carried");
            if ctx.node.output.get(i).is_some_and(|o| !o.is_empty()) {
                lw.define(ctx, i, Value::Const(c))?;
            }
        }
        return Ok(());
    }
    let x = if in_dtype == DType::I32 { widen_to_i64(lw, ctx, x, &shape, DType::I32)? } else { x };
    let name = ctx.node.output[0].clone();
    // A permute of `elem` elements.
    let permute = |lw: &mut Lowerer, src, from: &[usize], perm: &[usize], dst, elem: DType| -> R {
        let mut thunk = permute_thunk(ctx, src, from, perm, dst)?;
        if let Thunk::Transpose(Transpose { elem_bytes, .. }) = &mut thunk {
            *elem_bytes = elem.size();
        }
        lw.emit(ctx, thunk);
        Ok(())
    };
    // Move the axis last.
    let perm: Vec<usize> = (0..rank).filter(|&d| d != a).chain([a]).collect();
    let last = a + 1 == rank;
    let moved_shape: Vec<usize> = perm.iter().map(|&p| shape[p]).collect();
    let src = if last {
        x
    } else {
        let t = lw.scratch_storage(&format!("{name}.moved"), moved_shape.clone(), wd)?;
        permute(lw, x, &shape, &perm, t, wd)?;
        t
    };
    let mut k_shape = moved_shape.clone();
    k_shape[rank - 1] = k;
    let outer = numel(ctx, &moved_shape[..rank - 1])?;
    // Where the kernel writes: the outputs themselves when nothing
    // follows (the axis is last and no narrowing), else scratch.
    let direct_values = last && wd == in_dtype;
    let values = if direct_values {
        lw.output_storage_typed(ctx, 0, out_shape.clone(), wd)?
    } else {
        lw.scratch_storage(&format!("{name}.values"), k_shape.clone(), wd)?
    };
    let indices = if last {
        lw.output_storage_typed(ctx, 1, out_shape.clone(), DType::I64)?
    } else {
        lw.scratch_storage(&format!("{name}.indices"), k_shape.clone(), DType::I64)?
    };
    let (axis_dim, values_op) = (shape[a], Some(values));
    let thunk = match wd {
        DType::I64 => Thunk::TopKI64(TopKI64 {
            src,
            dst: indices,
            values: values_op,
            outer,
            axis_dim,
            k,
            largest,
            indices_i64: true,
        }),
        _ => Thunk::TopK(TopK { src, dst: indices, values: values_op, outer, axis_dim, k, largest, indices_i64: true }),
    };
    lw.emit(ctx, thunk);
    // And back: the inverse permutation, then i32 values narrowed.
    let mut inverse = vec![0; rank];
    for (i, &p) in perm.iter().enumerate() {
        inverse[p] = i;
    }
    let v_final = if direct_values {
        values
    } else {
        let v_wide = if last {
            values
        } else if wd == in_dtype {
            let v_out = lw.output_storage_typed(ctx, 0, out_shape.clone(), wd)?;
            permute(lw, values, &k_shape, &inverse, v_out, wd)?;
            v_out
        } else {
            let t = lw.scratch_storage(&format!("{name}.values_back"), out_shape.clone(), wd)?;
            permute(lw, values, &k_shape, &inverse, t, wd)?;
            t
        };
        if wd == in_dtype {
            v_wide
        } else {
            let v_out = lw.output_storage_typed(ctx, 0, out_shape.clone(), in_dtype)?;
            let len = numel(ctx, &out_shape)?;
            lw.emit(ctx, Thunk::Cast(Cast { src: v_wide, dst: v_out, len, from: DType::I64, to: DType::I32 }));
            v_out
        }
    };
    let i_final = if last {
        indices
    } else {
        let i_out = lw.output_storage_typed(ctx, 1, out_shape.clone(), DType::I64)?;
        permute(lw, indices, &k_shape, &inverse, i_out, DType::I64)?;
        i_out
    };
    lw.define(ctx, 0, Value::Data { storage: v_final, shape: out_shape.clone() })?;
    lw.define(ctx, 1, Value::Data { storage: i_final, shape: out_shape })
}

/// `CumSum` (`op` add) and `CumProd` (`op` mul) on `Cumulative`: f32, and
/// i64 with wrapping arithmetic, exact; i32 widened to i64 and narrowed
/// back, exact modulo 2^32 as the narrow type would wrap.
pub(crate) fn cumulative(lw: &mut Lowerer, ctx: &NodeCtx<'_>, op: BinaryOp) -> R {
    ctx.expect_arity(2, 2)?;
    let (src, shape, dtype) = lw.typed_input(ctx, 0)?;
    let (_, axis) = lw.const_ints(ctx, 1)?;
    let rank = shape.len();
    let axis = match axis.as_slice() {
        [a] => *a,
        _ => return Err(ctx.err(format!("axis {axis:?} must be one value"))),
    };
    let a =
        normalize_axis(axis, rank, 0).ok_or_else(|| ctx.err(format!("axis {axis} is out of range for rank {rank}")))?;
    if !matches!(dtype, DType::F32 | DType::I64 | DType::I32) {
        return Err(ctx.err(format!("input is {} data; f32, i64 and i32 are supported", dtype.name())));
    }
    if define_if_empty(lw, ctx, &shape, dtype)? {
        return Ok(());
    }
    let (outer, axis_dim, inner) = (numel(ctx, &shape[..a])?, shape[a], numel(ctx, &shape[a + 1..])?);
    let exclusive = ctx.int_attr("exclusive", 0)? != 0;
    let reverse = ctx.int_attr("reverse", 0)? != 0;
    let dst = lw.output_storage_typed(ctx, 0, shape.clone(), dtype)?;
    let len = outer * axis_dim * inner;
    match dtype {
        DType::I32 => {
            let name = &ctx.node.output[0];
            let wide = lw.scratch_storage(&format!("{name}.i64"), shape.clone(), DType::I64)?;
            lw.emit(ctx, cast_thunk(src, wide, len, DType::I32, DType::I64));
            // In place on the i64 copy.
            let dtype = DType::I64;
            lw.emit(
                ctx,
                Thunk::Cumulative(Cumulative {
                    src: wide,
                    dst: wide,
                    outer,
                    axis_dim,
                    inner,
                    op,
                    dtype,
                    exclusive,
                    reverse,
                }),
            );
            lw.emit(ctx, cast_thunk(wide, dst, len, DType::I64, DType::I32));
        }
        _ => lw.emit(
            ctx,
            Thunk::Cumulative(Cumulative { src, dst, outer, axis_dim, inner, op, dtype, exclusive, reverse }),
        ),
    }
    lw.define(ctx, 0, Value::Data { storage: dst, shape })
}
