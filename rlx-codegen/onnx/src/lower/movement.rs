//! Ops that move elements without computing on them, for every carried
//! type: `Transpose`, `Expand`, `Concat`, `Gather`, `Slice`, `Split`,
//! `Pad`, plus the always-constant `ConstantOfShape` and `Range`.
//!
//! A slice or split part that is one contiguous run of its input is a
//! *view* (zero copy: the storage `base+offset`); anything else is one
//! `Transpose` (strided read), `Narrow` (row copy) or `Concat`. On constants
//! everything folds.

use rlx_sched::{DType, Thunk};

use super::fold;
use super::logic::define_if_empty;
use super::ops::{numel, R};
use super::shape::{broadcast, broadcast_strides, normalize_axis, row_major_strides};
use super::{Lowerer, NodeCtx, Value};
use crate::error::ImportError;
use crate::tensor::{read_tensor, ConstData, ConstTensor};

fn value_shape(v: &Value) -> Vec<usize> {
    match v {
        Value::Data { shape, .. } | Value::Const(ConstTensor { shape, .. }) => shape.clone(),
    }
}

/// The element each output element of a strided read takes: output
/// coordinates over `out_dims`, source index `base + sum(c[d] * strides[d])`
/// (strides may be negative).
fn strided_indices(base: i64, out_dims: &[usize], strides: &[i64]) -> Vec<usize> {
    let total: usize = out_dims.iter().product();
    let mut idx = vec![0usize; out_dims.len()];
    let mut result = Vec::with_capacity(total);
    for _ in 0..total {
        let at: i64 = base + idx.iter().zip(strides).map(|(&i, &s)| i as i64 * s).sum::<i64>();
        result.push(at as usize);
        for d in (0..out_dims.len()).rev() {
            idx[d] += 1;
            if idx[d] < out_dims[d] {
                break;
            }
            idx[d] = 0;
        }
    }
    result
}

/// Broadcasts storage `src` of `shape` to `out` into a new scratch storage
/// (one `Transpose` with stride-0 axes).
pub(super) fn broadcast_into_scratch(
    lw: &mut Lowerer,
    ctx: &NodeCtx<'_>,
    src: usize,
    shape: &[usize],
    out: &[usize],
) -> Result<usize, ImportError> {
    let dtype = lw.storages[src].dtype;
    let name = format!("{}.expanded", lw.storages[src].name);
    let dst = lw.scratch_storage(&name, out.to_vec(), dtype)?;
    lw.emit(ctx, broadcast_thunk(ctx, src, shape, dst, out, dtype)?);
    Ok(dst)
}

fn broadcast_thunk(
    ctx: &NodeCtx<'_>,
    src: usize,
    shape: &[usize],
    dst: usize,
    out: &[usize],
    dtype: DType,
) -> Result<Thunk<usize>, ImportError> {
    Ok(Thunk::Transpose {
        src,
        dst,
        in_total: numel(ctx, shape)?,
        out_dims: out.to_vec(),
        in_strides: broadcast_strides(shape, out),
        elem_bytes: dtype.size(),
    })
}

/// `Expand`: numpy broadcast of the input with the shape input (either
/// side may have the 1s); the same shape is a view.
pub(super) fn expand(lw: &mut Lowerer, ctx: &NodeCtx<'_>) -> R {
    ctx.expect_arity(2, 2)?;
    let (_, input) = lw.input(ctx, 0)?;
    let (_, spec) = lw.const_ints(ctx, 1)?;
    let in_shape = value_shape(&input);
    let target: Vec<usize> = spec
        .iter()
        .map(|&d| usize::try_from(d).map_err(|_| ctx.err(format!("shape {spec:?} has a negative dim"))))
        .collect::<Result<_, _>>()?;
    let out = broadcast(&in_shape, &target)
        .ok_or_else(|| ctx.err(format!("input shape {in_shape:?} does not broadcast to {target:?}")))?;
    match input {
        Value::Const(c) => {
            fold::check_size(ctx, &out)?;
            lw.define(ctx, 0, Value::Const(fold::expand(&c, &out)))
        }
        Value::Data { storage, .. } if out == in_shape => lw.define(ctx, 0, Value::Data { storage, shape: out }),
        Value::Data { storage, .. } => {
            let dtype = lw.storages[storage].dtype;
            if define_if_empty(lw, ctx, &out, dtype)? {
                return Ok(());
            }
            let dst = lw.output_storage_typed(ctx, 0, out.clone(), dtype)?;
            let thunk = broadcast_thunk(ctx, storage, &in_shape, dst, &out, dtype)?;
            lw.emit(ctx, thunk);
            lw.define(ctx, 0, Value::Data { storage: dst, shape: out })
        }
    }
}

/// `Transpose` of any carried type (a constant folds).
pub(super) fn transpose(lw: &mut Lowerer, ctx: &NodeCtx<'_>) -> R {
    ctx.expect_arity(1, 1)?;
    let (_, input) = lw.input(ctx, 0)?;
    let s = value_shape(&input);
    let rank = s.len();
    let perm: Vec<usize> = match ctx.ints_attr("perm") {
        None => (0..rank).rev().collect(),
        Some(p) => {
            let mut seen = vec![false; rank];
            let mut out = Vec::with_capacity(rank);
            for &d in p {
                let ok = usize::try_from(d).ok().filter(|&d| d < rank && !seen[d]);
                let d = ok.ok_or_else(|| ctx.bad_attr("perm", format!("{p:?} is not a permutation of 0..{rank}")))?;
                seen[d] = true;
                out.push(d);
            }
            if out.len() != rank {
                return Err(ctx.bad_attr("perm", format!("{p:?} is not a permutation of 0..{rank}")));
            }
            out
        }
    };
    let all = row_major_strides(&s);
    let out_dims: Vec<usize> = perm.iter().map(|&d| s[d]).collect();
    let in_strides: Vec<usize> = perm.iter().map(|&d| all[d]).collect();
    if let Value::Const(c) = input {
        let strides: Vec<i64> = in_strides.iter().map(|&x| x as i64).collect();
        let data = c.data.select(strided_indices(0, &out_dims, &strides));
        return lw.define(ctx, 0, Value::Const(ConstTensor { shape: out_dims, data }));
    }
    let (src, _, dtype) = lw.typed_input(ctx, 0)?;
    if define_if_empty(lw, ctx, &out_dims, dtype)? {
        return Ok(());
    }
    let in_total = numel(ctx, &s)?;
    let dst = lw.output_storage_typed(ctx, 0, out_dims.clone(), dtype)?;
    lw.emit(
        ctx,
        Thunk::Transpose { src, dst, in_total, out_dims: out_dims.clone(), in_strides, elem_bytes: dtype.size() },
    );
    lw.define(ctx, 0, Value::Data { storage: dst, shape: out_dims })
}

/// `Concat` of any carried type: constants fold; empty inputs add nothing.
pub(super) fn concat(lw: &mut Lowerer, ctx: &NodeCtx<'_>) -> R {
    let n = ctx.node.input.len();
    if n == 0 {
        return Err(ctx.err("has no inputs"));
    }
    let values: Vec<Value> = (0..n).map(|i| lw.input(ctx, i).map(|(_, v)| v)).collect::<Result<_, _>>()?;
    let first = value_shape(&values[0]);
    let rank = first.len();
    let axis = ctx.int_attr("axis", 0);
    let a = normalize_axis(axis, rank, 0)
        .ok_or_else(|| ctx.bad_attr("axis", format!("is {axis}, out of range for rank {rank}")))?;
    let mut out_shape = first.clone();
    out_shape[a] = 0;
    for v in &values {
        let s = value_shape(v);
        let same_rest = s.len() == rank && (0..rank).all(|d| d == a || s[d] == first[d]);
        if !same_rest {
            return Err(ctx.err(format!("input shapes {first:?} and {s:?} differ outside axis {axis}")));
        }
        out_shape[a] = out_shape[a].checked_add(s[a]).ok_or_else(|| ctx.err("the output is too large"))?;
    }
    let v = concat_along(lw, ctx, &values, a, &Dest::Output(0))?;
    lw.define(ctx, 0, v)
}

/// The concatenation of constants along axis `a` (`outer` rows before
/// it); `None` when their types differ.
fn concat_consts(consts: &[&ConstTensor], a: usize, outer: usize) -> Option<ConstData> {
    let dtype = consts[0].data.dtype();
    if consts.iter().any(|c| c.data.dtype() != dtype) {
        return None;
    }
    let row = |c: &ConstTensor| c.shape[a..].iter().product::<usize>();
    if dtype == DType::F32 {
        let mut v = Vec::new();
        for o in 0..outer {
            for c in consts {
                let ConstData::F32(d) = &c.data else { return None };
                v.extend_from_slice(&d[o * row(c)..(o + 1) * row(c)]);
            }
        }
        return Some(ConstData::F32(v));
    }
    let ints: Vec<Vec<i64>> = consts.iter().map(|c| c.data.ints()).collect::<Option<_>>()?;
    let mut v = Vec::new();
    for o in 0..outer {
        for (c, d) in consts.iter().zip(&ints) {
            v.extend_from_slice(&d[o * row(c)..(o + 1) * row(c)]);
        }
    }
    ConstData::from_ints(dtype, v)
}

/// `Gather`: of constants it folds; of data it is a row lookup (`Gather`,
/// f32 tables on axis 0) or `GatherAxis`.
pub(super) fn gather(lw: &mut Lowerer, ctx: &NodeCtx<'_>) -> R {
    ctx.expect_arity(2, 2)?;
    let (_, data) = lw.input(ctx, 0)?;
    let shape = value_shape(&data);
    let rank = shape.len();
    let axis = ctx.int_attr("axis", 0);
    let a = normalize_axis(axis, rank, 0)
        .ok_or_else(|| ctx.bad_attr("axis", format!("is {axis}, out of range for rank {rank}")))?;
    let outer = numel(ctx, &shape[..a])?;
    let (dim, inner) = (shape[a], numel(ctx, &shape[a + 1..])?);
    if let (Value::Const(c), Some(idx)) = (&data, lw.const_input(ctx, 1)?) {
        let values = idx.data.ints().ok_or_else(|| ctx.err("indices must be integers"))?;
        let mut picks = Vec::with_capacity(outer * values.len() * inner);
        for o in 0..outer {
            for &i in &values {
                let j = if i < 0 { i + dim as i64 } else { i };
                let j = usize::try_from(j)
                    .ok()
                    .filter(|&j| j < dim)
                    .ok_or_else(|| ctx.err(format!("index {i} is out of range for axis size {dim}")))?;
                picks.extend((o * dim + j) * inner..(o * dim + j + 1) * inner);
            }
        }
        let out_shape: Vec<usize> = shape[..a].iter().chain(&idx.shape).chain(&shape[a + 1..]).copied().collect();
        return lw.define(ctx, 0, Value::Const(ConstTensor { shape: out_shape, data: c.data.select(picks) }));
    }
    let (table, _, dtype) = lw.typed_input(ctx, 0)?;
    let (indices, idx_shape, index_dtype) = lw.typed_input(ctx, 1)?;
    if !matches!(index_dtype, DType::I64 | DType::I32) {
        return Err(ctx.err(format!("indices are {}; i64 or i32 are supported", index_dtype.name())));
    }
    let out_shape: Vec<usize> = shape[..a].iter().chain(&idx_shape).chain(&shape[a + 1..]).copied().collect();
    if define_if_empty(lw, ctx, &out_shape, dtype)? {
        return Ok(());
    }
    let num_indices = numel(ctx, &idx_shape)?;
    let dst = lw.output_storage_typed(ctx, 0, out_shape.clone(), dtype)?;
    let thunk = if a == 0 && dtype == DType::F32 {
        Thunk::Gather { table, indices, dst, num_indices, row_len: inner, vocab: dim, index_dtype }
    } else {
        Thunk::GatherAxis {
            src: table,
            indices,
            dst,
            outer,
            axis_dim: dim,
            inner,
            num_indices,
            elem_bytes: dtype.size(),
            index_dtype,
        }
    };
    lw.emit(ctx, thunk);
    lw.define(ctx, 0, Value::Data { storage: dst, shape: out_shape })
}

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

fn dest_storage(
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
            Thunk::Narrow {
                src,
                dst,
                outer: numel(ctx, &shape[..*p])?,
                src_stride: shape[*p] * inner,
                dst_stride: parts[*p].count * inner,
                inner: parts[*p].count * inner,
                elem_bytes: eb,
            }
        }
        _ => Thunk::Transpose {
            src,
            dst,
            in_total: total - base,
            out_dims: out_dims.clone(),
            in_strides: strides.iter().map(|&s| s as usize).collect(),
            elem_bytes: eb,
        },
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
            Thunk::GatherAxis {
                src,
                indices: idx,
                dst,
                outer: numel(ctx, &cur_shape[..d])?,
                axis_dim: cur_shape[d],
                inner: numel(ctx, &cur_shape[d + 1..])?,
                num_indices: p.count,
                elem_bytes: dtype.size(),
                index_dtype: DType::I64,
            },
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
        let starts = ctx.ints_attr("starts").ok_or_else(|| ctx.err("needs starts"))?.to_vec();
        let ends = ctx.ints_attr("ends").ok_or_else(|| ctx.err("needs ends"))?.to_vec();
        resolve_slice(ctx, &shape, &starts, &ends, ctx.ints_attr("axes"), None)?
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
    let axis = ctx.int_attr("axis", 0);
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
    } else if let Some(s) = ctx.ints_attr("split") {
        s.iter()
            .map(|&s| usize::try_from(s).map_err(|_| ctx.err(format!("split size {s} is negative"))))
            .collect::<Result<_, _>>()?
    } else {
        let parts = usize::try_from(ctx.int_attr("num_outputs", n as i64)).unwrap_or(0);
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

/// `Pad` in `constant` mode: each padded axis is one `Concat` of a block of
/// the pad value, the tensor, and another block; negative pads crop first.
pub(super) fn pad(lw: &mut Lowerer, ctx: &NodeCtx<'_>) -> R {
    let mode = ctx.string_attr("mode").unwrap_or_else(|| "constant".to_string());
    if !matches!(mode.as_str(), "constant" | "edge" | "reflect" | "wrap") {
        return Err(ctx.bad_attr("mode", format!("is `{mode}`; expected constant, edge, reflect or wrap")));
    }
    let (_, input) = lw.input(ctx, 0)?;
    let shape = value_shape(&input);
    let rank = shape.len();
    let (pads, value, axes) = if lw.opset >= 11 {
        ctx.expect_arity(2, 4)?;
        let pads = lw.const_ints(ctx, 1)?.1;
        let value = lw.const_input(ctx, 2)?;
        if ctx.input_name(2).is_some() && value.is_none() {
            return Err(ctx.err("constant_value must be known at import time"));
        }
        let axes = if ctx.input_name(3).is_some() { Some(lw.const_ints(ctx, 3)?.1) } else { None };
        (pads, value, axes)
    } else {
        ctx.expect_arity(1, 1)?;
        let pads = ctx.ints_attr("pads").ok_or_else(|| ctx.err("needs pads"))?.to_vec();
        let v = ConstTensor { shape: vec![], data: ConstData::F32(vec![ctx.float_attr("value", 0.0)]) };
        (pads, Some(v), None)
    };
    let axes: Vec<usize> = match axes {
        None => (0..rank).collect(),
        Some(list) => list
            .iter()
            .map(|&ax| {
                normalize_axis(ax, rank, 0).ok_or_else(|| ctx.err(format!("axis {ax} is out of range for rank {rank}")))
            })
            .collect::<Result<_, _>>()?,
    };
    if pads.len() != 2 * axes.len() {
        return Err(ctx.err(format!("has {} pads for {} axes", pads.len(), axes.len())));
    }
    let mut before = vec![0i64; rank];
    let mut after = vec![0i64; rank];
    for (k, &d) in axes.iter().enumerate() {
        before[d] = pads[k];
        after[d] = pads[k + axes.len()];
    }
    // Crop the negative pads.
    let mut crop: Vec<AxisSlice> = shape.iter().map(|&d| AxisSlice { start: 0, count: d, step: 1 }).collect();
    for d in 0..rank {
        let lo = (-before[d]).max(0);
        let hi = (-after[d]).max(0);
        let count = (shape[d] as i64 - lo - hi).max(0) as usize;
        crop[d] = AxisSlice { start: lo.min(shape[d] as i64), count, step: 1 };
    }
    let dtype = match &input {
        Value::Const(c) => c.data.dtype(),
        Value::Data { storage, .. } => lw.storages[*storage].dtype,
    };
    let value = value.unwrap_or_else(|| {
        fold::cast(&ConstTensor { shape: vec![], data: ConstData::I64(vec![0]) }, dtype).expect("zero casts")
    });
    if value.data.dtype() != dtype || value.data.len() != 1 {
        return Err(ctx.err("constant_value must be one element of the input's type"));
    }
    let output = ctx.node.output.first().cloned().unwrap_or_default();
    let cropped = crop.iter().zip(&shape).any(|(p, &d)| p.count != d);
    let mut cur =
        if cropped { slice_value(lw, ctx, &input, &crop, &Dest::Scratch(format!("{output}.cropped")))? } else { input };
    let mut cur_shape = value_shape(&cur);
    let padded: Vec<usize> = (0..rank).filter(|&d| before[d] > 0 || after[d] > 0).collect();
    for (k, &d) in padded.iter().enumerate() {
        let (b, e) = (before[d].max(0) as usize, after[d].max(0) as usize);
        let len = cur_shape[d];
        let mut padded_shape = cur_shape.clone();
        padded_shape[d] = len.saturating_add(b).saturating_add(e);
        fold::check_size(ctx, &padded_shape)?;
        // The source index of each padded position along `d`, for the
        // modes that copy the tensor's own elements.
        let sources: Option<(Vec<usize>, Vec<usize>)> = match mode.as_str() {
            "constant" => None,
            _ if len == 0 => return Err(ctx.err(format!("cannot pad an empty axis in `{mode}` mode"))),
            "edge" => Some((vec![0; b], vec![len - 1; e])),
            "reflect" if b >= len || e >= len => {
                return Err(ctx.err(format!("reflect pads ({b}, {e}) must be below the axis size {len}")))
            }
            "reflect" => Some(((1..=b).rev().collect(), (0..e).map(|i| len - 2 - i).collect())),
            _ => Some(((0..b).map(|i| (len - b % len + i) % len).collect(), (0..e).map(|i| i % len).collect())),
        };
        let mut pieces: Vec<Value> = Vec::new();
        match &sources {
            None => {
                let mut block = cur_shape.clone();
                block[d] = b;
                pieces.push(Value::Const(fold::fill(&block, &value.data)));
                pieces.push(cur.clone());
                block[d] = e;
                pieces.push(Value::Const(fold::fill(&block, &value.data)));
            }
            Some((lo, hi)) => {
                let one = |lw: &mut Lowerer, i: usize| -> Result<Value, ImportError> {
                    let mut parts: Vec<AxisSlice> =
                        cur_shape.iter().map(|&n| AxisSlice { start: 0, count: n, step: 1 }).collect();
                    parts[d] = AxisSlice { start: i as i64, count: 1, step: 1 };
                    slice_value(lw, ctx, &cur, &parts, &Dest::Scratch(format!("{output}.pad{d}.at{i}")))
                };
                for &i in lo {
                    pieces.push(one(lw, i)?);
                }
                pieces.push(cur.clone());
                for &i in hi {
                    pieces.push(one(lw, i)?);
                }
            }
        }
        let dest = if k + 1 == padded.len() { Dest::Output(0) } else { Dest::Scratch(format!("{output}.pad{d}")) };
        cur = concat_along(lw, ctx, &pieces, d, &dest)?;
        cur_shape = value_shape(&cur);
    }
    lw.define(ctx, 0, cur)
}

/// `pieces` (same shape but along `d`) back to back along axis `d`:
/// folded when all are constants, else one `Concat` into `dest`.
pub(super) fn concat_along(
    lw: &mut Lowerer,
    ctx: &NodeCtx<'_>,
    pieces: &[Value],
    d: usize,
    dest: &Dest,
) -> Result<Value, ImportError> {
    let mut out_shape = value_shape(&pieces[0]);
    out_shape[d] = pieces.iter().map(|p| value_shape(p)[d]).sum();
    let outer = numel(ctx, &out_shape[..d])?;
    if out_shape.contains(&0) {
        let dtype = match &pieces[0] {
            Value::Const(c) => c.data.dtype(),
            Value::Data { storage, .. } => lw.storages[*storage].dtype,
        };
        return fold::empty(&out_shape, dtype)
            .map(Value::Const)
            .ok_or_else(|| ctx.err("empty tensors of this type are not supported"));
    }
    if pieces.iter().all(|p| matches!(p, Value::Const(_))) {
        let consts: Vec<&ConstTensor> = pieces
            .iter()
            .map(|p| match p {
                Value::Const(c) => c,
                Value::Data { .. } => unreachable!("all constant"),
            })
            .collect();
        let data = concat_consts(&consts, d, outer).ok_or_else(|| ctx.err("pieces differ in type"))?;
        return Ok(Value::Const(ConstTensor { shape: out_shape, data }));
    }
    let mut inputs = Vec::new();
    let mut inner = Vec::new();
    let mut dtype = None;
    let after_rows = numel(ctx, &out_shape[d + 1..])?;
    let name = ctx.node.output.first().cloned().unwrap_or_default();
    for (j, piece) in pieces.iter().enumerate() {
        // Pieces with no elements add nothing.
        let (id, shape) = match piece {
            Value::Const(c) if c.data.is_empty() => continue,
            Value::Const(c) => (lw.add_param(&format!("{name}.along{d}.{j}"), c)?, c.shape.clone()),
            Value::Data { shape, .. } if shape.contains(&0) => continue,
            Value::Data { storage, shape } => (*storage, shape.clone()),
        };
        let t = lw.storages[id].dtype;
        if *dtype.get_or_insert(t) != t {
            return Err(ctx.err("inputs differ in type"));
        }
        inputs.push(id);
        inner.push(shape[d] * after_rows);
    }
    let dtype = dtype.expect("a piece with elements, or the output would be empty");
    let dst = dest_storage(lw, ctx, dest, out_shape.clone(), dtype)?;
    lw.emit(ctx, Thunk::Concat { inputs, dst, outer, inner, elem_bytes: dtype.size() });
    Ok(Value::Data { storage: dst, shape: out_shape })
}

/// `ConstantOfShape`: always a constant.
pub(super) fn constant_of_shape(lw: &mut Lowerer, ctx: &NodeCtx<'_>) -> R {
    ctx.expect_arity(1, 1)?;
    let (_, dims) = lw.const_ints(ctx, 0)?;
    let shape: Vec<usize> = dims
        .iter()
        .map(|&d| usize::try_from(d).map_err(|_| ctx.err(format!("shape {dims:?} has a negative dim"))))
        .collect::<Result<_, _>>()?;
    let value = match ctx.tensor_attr("value") {
        Some(t) => read_tensor(t, std::path::Path::new(".")).map_err(|e| ctx.bad_attr("value", e.to_string()))?,
        None => ConstTensor { shape: vec![1], data: ConstData::F32(vec![0.0]) },
    };
    if value.data.len() != 1 {
        return Err(ctx.bad_attr("value", "must hold one element"));
    }
    fold::check_size(ctx, &shape)?;
    lw.define(ctx, 0, Value::Const(fold::fill(&shape, &value.data)))
}

/// `Range(start, limit, delta)`: always a constant.
pub(super) fn range(lw: &mut Lowerer, ctx: &NodeCtx<'_>) -> R {
    ctx.expect_arity(3, 3)?;
    let mut scalars = Vec::new();
    for i in 0..3 {
        let c = lw.const_input(ctx, i)?.ok_or_else(|| ctx.err(format!("input {i} must be known at import time")))?;
        if c.data.len() != 1 {
            return Err(ctx.err(format!("input {i} must be a scalar")));
        }
        scalars.push(c);
    }
    let dtype = scalars[0].data.dtype();
    let data = match dtype {
        DType::F32 => {
            let v: Vec<f64> = scalars.iter().map(|c| c.data.to_f64()[0]).collect();
            let (start, limit, delta) = (v[0] as f32, v[1] as f32, v[2] as f32);
            let n = ((limit - start) / delta).ceil().max(0.0) as usize;
            fold::check_size(ctx, &[n])?;
            // The spec's loop: each element adds delta to the previous.
            let mut out = Vec::with_capacity(n);
            let mut x = start;
            for _ in 0..n {
                out.push(x);
                x += delta;
            }
            ConstData::F32(out)
        }
        _ => {
            let v: Vec<i64> = scalars.iter().map(|c| c.data.ints().expect("integer")[0]).collect();
            let (start, limit, delta) = (v[0], v[1], v[2]);
            if delta == 0 {
                return Err(ctx.err("delta is 0"));
            }
            let n = ((limit - start) as f64 / delta as f64).ceil().max(0.0) as usize;
            fold::check_size(ctx, &[n])?;
            ConstData::from_ints(dtype, (0..n as i64).map(|k| start + k * delta)).expect("integer type")
        }
    };
    lw.define(ctx, 0, Value::Const(ConstTensor { shape: vec![data.len()], data }))
}
