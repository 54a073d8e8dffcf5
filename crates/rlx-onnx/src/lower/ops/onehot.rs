//! `OneHot(indices, depth, values)` on existing kinds.
//!
//! The indices are cast to i64 (truncating floats, as the spec says), a
//! negative one gets `depth` added (`Compare`, `BinaryFull`, `Where`), and
//! a `Compare` `eq` against the constant positions `0..depth` (laid along
//! `axis`, broadcast over the indices) marks the hot element; a `Where`
//! then picks `values[1]` (on) or `values[0]` (off). An index outside
//! `[-depth, depth)` matches no position: its row is all off, as the spec
//! says.

use rlx_sched::{BinaryOp, CmpOp, DType, Thunk};

use crate::error::ImportError;
use crate::lower::arith::fold;
use crate::lower::arith::shape::normalize_axis;
use crate::lower::build::{
    binary_thunk, cast_thunk, compare_thunk, define_if_empty, numel, only_first_output, widen_to_i64, R,
};
use crate::lower::{Lowerer, NodeCtx, Value};
use crate::tensor::{ConstData, ConstTensor};
use rlx_sched::thunk::{Cast, Where};

/// `depth`: a constant of one element, a float truncated to an integer.
fn depth_input(lw: &Lowerer, ctx: &NodeCtx<'_>) -> Result<usize, ImportError> {
    let c = lw
        .const_input(ctx, 1)?
        .ok_or_else(|| ctx.err("depth must be a constant known at import time (an initializer or a `Constant`)"))?;
    let value = match &c.data {
        ConstData::F32(v) if v.len() == 1 && v[0].is_finite() => Some(v[0].trunc() as i64),
        ConstData::I64(_) | ConstData::I32(_) if c.data.len() == 1 => c.data.ints().map(|v| v[0]),
        _ => None,
    };
    let value = value.ok_or_else(|| {
        ctx.err(format!("depth of shape {:?} and type {} must be one finite number", c.shape, c.data.dtype().name()))
    })?;
    usize::try_from(value)
        .ok()
        .filter(|&d| d >= 1)
        .ok_or_else(|| ctx.err(format!("depth is {value}; it must be at least 1")))
}

pub(crate) fn one_hot(lw: &mut Lowerer, ctx: &NodeCtx<'_>) -> R {
    ctx.expect_arity(3, 3)?;
    only_first_output(ctx)?;
    let depth = depth_input(lw, ctx)?;
    let (indices, is, idx_dtype) = lw.typed_input(ctx, 0)?;
    let (values, vs, dtype) = lw.typed_input(ctx, 2)?;
    if numel(ctx, &vs)? != 2 {
        return Err(ctx.err(format!("values have shape {vs:?}; expected two elements [off, on]")));
    }
    let rank = is.len() + 1;
    let axis = ctx.int_attr("axis", -1)?;
    let a = normalize_axis(axis, rank, 0)
        .ok_or_else(|| ctx.bad_attr("axis", format!("is {axis}, out of range for output rank {rank}")))?;
    let mut out = is.clone();
    out.insert(a, depth);
    if define_if_empty(lw, ctx, &out, dtype)? {
        return Ok(());
    }
    let name = ctx.node.output[0].clone();
    let n = numel(ctx, &is)?;
    let idx = match idx_dtype {
        DType::I64 => indices,
        DType::F32 | DType::I32 => {
            let wide = lw.scratch_storage(&format!("{name}.indices"), is.clone(), DType::I64)?;
            lw.emit(ctx, cast_thunk(indices, wide, n, idx_dtype, DType::I64));
            wide
        }
        other => return Err(ctx.err(format!("indices are {}; f32, i64 or i32 are supported", other.name()))),
    };
    let int = |lw: &mut Lowerer, what: &str, v: i64| {
        lw.add_param(&format!("{name}.{what}"), &ConstTensor { shape: vec![], data: ConstData::I64(vec![v]) })
    };
    // A negative index counts from the end: `index + depth` where negative.
    let zero = int(lw, "zero", 0)?;
    let negative = lw.scratch_storage(&format!("{name}.negative"), is.clone(), DType::Bool)?;
    lw.emit(ctx, compare_thunk(ctx, (idx, &is), (zero, &[]), negative, &is, CmpOp::Lt, 8)?);
    let depth_param = int(lw, "depth", depth as i64)?;
    let index = lw.scratch_storage(&format!("{name}.index"), is.clone(), DType::I64)?;
    lw.emit(ctx, binary_thunk(ctx, (idx, &is), (depth_param, &[]), index, &is, BinaryOp::Add, 8)?);
    lw.emit(
        ctx,
        Thunk::Where(Where {
            cond: negative,
            on_true: index,
            on_false: idx,
            dst: index,
            len: n,
            elem_bytes: 8,
            cond_elem_bytes: 1,
            cond_scalar: false,
            true_scalar: false,
            false_scalar: false,
        }),
    );
    let mut pos_shape = vec![1; rank];
    pos_shape[a] = depth;
    // The positions are a constant: an absurd depth fails here, before
    // anything that large is allocated.
    fold::check_size(ctx, &pos_shape, DType::I64)?;
    let positions = ConstTensor { shape: pos_shape.clone(), data: ConstData::I64((0..depth as i64).collect()) };
    let positions = lw.add_param(&format!("{name}.positions"), &positions)?;
    let mut lifted = is.clone();
    lifted.insert(a, 1);
    let hot = lw.scratch_storage(&format!("{name}.hot"), out.clone(), DType::Bool)?;
    lw.emit(ctx, compare_thunk(ctx, (index, &lifted), (positions, &pos_shape), hot, &out, CmpOp::Eq, 8)?);
    // `Where` moves 4- and 8-byte values: bools go through i64.
    let (values, eb) = match dtype {
        DType::Bool => (widen_to_i64(lw, ctx, values, &vs, DType::Bool)?, 8),
        _ => (values, dtype.size()),
    };
    let (off, on) = (lw.add_view(values, 0, vec![]), lw.add_view(values, eb, vec![]));
    let len = numel(ctx, &out)?;
    let y = match dtype {
        DType::Bool => lw.scratch_storage(&format!("{name}.wide"), out.clone(), DType::I64)?,
        _ => lw.output_storage_typed(ctx, 0, out.clone(), dtype)?,
    };
    let single = len == 1;
    lw.emit(
        ctx,
        Thunk::Where(Where {
            cond: hot,
            on_true: on,
            on_false: off,
            dst: y,
            len,
            elem_bytes: eb,
            cond_elem_bytes: 1,
            cond_scalar: false,
            true_scalar: !single,
            false_scalar: !single,
        }),
    );
    let y = match dtype {
        DType::Bool => {
            let b = lw.output_storage_typed(ctx, 0, out.clone(), DType::Bool)?;
            lw.emit(ctx, Thunk::Cast(Cast { src: y, dst: b, len, from: DType::I64, to: DType::Bool }));
            b
        }
        _ => y,
    };
    lw.define(ctx, 0, Value::Data { storage: y, shape: out })
}
