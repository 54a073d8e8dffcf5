//! Ops that move elements without computing on them, for every carried
//! type: `Transpose`, `Expand`, `Concat`, `Gather`, `Pad`, plus the
//! always-constant `ConstantOfShape` and `Range` (`Slice` and `Split`:
//! [`crate::lower::build::slice`]). On constants everything folds.

use rlx_sched::plan::{canonical_pad, pad_out_dims, PAD_MAX_RANK};
use rlx_sched::{DType, PadMode, Thunk};

use crate::lower::arith::fold;
use crate::lower::arith::shape::{broadcast, normalize_axis, row_major_strides};
use crate::lower::build::{
    broadcast_thunk, concat_along, define_if_empty, dest_storage, numel, pad_fold, slice_value, strided_indices,
    value_shape, AxisSlice, Dest, R,
};
use crate::lower::{Lowerer, NodeCtx, Value};
use crate::tensor::{data_type_name, dtype_of, read_tensor, ConstData, ConstTensor, CARRIED_TYPES};
use rlx_sched::thunk::{Gather, GatherAxis, Pad, Transpose};

/// `Expand`: numpy broadcast of the input with the shape input (either
/// side may have the 1s); the same shape is a view.
pub(crate) fn expand(lw: &mut Lowerer, ctx: &NodeCtx<'_>) -> R {
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
            fold::check_size(ctx, &out, c.data.dtype())?;
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
pub(crate) fn transpose(lw: &mut Lowerer, ctx: &NodeCtx<'_>) -> R {
    ctx.expect_arity(1, 1)?;
    let (_, input) = lw.input(ctx, 0)?;
    let s = value_shape(&input);
    let rank = s.len();
    let perm: Vec<usize> = match ctx.ints_attr("perm")? {
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
    // Moving only axes of size 1 changes the shape, not the order of the
    // elements: a view, as a `Reshape` is (`[1, seq, e]` to `[seq, 1, e]`).
    let moved: Vec<usize> = perm.iter().copied().filter(|&d| s[d] != 1).collect();
    if let (Value::Data { storage, .. }, true) = (&input, moved.windows(2).all(|w| w[0] < w[1])) {
        return lw.define(ctx, 0, Value::Data { storage: *storage, shape: out_dims });
    }
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
        Thunk::Transpose(Transpose {
            src,
            dst,
            in_total,
            out_dims: out_dims.clone(),
            in_strides,
            elem_bytes: dtype.size(),
        }),
    );
    lw.define(ctx, 0, Value::Data { storage: dst, shape: out_dims })
}

/// `Concat` of any carried type: constants fold; empty inputs add nothing.
pub(crate) fn concat(lw: &mut Lowerer, ctx: &NodeCtx<'_>) -> R {
    let n = ctx.node.input.len();
    if n == 0 {
        return Err(ctx.err("has no inputs"));
    }
    let values: Vec<Value> = (0..n).map(|i| lw.input(ctx, i).map(|(_, v)| v)).collect::<Result<_, _>>()?;
    let first = value_shape(&values[0]);
    let rank = first.len();
    let axis = ctx.int_attr("axis", 0)?;
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

/// `Gather`: of constants it folds; of data it is a row lookup (`Gather`,
/// f32 tables on axis 0) or `GatherAxis`.
pub(crate) fn gather(lw: &mut Lowerer, ctx: &NodeCtx<'_>) -> R {
    ctx.expect_arity(2, 2)?;
    let (_, data) = lw.input(ctx, 0)?;
    let shape = value_shape(&data);
    let rank = shape.len();
    let axis = ctx.int_attr("axis", 0)?;
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
    // One constant index in range on an outermost axis (every axis before
    // it of size 1) selects a contiguous run of the data: a view, no copy
    // (the query, key and value parts of a stacked projection).
    if let (Value::Data { .. }, Some(idx), 1) = (&data, lw.const_input(ctx, 1)?, outer) {
        if let Some(&[i]) = idx.data.ints().as_deref() {
            let j = if i < 0 { i + dim as i64 } else { i };
            if (0..dim as i64).contains(&j) {
                let mut parts: Vec<AxisSlice> =
                    shape.iter().map(|&d| AxisSlice { start: 0, count: d, step: 1 }).collect();
                parts[a] = AxisSlice { start: j, count: 1, step: 1 };
                let out_shape: Vec<usize> =
                    shape[..a].iter().chain(&idx.shape).chain(&shape[a + 1..]).copied().collect();
                let picked = match slice_value(lw, ctx, &data, &parts, &Dest::Output(0))? {
                    Value::Data { storage, .. } => Value::Data { storage, shape: out_shape },
                    Value::Const(c) => Value::Const(ConstTensor { shape: out_shape, data: c.data }),
                };
                return lw.define(ctx, 0, picked);
            }
        }
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
        Thunk::Gather(Gather { table, indices, dst, num_indices, row_len: inner, vocab: dim, index_dtype })
    } else {
        Thunk::GatherAxis(GatherAxis {
            src: table,
            indices,
            dst,
            outer,
            axis_dim: dim,
            inner,
            num_indices,
            elem_bytes: dtype.size(),
            index_dtype,
        })
    };
    lw.emit(ctx, thunk);
    lw.define(ctx, 0, Value::Data { storage: dst, shape: out_shape })
}

/// `Pad`, every mode: negative pads crop first (a view or a slice), then
/// one `Pad` thunk writes the padded tensor (`rlx_sched::plan::PAD_MAX_RANK`
/// axes at most: a higher rank pads its axes in groups, one thunk each);
/// on a constant it folds. A constant pad whose readers are all windows
/// becomes their padding instead (`pad_fold`).
pub(crate) fn pad(lw: &mut Lowerer, ctx: &NodeCtx<'_>) -> R {
    let mode_name = ctx.string_attr("mode")?.unwrap_or_else(|| "constant".to_string());
    let Some(mode) = PadMode::from_name(&mode_name) else {
        return Err(ctx.bad_attr("mode", format!("is `{mode_name}`; expected constant, edge, reflect or wrap")));
    };
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
        let pads = ctx.ints_attr("pads")?.ok_or_else(|| ctx.err("needs pads"))?.to_vec();
        let v = ConstTensor { shape: vec![], data: ConstData::F32(vec![ctx.float_attr("value", 0.0)?]) };
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
    if mode == PadMode::Constant {
        let (source, _) = lw.input(ctx, 0)?;
        if pad_fold::defer(lw, ctx, &source, &input, (&before, &after), &value) {
            return Ok(());
        }
    }
    let output = ctx.node.output.first().cloned().unwrap_or_default();
    let cropped = crop.iter().zip(&shape).any(|(p, &d)| p.count != d);
    let cur =
        if cropped { slice_value(lw, ctx, &input, &crop, &Dest::Scratch(format!("{output}.cropped")))? } else { input };
    let cur_shape = value_shape(&cur);
    let before: Vec<usize> = before.iter().map(|&p| p.max(0) as usize).collect();
    let after: Vec<usize> = after.iter().map(|&p| p.max(0) as usize).collect();
    for d in (0..rank).filter(|&d| before[d] > 0 || after[d] > 0) {
        let (b, e, len) = (before[d], after[d], cur_shape[d]);
        if mode != PadMode::Constant && len == 0 {
            return Err(ctx.err(format!("cannot pad an empty axis in `{mode_name}` mode")));
        }
        if mode == PadMode::Reflect && (b >= len || e >= len) {
            return Err(ctx.err(format!("reflect pads ({b}, {e}) must be below the axis size {len}")));
        }
    }
    let out_shape = pad_out_dims(&cur_shape, &before, &after)
        .ok_or_else(|| ctx.err(format!("pads {before:?} and {after:?} overflow the shape {cur_shape:?}")))?;
    if before.iter().chain(&after).all(|&p| p == 0) {
        return lw.define(ctx, 0, cur);
    }
    if define_if_empty(lw, ctx, &out_shape, dtype)? {
        return Ok(());
    }
    let storage = match cur {
        Value::Const(c) => {
            fold::check_size(ctx, &out_shape, dtype)?;
            let padded = fold::pad(&c, &before, &after, mode, &value.data).expect("pads checked above");
            return lw.define(ctx, 0, Value::Const(padded));
        }
        Value::Data { storage, .. } => storage,
    };
    // Zero bits are the kernel's default value; another one is a weight.
    let value = if mode == PadMode::Constant && value.data.to_le_bytes().iter().any(|&b| b != 0) {
        Some(lw.add_param(&format!("{output}.value"), &value)?)
    } else {
        None
    };
    let groups = pad_groups(&before, &after);
    let (mut src, mut src_shape) = (storage, cur_shape);
    for (k, axes) in groups.iter().enumerate() {
        let keep =
            |pads: &[usize]| -> Vec<usize> { (0..rank).map(|d| if axes.contains(&d) { pads[d] } else { 0 }).collect() };
        let (b, a) = (keep(&before), keep(&after));
        let shape = pad_out_dims(&src_shape, &b, &a).expect("within the output's dims");
        let dest = if k + 1 == groups.len() { Dest::Output(0) } else { Dest::Scratch(format!("{output}.pad{k}")) };
        let dst = dest_storage(lw, ctx, &dest, shape.clone(), dtype)?;
        // Past `PAD_MAX_RANK` axes the thunk names the canonical ones.
        let (dims, b, a) = if rank <= PAD_MAX_RANK {
            (src_shape.clone(), b, a)
        } else {
            let plan = canonical_pad(&src_shape, &b, &a);
            let with_unit = |mut v: Vec<usize>, unit: usize| {
                v.push(unit);
                v
            };
            (with_unit(plan.dims, plan.unit), with_unit(plan.before, 0), with_unit(plan.after, 0))
        };
        let thunk = Pad { src, value, dst, dims, before: b, after: a, mode, elem_bytes: dtype.size() };
        lw.emit(ctx, Thunk::Pad(thunk));
        (src, src_shape) = (dst, shape);
    }
    lw.define(ctx, 0, Value::Data { storage: src, shape: src_shape })
}

/// The padded axes in the groups one `Pad` thunk each takes: all of them
/// up to `PAD_MAX_RANK` axes, else three at a time (in canonical form a
/// group's thunk has its 3 padded axes, a run of unpadded ones before
/// each, and the unit: at most 7 axes).
fn pad_groups(before: &[usize], after: &[usize]) -> Vec<Vec<usize>> {
    let padded: Vec<usize> = (0..before.len()).filter(|&d| before[d] > 0 || after[d] > 0).collect();
    if before.len() <= PAD_MAX_RANK {
        return vec![padded];
    }
    padded.chunks(3).map(<[usize]>::to_vec).collect()
}

/// `ConstantOfShape`: always a constant.
pub(crate) fn constant_of_shape(lw: &mut Lowerer, ctx: &NodeCtx<'_>) -> R {
    ctx.expect_arity(1, 1)?;
    let (_, dims) = lw.const_ints(ctx, 0)?;
    let shape: Vec<usize> = dims
        .iter()
        .map(|&d| usize::try_from(d).map_err(|_| ctx.err(format!("shape {dims:?} has a negative dim"))))
        .collect::<Result<_, _>>()?;
    let value = match ctx.tensor_attr("value")? {
        Some(t) => read_tensor(t, std::path::Path::new(".")).map_err(|e| ctx.bad_attr("value", e.to_string()))?,
        None => ConstTensor { shape: vec![1], data: ConstData::F32(vec![0.0]) },
    };
    if value.data.len() != 1 {
        return Err(ctx.bad_attr("value", "must hold one element"));
    }
    fold::check_size(ctx, &shape, value.data.dtype())?;
    lw.define(ctx, 0, Value::Const(fold::fill(&shape, &value.data)))
}

/// `EyeLike`: ones on diagonal `k` (`j - i == k`) of a matrix shaped like
/// the 2-D input, zeros elsewhere, in `dtype` (default: the input's); the
/// input's values are not read, so the result is a constant.
pub(crate) fn eye_like(lw: &mut Lowerer, ctx: &NodeCtx<'_>) -> R {
    ctx.expect_arity(1, 1)?;
    let (_, input) = lw.input(ctx, 0)?;
    let shape = value_shape(&input);
    let &[rows, cols] = shape.as_slice() else {
        return Err(ctx.err(format!("the input must be 2-D, it has shape {shape:?}")));
    };
    let dtype = if ctx.has_attr("dtype") {
        let t = ctx.int_attr("dtype", 0)?;
        i32::try_from(t).ok().and_then(dtype_of).ok_or_else(|| {
            ctx.bad_attr("dtype", format!("is {} ({t}); supported: {}", data_type_name(t as i32), CARRIED_TYPES))
        })?
    } else {
        match &input {
            Value::Const(c) => c.data.dtype(),
            Value::Data { storage, .. } => lw.storages[*storage].dtype,
        }
    };
    let k = ctx.int_attr("k", 0)?;
    fold::check_size(ctx, &shape, dtype)?;
    let ones = (0..rows * cols).map(|at| i64::from((at % cols) as i64 - (at / cols) as i64 == k));
    let data = match dtype {
        DType::F32 => ConstData::F32(ones.map(|v| v as f32).collect()),
        other => ConstData::from_ints(other, ones).ok_or_else(|| ctx.err(format!("{} output", other.name())))?,
    };
    lw.define(ctx, 0, Value::Const(ConstTensor { shape, data }))
}

/// `Range(start, limit, delta)`: always a constant.
pub(crate) fn range(lw: &mut Lowerer, ctx: &NodeCtx<'_>) -> R {
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
            fold::check_size(ctx, &[n], dtype)?;
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
            fold::check_size(ctx, &[n], dtype)?;
            ConstData::from_ints(dtype, (0..n as i64).map(|k| start + k * delta)).expect("integer type")
        }
    };
    lw.define(ctx, 0, Value::Const(ConstTensor { shape: vec![data.len()], data }))
}
