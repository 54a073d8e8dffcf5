//! The builders: helpers that allocate storages, push thunks and define
//! values for the op families. A family reuses another op through these,
//! or through the dispatcher (`Lowerer::lower_part`), never by importing
//! a sibling family.

pub(crate) mod layout;
pub(crate) mod pad_fold;
pub(crate) mod pool_nd;
pub(crate) mod quant;
pub(crate) mod slice;
pub(crate) mod subgraph;
pub(crate) mod transposed;
pub(crate) mod unroll;
pub(crate) mod window;

use rlx_sched::{ActKind, BinaryOp, CmpOp, DType, ReduceOp, Thunk};

use crate::error::ImportError;
use crate::lower::arith::fold;
use crate::lower::arith::shape::{broadcast_strides, checked_numel, row_major_strides};
use crate::lower::{Lowerer, NodeCtx, Value};
use rlx_sched::thunk::{self as kinds, Activation, BinaryFull, Cast, Compare, CopyI64, Narrow, Reduce, Transpose};

pub(crate) use layout::{broadcast_into_scratch, broadcast_thunk, concat_along, strided_indices, value_shape};
pub(crate) use slice::{dest_storage, slice_value, AxisSlice, Dest};

pub(crate) type R = Result<(), ImportError>;

pub(crate) fn numel(ctx: &NodeCtx<'_>, shape: &[usize]) -> Result<usize, ImportError> {
    checked_numel(shape).ok_or_else(|| ctx.err(format!("shape {shape:?} has too many elements")))
}

/// A plain copy of a whole tensor of `dtype`.
pub(crate) fn copy_thunk(src: usize, dst: usize, shape: &[usize], dtype: DType) -> Thunk<usize> {
    let len = shape.iter().product();
    match dtype.size() {
        4 => Thunk::Copy(kinds::Copy { src, dst, len }),
        8 => Thunk::CopyI64(CopyI64 { src, dst, len }),
        elem_bytes => {
            Thunk::Narrow(Narrow { src, dst, outer: 1, src_stride: len, dst_stride: len, inner: len, elem_bytes })
        }
    }
}

/// A `Transpose` of f32 `src` by `perm` into `dst`.
pub(crate) fn permute_thunk(
    ctx: &NodeCtx<'_>,
    src: usize,
    shape: &[usize],
    perm: &[usize],
    dst: usize,
) -> Result<Thunk<usize>, ImportError> {
    let strides = row_major_strides(shape);
    Ok(Thunk::Transpose(Transpose {
        src,
        dst,
        in_total: numel(ctx, shape)?,
        out_dims: perm.iter().map(|&p| shape[p]).collect(),
        in_strides: perm.iter().map(|&p| strides[p]).collect(),
        elem_bytes: 4,
    }))
}

/// `Activation` of input 0 (arity already checked).
pub(crate) fn activation(lw: &mut Lowerer, ctx: &NodeCtx<'_>, act: ActKind) -> R {
    let (src, shape) = lw.data_input(ctx, 0)?;
    let len = numel(ctx, &shape)?;
    let dst = lw.output_storage(ctx, 0, shape.clone())?;
    lw.emit(ctx, Thunk::Activation(Activation { src, dst, len, act }));
    lw.define(ctx, 0, Value::Data { storage: dst, shape })
}

/// How a thunk reads an operand broadcast to the output: `Flat` (the
/// `i % len` rule covers it), or per-axis strides.
fn is_flat(shape: &[usize], out: &[usize]) -> bool {
    let core = &shape[shape.iter().take_while(|&&d| d == 1).count()..];
    out.ends_with(core)
}

/// `BinaryFull` of `op` over f32 (`elem_bytes` 4) or i64 (8) operands.
pub(crate) fn binary_thunk(
    ctx: &NodeCtx<'_>,
    (lhs, ls): (usize, &[usize]),
    (rhs, rs): (usize, &[usize]),
    dst: usize,
    out: &[usize],
    op: BinaryOp,
    elem_bytes: usize,
) -> Result<Thunk<usize>, ImportError> {
    let len = numel(ctx, out)?;
    let (lhs_len, rhs_len) = (numel(ctx, ls)?, numel(ctx, rs)?);
    let (dims, l_strides, r_strides) = if is_flat(ls, out) && is_flat(rs, out) {
        (vec![], vec![], vec![])
    } else {
        (out.to_vec(), broadcast_strides(ls, out), broadcast_strides(rs, out))
    };
    Ok(Thunk::BinaryFull(BinaryFull {
        lhs,
        rhs,
        dst,
        len,
        lhs_len,
        rhs_len,
        op,
        out_dims_bcast: dims,
        bcast_lhs_strides: l_strides,
        bcast_rhs_strides: r_strides,
        elem_bytes,
    }))
}

/// A `Compare` writing bools: flat when both operands have the output's
/// shape (or one is a single element), per-axis strides otherwise.
pub(crate) fn compare_thunk(
    ctx: &NodeCtx<'_>,
    (lhs, ls): (usize, &[usize]),
    (rhs, rs): (usize, &[usize]),
    dst: usize,
    out: &[usize],
    op: CmpOp,
    in_bytes: usize,
) -> Result<Thunk<usize>, ImportError> {
    let len = numel(ctx, out)?;
    let (lhs_len, rhs_len) = (numel(ctx, ls)?, numel(ctx, rs)?);
    let flat_ok = |n: usize| n == len || n == 1;
    let (dims, l_strides, r_strides, l_scalar, r_scalar) = if flat_ok(lhs_len) && flat_ok(rhs_len) {
        (vec![], vec![], vec![], lhs_len == 1 && len != 1, rhs_len == 1 && len != 1)
    } else {
        (out.to_vec(), broadcast_strides(ls, out), broadcast_strides(rs, out), false, false)
    };
    Ok(Thunk::Compare(Compare {
        lhs,
        rhs,
        dst,
        len,
        op,
        inputs_i64: in_bytes == 8,
        inputs_elem_bytes: in_bytes,
        dst_elem_bytes: 1,
        lhs_scalar: l_scalar,
        rhs_scalar: r_scalar,
        lhs_len,
        rhs_len,
        out_dims_bcast: dims,
        bcast_lhs_strides: l_strides,
        bcast_rhs_strides: r_strides,
    }))
}

/// Defines output 0 as an empty constant when `out` has no elements:
/// nothing to compute. Returns whether it did.
pub(crate) fn define_if_empty(
    lw: &mut Lowerer,
    ctx: &NodeCtx<'_>,
    out: &[usize],
    dtype: DType,
) -> Result<bool, ImportError> {
    if out.contains(&0) {
        let c = fold::empty(out, dtype)
            .ok_or_else(|| ctx.err(format!("empty {} tensors are not supported", dtype.name())))?;
        lw.define(ctx, 0, Value::Const(c))?;
        return Ok(true);
    }
    Ok(false)
}

/// A widened copy of an i32 or bool storage as i64, in a new scratch
/// storage.
pub(crate) fn widen_to_i64(
    lw: &mut Lowerer,
    ctx: &NodeCtx<'_>,
    src: usize,
    shape: &[usize],
    from: DType,
) -> Result<usize, ImportError> {
    let len = numel(ctx, shape)?;
    let name = format!("{}.i64", lw.storages[src].name);
    let dst = lw.scratch_storage(&name, shape.to_vec(), DType::I64)?;
    let thunk = match from {
        DType::I32 => Thunk::Cast(Cast { src, dst, len, from: DType::I32, to: DType::I64 }),
        DType::Bool => Thunk::Cast(Cast { src, dst, len, from: DType::Bool, to: DType::I64 }),
        other => return Err(ctx.err(format!("cannot widen {} to i64", other.name()))),
    };
    lw.emit(ctx, thunk);
    Ok(dst)
}

/// The thunk casting `len` elements from `from` to `to`.
pub(crate) fn cast_thunk(src: usize, dst: usize, len: usize, from: DType, to: DType) -> Thunk<usize> {
    Thunk::Cast(Cast { src, dst, len, from, to })
}

/// Errors when the node asks for an output beyond the first (`Mean`,
/// `InvStdDev`, `Indices`, ...), which no thunk writes.
pub(crate) fn only_first_output(ctx: &NodeCtx<'_>) -> R {
    if let Some(extra) = ctx.node.output.iter().skip(1).find(|o| !o.is_empty()) {
        return Err(ctx.err(format!("output `{extra}` is not supported; only the first output is")));
    }
    Ok(())
}

/// The thunks of a log-softmax of `x` over the middle axis of `[outer,
/// axis_dim, inner]` into `y` (also `SoftmaxCrossEntropyLoss`'s first step).
pub(crate) fn log_softmax_into(
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
