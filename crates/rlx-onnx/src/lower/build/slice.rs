//! Slicing builders: the part of a value a slice keeps, as a fold, a view,
//! a `Narrow` or a strided `Transpose`, written where the caller says.

use rlx_sched::{DType, Thunk};

use crate::error::ImportError;
use crate::lower::arith::fold;
use crate::lower::arith::shape::row_major_strides;
use crate::lower::build::{numel, strided_indices, value_shape};
use crate::lower::{Lowerer, NodeCtx, Value};
use crate::tensor::{ConstData, ConstTensor};
use rlx_sched::thunk::{GatherAxis, Narrow, Transpose};

/// One axis of a slice: first element, element count, step.
#[derive(Clone, Copy, Debug, PartialEq)]
pub(crate) struct AxisSlice {
    pub start: i64,
    pub count: usize,
    pub step: i64,
}

/// Element offset of the first element and per-axis element strides.
fn slice_layout(shape: &[usize], parts: &[AxisSlice]) -> (i64, Vec<i64>) {
    let strides = row_major_strides(shape);
    let base = parts.iter().zip(&strides).map(|(p, &s)| p.start * s as i64).sum();
    // A step past the axis keeps one element, so its stride is unused.
    let steps = parts.iter().zip(&strides).map(|(p, &s)| p.step.saturating_mul(s as i64)).collect();
    (base, steps)
}

/// Whether the kept elements are one contiguous run: past some axis `p`
/// every axis is whole, `p` steps by 1, and before `p` one index each.
fn is_contiguous(shape: &[usize], parts: &[AxisSlice]) -> bool {
    let whole = |d: usize| parts[d].start == 0 && parts[d].count == shape[d] && parts[d].step == 1;
    let Some(p) = (0..shape.len()).rev().find(|&d| !whole(d)) else { return true };
    parts[p].step == 1 && (0..p).all(|d| parts[d].count == 1)
}

/// Where a lowering writes a value: output `i` of the node (its graph
/// output buffer when it is one) or a new scratch storage.
pub(crate) enum Dest {
    Output(usize),
    Scratch(String),
}

pub(crate) fn dest_storage(
    lw: &mut Lowerer,
    ctx: &NodeCtx<'_>,
    dest: &Dest,
    shape: Vec<usize>,
    dtype: DType,
) -> Result<usize, ImportError> {
    match dest {
        Dest::Output(i) => lw.output_storage_typed(ctx, *i, shape, dtype),
        Dest::Scratch(name) => lw.scratch_storage(name, shape, dtype),
    }
}

/// The slice `parts` of `input`: folded, a view, a `Narrow` or a strided
/// `Transpose` into `dest`.
pub(crate) fn slice_value(
    lw: &mut Lowerer,
    ctx: &NodeCtx<'_>,
    input: &Value,
    parts: &[AxisSlice],
    dest: &Dest,
) -> Result<Value, ImportError> {
    let shape = value_shape(input);
    let out_dims: Vec<usize> = parts.iter().map(|p| p.count).collect();
    let (base, strides) = slice_layout(&shape, parts);
    if let Value::Const(c) = input {
        let data =
            c.data.select(if out_dims.contains(&0) { Vec::new() } else { strided_indices(base, &out_dims, &strides) });
        return Ok(Value::Const(ConstTensor { shape: out_dims, data }));
    }
    let Value::Data { storage, .. } = *input else { unreachable!("constants returned above") };
    let dtype = lw.storages[storage].dtype;
    if out_dims.contains(&0) {
        let c = fold::empty(&out_dims, dtype).ok_or_else(|| ctx.err("empty tensors of this type are not supported"))?;
        return Ok(Value::Const(c));
    }
    let eb = dtype.size();
    let total = numel(ctx, &shape)?;
    let base = base as usize;
    if is_contiguous(&shape, parts) {
        let view = lw.add_view(storage, base * eb, out_dims.clone());
        return Ok(Value::Data { storage: view, shape: out_dims });
    }
    if parts.iter().any(|p| p.step < 0) {
        return reversed_slice(lw, ctx, input, parts, dest);
    }
    let src = lw.add_view(storage, base * eb, vec![total - base]);
    let dst = dest_storage(lw, ctx, dest, out_dims.clone(), dtype)?;
    // One sliced axis between whole ones is a row copy.
    let whole = |d: usize| parts[d].start == 0 && parts[d].count == shape[d] && parts[d].step == 1;
    let cut: Vec<usize> = (0..shape.len()).filter(|&d| !whole(d)).collect();
    let thunk = match cut.as_slice() {
        [p] if parts[*p].step == 1 => {
            let inner = numel(ctx, &shape[p + 1..])?;
            Thunk::Narrow(Narrow {
                src,
                dst,
                outer: numel(ctx, &shape[..*p])?,
                src_stride: shape[*p] * inner,
                dst_stride: parts[*p].count * inner,
                inner: parts[*p].count * inner,
                elem_bytes: eb,
            })
        }
        _ => Thunk::Transpose(Transpose {
            src,
            dst,
            in_total: total - base,
            out_dims: out_dims.clone(),
            in_strides: strides.iter().map(|&s| s as usize).collect(),
            elem_bytes: eb,
        }),
    };
    lw.emit(ctx, thunk);
    Ok(Value::Data { storage: dst, shape: out_dims })
}

/// A slice with negative steps: the other axes sliced first, then one
/// `GatherAxis` per backward axis with its (constant) index list.
fn reversed_slice(
    lw: &mut Lowerer,
    ctx: &NodeCtx<'_>,
    input: &Value,
    parts: &[AxisSlice],
    dest: &Dest,
) -> Result<Value, ImportError> {
    let shape = value_shape(input);
    let backward: Vec<usize> = (0..parts.len()).filter(|&d| parts[d].step < 0).collect();
    let forward: Vec<AxisSlice> = parts
        .iter()
        .zip(&shape)
        .map(|(p, &n)| if p.step < 0 { AxisSlice { start: 0, count: n, step: 1 } } else { *p })
        .collect();
    let name = ctx.node.output.first().cloned().unwrap_or_default();
    let mut cur = slice_value(lw, ctx, input, &forward, &Dest::Scratch(format!("{name}.forward")))?;
    for (k, &d) in backward.iter().enumerate() {
        let cur_shape = value_shape(&cur);
        let p = parts[d];
        lw.count_table(ctx, "the reversed slice's indices", &[p.count], 8)?;
        let indices: Vec<i64> = (0..p.count as i64).map(|i| p.start + i * p.step).collect();
        let idx = lw.add_param(
            &format!("{name}.reversed{d}"),
            &ConstTensor { shape: vec![p.count], data: ConstData::I64(indices) },
        )?;
        let Value::Data { storage: src, .. } = cur else { unreachable!("data in, data out") };
        let mut out_shape = cur_shape.clone();
        out_shape[d] = p.count;
        let dtype = lw.storages[src].dtype;
        let step_dest = if k + 1 == backward.len() { dest } else { &Dest::Scratch(format!("{name}.reversed{d}.out")) };
        let dst = dest_storage(lw, ctx, step_dest, out_shape.clone(), dtype)?;
        lw.emit(
            ctx,
            Thunk::GatherAxis(GatherAxis {
                src,
                indices: idx,
                dst,
                outer: numel(ctx, &cur_shape[..d])?,
                axis_dim: cur_shape[d],
                inner: numel(ctx, &cur_shape[d + 1..])?,
                num_indices: p.count,
                elem_bytes: dtype.size(),
                index_dtype: DType::I64,
            }),
        );
        cur = Value::Data { storage: dst, shape: out_shape };
    }
    Ok(cur)
}
