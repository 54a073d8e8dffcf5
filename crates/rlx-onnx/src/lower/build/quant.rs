//! The integer end of quantizing ops: saturation, rounding and casts,
//! composed through the dispatcher.

use rlx_sched::DType;

use crate::error::ImportError;
use crate::lower::build::R;
use crate::lower::{Lowerer, NodeCtx, Value};
use crate::proto::{AttributeProto, AttributeType};
use crate::tensor::{onnx_type_of, ConstData, ConstTensor};

/// `out = cast(min(max(round_half_even(scaled) + zero_point, lo), hi))`:
/// the integer end of every quantizing op, `scaled` f32.
pub(crate) fn requantize(
    lw: &mut Lowerer,
    ctx: &NodeCtx<'_>,
    scaled: &str,
    zero_point: Option<&str>,
    out: &str,
    to: DType,
    (lo, hi): (f32, f32),
) -> R {
    let rounded = lw.internal_name(out, "rounded");
    lw.lower_part(ctx, "Round", &[scaled], &[&rounded], Vec::new())?;
    let shifted = match zero_point {
        Some(zp) => {
            let zpf = lw.internal_name(zp, "f32");
            cast(lw, ctx, zp, &zpf, DType::F32)?;
            let shifted = lw.internal_name(out, "shifted");
            lw.lower_part(ctx, "Add", &[&rounded, &zpf], &[&shifted], Vec::new())?;
            shifted
        }
        None => rounded,
    };
    let saturated = saturate(lw, ctx, &shifted, out, lo, hi)?;
    cast(lw, ctx, &saturated, out, to)
}

/// The zero point input `i` of an integer product, if given: its storage
/// and length, which must be one of `lens` (one dim at most), of `dtype`;
/// `alternatives` ends the error message.
pub(crate) fn zero_point(
    lw: &mut Lowerer,
    ctx: &NodeCtx<'_>,
    i: usize,
    dtype: DType,
    lens: &[usize],
    alternatives: &str,
) -> Result<Option<(usize, usize)>, ImportError> {
    if optional_input(ctx, i).is_none() {
        return Ok(None);
    }
    let (id, shape, d) = lw.typed_input(ctx, i)?;
    let len: usize = shape.iter().product();
    if d != dtype || !lens.contains(&len) || shape.len() > 1 {
        return Err(
            ctx.err(format!("zero point {i} is {d}{shape:?}; it must be {dtype} with one element{alternatives}"))
        );
    }
    Ok(Some((id, len)))
}

/// Checks the scale inputs `indices` of a quantizing op that are known at
/// import time: every value finite and above 0, as the spec's arithmetic
/// needs (a zero scale divides by zero, a NaN or infinite one makes every
/// output NaN, saturated or zero).
pub(crate) fn check_scales(lw: &Lowerer, ctx: &NodeCtx<'_>, indices: &[usize]) -> R {
    for &i in indices {
        let Some(scale) = lw.const_input(ctx, i)? else { continue };
        let ConstData::F32(values) = &scale.data else {
            return Err(ctx.err(format!("scale input {i} is {}; a scale is a float", scale.data.dtype())));
        };
        if let Some((at, v)) = values.iter().enumerate().find(|(_, v)| !(v.is_finite() && **v > 0.0)) {
            let name = ctx.input_name(i).unwrap_or_default();
            return Err(ctx.err(format!(
                "scale `{name}` (input {i}) holds {v} at index {at}; a quantization scale must be finite and above 0"
            )));
        }
    }
    Ok(())
}

/// The range an integer type saturates to, as f32 (exact for these).
pub(crate) fn saturation_range(d: DType) -> Option<(f32, f32)> {
    Some(match d {
        DType::I8 => (-128.0, 127.0),
        DType::U8 => (0.0, 255.0),
        DType::I16 => (-32768.0, 32767.0),
        DType::U16 => (0.0, 65535.0),
        _ => return None,
    })
}

/// `min(max(v, lo), hi)` into a new value named after `base`.
fn saturate(lw: &mut Lowerer, ctx: &NodeCtx<'_>, v: &str, base: &str, lo: f32, hi: f32) -> Result<String, ImportError> {
    let (lo_name, hi_name) = (constant(lw, base, "lo", lo), constant(lw, base, "hi", hi));
    let above = lw.internal_name(base, "at_least_lo");
    lw.lower_part(ctx, "Max", &[v, &lo_name], &[&above], Vec::new())?;
    let within = lw.internal_name(base, "saturated");
    lw.lower_part(ctx, "Min", &[&above, &hi_name], &[&within], Vec::new())?;
    Ok(within)
}

/// `to = Cast(from)`.
pub(crate) fn cast(lw: &mut Lowerer, ctx: &NodeCtx<'_>, from: &str, to: &str, dtype: DType) -> R {
    lw.lower_part(ctx, "Cast", &[from], &[to], vec![int_attr("to", i64::from(onnx_type_of(dtype)))])
}

/// A new value: `value` seen with `shape` (same element count).
pub(crate) fn view(lw: &mut Lowerer, base: &str, what: &str, value: Value, shape: Vec<usize>) -> String {
    let name = lw.internal_name(base, what);
    let v = match value {
        Value::Data { storage, .. } => Value::Data { storage, shape },
        Value::Const(c) => Value::Const(ConstTensor { shape, data: c.data }),
    };
    lw.values.insert(name.clone(), v);
    name
}

fn constant(lw: &mut Lowerer, base: &str, what: &str, v: f32) -> String {
    lw.constant(base, what, ConstTensor { shape: Vec::new(), data: ConstData::F32(vec![v]) })
}

pub(crate) fn output(ctx: &NodeCtx<'_>, k: usize) -> Result<String, ImportError> {
    ctx.node.output.get(k).filter(|n| !n.is_empty()).cloned().ok_or_else(|| ctx.err(format!("output {k} is missing")))
}

pub(crate) fn optional_input<'a>(ctx: &'a NodeCtx<'_>, i: usize) -> Option<&'a str> {
    ctx.node.input.get(i).map(String::as_str).filter(|n| !n.is_empty())
}

pub(crate) fn value_dtype(lw: &Lowerer, ctx: &NodeCtx<'_>, name: &str) -> Result<DType, ImportError> {
    Ok(match lw.value(ctx, name)? {
        Value::Data { storage, .. } => lw.storages[*storage].dtype,
        Value::Const(c) => c.data.dtype(),
    })
}

pub(crate) fn int_attr(name: &str, i: i64) -> AttributeProto {
    AttributeProto { name: name.to_string(), r#type: AttributeType::Int as i32, i, ..Default::default() }
}
