//! `Slice` and `Split`: a part that is one contiguous run of its input is
//! a *view* (zero copy: the storage `base+offset`); one cut axis between
//! whole ones is a `Narrow` row copy; anything else one strided
//! `Transpose`; negative steps add a `GatherAxis` per backward axis. On
//! constants everything folds.

use rlx_sched::{DType, Thunk};

use super::fold;
use super::movement::{strided_indices, value_shape};
use super::ops::{numel, R};
use super::shape::{normalize_axis, row_major_strides};
use super::{Lowerer, NodeCtx, Value};
use crate::error::ImportError;
use crate::tensor::{ConstData, ConstTensor};
use rlx_sched::thunk::{GatherAxis, Narrow, Transpose};

/// One axis of a slice: first element, element count, step.
#[derive(Clone, Copy, Debug, PartialEq)]
pub(super) struct AxisSlice {
    pub start: i64,
    pub count: usize,
    pub step: i64,
}

/// ONNX `Slice` bounds for an axis of size `dim`: negative positions count
/// from the end, then clamp (to `[0, dim]` going forward, `[-1, dim-1]`
/// backward).
fn slice_axis(dim: usize, start: i64, end: i64, step: i64) -> AxisSlice {
    let d = dim as i128;
    let (mut s, mut e) = (start as i128, end as i128);
    if s < 0 {
        s += d;
    }
    if e < 0 {
        e += d;
    }
    let (s, e) = if step > 0 { (s.clamp(0, d), e.clamp(0, d)) } else { (s.clamp(0, d - 1), e.clamp(-1, d - 1)) };
    let st = step as i128;
    let count = if st > 0 { (e - s + st - 1).div_euclid(st) } else { (s - e + (-st) - 1).div_euclid(-st) };
    AxisSlice { start: s as i64, count: count.max(0) as usize, step }
}

/// The parts of `shape` a slice keeps, per axis (full axes included).
fn resolve_slice(
    ctx: &NodeCtx<'_>,
    shape: &[usize],
    starts: &[i64],
    ends: &[i64],
    axes: Option<&[i64]>,
    steps: Option<&[i64]>,
) -> Result<Vec<AxisSlice>, ImportError> {
    let rank = shape.len();
    if starts.len() != ends.len() {
        return Err(ctx.err(format!("starts has {} entries and ends {}", starts.len(), ends.len())));
    }
    let mut per_axis: Vec<AxisSlice> = shape.iter().map(|&d| AxisSlice { start: 0, count: d, step: 1 }).collect();
    let mut seen = vec![false; rank];
    for k in 0..starts.len() {
        let ax = axes.map_or(k as i64, |a| a.get(k).copied().unwrap_or(k as i64));
        let d =
            normalize_axis(ax, rank, 0).ok_or_else(|| ctx.err(format!("axis {ax} is out of range for rank {rank}")))?;
        if std::mem::replace(&mut seen[d], true) {
            return Err(ctx.err(format!("axis {ax} is sliced twice")));
        }
        let step = steps.map_or(1, |s| s.get(k).copied().unwrap_or(1));
        if step == 0 {
            return Err(ctx.err("a step is 0"));
        }
        per_axis[d] = slice_axis(shape[d], starts[k], ends[k], step);
    }
    Ok(per_axis)
}

/// Element offset of the first element and per-axis element strides.
fn slice_layout(shape: &[usize], parts: &[AxisSlice]) -> (i64, Vec<i64>) {
    let strides = row_major_strides(shape);
    let base = parts.iter().zip(&strides).map(|(p, &s)| p.start * s as i64).sum();
    let steps = parts.iter().zip(&strides).map(|(p, &s)| p.step * s as i64).collect();
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
pub(super) enum Dest {
    Output(usize),
    Scratch(String),
}

pub(super) fn dest_storage(
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
pub(super) fn slice_value(
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

/// Defines output `i` as the slice `parts` of `input`.
fn emit_slice(lw: &mut Lowerer, ctx: &NodeCtx<'_>, i: usize, input: &Value, parts: &[AxisSlice]) -> R {
    let v = slice_value(lw, ctx, input, parts, &Dest::Output(i))?;
    lw.define(ctx, i, v)
}

/// `Slice` (opset 10+: bounds as constant inputs; before: attributes).
pub(super) fn slice(lw: &mut Lowerer, ctx: &NodeCtx<'_>) -> R {
    let (_, input) = lw.input(ctx, 0)?;
    let shape = value_shape(&input);
    let parts = if lw.opset >= 10 {
        ctx.expect_arity(3, 5)?;
        let starts = lw.const_ints(ctx, 1)?.1;
        let ends = lw.const_ints(ctx, 2)?.1;
        let axes = if ctx.input_name(3).is_some() { Some(lw.const_ints(ctx, 3)?.1) } else { None };
        let steps = if ctx.input_name(4).is_some() { Some(lw.const_ints(ctx, 4)?.1) } else { None };
        resolve_slice(ctx, &shape, &starts, &ends, axes.as_deref(), steps.as_deref())?
    } else {
        ctx.expect_arity(1, 1)?;
        let starts = ctx.ints_attr("starts")?.ok_or_else(|| ctx.err("needs starts"))?.to_vec();
        let ends = ctx.ints_attr("ends")?.ok_or_else(|| ctx.err("needs ends"))?.to_vec();
        resolve_slice(ctx, &shape, &starts, &ends, ctx.ints_attr("axes")?, None)?
    };
    emit_slice(lw, ctx, 0, &input, &parts)
}

/// `Split` along an axis: sizes from the `split` input (opset 13+) or
/// attribute, `num_outputs` (opset 18), or equal parts.
pub(super) fn split(lw: &mut Lowerer, ctx: &NodeCtx<'_>) -> R {
    ctx.expect_arity(1, 2)?;
    let (_, input) = lw.input(ctx, 0)?;
    let shape = value_shape(&input);
    let rank = shape.len();
    let axis = ctx.int_attr("axis", 0)?;
    let a = normalize_axis(axis, rank, 0)
        .ok_or_else(|| ctx.bad_attr("axis", format!("is {axis}, out of range for rank {rank}")))?;
    let dim = shape[a];
    let n = ctx.node.output.len();
    let sizes: Vec<usize> = if ctx.input_name(1).is_some() {
        lw.const_ints(ctx, 1)?
            .1
            .iter()
            .map(|&s| usize::try_from(s).map_err(|_| ctx.err(format!("split size {s} is negative"))))
            .collect::<Result<_, _>>()?
    } else if let Some(s) = ctx.ints_attr("split")? {
        s.iter()
            .map(|&s| usize::try_from(s).map_err(|_| ctx.err(format!("split size {s} is negative"))))
            .collect::<Result<_, _>>()?
    } else {
        let parts = usize::try_from(ctx.int_attr("num_outputs", n as i64)?).unwrap_or(0);
        if parts == 0 {
            return Err(ctx.err("needs at least one output"));
        }
        // Equal parts; with `num_outputs` the last one may be smaller.
        let size = dim.div_ceil(parts);
        (0..parts).map(|k| size.min(dim.saturating_sub(k * size))).collect()
    };
    if sizes.len() != n {
        return Err(ctx.err(format!("has {n} outputs but {} split sizes", sizes.len())));
    }
    if sizes.iter().sum::<usize>() != dim {
        return Err(ctx.err(format!("split sizes {sizes:?} do not add up to axis size {dim}")));
    }
    let mut start = 0;
    for (k, &size) in sizes.iter().enumerate() {
        let mut parts: Vec<AxisSlice> = shape.iter().map(|&d| AxisSlice { start: 0, count: d, step: 1 }).collect();
        parts[a] = AxisSlice { start: start as i64, count: size, step: 1 };
        emit_slice(lw, ctx, k, &input, &parts)?;
        start += size;
    }
    Ok(())
}
