//! `Resize` (opset 11 on): nearest, linear and cubic, every coordinate
//! transformation (`tf_crop_and_resize` with its `roi` and
//! `extrapolation_value`), `antialias`, `exclude_outside`, `cubic_coeff_a`,
//! by `scales` or `sizes` (with `keep_aspect_ratio_policy`). Every mode is
//! separable as ONNX's reference computes it (it resizes one axis at a
//! time), so an N-D resize is one `Resize` thunk per axis that changes
//! (innermost first), each computing its source coordinates from the
//! axis' own scale and roi.

use rlx_sched::{DType, ResizeCoord, ResizeMode, Thunk};

use crate::error::ImportError;
use crate::lower::arith::shape::normalize_axis;
use crate::lower::build::{copy_thunk, numel, R};
use crate::lower::{Lowerer, NodeCtx, Value};
use crate::tensor::ConstData;
use rlx_sched::thunk::Resize;

/// How one axis is resized: the output size, the scale as the thunk holds
/// it (`by_size`: the exact ratio `out / in` instead), and the roi.
#[derive(Clone, Copy)]
struct AxisPlan {
    out: usize,
    scale: f32,
    by_size: bool,
    roi: (f32, f32),
}

/// The attributes that apply to every axis alike.
struct Filter {
    mode: ResizeMode,
    coord: ResizeCoord,
    cubic_a: f32,
    exclude_outside: bool,
    antialias: bool,
    extrapolation: f32,
}

pub(crate) fn resize(lw: &mut Lowerer, ctx: &NodeCtx<'_>) -> R {
    if lw.opset < 11 {
        return Err(ctx.err("Resize before opset 11 (asymmetric, no coordinate modes) is not supported"));
    }
    ctx.expect_arity(1, 4)?;
    let (x, shape) = lw.data_input(ctx, 0)?;
    let rank = shape.len();
    let filter = filter(ctx)?;
    // The axes `roi`, `scales` and `sizes` list (all, in order, by default).
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
                ConstData::I64(v) if i != 1 => Ok(Some(v.into_iter().map(|s| s as f32).collect())),
                _ => Err(ctx.err(format!("input {i} has an unexpected type"))),
            },
            None => Err(ctx.err(format!("input {i} (roi, scales or sizes) must be a constant known at import time"))),
        }
    };
    // The roi only matters to `tf_crop_and_resize` (the reference ignores it otherwise).
    let crop = filter.coord == ResizeCoord::TfCropAndResize;
    let (roi, scales, sizes) = (if crop { floats(1)? } else { None }, floats(2)?, floats(3)?);
    let mut plan: Vec<AxisPlan> =
        shape.iter().map(|&d| AxisPlan { out: d, scale: 1.0, by_size: false, roi: (0.0, 1.0) }).collect();
    match (scales, sizes) {
        (Some(s), None) if s.len() == axes.len() => {
            for (&a, &s) in axes.iter().zip(&s) {
                if !(s.is_finite() && s > 0.0) {
                    return Err(ctx.err(format!("scale {s} of axis {a} must be positive and finite")));
                }
                plan[a].out = (shape[a] as f64 * f64::from(s)).floor() as usize;
                plan[a].scale = s;
            }
        }
        (None, Some(z)) if z.len() == axes.len() => by_sizes(ctx, &shape, &axes, &z, &mut plan)?,
        _ => return Err(ctx.err(format!("expected either scales or sizes with {} values", axes.len()))),
    }
    if crop {
        let roi = roi.ok_or_else(|| ctx.err("tf_crop_and_resize needs the roi input (input 1)"))?;
        if roi.len() != 2 * axes.len() {
            return Err(ctx.err(format!(
                "roi has {} values; expected {} (start and end per axis)",
                roi.len(),
                2 * axes.len()
            )));
        }
        for (k, &a) in axes.iter().enumerate() {
            let (start, end) = (roi[k], roi[axes.len() + k]);
            if !(start.is_finite() && end.is_finite()) {
                return Err(ctx.err(format!("roi [{start}, {end}] of axis {a} must be finite")));
            }
            plan[a].roi = (start, end);
        }
    }
    let out_shape: Vec<usize> = plan.iter().map(|p| p.out).collect();
    if numel(ctx, &out_shape)? == 0 || numel(ctx, &shape)? == 0 {
        return Err(ctx.err(format!("resizing {shape:?} to {out_shape:?}: empty tensors are not supported")));
    }
    // As the reference, an axis is left alone when its size, scale and
    // roi are the identity's.
    let changed: Vec<usize> = (0..rank)
        .rev()
        .filter(|&a| {
            let p = plan[a];
            p.out != shape[a] || (!p.by_size && p.scale != 1.0) || p.roi != (0.0, 1.0)
        })
        .collect();
    let name = ctx.node.output[0].clone();
    let dst = lw.output_storage(ctx, 0, out_shape.clone())?;
    if changed.is_empty() {
        lw.emit(ctx, copy_thunk(x, dst, &shape, DType::F32));
        return lw.define(ctx, 0, Value::Data { storage: dst, shape: out_shape });
    }
    let (mut cur, mut cur_shape) = (x, shape.clone());
    for (step, &a) in changed.iter().enumerate() {
        let p = plan[a];
        let mut next_shape = cur_shape.clone();
        next_shape[a] = p.out;
        let next = if step + 1 == changed.len() {
            dst
        } else {
            lw.scratch_storage(&format!("{name}.axis{a}"), next_shape.clone(), DType::F32)?
        };
        lw.emit(
            ctx,
            Thunk::Resize(Resize {
                src: cur,
                dst: next,
                outer: numel(ctx, &cur_shape[..a])?,
                in_len: cur_shape[a],
                out_len: p.out,
                inner: numel(ctx, &cur_shape[a + 1..])?,
                scale: p.scale,
                by_size: p.by_size,
                mode: filter.mode,
                coord: filter.coord,
                cubic_a: filter.cubic_a,
                exclude_outside: filter.exclude_outside,
                antialias: filter.antialias,
                roi_start: p.roi.0,
                roi_end: p.roi.1,
                extrapolation: filter.extrapolation,
            }),
        );
        (cur, cur_shape) = (next, next_shape);
    }
    lw.define(ctx, 0, Value::Data { storage: dst, shape: out_shape })
}

/// The per-axis plan from `sizes`: with the `stretch` policy each axis its
/// own exact ratio `size / in`; with `not_larger` / `not_smaller` one scale
/// for every listed axis, the smallest / largest of those ratios, and
/// output sizes `floor(scale * in + 0.5)` (the reference's arithmetic, in
/// f64). That common scale must reach the kernel exactly: as the axis'
/// own ratio `out / in` when it equals it (always so for the axis it came
/// from), else as an f32 when it is one; otherwise the import fails, since
/// a rounded scale would move coordinates that fall on a tie.
fn by_sizes(
    ctx: &NodeCtx<'_>,
    shape: &[usize],
    axes: &[usize],
    sizes: &[f32],
    plan: &mut [AxisPlan],
) -> Result<(), ImportError> {
    for (&a, &z) in axes.iter().zip(sizes) {
        if z < 1.0 || shape[a] == 0 {
            return Err(ctx.err(format!("size {z} of axis {a} must be positive (input {})", shape[a])));
        }
    }
    let policy = ctx.string_attr("keep_aspect_ratio_policy")?.unwrap_or_else(|| "stretch".to_string());
    let ratios = axes.iter().zip(sizes).map(|(&a, &z)| f64::from(z) / shape[a] as f64);
    let common = match policy.as_str() {
        "stretch" => None,
        "not_larger" => ratios.reduce(f64::min),
        "not_smaller" => ratios.reduce(f64::max),
        other => {
            return Err(ctx.bad_attr("keep_aspect_ratio_policy", format!("`{other}` is not supported")));
        }
    };
    for (&a, &z) in axes.iter().zip(sizes) {
        let Some(scale) = common else {
            // The kernel takes the exact ratio; the f32 one is informative.
            plan[a] = AxisPlan { out: z as usize, scale: z / shape[a] as f32, by_size: true, ..plan[a] };
            continue;
        };
        let out = (scale * shape[a] as f64 + 0.5).floor() as usize;
        let narrow = scale as f32;
        plan[a] = if out as f64 / shape[a] as f64 == scale {
            AxisPlan { out, scale: narrow, by_size: true, ..plan[a] }
        } else if f64::from(narrow) == scale {
            AxisPlan { out, scale: narrow, by_size: false, ..plan[a] }
        } else {
            return Err(ctx.bad_attr(
                "keep_aspect_ratio_policy",
                format!(
                    "`{policy}`: the common scale {scale} is neither an f32 nor axis {a}'s own ratio {out}/{}, \
                     so it cannot be passed on exactly; not supported",
                    shape[a]
                ),
            ));
        };
    }
    Ok(())
}

/// `mode`, `coordinate_transformation_mode` and the filter attributes.
fn filter(ctx: &NodeCtx<'_>) -> Result<Filter, ImportError> {
    let mode = resize_mode(ctx)?;
    let coord = match ctx.string_attr("coordinate_transformation_mode")?.as_deref().unwrap_or("half_pixel") {
        "half_pixel" => ResizeCoord::HalfPixel,
        "half_pixel_symmetric" => ResizeCoord::HalfPixelSymmetric,
        "pytorch_half_pixel" => ResizeCoord::PytorchHalfPixel,
        "align_corners" => ResizeCoord::AlignCorners,
        "asymmetric" => ResizeCoord::Asymmetric,
        "tf_crop_and_resize" => ResizeCoord::TfCropAndResize,
        other => {
            return Err(ctx.bad_attr("coordinate_transformation_mode", format!("`{other}` is not supported")));
        }
    };
    let nearest = !matches!(mode, ResizeMode::Linear | ResizeMode::Cubic);
    let antialias = ctx.int_attr("antialias", 0)? != 0;
    if antialias && nearest {
        return Err(ctx.bad_attr("antialias", "is 1 with mode `nearest`; only linear and cubic are antialiased"));
    }
    // With nearest, a picked sample outside the input would get weight 0
    // and be renormalized by a sum of 0: the spec leaves it undefined.
    let exclude_outside = ctx.int_attr("exclude_outside", 0)? != 0;
    if exclude_outside && nearest {
        return Err(ctx.bad_attr("exclude_outside", "is 1 with mode `nearest`; only linear and cubic are supported"));
    }
    let cubic_a = ctx.float_attr("cubic_coeff_a", -0.75)?;
    if !cubic_a.is_finite() {
        return Err(ctx.bad_attr("cubic_coeff_a", format!("{cubic_a} must be finite")));
    }
    let extrapolation = ctx.float_attr("extrapolation_value", 0.0)?;
    Ok(Filter { mode, coord, cubic_a, exclude_outside, antialias, extrapolation })
}

fn resize_mode(ctx: &NodeCtx<'_>) -> Result<ResizeMode, ImportError> {
    match ctx.string_attr("mode")?.as_deref().unwrap_or("nearest") {
        "linear" => Ok(ResizeMode::Linear),
        "cubic" => Ok(ResizeMode::Cubic),
        "nearest" => match ctx.string_attr("nearest_mode")?.as_deref().unwrap_or("round_prefer_floor") {
            "round_prefer_floor" => Ok(ResizeMode::NearestRoundPreferFloor),
            "round_prefer_ceil" => Ok(ResizeMode::NearestRoundPreferCeil),
            "floor" => Ok(ResizeMode::NearestFloor),
            "ceil" => Ok(ResizeMode::NearestCeil),
            other => Err(ctx.bad_attr("nearest_mode", format!("`{other}` is not supported"))),
        },
        other => Err(ctx.bad_attr("mode", format!("`{other}` is not supported (nearest, linear and cubic are)"))),
    }
}
