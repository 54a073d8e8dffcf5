//! The integer convolutions: `ConvInteger` → one `IntConv2D` (8-bit
//! operands, i32 accumulation, exact); `QLinearConv` → `ConvInteger`, its
//! int32 bias added, and the requantization `QLinearMatMul` ends with.
//!
//! Only the 2-D (NCHW) form is taken; 1-D and 3-D integer convolutions
//! are refused by name.

use rlx_sched::{DType, Thunk};

use crate::lower::build::quant::{
    cast, check_scales, optional_input, output, requantize, saturation_range, value_dtype, view, zero_point,
};
use crate::lower::build::window::{conv_geometry, ConvGeometry};
use crate::lower::build::R;
use crate::lower::{ImportError, Lowerer, NodeCtx, Value};
use crate::proto::NodeProto;
use crate::tensor::ConstTensor;
use rlx_sched::thunk::{IntConv2D, Requantize};

/// `ConvInteger`: `x` and `w` 8-bit (any pairing), `x_zero_point` per
/// tensor, `w_zero_point` per tensor or per output channel; the output is
/// int32.
pub(crate) fn conv_integer(lw: &mut Lowerer, ctx: &NodeCtx<'_>) -> R {
    ctx.expect_arity(2, 4)?;
    output(ctx, 0)?;
    let (x, xs, x_dtype) = lw.typed_input(ctx, 0)?;
    let (w, ws, w_dtype) = lw.typed_input(ctx, 1)?;
    for (what, d) in [("x", x_dtype), ("w", w_dtype)] {
        if !matches!(d, DType::U8 | DType::I8) {
            return Err(ctx.err(format!("input {what} is {d}; integer convolutions take uint8 and int8")));
        }
    }
    if xs.len() != 4 || ws.len() != 4 {
        return Err(
            ctx.err(format!("x has shape {xs:?} and w {ws:?}: only 2-D (NCHW) integer convolutions are supported"))
        );
    }
    let ConvGeometry { n, c_in, h, w_in, c_out, h_out, w_out, kh, kw, sh, sw, ph, pw, dh, dw, groups } =
        conv_geometry(ctx, ["x", "w"], &xs, &ws)?;
    let x_zero = zero_point(lw, ctx, 2, x_dtype, &[1], "")?.map(|(id, _)| id);
    let w_zero = zero_point(lw, ctx, 3, w_dtype, &[1, c_out], " or one per output channel")?;
    let shape = vec![n, c_out, h_out, w_out];
    let out = lw.output_storage_typed(ctx, 0, shape.clone(), DType::I32)?;
    lw.emit(
        ctx,
        Thunk::IntConv2D(IntConv2D {
            x,
            w,
            x_zero,
            w_zero: w_zero.map(|(id, _)| id),
            out,
            n,
            c_in,
            h,
            w_in,
            c_out,
            h_out,
            w_out,
            kh,
            kw,
            sh,
            sw,
            ph,
            pw,
            dh,
            dw,
            groups,
            x_dtype,
            w_dtype,
            w_zero_len: w_zero.map_or(1, |(_, len)| len),
        }),
    );
    lw.define(ctx, 0, Value::Data { storage: out, shape })
}

/// `QLinearConv`: `ConvInteger`, plus the int32 bias `B` (`[M]`, in the
/// accumulator's scale), then the sums scaled by `x_scale * w_scale /
/// y_scale` (`w_scale` per tensor or per output channel) and requantized
/// to `y_zero_point`'s type.
pub(crate) fn qlinear_conv(lw: &mut Lowerer, ctx: &NodeCtx<'_>) -> R {
    ctx.expect_arity(8, 9)?;
    let input = |i: usize| ctx.node.input[i].as_str();
    let (x, x_scale, x_zp, w, w_scale, w_zp, y_scale, y_zp) =
        (input(0), input(1), input(2), input(3), input(4), input(5), input(6), input(7));
    let out = output(ctx, 0)?;
    check_scales(lw, ctx, &[1, 4, 6])?;
    let acc = lw.internal_name(&out, "acc");
    lw.lower_part(ctx, "ConvInteger", &[x, w, x_zp, w_zp], &[&acc], ctx.node.attribute.clone())?;
    let acc_shape = match lw.value(ctx, &acc)? {
        Value::Data { shape, .. } => shape.clone(),
        Value::Const(c) => c.shape.clone(),
    };
    let c_out = acc_shape[1];
    // Per-channel values of `[M]` broadcast along the channel axis.
    let per_channel = |lw: &mut Lowerer, name: &str, what: &str| -> Result<String, ImportError> {
        let value = lw.value(ctx, name)?.clone();
        let shape = match &value {
            Value::Data { shape, .. } => shape.clone(),
            Value::Const(c) => c.shape.clone(),
        };
        match shape.iter().product::<usize>() {
            1 => Ok(name.to_string()),
            len if len == c_out && shape.len() == 1 => Ok(view(lw, name, what, value, vec![c_out, 1, 1])),
            _ => Err(ctx.err(format!("{what} has shape {shape:?}; it must have one element or {c_out}"))),
        }
    };
    let bias = match optional_input(ctx, 8) {
        Some(bias) => {
            if value_dtype(lw, ctx, bias)? != DType::I32 {
                return Err(ctx.err("the bias B must be int32"));
            }
            Some(per_channel(lw, bias, "bias")?)
        }
        None => None,
    };
    let w_scale = per_channel(lw, w_scale, "w_scale")?;
    let scales = lw.internal_name(&out, "xw_scale");
    lw.lower_part(ctx, "Mul", &[x_scale, &w_scale], &[&scales], Vec::new())?;
    let multiplier = lw.internal_name(&out, "multiplier");
    lw.lower_part(ctx, "Div", &[&scales, y_scale], &[&multiplier], Vec::new())?;
    let layout = [acc_shape[0], c_out, acc_shape[2] * acc_shape[3]];
    if requantize_fused(lw, ctx, &acc, bias.as_deref(), &multiplier, y_zp, &out, layout)? {
        return Ok(());
    }
    let summed = match bias {
        Some(bias) => {
            let summed = lw.internal_name(&out, "acc_biased");
            lw.lower_part(ctx, "Add", &[&acc, &bias], &[&summed], Vec::new())?;
            summed
        }
        None => acc,
    };
    let accf = lw.internal_name(&out, "acc_f32");
    cast(lw, ctx, &summed, &accf, DType::F32)?;
    let scaled = lw.internal_name(&out, "scaled");
    lw.lower_part(ctx, "Mul", &[&accf, &multiplier], &[&scaled], Vec::new())?;
    let to = value_dtype(lw, ctx, y_zp)?;
    let range =
        saturation_range(to).ok_or_else(|| ctx.err(format!("y_zero_point is {to}; uint8 and int8 are supported")))?;
    requantize(lw, ctx, &scaled, Some(y_zp), &out, to, range)
}

/// The end of a `QLinear*` op as one `Requantize`, when its pieces have
/// the forms the kind takes: `acc` i32 `[outer, channels, inner]`, `bias`
/// (if any) i32 with one element per channel, `multiplier` a constant f32
/// of one element or one per channel, `y_zp` 8-bit. `false` (nothing
/// emitted) otherwise: the caller composes the same arithmetic.
#[allow(clippy::too_many_arguments)]
fn requantize_fused(
    lw: &mut Lowerer,
    ctx: &NodeCtx<'_>,
    acc: &str,
    bias: Option<&str>,
    multiplier: &str,
    y_zp: &str,
    out: &str,
    [outer, channels, inner]: [usize; 3],
) -> Result<bool, ImportError> {
    let Value::Const(m) = lw.value(ctx, multiplier)? else { return Ok(false) };
    let scale_len = m.data.len();
    if m.data.dtype() != DType::F32 || (scale_len != 1 && scale_len != channels) {
        return Ok(false);
    }
    if let Some(b) = bias {
        let len = match lw.value(ctx, b)? {
            Value::Data { shape, .. } | Value::Const(ConstTensor { shape, .. }) => shape.iter().product::<usize>(),
        };
        if len != channels {
            return Ok(false);
        }
    }
    if !matches!(value_dtype(lw, ctx, y_zp)?, DType::U8 | DType::I8) {
        return Ok(false);
    }
    // The pieces as the inputs of a node of their own, so they resolve to
    // storages (constants to params) as any node's inputs do.
    let node = NodeProto {
        input: vec![acc.to_string(), bias.unwrap_or_default().to_string(), multiplier.to_string(), y_zp.to_string()],
        output: vec![out.to_string()],
        name: ctx.node.name.clone(),
        op_type: ctx.node.op_type.clone(),
        ..Default::default()
    };
    let part = NodeCtx { node: &node, label: ctx.label.clone() };
    let (acc, shape, _) = lw.typed_input(&part, 0)?;
    let bias = match bias {
        Some(_) => Some(lw.typed_input(&part, 1)?.0),
        None => None,
    };
    let (scale, ..) = lw.typed_input(&part, 2)?;
    let (zero, _, out_dtype) = lw.typed_input(&part, 3)?;
    let out = lw.output_storage_typed(&part, 0, shape.clone(), out_dtype)?;
    lw.emit(
        &part,
        Thunk::Requantize(Requantize {
            acc,
            bias,
            scale,
            zero: Some(zero),
            out,
            outer,
            channels,
            inner,
            scale_len,
            out_dtype,
        }),
    );
    lw.define(&part, 0, Value::Data { storage: out, shape })?;
    Ok(true)
}
