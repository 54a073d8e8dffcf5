//! The row-normalising ops: `Softmax`, `LogSoftmax` and `Hardmax`.
//!
//! Before opset 13 each coerced its input to 2-D at `axis` (default 1) and
//! normalised the rows; from 13 on it acts on one axis (default -1). Both
//! are a `[outer, axis_dim, inner]` view of the input, which the reduction
//! kinds read directly, so `LogSoftmax` and `Hardmax` need no transpose.

use rlx_sched::{ArgOp, BinaryOp, CmpOp, DType, ReduceOp, Thunk};

use super::logic::{binary_thunk, compare_thunk, define_if_empty};
use super::ops::{numel, permute_thunk, R};
use super::shape::normalize_axis;
use super::{Lowerer, NodeCtx, Value};
use crate::error::ImportError;
use crate::tensor::{ConstData, ConstTensor};
use rlx_sched::thunk::{ArgReduce, Cast, Reduce, Softmax};

pub(super) fn softmax(lw: &mut Lowerer, ctx: &NodeCtx<'_>) -> R {
    ctx.expect_arity(1, 1)?;
    let (src, shape) = lw.data_input(ctx, 0)?;
    let rank = shape.len();
    // Opset 13 made Softmax act on one axis (default -1); before, it
    // flattened to 2-D at `axis` (default 1), which the row softmax does
    // exactly for any axis.
    let modern = lw.opset >= 13;
    let axis = ctx.int_attr("axis", if modern { -1 } else { 1 })?;
    let a = normalize_axis(axis, rank, 0)
        .ok_or_else(|| ctx.bad_attr("axis", format!("is {axis}, out of range for rank {rank}")))?;
    if modern && a + 1 != rank {
        // Softmax over a middle axis: move it last, and back after.
        if numel(ctx, &shape)? == 0 {
            return Err(ctx.err(format!("input shape {shape:?} is empty")));
        }
        let perm: Vec<usize> = (0..rank).filter(|&d| d != a).chain([a]).collect();
        let mut inverse = vec![0; rank];
        for (i, &p) in perm.iter().enumerate() {
            inverse[p] = i;
        }
        let moved: Vec<usize> = perm.iter().map(|&p| shape[p]).collect();
        let name = ctx.node.output[0].clone();
        let t = lw.scratch_storage(&format!("{name}.moved"), moved.clone(), DType::F32)?;
        let thunk = permute_thunk(ctx, src, &shape, &perm, t)?;
        lw.emit(ctx, thunk);
        let cols = moved[rank - 1];
        let rows = numel(ctx, &moved[..rank - 1])?;
        lw.emit(ctx, Thunk::Softmax(Softmax { src: t, dst: t, rows, cols }));
        let dst = lw.output_storage(ctx, 0, shape.clone())?;
        let thunk = permute_thunk(ctx, t, &moved, &inverse, dst)?;
        lw.emit(ctx, thunk);
        return lw.define(ctx, 0, Value::Data { storage: dst, shape });
    }
    let rows = numel(ctx, &shape[..a])?;
    let cols = numel(ctx, &shape[a..])?;
    let dst = lw.output_storage(ctx, 0, shape.clone())?;
    lw.emit(ctx, Thunk::Softmax(Softmax { src, dst, rows, cols }));
    lw.define(ctx, 0, Value::Data { storage: dst, shape })
}

/// The `[outer, axis_dim, inner]` split of `shape` that `axis` selects:
/// everything from `axis` on is the row before opset 13, one axis from 13.
fn row_split(lw: &Lowerer, ctx: &NodeCtx<'_>, shape: &[usize]) -> Result<[usize; 3], ImportError> {
    let rank = shape.len();
    let modern = lw.opset >= 13;
    let axis = ctx.int_attr("axis", if modern { -1 } else { 1 })?;
    let a = normalize_axis(axis, rank, 0)
        .ok_or_else(|| ctx.bad_attr("axis", format!("is {axis}, out of range for rank {rank}")))?;
    let outer = numel(ctx, &shape[..a])?;
    if modern {
        Ok([outer, shape[a], numel(ctx, &shape[a + 1..])?])
    } else {
        Ok([outer, numel(ctx, &shape[a..])?, 1])
    }
}

/// `LogSoftmax` as `d - log(sum(exp(d)))` with `d = x - max(x)`: the
/// shifted row's largest element is 0, so the log-sum-exp is small and
/// exact enough, and `d` itself is exact wherever the result is small (a
/// subtraction of nearby values).
pub(super) fn log_softmax(lw: &mut Lowerer, ctx: &NodeCtx<'_>) -> R {
    ctx.expect_arity(1, 1)?;
    let (x, shape) = lw.data_input(ctx, 0)?;
    let [outer, axis_dim, inner] = row_split(lw, ctx, &shape)?;
    if define_if_empty(lw, ctx, &shape, DType::F32)? {
        return Ok(());
    }
    let y = lw.output_storage(ctx, 0, shape.clone())?;
    log_softmax_into(lw, ctx, x, [outer, axis_dim, inner], y)?;
    lw.define(ctx, 0, Value::Data { storage: y, shape })
}

/// The thunks of a log-softmax of `x` over the middle axis of `[outer,
/// axis_dim, inner]` into `y` (also `SoftmaxCrossEntropyLoss`'s first step).
pub(super) fn log_softmax_into(
    lw: &mut Lowerer,
    ctx: &NodeCtx<'_>,
    x: usize,
    [outer, axis_dim, inner]: [usize; 3],
    y: usize,
) -> R {
    let (full, row) = ([outer, axis_dim, inner], [outer, 1, inner]);
    let name = ctx.node.output[0].clone();
    let max = lw.scratch_storage(&format!("{name}.max"), row.to_vec(), DType::F32)?;
    lw.emit(ctx, Thunk::Reduce(Reduce { src: x, dst: max, outer, axis_dim, inner, op: ReduceOp::Max }));
    // The shifted input is written into `y`, which the last subtraction
    // then updates in place (an exact alias).
    lw.emit(ctx, binary_thunk(ctx, (x, &full), (max, &row), y, &full, BinaryOp::Sub, 4)?);
    let lse = lw.scratch_storage(&format!("{name}.lse"), row.to_vec(), DType::F32)?;
    lw.emit(ctx, Thunk::Reduce(Reduce { src: y, dst: lse, outer, axis_dim, inner, op: ReduceOp::LogSumExp }));
    lw.emit(ctx, binary_thunk(ctx, (y, &full), (lse, &row), y, &full, BinaryOp::Sub, 4)?);
    Ok(())
}

/// `Hardmax`: 1 at the first largest element of each row, 0 elsewhere.
/// `ArgReduce` finds the index (the first of equals, as the spec's
/// reference `argmax`), a `Compare` with the constant `0..axis_dim` makes
/// the one-hot bools and a cast turns them into f32.
pub(super) fn hardmax(lw: &mut Lowerer, ctx: &NodeCtx<'_>) -> R {
    ctx.expect_arity(1, 1)?;
    let (x, shape) = lw.data_input(ctx, 0)?;
    let [outer, axis_dim, inner] = row_split(lw, ctx, &shape)?;
    if define_if_empty(lw, ctx, &shape, DType::F32)? {
        return Ok(());
    }
    let (full, row) = ([outer, axis_dim, inner], [outer, 1, inner]);
    let name = ctx.node.output[0].clone();
    let index = lw.scratch_storage(&format!("{name}.argmax"), row.to_vec(), DType::I64)?;
    lw.emit(
        ctx,
        Thunk::ArgReduce(ArgReduce {
            src: x,
            dst: index,
            outer,
            axis_dim,
            inner,
            op: ArgOp::Max,
            select_last: false,
            indices_i64: true,
        }),
    );
    let positions = ConstTensor { shape: vec![1, axis_dim, 1], data: ConstData::I64((0..axis_dim as i64).collect()) };
    let positions = lw.add_param(&format!("{name}.positions"), &positions)?;
    let hot = lw.scratch_storage(&format!("{name}.hot"), full.to_vec(), DType::Bool)?;
    lw.emit(ctx, compare_thunk(ctx, (index, &row), (positions, &[1, axis_dim, 1]), hot, &full, CmpOp::Eq, 8)?);
    let y = lw.output_storage(ctx, 0, shape.clone())?;
    lw.emit(ctx, Thunk::Cast(Cast { src: hot, dst: y, len: numel(ctx, &shape)?, from: DType::Bool, to: DType::F32 }));
    lw.define(ctx, 0, Value::Data { storage: y, shape })
}
