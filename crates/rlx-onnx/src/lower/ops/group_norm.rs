//! `GroupNormalization` and `InstanceNormalization`: statistics over groups
//! of channels, spelled with existing kinds. Each `[n, group]` slice is one
//! `LayerNorm` row (unit scale, no shift), then one `BatchNormInference`
//! with mean 0, variance 1 and epsilon 0 applies the per-channel scale and
//! bias (`(x - 0) / sqrt(1 + 0)` is `x` exactly, so that pass is exactly
//! `x * scale[c] + bias[c]` as the kernel rounds it).

use rlx_sched::{DType, Thunk};

use crate::lower::build::{numel, R};
use crate::lower::{Lowerer, NodeCtx, Value};
use crate::tensor::{ConstData, ConstTensor};
use rlx_sched::thunk::{BatchNormInference, LayerNorm};

/// `GroupNormalization`: `num_groups` groups of `C / num_groups` channels.
/// Scale and bias are per channel from opset 21, per group before.
pub(crate) fn group_norm(lw: &mut Lowerer, ctx: &NodeCtx<'_>) -> R {
    ctx.expect_arity(3, 3)?;
    let stash = ctx.int_attr("stash_type", 1)?;
    if stash != 1 {
        return Err(ctx.bad_attr("stash_type", format!("is {stash}; only 1 (float) is supported")));
    }
    let groups = ctx.int_attr("num_groups", 0)?;
    let per_group_affine = lw.opset < 21;
    grouped(lw, ctx, Groups::Count(groups), per_group_affine)
}

/// `InstanceNormalization`: one group per channel.
pub(crate) fn instance_norm(lw: &mut Lowerer, ctx: &NodeCtx<'_>) -> R {
    ctx.expect_arity(3, 3)?;
    grouped(lw, ctx, Groups::PerChannel, false)
}

enum Groups {
    Count(i64),
    PerChannel,
}

fn grouped(lw: &mut Lowerer, ctx: &NodeCtx<'_>, groups: Groups, per_group_affine: bool) -> R {
    let eps = ctx.epsilon_attr()?;
    let (x, shape) = lw.data_input(ctx, 0)?;
    if shape.len() < 2 {
        return Err(ctx.err(format!("X has shape {shape:?}; expected [N, C, ...]")));
    }
    let (n, c) = (shape[0], shape[1]);
    let hw = numel(ctx, &shape[2..])?;
    if n * c * hw == 0 {
        return Err(ctx.err(format!("X has the empty shape {shape:?}")));
    }
    let g = match groups {
        Groups::PerChannel => c,
        Groups::Count(g) if g > 0 && c % g as usize == 0 => g as usize,
        Groups::Count(g) => {
            return Err(ctx.bad_attr("num_groups", format!("is {g}; it must be positive and divide the {c} channels")))
        }
    };
    let affine_len = if per_group_affine { g } else { c };
    let (scale, ss) = lw.data_input(ctx, 1)?;
    let (bias, bs) = lw.data_input(ctx, 2)?;
    for (what, s) in [("scale", &ss), ("B", &bs)] {
        if *s != [affine_len] {
            return Err(ctx.err(format!("{what} has shape {s:?}; expected [{affine_len}]")));
        }
    }
    let name = ctx.node.output[0].clone();
    let h = (c / g) * hw;
    let rows = n * g;
    let constant = |lw: &mut Lowerer, what: &str, len: usize, v: f32| {
        lw.count_table(ctx, what, &[len], 4)?;
        lw.add_param(&format!("{name}.{what}"), &ConstTensor { shape: vec![len], data: ConstData::F32(vec![v; len]) })
    };
    let ones = constant(lw, "unit_scale", h, 1.0)?;
    let normalized = lw.scratch_storage(&format!("{name}.normalized"), vec![rows, h], DType::F32)?;
    lw.emit(ctx, Thunk::LayerNorm(LayerNorm { x, g: ones, b: None, out: normalized, rows, h, eps }));

    // Per group, the affine's channel is the group: view the data as
    // [n, g, (c / g) * hw].
    let (bn_c, bn_hw) = if per_group_affine { (g, h) } else { (c, hw) };
    let zeros = constant(lw, "zero_mean", bn_c, 0.0)?;
    let units = constant(lw, "unit_var", bn_c, 1.0)?;
    let out = lw.output_storage(ctx, 0, shape.clone())?;
    lw.emit(
        ctx,
        Thunk::BatchNormInference(BatchNormInference {
            x: normalized,
            scale,
            bias,
            mean: zeros,
            var: units,
            out,
            n,
            c: bn_c,
            hw: bn_hw,
            eps: 0.0,
        }),
    );
    lw.define(ctx, 0, Value::Data { storage: out, shape })?;
    Ok(())
}
