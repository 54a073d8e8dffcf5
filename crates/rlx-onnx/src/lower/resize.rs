//! `Resize` (opset 11 on): nearest and linear, every coordinate
//! transformation except `tf_crop_and_resize`, by `scales` or `sizes`.
//! Both modes are separable, so an N-D resize is one `Resize` thunk per
//! axis whose size or scale changes (innermost first), each computing its
//! source coordinates from the axis' own scale as the spec does.

use rlx_sched::{DType, ResizeCoord, ResizeMode, Thunk};

use super::ops::{copy_thunk, numel, R};
use super::shape::normalize_axis;
use super::{Lowerer, NodeCtx, Value};
use crate::error::ImportError;
use crate::tensor::ConstData;

pub(super) fn resize(lw: &mut Lowerer, ctx: &NodeCtx<'_>) -> R {
    if lw.opset < 11 {
        return Err(ctx.err("Resize before opset 11 (asymmetric, no coordinate modes) is not supported"));
    }
    ctx.expect_arity(1, 4)?;
    let (x, shape) = lw.data_input(ctx, 0)?;
    let rank = shape.len();
    let mode = resize_mode(ctx)?;
    let coord = match ctx.string_attr("coordinate_transformation_mode")?.as_deref().unwrap_or("half_pixel") {
        "half_pixel" => ResizeCoord::HalfPixel,
        "half_pixel_symmetric" => ResizeCoord::HalfPixelSymmetric,
        "pytorch_half_pixel" => ResizeCoord::PytorchHalfPixel,
        "align_corners" => ResizeCoord::AlignCorners,
        "asymmetric" => ResizeCoord::Asymmetric,
        other => {
            return Err(ctx.bad_attr("coordinate_transformation_mode", format!("`{other}` is not supported")));
        }
    };
    if ctx.int_attr("antialias", 0)? != 0 {
        return Err(ctx.bad_attr("antialias", "is not supported"));
    }
    let policy = ctx.string_attr("keep_aspect_ratio_policy")?.unwrap_or_else(|| "stretch".to_string());
    if policy != "stretch" {
        return Err(ctx.bad_attr("keep_aspect_ratio_policy", format!("`{policy}` is not supported (only stretch)")));
    }
    // The axes `scales`/`sizes` list (all, in order, by default).
    let axes: Vec<usize> = match ctx.ints_attr("axes")? {
        None => (0..rank).collect(),
        Some(list) => list
            .iter()
            .map(|&a| normalize_axis(a, rank, 0).ok_or_else(|| ctx.bad_attr("axes", format!("{a} is out of range"))))
            .collect::<Result<_, _>>()?,
    };
    let floats = |i: usize| -> Result<Option<Vec<f32>>, ImportError> {
        if ctx.input_name(i).is_none() {
            return Ok(None);
        }
        match lw.const_input(ctx, i)? {
            Some(c) if c.data.is_empty() => Ok(None),
            Some(c) => match c.data {
                ConstData::F32(v) => Ok(Some(v)),
                ConstData::I64(v) => Ok(Some(v.into_iter().map(|s| s as f32).collect())),
                _ => Err(ctx.err(format!("input {i} has an unexpected type"))),
            },
            None => Err(ctx.err(format!("input {i} (scales or sizes) must be a constant known at import time"))),
        }
    };
    let (scales, sizes) = (floats(2)?, floats(3)?);
    // Per axis: (output size, scale, by size).
    let mut plan: Vec<(usize, f32, bool)> = shape.iter().map(|&d| (d, 1.0, false)).collect();
    match (scales, sizes) {
        (Some(s), None) if s.len() == axes.len() => {
            for (&a, &s) in axes.iter().zip(&s) {
                if !(s.is_finite() && s > 0.0) {
                    return Err(ctx.err(format!("scale {s} of axis {a} must be positive and finite")));
                }
                plan[a] = ((shape[a] as f64 * f64::from(s)).floor() as usize, s, false);
            }
        }
        (None, Some(z)) if z.len() == axes.len() => {
            for (&a, &z) in axes.iter().zip(&z) {
                if z < 1.0 || shape[a] == 0 {
                    return Err(ctx.err(format!("size {z} of axis {a} must be positive (input {})", shape[a])));
                }
                // The kernel takes the exact ratio; the f32 one is informative.
                plan[a] = (z as usize, z / shape[a] as f32, true);
            }
        }
        _ => return Err(ctx.err(format!("expected either scales or sizes with {} values", axes.len()))),
    }
    let out_shape: Vec<usize> = plan.iter().map(|p| p.0).collect();
    if numel(ctx, &out_shape)? == 0 || numel(ctx, &shape)? == 0 {
        return Err(ctx.err(format!("resizing {shape:?} to {out_shape:?}: empty tensors are not supported")));
    }
    let changed: Vec<usize> =
        (0..rank).rev().filter(|&a| plan[a].0 != shape[a] || (!plan[a].2 && plan[a].1 != 1.0)).collect();
    let name = ctx.node.output[0].clone();
    let dst = lw.output_storage(ctx, 0, out_shape.clone())?;
    if changed.is_empty() {
        lw.emit(ctx, copy_thunk(x, dst, &shape, DType::F32));
        return lw.define(ctx, 0, Value::Data { storage: dst, shape: out_shape });
    }
    let (mut cur, mut cur_shape) = (x, shape.clone());
    for (step, &a) in changed.iter().enumerate() {
        let mut next_shape = cur_shape.clone();
        next_shape[a] = plan[a].0;
        let next = if step + 1 == changed.len() {
            dst
        } else {
            lw.scratch_storage(&format!("{name}.axis{a}"), next_shape.clone(), DType::F32)?
        };
        lw.emit(
            ctx,
            Thunk::Resize {
                src: cur,
                dst: next,
                outer: numel(ctx, &cur_shape[..a])?,
                in_len: cur_shape[a],
                out_len: plan[a].0,
                inner: numel(ctx, &cur_shape[a + 1..])?,
                scale: plan[a].1,
                by_size: plan[a].2,
                mode,
                coord,
            },
        );
        (cur, cur_shape) = (next, next_shape);
    }
    lw.define(ctx, 0, Value::Data { storage: dst, shape: out_shape })
}

fn resize_mode(ctx: &NodeCtx<'_>) -> Result<ResizeMode, ImportError> {
    match ctx.string_attr("mode")?.as_deref().unwrap_or("nearest") {
        "linear" => Ok(ResizeMode::Linear),
        "nearest" => match ctx.string_attr("nearest_mode")?.as_deref().unwrap_or("round_prefer_floor") {
            "round_prefer_floor" => Ok(ResizeMode::NearestRoundPreferFloor),
            "round_prefer_ceil" => Ok(ResizeMode::NearestRoundPreferCeil),
            "floor" => Ok(ResizeMode::NearestFloor),
            "ceil" => Ok(ResizeMode::NearestCeil),
            other => Err(ctx.bad_attr("nearest_mode", format!("`{other}` is not supported"))),
        },
        other => Err(ctx.bad_attr("mode", format!("`{other}` is not supported (nearest and linear are)"))),
    }
}
