//! `Slice` and `Split`: a part that is one contiguous run of its input is
//! a *view* (zero copy: the storage `base+offset`); one cut axis between
//! whole ones is a `Narrow` row copy; anything else one strided
//! `Transpose`; negative steps add a `GatherAxis` per backward axis. On
//! constants everything folds.

use crate::error::ImportError;
use crate::lower::arith::shape::normalize_axis;
use crate::lower::build::{slice_value, value_shape, AxisSlice, Dest, R};
use crate::lower::{Lowerer, NodeCtx, Value};

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

/// Defines output `i` as the slice `parts` of `input`.
fn emit_slice(lw: &mut Lowerer, ctx: &NodeCtx<'_>, i: usize, input: &Value, parts: &[AxisSlice]) -> R {
    let v = slice_value(lw, ctx, input, parts, &Dest::Output(i))?;
    lw.define(ctx, i, v)
}

/// `Slice` (opset 10+: bounds as constant inputs; before: attributes).
pub(crate) fn slice(lw: &mut Lowerer, ctx: &NodeCtx<'_>) -> R {
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
pub(crate) fn split(lw: &mut Lowerer, ctx: &NodeCtx<'_>) -> R {
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
