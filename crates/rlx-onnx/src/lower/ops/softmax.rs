//! The row-normalising ops: `Softmax`, `LogSoftmax` and `Hardmax`.
//!
//! Before opset 13 each coerced its input to 2-D at `axis` (default 1) and
//! normalised the rows; from 13 on it acts on one axis (default -1). Both
//! are a `[outer, axis_dim, inner]` view of the input, which the reduction
//! kinds read directly, so `LogSoftmax` and `Hardmax` need no transpose.

use rlx_sched::{ArgOp, CmpOp, DType, Thunk};

use crate::error::ImportError;
use crate::lower::arith::shape::normalize_axis;
use crate::lower::build::{compare_thunk, define_if_empty, log_softmax_into, numel, permute_thunk, R};
use crate::lower::{Lowerer, NodeCtx, Value};
use crate::tensor::{ConstData, ConstTensor};
use rlx_sched::thunk::{ArgReduce, Cast, Softmax};

pub(crate) fn softmax(lw: &mut Lowerer, ctx: &NodeCtx<'_>) -> R {
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
pub(crate) fn log_softmax(lw: &mut Lowerer, ctx: &NodeCtx<'_>) -> R {
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

/// `Hardmax`: 1 at the first largest element of each row, 0 elsewhere.
/// `ArgReduce` finds the index (the first of equals, as the spec's
/// reference `argmax`), a `Compare` with the constant `0..axis_dim` makes
/// the one-hot bools and a cast turns them into f32.
pub(crate) fn hardmax(lw: &mut Lowerer, ctx: &NodeCtx<'_>) -> R {
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
    lw.count_table(ctx, "the positions along the axis", &[axis_dim], 8)?;
    let positions = ConstTensor { shape: vec![1, axis_dim, 1], data: ConstData::I64((0..axis_dim as i64).collect()) };
    let positions = lw.add_param(&format!("{name}.positions"), &positions)?;
    let hot = lw.scratch_storage(&format!("{name}.hot"), full.to_vec(), DType::Bool)?;
    lw.emit(ctx, compare_thunk(ctx, (index, &row), (positions, &[1, axis_dim, 1]), hot, &full, CmpOp::Eq, 8)?);
    let y = lw.output_storage(ctx, 0, shape.clone())?;
    lw.emit(ctx, Thunk::Cast(Cast { src: hot, dst: y, len: numel(ctx, &shape)?, from: DType::Bool, to: DType::F32 }));
    lw.define(ctx, 0, Value::Data { storage: y, shape })
}
