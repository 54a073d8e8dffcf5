//! Ops that only relabel a value, or are known at import time: `Reshape`,
//! `Flatten`, `Identity`, `Squeeze`, `Unsqueeze` (views of the input's
//! storage, or reshaped constants), `Constant`, `Shape` and `Size`.

use crate::error::ImportError;
use crate::lower::arith::shape::{normalize_axis, reshape_target};
use crate::lower::build::{numel, R};
use crate::lower::{Lowerer, NodeCtx, Value};
use crate::tensor::{read_tensor, ConstData, ConstTensor};

/// Binds output 0 to a new view of the same data: a storage view, or a
/// reshaped constant.
fn view(lw: &mut Lowerer, ctx: &NodeCtx<'_>, input: Value, shape: Vec<usize>) -> R {
    let out = match input {
        Value::Data { storage, .. } => Value::Data { storage, shape },
        Value::Const(c) => Value::Const(ConstTensor { shape, data: c.data }),
    };
    lw.define(ctx, 0, out)
}

fn value_shape(v: &Value) -> &[usize] {
    match v {
        Value::Data { shape, .. } | Value::Const(ConstTensor { shape, .. }) => shape,
    }
}

pub(crate) fn reshape(lw: &mut Lowerer, ctx: &NodeCtx<'_>) -> R {
    ctx.expect_arity(2, 2)?;
    let (_, input) = lw.input(ctx, 0)?;
    let (_, spec) = lw.const_ints(ctx, 1)?;
    let allowzero = ctx.int_attr("allowzero", 0)? != 0;
    let shape = reshape_target(value_shape(&input), &spec, allowzero).map_err(|m| ctx.err(m))?;
    view(lw, ctx, input, shape)
}

pub(crate) fn flatten(lw: &mut Lowerer, ctx: &NodeCtx<'_>) -> R {
    ctx.expect_arity(1, 1)?;
    let (_, input) = lw.input(ctx, 0)?;
    let s = value_shape(&input).to_vec();
    let axis = ctx.int_attr("axis", 1)?;
    // `axis` lies in [-rank, rank]; a negative one counts from the rank
    // (so -1 keeps the last axis apart), not from rank + 1.
    let rank = s.len() as i64;
    let a = usize::try_from(if axis < 0 { axis + rank } else { axis })
        .ok()
        .filter(|&a| a <= s.len())
        .ok_or_else(|| ctx.bad_attr("axis", format!("is {axis}, out of range for rank {}", s.len())))?;
    let shape = vec![numel(ctx, &s[..a])?, numel(ctx, &s[a..])?];
    view(lw, ctx, input, shape)
}

pub(crate) fn identity(lw: &mut Lowerer, ctx: &NodeCtx<'_>) -> R {
    ctx.expect_arity(1, 1)?;
    let (_, input) = lw.input(ctx, 0)?;
    let shape = value_shape(&input).to_vec();
    view(lw, ctx, input, shape)
}

/// The axes of Squeeze/Unsqueeze: an input since opset 13, an attribute
/// before.
fn axes(lw: &Lowerer, ctx: &NodeCtx<'_>) -> Result<Option<Vec<i64>>, ImportError> {
    if lw.opset >= 13 {
        if ctx.has_attr("axes") {
            return Err(ctx.bad_attr("axes", "is an input since opset 13, not an attribute"));
        }
        match ctx.input_name(1) {
            Some(_) => Ok(Some(lw.const_ints(ctx, 1)?.1)),
            None => Ok(None),
        }
    } else {
        Ok(ctx.ints_attr("axes")?.map(<[i64]>::to_vec))
    }
}

pub(crate) fn squeeze(lw: &mut Lowerer, ctx: &NodeCtx<'_>) -> R {
    ctx.expect_arity(1, 2)?;
    let (_, input) = lw.input(ctx, 0)?;
    let s = value_shape(&input).to_vec();
    let drop: Vec<usize> = match axes(lw, ctx)? {
        None => (0..s.len()).filter(|&d| s[d] == 1).collect(),
        Some(list) => {
            let mut out = Vec::new();
            for ax in list {
                let d = normalize_axis(ax, s.len(), 0)
                    .ok_or_else(|| ctx.err(format!("axis {ax} is out of range for rank {}", s.len())))?;
                if s[d] != 1 {
                    return Err(ctx.err(format!("axis {ax} has size {}, not 1", s[d])));
                }
                out.push(d);
            }
            out
        }
    };
    let shape = (0..s.len()).filter(|d| !drop.contains(d)).map(|d| s[d]).collect();
    view(lw, ctx, input, shape)
}

pub(crate) fn unsqueeze(lw: &mut Lowerer, ctx: &NodeCtx<'_>) -> R {
    ctx.expect_arity(1, 2)?;
    let (_, input) = lw.input(ctx, 0)?;
    let s = value_shape(&input).to_vec();
    let list = axes(lw, ctx)?.ok_or_else(|| ctx.err("needs axes"))?;
    let rank = s.len() + list.len();
    let mut is_new = vec![false; rank];
    for &ax in &list {
        let d =
            normalize_axis(ax, rank, 0).ok_or_else(|| ctx.err(format!("axis {ax} is out of range for rank {rank}")))?;
        if std::mem::replace(&mut is_new[d], true) {
            return Err(ctx.err(format!("axis {ax} is given twice")));
        }
    }
    let mut old = s.iter();
    let shape = is_new.iter().map(|&new| if new { 1 } else { *old.next().expect("rank counts match") }).collect();
    view(lw, ctx, input, shape)
}

pub(crate) fn constant(lw: &mut Lowerer, ctx: &NodeCtx<'_>) -> R {
    ctx.expect_arity(0, 0)?;
    let c = if let Some(t) = ctx.tensor_attr("value")? {
        read_tensor(t, std::path::Path::new(".")).map_err(|e| ctx.bad_attr("value", e.to_string()))?
    } else if ctx.has_attr("value_float") {
        ConstTensor { shape: vec![], data: ConstData::F32(vec![ctx.float_attr("value_float", 0.0)?]) }
    } else if ctx.has_attr("value_int") {
        ConstTensor { shape: vec![], data: ConstData::I64(vec![ctx.int_attr("value_int", 0)?]) }
    } else if let Some(v) = ctx.ints_attr("value_ints")? {
        ConstTensor { shape: vec![v.len()], data: ConstData::I64(v.to_vec()) }
    } else {
        let names: Vec<&str> = ctx.node.attribute.iter().map(|a| a.name.as_str()).collect();
        return Err(ctx.err(format!("has attributes {names:?}; supported: value, value_float, value_int, value_ints")));
    };
    lw.define(ctx, 0, Value::Const(c))
}

/// `Size` is always known at import time: the element count as an int64
/// scalar.
pub(crate) fn size_op(lw: &mut Lowerer, ctx: &NodeCtx<'_>) -> R {
    ctx.expect_arity(1, 1)?;
    let (_, input) = lw.input(ctx, 0)?;
    let n = numel(ctx, value_shape(&input))?;
    let n = i64::try_from(n).map_err(|_| ctx.err(format!("{n} elements do not fit int64")))?;
    lw.define(ctx, 0, Value::Const(ConstTensor { shape: vec![], data: ConstData::I64(vec![n]) }))
}

/// `Shape` is always known at import time: it folds to a constant.
pub(crate) fn shape_op(lw: &mut Lowerer, ctx: &NodeCtx<'_>) -> R {
    ctx.expect_arity(1, 1)?;
    let (_, input) = lw.input(ctx, 0)?;
    let s = value_shape(&input);
    let rank = s.len() as i64;
    // Opset 15 `start`/`end`, clamped to [0, rank] as the spec says.
    let clamp = |v: i64| (if v < 0 { v + rank } else { v }).clamp(0, rank) as usize;
    let (start, end) = (clamp(ctx.int_attr("start", 0)?), clamp(ctx.int_attr("end", rank)?));
    let dims: Vec<i64> = s.get(start..end.max(start)).unwrap_or(&[]).iter().map(|&d| d as i64).collect();
    lw.define(ctx, 0, Value::Const(ConstTensor { shape: vec![dims.len()], data: ConstData::I64(dims) }))
}
