//! `QuantizeLinear` and `DequantizeLinear`, composed from the element-wise
//! ops with the spec's arithmetic (`DynamicQuantizeLinear` is one
//! `DynamicQuantize` thunk that takes the same steps):
//!
//! - dequantize: `y = (x - zero_point) * scale` in f32. 8- and 16-bit `x`
//!   and zero points convert to f32 exactly and their difference is exact
//!   (below 2^17 in magnitude); an int32 `x` subtracts in i64 first.
//! - quantize: `y = saturate(round(x / scale) + zero_point)`, rounding half
//!   to even, saturating to the output type's range (in f32, where every
//!   8- and 16-bit value is exact), then one cast.
//!
//! `scale` and `zero_point` are a scalar (per tensor), a 1-D tensor along
//! `axis` (per channel: reshaped to broadcast), or, with `block_size`, a
//! tensor of `x`'s rank whose `axis` dim is the block count (expanded along
//! `axis` by a `Gather`, so each element reads its block's value).
//!
//! These ops read the narrow integer types as they are (`promote` leaves
//! them alone): the output type is the zero point's, which the i64 copies
//! would hide.

use rlx_sched::{DType, Thunk};

use crate::lower::arith::shape::normalize_axis;
use crate::lower::build::quant::{
    cast, check_scales, int_attr, optional_input, output, requantize, saturation_range, value_dtype, view, zero_point,
};
use crate::lower::build::R;
use crate::lower::{ImportError, Lowerer, NodeCtx, Value};
use crate::tensor::{ConstData, ConstTensor};
use rlx_sched::thunk::{DynamicQuantize, IntGemm};

/// `DequantizeLinear` (opsets 10-23; `output_dtype` other than FLOAT is an
/// error, as is a float8 or 4-bit `x`).
pub(crate) fn dequantize(lw: &mut Lowerer, ctx: &NodeCtx<'_>) -> R {
    ctx.expect_arity(2, 3)?;
    let out = output(ctx, 0)?;
    let output_dtype = ctx.int_attr("output_dtype", 0)?;
    if output_dtype != 0 && onnx_dtype(output_dtype) != Some(DType::F32) {
        return Err(
            ctx.bad_attr("output_dtype", format!("is {output_dtype}; only FLOAT (1) or the scale's type is supported"))
        );
    }
    check_scales(lw, ctx, &[1])?;
    let (x, x_shape, x_dtype) = input_info(lw, ctx, 0)?;
    if !matches!(x_dtype, DType::I8 | DType::U8 | DType::I16 | DType::U16 | DType::I32) {
        return Err(ctx.err(format!("input `x` is {x_dtype}; supported: int8, uint8, int16, uint16, int32")));
    }
    let zero_point = optional_input(ctx, 2);
    if let Some(zp) = zero_point {
        let zp_dtype = value_dtype(lw, ctx, zp)?;
        if zp_dtype != x_dtype {
            return Err(ctx.err(format!("x_zero_point is {zp_dtype}, x is {x_dtype}; the spec needs one type")));
        }
    }
    let scale = broadcastable(lw, ctx, 1, &x_shape)?;
    let diff = lw.internal_name(&out, "centered");
    match zero_point {
        Some(_) if x_dtype == DType::I32 => {
            // |x - zp| can pass 2^24: subtracted exactly in i64.
            let zp = broadcastable(lw, ctx, 2, &x_shape)?;
            let (x64, zp64) = (lw.internal_name(&x, "i64"), lw.internal_name(&zp, "i64"));
            cast(lw, ctx, &x, &x64, DType::I64)?;
            cast(lw, ctx, &zp, &zp64, DType::I64)?;
            let wide = lw.internal_name(&out, "centered_i64");
            lw.lower_part(ctx, "Sub", &[&x64, &zp64], &[&wide], Vec::new())?;
            cast(lw, ctx, &wide, &diff, DType::F32)?;
        }
        Some(_) => {
            let zp = broadcastable(lw, ctx, 2, &x_shape)?;
            let (xf, zpf) = (lw.internal_name(&x, "f32"), lw.internal_name(&zp, "f32"));
            cast(lw, ctx, &x, &xf, DType::F32)?;
            cast(lw, ctx, &zp, &zpf, DType::F32)?;
            lw.lower_part(ctx, "Sub", &[&xf, &zpf], &[&diff], Vec::new())?;
        }
        None => cast(lw, ctx, &x, &diff, DType::F32)?,
    }
    lw.lower_part(ctx, "Mul", &[&diff, &scale], &[&out], Vec::new())
}

/// `QuantizeLinear` (opsets 10-23) to int8, uint8, int16 or uint16: the
/// zero point's type, else `output_dtype`, else uint8.
pub(crate) fn quantize(lw: &mut Lowerer, ctx: &NodeCtx<'_>) -> R {
    ctx.expect_arity(2, 3)?;
    let out = output(ctx, 0)?;
    check_scales(lw, ctx, &[1])?;
    let zero_point = optional_input(ctx, 2);
    let output_dtype = match ctx.int_attr("output_dtype", 0)? {
        0 => None,
        t => Some(onnx_dtype(t).ok_or_else(|| ctx.bad_attr("output_dtype", format!("is {t}, not a carried type")))?),
    };
    let to = match (zero_point, output_dtype) {
        (Some(zp), declared) => {
            let zp_dtype = value_dtype(lw, ctx, zp)?;
            if let Some(d) = declared.filter(|&d| d != zp_dtype) {
                return Err(
                    ctx.bad_attr("output_dtype", format!("is {d}, but y_zero_point is {zp_dtype}; they must agree"))
                );
            }
            zp_dtype
        }
        (None, declared) => declared.unwrap_or(DType::U8),
    };
    let (lo, hi) = saturation_range(to)
        .ok_or_else(|| ctx.err(format!("quantizing to {to} is not supported; int8, uint8, int16 and uint16 are")))?;
    let (x, x_shape, x_dtype) = input_info(lw, ctx, 0)?;
    let xf = if x_dtype == DType::F32 {
        x
    } else {
        let xf = lw.internal_name(&x, "f32");
        cast(lw, ctx, &x, &xf, DType::F32)?;
        xf
    };
    let scale = broadcastable(lw, ctx, 1, &x_shape)?;
    let scaled = lw.internal_name(&out, "scaled");
    lw.lower_part(ctx, "Div", &[&xf, &scale], &[&scaled], Vec::new())?;
    let zp = match zero_point {
        Some(_) => Some(broadcastable(lw, ctx, 2, &x_shape)?),
        None => None,
    };
    requantize(lw, ctx, &scaled, zp.as_deref(), &out, to, (lo, hi))
}

/// `MatMulInteger`: the 8-bit product with i32 accumulation, one `IntGemm`.
/// `a` is `[..., M, K]`; `b` is `[K, N]` (shared by every batch) or has
/// `a`'s batch dims. `a_zero_point` is per tensor (a per-row one is
/// refused); `b_zero_point` per tensor or per column (`[N]`).
pub(crate) fn matmul_integer(lw: &mut Lowerer, ctx: &NodeCtx<'_>) -> R {
    ctx.expect_arity(2, 4)?;
    output(ctx, 0)?;
    let (a, a_shape, a_dtype) = lw.typed_input(ctx, 0)?;
    let (b, b_shape, b_dtype) = lw.typed_input(ctx, 1)?;
    for (what, d) in [("A", a_dtype), ("B", b_dtype)] {
        if !matches!(d, DType::U8 | DType::I8) {
            return Err(ctx.err(format!("input {what} is {d}; MatMulInteger takes uint8 and int8")));
        }
    }
    if a_shape.len() < 2 || b_shape.len() < 2 {
        return Err(ctx.err(format!("operands of shapes {a_shape:?} and {b_shape:?}: 1-D operands are not supported")));
    }
    let (m, k) = (a_shape[a_shape.len() - 2], a_shape[a_shape.len() - 1]);
    let (kb, n) = (b_shape[b_shape.len() - 2], b_shape[b_shape.len() - 1]);
    let batch_dims = &a_shape[..a_shape.len() - 2];
    let b_bcast = b_shape.len() == 2;
    if kb != k || (!b_bcast && &b_shape[..b_shape.len() - 2] != batch_dims) {
        return Err(
            ctx.err(format!("shapes {a_shape:?} and {b_shape:?}: B must be [K, N] or have A's batch dims, with A's K"))
        );
    }
    let a_zero = zero_point(lw, ctx, 2, a_dtype, &[1], " (per-row zero points are not supported)")?.map(|(id, _)| id);
    let b_zero = zero_point(lw, ctx, 3, b_dtype, &[1, n], " or one per column")?;
    let mut out_shape = batch_dims.to_vec();
    out_shape.extend([m, n]);
    let c = lw.output_storage_typed(ctx, 0, out_shape.clone(), DType::I32)?;
    lw.emit(
        ctx,
        Thunk::IntGemm(IntGemm {
            a,
            b,
            a_zero,
            b_zero: b_zero.map(|(id, _)| id),
            c,
            batch: batch_dims.iter().product(),
            m,
            k,
            n,
            a_dtype,
            b_dtype,
            b_zero_len: b_zero.map_or(1, |(_, len)| len),
            b_bcast,
        }),
    );
    lw.define(ctx, 0, Value::Data { storage: c, shape: out_shape })
}

/// `QLinearMatMul`: `MatMulInteger`, then the i32 sums scaled by
/// `a_scale * b_scale / y_scale` and requantized to `y_zero_point`'s type.
pub(crate) fn qlinear_matmul(lw: &mut Lowerer, ctx: &NodeCtx<'_>) -> R {
    ctx.expect_arity(8, 8)?;
    let inputs: Vec<&str> = ctx.node.input.iter().map(String::as_str).collect();
    let [a, a_scale, a_zp, b, b_scale, b_zp, y_scale, y_zp] = inputs[..] else { unreachable!("arity checked") };
    let out = output(ctx, 0)?;
    check_scales(lw, ctx, &[1, 4, 6])?;
    let acc = lw.internal_name(&out, "acc");
    lw.lower_part(ctx, "MatMulInteger", &[a, b, a_zp, b_zp], &[&acc], Vec::new())?;
    let accf = lw.internal_name(&out, "acc_f32");
    cast(lw, ctx, &acc, &accf, DType::F32)?;
    let scales = lw.internal_name(&out, "ab_scale");
    lw.lower_part(ctx, "Mul", &[a_scale, b_scale], &[&scales], Vec::new())?;
    let multiplier = lw.internal_name(&out, "multiplier");
    lw.lower_part(ctx, "Div", &[&scales, y_scale], &[&multiplier], Vec::new())?;
    let scaled = lw.internal_name(&out, "scaled");
    lw.lower_part(ctx, "Mul", &[&accf, &multiplier], &[&scaled], Vec::new())?;
    let to = value_dtype(lw, ctx, y_zp)?;
    let range =
        saturation_range(to).ok_or_else(|| ctx.err(format!("y_zero_point is {to}; uint8 and int8 are supported")))?;
    requantize(lw, ctx, &scaled, Some(y_zp), &out, to, range)
}

/// `DynamicQuantizeLinear`: uint8 quantization of f32 `x` with the scale
/// and zero point of its range (widened to include 0), as the spec's
/// function body computes them, in one `DynamicQuantize` thunk (the
/// body's steps in its order: `docs/kernels/quant.md`).
pub(crate) fn dynamic_quantize(lw: &mut Lowerer, ctx: &NodeCtx<'_>) -> R {
    ctx.expect_arity(1, 1)?;
    for k in 0..3 {
        output(ctx, k)?;
    }
    let (x, shape, dtype) = lw.typed_input(ctx, 0)?;
    if dtype != DType::F32 {
        return Err(ctx.err(format!("input `x` is {dtype}; DynamicQuantizeLinear takes float")));
    }
    let len = shape.iter().product();
    let y = lw.output_storage_typed(ctx, 0, shape.clone(), DType::U8)?;
    let scale = lw.output_storage_typed(ctx, 1, Vec::new(), DType::F32)?;
    let zero = lw.output_storage_typed(ctx, 2, Vec::new(), DType::U8)?;
    lw.emit(ctx, Thunk::DynamicQuantize(DynamicQuantize { x, y, scale, zero, len }));
    lw.define(ctx, 0, Value::Data { storage: y, shape })?;
    lw.define(ctx, 1, Value::Data { storage: scale, shape: Vec::new() })?;
    lw.define(ctx, 2, Value::Data { storage: zero, shape: Vec::new() })
}

/// Input `i` (`scale` or `zero_point`) as a value that broadcasts against
/// `x_shape` with the spec's meaning (see the module docs).
fn broadcastable(lw: &mut Lowerer, ctx: &NodeCtx<'_>, i: usize, x_shape: &[usize]) -> Result<String, ImportError> {
    let (name, value) = lw.input(ctx, i)?;
    let shape = match &value {
        Value::Data { shape, .. } | Value::Const(ConstTensor { shape, .. }) => shape.clone(),
    };
    let count: usize = shape.iter().product();
    let block_size = ctx.int_attr("block_size", 0)?;
    if block_size == 0 && count == 1 {
        return Ok(name);
    }
    let rank = x_shape.len();
    let axis =
        normalize_axis(ctx.int_attr("axis", 1)?, rank, 0).ok_or_else(|| ctx.bad_attr("axis", "is out of range"))?;
    let dim = x_shape[axis];
    if block_size == 0 {
        if shape != [dim] {
            return Err(ctx.err(format!(
                "input {i} has shape {shape:?}; per-axis quantization along axis {axis} needs [{dim}] (or one element)"
            )));
        }
        let mut target = vec![1; rank - axis];
        target[0] = dim;
        return Ok(view(lw, &name, "along_axis", value, target));
    }
    let block = usize::try_from(block_size).map_err(|_| ctx.bad_attr("block_size", "is negative"))?;
    let mut want = x_shape.to_vec();
    want[axis] = dim.div_ceil(block);
    if shape != want {
        return Err(ctx.err(format!(
            "input {i} has shape {shape:?}; blocks of {block} along axis {axis} of {x_shape:?} need {want:?}"
        )));
    }
    let indices = lw.constant(
        &name,
        "block_index",
        ConstTensor { shape: vec![dim], data: ConstData::I64((0..dim).map(|j| (j / block) as i64).collect()) },
    );
    let expanded = lw.internal_name(&name, "per_element");
    lw.lower_part(ctx, "Gather", &[&name, &indices], &[&expanded], vec![int_attr("axis", axis as i64)])?;
    Ok(expanded)
}

fn input_info(lw: &Lowerer, ctx: &NodeCtx<'_>, i: usize) -> Result<(String, Vec<usize>, DType), ImportError> {
    let (name, value) = lw.input(ctx, i)?;
    Ok(match value {
        Value::Data { storage, shape } => (name, shape, lw.storages[storage].dtype),
        Value::Const(c) => (name, c.shape, c.data.dtype()),
    })
}

/// The buffer type of an ONNX type number given as an attribute.
fn onnx_dtype(t: i64) -> Option<DType> {
    i32::try_from(t).ok().and_then(crate::tensor::dtype_of)
}
