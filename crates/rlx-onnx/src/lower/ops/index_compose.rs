//! Ops composed from an index computation and one `GatherElements` or
//! `ScatterElements` (run-time indices, bounds checked by the kernels):
//! `ReverseSequence`, `MaxUnpool` and `TensorScatter`.

use crate::error::ImportError;
use crate::lower::arith::shape::normalize_axis;
use crate::lower::build::{numel, R};
use crate::lower::{Lowerer, NodeCtx, Value};
use crate::proto::{AttributeProto, AttributeType};
use crate::tensor::{ConstData, ConstTensor};

fn int_attr(name: &str, i: i64) -> AttributeProto {
    AttributeProto { name: name.to_string(), r#type: AttributeType::Int as i32, i, ..Default::default() }
}

fn i64s(shape: Vec<usize>, v: Vec<i64>) -> ConstTensor {
    ConstTensor { shape, data: ConstData::I64(v) }
}

fn shape_of(lw: &Lowerer, ctx: &NodeCtx<'_>, i: usize) -> Result<Vec<usize>, ImportError> {
    let (_, v) = lw.input(ctx, i)?;
    Ok(match v {
        Value::Data { shape, .. } | Value::Const(ConstTensor { shape, .. }) => shape,
    })
}

/// A shape of `rank` ones but `dim` at `axis`.
fn along(rank: usize, axis: usize, dim: usize) -> Vec<usize> {
    (0..rank).map(|a| if a == axis { dim } else { 1 }).collect()
}

/// A named step of the composition.
fn step(
    lw: &mut Lowerer,
    ctx: &NodeCtx<'_>,
    op: &str,
    inputs: &[&str],
    what: &str,
    attrs: Vec<AttributeProto>,
) -> Result<String, ImportError> {
    let out = lw.internal_name(&ctx.node.output[0], what);
    lw.lower_part(ctx, op, inputs, &[&out], attrs)?;
    Ok(out)
}

/// `ReverseSequence`: along `time_axis`, the first `sequence_lens[b]`
/// steps of each batch entry reversed, the rest kept. The source step of
/// output step `t` in batch `b` is `len[b] - 1 - t` when `t < len[b]`,
/// else `t`: computed at run time from the lengths, then one
/// `GatherElements`.
pub(crate) fn reverse_sequence(lw: &mut Lowerer, ctx: &NodeCtx<'_>) -> R {
    ctx.expect_arity(2, 2)?;
    let shape = shape_of(lw, ctx, 0)?;
    let rank = shape.len();
    let (batch_axis, time_axis) = (ctx.int_attr("batch_axis", 1)?, ctx.int_attr("time_axis", 0)?);
    let (b_ax, t_ax) = match (usize::try_from(batch_axis), usize::try_from(time_axis)) {
        (Ok(b), Ok(t)) if rank >= 2 && b < 2 && t < 2 && b != t => (b, t),
        _ => {
            return Err(ctx.err(format!(
                "batch_axis {batch_axis} and time_axis {time_axis} must be 0 and 1 in some order (rank {rank})"
            )))
        }
    };
    let (batch, steps) = (shape[b_ax], shape[t_ax]);
    if shape_of(lw, ctx, 1)? != [batch] {
        return Err(ctx.err(format!("sequence_lens must have shape [{batch}]")));
    }
    let out = ctx.node.output[0].clone();
    let lens_shape =
        lw.constant(&out, "lens_shape", i64s(vec![rank], along(rank, b_ax, batch).iter().map(|&d| d as i64).collect()));
    let lens = step(lw, ctx, "Reshape", &[&ctx.node.input[1], &lens_shape], "lens", Vec::new())?;
    let t = lw.constant(&out, "steps", i64s(along(rank, t_ax, steps), (0..steps as i64).collect()));
    let one = lw.constant(&out, "one", i64s(vec![], vec![1]));
    let last = step(lw, ctx, "Sub", &[&lens, &one], "last", Vec::new())?;
    let mirrored = step(lw, ctx, "Sub", &[&last, &t], "mirrored", Vec::new())?;
    let inside = step(lw, ctx, "Less", &[&t, &lens], "inside", Vec::new())?;
    let source = step(lw, ctx, "Where", &[&inside, &mirrored, &t], "source", Vec::new())?;
    let full = lw.constant(&out, "full_shape", i64s(vec![rank], shape.iter().map(|&d| d as i64).collect()));
    let indices = step(lw, ctx, "Expand", &[&source, &full], "indices", Vec::new())?;
    lw.lower_part(ctx, "GatherElements", &[&ctx.node.input[0], &indices], &[&out], vec![int_attr("axis", t_ax as i64)])
}

/// `MaxUnpool`: `X`'s values scattered to the flat positions `I` (as
/// `MaxPool` gives them, over the whole tensor) of a zero tensor of the
/// unpooled shape (`(in - 1) * stride + kernel - pads` per spatial axis),
/// zero-padded at the end to `output_shape` when one is given.
pub(crate) fn max_unpool(lw: &mut Lowerer, ctx: &NodeCtx<'_>) -> R {
    ctx.expect_arity(2, 3)?;
    let xs = shape_of(lw, ctx, 0)?;
    if shape_of(lw, ctx, 1)? != xs || xs.len() < 3 {
        return Err(ctx.err(format!("X {xs:?} and I must have one shape of rank 3 or more")));
    }
    let spatial = xs.len() - 2;
    let kernel = ctx.ints_attr("kernel_shape")?.ok_or_else(|| ctx.bad_attr("kernel_shape", "is missing"))?.to_vec();
    let strides = ctx.ints_attr("strides")?.map_or(vec![1; spatial], <[i64]>::to_vec);
    let pads = ctx.ints_attr("pads")?.map_or(vec![0; 2 * spatial], <[i64]>::to_vec);
    if kernel.len() != spatial || strides.len() != spatial || pads.len() != 2 * spatial {
        return Err(ctx.err(format!("kernel_shape, strides and pads must cover the {spatial} spatial axes")));
    }
    // Indices address the inferred shape; an `output_shape` at least as
    // large holds it in its leading corner (zeros around), as the spec's
    // reference places it.
    let mut inferred = xs[..2].to_vec();
    for a in 0..spatial {
        let d = i64::try_from(xs[2 + a])
            .ok()
            .and_then(|x| (x - 1).checked_mul(strides[a]))
            .and_then(|d| d.checked_add(kernel[a]))
            .and_then(|d| d.checked_sub(pads[a]))
            .and_then(|d| d.checked_sub(pads[spatial + a]))
            .ok_or_else(|| ctx.err(format!("the unpooled size of spatial axis {a} overflows int64")))?;
        inferred.push(usize::try_from(d).map_err(|_| ctx.err(format!("spatial axis {a} unpools to {d}")))?);
    }
    let out_shape: Vec<usize> = match ctx.input_name(2) {
        Some(_) => {
            let (_, v) = lw.const_ints(ctx, 2)?;
            v.iter()
                .map(|&d| usize::try_from(d).map_err(|_| ctx.err(format!("output_shape {v:?} is negative"))))
                .collect::<Result<_, _>>()?
        }
        None => inferred.clone(),
    };
    if out_shape.len() != xs.len() || out_shape.iter().zip(&inferred).any(|(o, i)| o < i) || out_shape[..2] != xs[..2] {
        return Err(ctx.err(format!(
            "output_shape {out_shape:?} must keep X's {xs:?} batch and channels and hold the unpooled {inferred:?}"
        )));
    }
    let out = ctx.node.output[0].clone();
    let total = numel(ctx, &inferred)?;
    lw.reserve_table(ctx, "the zero tensor it scatters into", &[total], 4)?;
    let flat = lw.constant(&out, "flat", i64s(vec![1], vec![-1]));
    let zeros = lw.constant(&out, "zeros", ConstTensor { shape: vec![total], data: ConstData::F32(vec![0.0; total]) });
    let values = step(lw, ctx, "Reshape", &[&ctx.node.input[0], &flat], "values", Vec::new())?;
    let positions = step(lw, ctx, "Reshape", &[&ctx.node.input[1], &flat], "positions", Vec::new())?;
    let scattered =
        step(lw, ctx, "ScatterElements", &[&zeros, &positions, &values], "scattered", vec![int_attr("axis", 0)])?;
    let shape = lw.constant(&out, "shape", i64s(vec![inferred.len()], inferred.iter().map(|&d| d as i64).collect()));
    if out_shape == inferred {
        return lw.lower_part(ctx, "Reshape", &[&scattered, &shape], &[&out], Vec::new());
    }
    let unpooled = step(lw, ctx, "Reshape", &[&scattered, &shape], "unpooled", Vec::new())?;
    let rank = inferred.len();
    let mut grow = vec![0i64; 2 * rank];
    for d in 0..rank {
        grow[rank + d] = (out_shape[d] - inferred[d]) as i64;
    }
    let grow = lw.constant(&out, "grow", i64s(vec![2 * rank], grow));
    lw.lower_part(ctx, "Pad", &[&unpooled, &grow], &[&out], Vec::new())
}

/// `TensorScatter` (opset 24): `update` written into `past_cache` along
/// `axis` (default -2) from each batch entry's `write_indices[b]` (0
/// without them), wrapping around the cache in `circular` mode: one
/// `ScatterElements` with indices computed at run time.
pub(crate) fn tensor_scatter(lw: &mut Lowerer, ctx: &NodeCtx<'_>) -> R {
    ctx.expect_arity(2, 3)?;
    let (cache, update) = (shape_of(lw, ctx, 0)?, shape_of(lw, ctx, 1)?);
    let rank = cache.len();
    let a = ctx.int_attr("axis", -2)?;
    let axis = normalize_axis(a, rank, 0)
        .filter(|&x| x > 0)
        .ok_or_else(|| ctx.bad_attr("axis", format!("{a} is not a sequence axis of rank {rank}")))?;
    let circular = match ctx.string_attr("mode")?.as_deref().unwrap_or("linear") {
        "linear" => false,
        "circular" => true,
        other => return Err(ctx.bad_attr("mode", format!("is `{other}`; linear or circular"))),
    };
    let same_but_axis = update.len() == rank && (0..rank).all(|d| d == axis || update[d] == cache[d]);
    if !same_but_axis || update[axis] > cache[axis] {
        return Err(ctx.err(format!("update {update:?} does not fit the cache {cache:?} along axis {axis}")));
    }
    let (batch, steps, max_len) = (cache[0], update[axis], cache[axis]);
    let out = ctx.node.output[0].clone();
    let t = lw.constant(&out, "steps", i64s(along(rank, axis, steps), (0..steps as i64).collect()));
    let mut index = t;
    if let Some(w) = ctx.input_name(2) {
        if shape_of(lw, ctx, 2)? != [batch] {
            return Err(ctx.err(format!("write_indices must have shape [{batch}]")));
        }
        let start_shape = lw.constant(
            &out,
            "start_shape",
            i64s(vec![rank], along(rank, 0, batch).iter().map(|&d| d as i64).collect()),
        );
        let start = step(lw, ctx, "Reshape", &[w, &start_shape], "start", Vec::new())?;
        index = step(lw, ctx, "Add", &[&start, &index], "position", Vec::new())?;
    }
    if circular {
        let len = lw.constant(&out, "cache_len", i64s(vec![], vec![max_len as i64]));
        index = step(lw, ctx, "Mod", &[&index, &len], "wrapped", Vec::new())?;
    }
    let full = lw.constant(&out, "update_shape", i64s(vec![rank], update.iter().map(|&d| d as i64).collect()));
    let indices = step(lw, ctx, "Expand", &[&index, &full], "indices", Vec::new())?;
    lw.lower_part(
        ctx,
        "ScatterElements",
        &[&ctx.node.input[0], &indices, &ctx.node.input[1]],
        &[&out],
        vec![int_attr("axis", axis as i64)],
    )
}
