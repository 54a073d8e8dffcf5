//! The integer types computed in i64: `INT8`, `UINT8`, `INT16`, `UINT16`,
//! `UINT32` and `UINT64` values live in buffers and constants of their
//! own type (a `uint8` image stays one byte per pixel), and each op that
//! reads one runs on i64 copies of its integer inputs, its result cast
//! back to the type the spec gives it. The cast keeps the low bits, so
//! wrapping arithmetic (`Add` of two `uint8` past 255) and every exact
//! integer op give the spec's values: an i64 holds every value of these
//! types, and results are taken mod 2^bits just as the narrow type would.
//!
//! `UINT64` is held as its bits: wrapping arithmetic, bitwise ops, left
//! shifts, equality and data movement are the same on those bits. Orders
//! ([`U64_ORDER_OPS`]: comparisons, `Max`, `Min`, `TopK`) run on the bits with the sign bit flipped,
//! which maps unsigned order onto signed order exactly, and a value result
//! is flipped back. A quotient or a right shift of a value past 2^63 has
//! no such mapping, so the other ops refuse `UINT64` inputs.
//!
//! Ops that only read shapes or convert types (`Shape`, `Size`, `Cast`,
//! `CastLike`), the views (`Reshape`, `Flatten`, `Squeeze`, `Unsqueeze`,
//! `Identity`), the moves by element size (`Gather`, `Transpose`,
//! `Concat`, `Slice`) and the quantization ops take the narrow values as
//! they are.

use rlx_sched::DType;

use super::arith::fold;
use super::{build, dispatch, ImportError, Lowerer, NodeCtx, Value};
use crate::tensor::{compute_dtype, is_carried_int, ConstData, ConstTensor};

/// Ops that handle the narrow integer types themselves: they only read
/// shapes, convert types, or move elements by their size (so a quantized
/// embedding table stays one byte per element).
const NATIVE_OPS: &[&str] = &[
    "Gather",
    "Transpose",
    "Concat",
    "Slice",
    "Cast",
    "CastLike",
    "Shape",
    "Size",
    "Reshape",
    "Flatten",
    "Squeeze",
    "Unsqueeze",
    "Identity",
    "Constant",
    "QuantizeLinear",
    "DequantizeLinear",
    "DynamicQuantizeLinear",
    "MatMulInteger",
    "QLinearMatMul",
    "ConvInteger",
    "QLinearConv",
    "BitCast",
];

/// Ops whose result on `UINT64` bits is the same whatever the sign bit
/// means (`BitShift` only to the left, checked separately).
const U64_BITWISE_OPS: &[&str] = &[
    "Add",
    "Sub",
    "Mul",
    "Sum",
    "Neg",
    "BitwiseAnd",
    "BitwiseOr",
    "BitwiseXor",
    "BitwiseNot",
    "BitShift",
    "Equal",
    "Where",
    "Concat",
    "Gather",
    "GatherElements",
    "GatherND",
    "Slice",
    "Split",
    "Transpose",
    "Expand",
    "Tile",
    "Pad",
    "ScatterElements",
    "ScatterND",
    "DepthToSpace",
    "SpaceToDepth",
    "ReduceSum",
    "CumSum",
    "CumProd",
];

/// Ops that only order their inputs: on `UINT64` they run on the i64
/// copies with the sign bit flipped (`x ^ i64::MIN` is monotone from u64
/// to i64 order), and a value output is flipped back.
const U64_ORDER_OPS: &[&str] = &["Less", "LessOrEqual", "Greater", "GreaterOrEqual", "Max", "Min", "TopK"];

/// Lowers a node whose inputs include narrow integers through i64 copies
/// of them; `Ok(false)` when there is nothing to widen (the caller lowers
/// the node as it is).
pub(crate) fn lower_widened(lw: &mut Lowerer, ctx: &NodeCtx<'_>) -> Result<bool, ImportError> {
    let node = ctx.node;
    if NATIVE_OPS.contains(&node.op_type.as_str()) {
        return Ok(false);
    }
    let mut narrow = Vec::with_capacity(node.input.len());
    for name in &node.input {
        // An unknown name is the op's lowering to report (after an
        // unsupported op, which it reports first).
        let dtype = lw.values.get(name).map(|v| value_dtype(lw, v));
        narrow.push(dtype.filter(|&d| is_carried_int(d)));
    }
    if narrow.iter().all(Option::is_none) {
        return Ok(false);
    }
    if narrow.contains(&Some(DType::U64)) {
        check_u64(ctx)?;
    }

    let ordered_u64 = U64_ORDER_OPS.contains(&node.op_type.as_str());
    let mut wide = node.clone();
    for (name, dtype) in wide.input.iter_mut().zip(&narrow) {
        if let Some(d) = *dtype {
            *name = widen(lw, ctx, name, d)?;
            if d == DType::U64 && ordered_u64 {
                *name = flip_sign_bit(lw, ctx, name)?;
            }
        }
    }
    // Outputs whose type the spec ties to a narrow input are renamed: the
    // widened node defines the i64 result, narrowed below to the name.
    let targets: Vec<Option<DType>> = (0..node.output.len())
        .map(|k| output_type_source(&node.op_type, k).and_then(|i| narrow.get(i).copied().flatten()))
        .collect();
    for (name, target) in wide.output.iter_mut().zip(&targets) {
        if target.is_some() && !name.is_empty() {
            *name = lw.internal_name(name, "wide");
        }
    }
    dispatch::lower_op(lw, &NodeCtx { node: &wide, label: ctx.label.clone() })?;

    for (k, target) in targets.iter().enumerate() {
        let Some(to) = *target else { continue };
        if node.output[k].is_empty() {
            continue;
        }
        if to == DType::U64 && ordered_u64 {
            let flipped = flip_sign_bit(lw, ctx, &wide.output[k])?;
            narrow_output(lw, ctx, k, &flipped, to)?;
            continue;
        }
        narrow_output(lw, ctx, k, &wide.output[k], to)?;
    }
    Ok(true)
}

/// The element type of a value.
fn value_dtype(lw: &Lowerer, v: &Value) -> DType {
    match v {
        Value::Data { storage, .. } => lw.storages[*storage].dtype,
        Value::Const(c) => c.data.dtype(),
    }
}

/// `name ^ i64::MIN` (an i64 value) under a new name.
fn flip_sign_bit(lw: &mut Lowerer, ctx: &NodeCtx<'_>, name: &str) -> Result<String, ImportError> {
    let sign = lw.constant(name, "sign_bit", ConstTensor { shape: vec![], data: ConstData::I64(vec![i64::MIN]) });
    let flipped = lw.internal_name(name, "flipped");
    lw.lower_part(ctx, "BitwiseXor", &[name, &sign], &[&flipped], Vec::new())?;
    Ok(flipped)
}

fn check_u64(ctx: &NodeCtx<'_>) -> Result<(), ImportError> {
    let op = ctx.node.op_type.as_str();
    let right_shift = op == "BitShift" && ctx.string_attr("direction")?.as_deref() == Some("RIGHT");
    if !(U64_BITWISE_OPS.contains(&op) || U64_ORDER_OPS.contains(&op)) || right_shift {
        let what = if right_shift { "a right shift" } else { "this op" };
        return Err(ctx.err(format!(
            "UINT64 inputs are not supported by {what}: they are computed as i64 bits, and values from 2^63 on \
             would order, divide or shift as negative numbers"
        )));
    }
    Ok(())
}

/// The input whose element type output `k` of `op` has, by the spec's
/// type constraints (`None`: a type of its own, never narrowed).
fn output_type_source(op: &str, k: usize) -> Option<usize> {
    match (op, k) {
        (
            "ArgMax" | "ArgMin" | "NonZero" | "Equal" | "Less" | "LessOrEqual" | "Greater" | "GreaterOrEqual" | "IsNaN"
            | "IsInf" | "Not" | "And" | "Or" | "Xor" | "EyeLike" | "ConstantOfShape" | "MatMulInteger" | "ConvInteger"
            | "DequantizeLinear",
            _,
        ) => None,
        ("TopK" | "MaxPool" | "Unique", k) if k > 0 => None,
        ("Where", _) => Some(1),
        ("OneHot", _) => Some(2),
        ("QuantizeLinear", _) => Some(2),
        _ => Some(0),
    }
}

/// The name of an i64 copy of input `name` (of narrow type `d`), made once
/// per name: a constant converts at import time, data through one cast.
fn widen(lw: &mut Lowerer, ctx: &NodeCtx<'_>, name: &str, d: DType) -> Result<String, ImportError> {
    if let Some(wide) = lw.widened.get(name) {
        return Ok(wide.clone());
    }
    let wide = lw.internal_name(name, "i64");
    let value = match lw.value(ctx, name)?.clone() {
        Value::Const(c) => {
            Value::Const(fold::cast(&c, DType::I64).ok_or_else(|| ctx.err(format!("cannot widen `{name}` to i64")))?)
        }
        Value::Data { storage, shape } => {
            let len = build::numel(ctx, &shape)?;
            let dst = lw.scratch_storage(&wide, shape.clone(), DType::I64)?;
            lw.emit(ctx, build::cast_thunk(storage, dst, len, d, DType::I64));
            Value::Data { storage: dst, shape }
        }
    };
    lw.values.insert(wide.clone(), value);
    lw.widened.insert(name.to_string(), wide.clone());
    Ok(wide)
}

/// Defines output `k` of the node as the i64 value `wide` cast to `to`.
fn narrow_output(lw: &mut Lowerer, ctx: &NodeCtx<'_>, k: usize, wide: &str, to: DType) -> Result<(), ImportError> {
    let value = lw.value(ctx, wide)?.clone();
    let narrowed = match value {
        Value::Const(c) => {
            Value::Const(fold::cast(&c, to).ok_or_else(|| ctx.err(format!("cannot narrow `{wide}` to {to}")))?)
        }
        Value::Data { storage, shape } => {
            let from = compute_dtype(to);
            let dtype = lw.storages[storage].dtype;
            if dtype != from {
                return Err(ctx.err(format!(
                    "computes output {k} as {dtype}, where the spec gives it type {to} (computed in {from})"
                )));
            }
            let len = build::numel(ctx, &shape)?;
            let dst = lw.output_storage_typed(ctx, k, shape.clone(), to)?;
            lw.emit(ctx, build::cast_thunk(storage, dst, len, from, to));
            Value::Data { storage: dst, shape }
        }
    };
    lw.define(ctx, k, narrowed)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::proto::NodeProto;

    fn node(op: &str, inputs: &[&str]) -> NodeProto {
        NodeProto {
            op_type: op.to_string(),
            input: inputs.iter().map(|s| s.to_string()).collect(),
            output: vec!["y".to_string()],
            ..Default::default()
        }
    }

    #[test]
    fn outputs_take_the_type_the_spec_ties_them_to() {
        assert_eq!(output_type_source("Add", 0), Some(0));
        assert_eq!(output_type_source("Where", 0), Some(1));
        assert_eq!(output_type_source("TopK", 1), None);
        assert_eq!(output_type_source("TopK", 0), Some(0));
        assert_eq!(output_type_source("ArgMax", 0), None);
        assert_eq!(output_type_source("Less", 0), None);
    }

    #[test]
    fn uint64_is_refused_where_the_sign_bit_matters() {
        let check = |n: &NodeProto| check_u64(&NodeCtx { node: n, label: "n".to_string() });
        assert!(check(&node("Add", &["a", "b"])).is_ok());
        assert!(check(&node("Div", &["a", "b"])).is_err());
        assert!(check(&node("Less", &["a", "b"])).is_ok());
        assert!(check(&node("Mod", &["a", "b"])).is_err());
        let mut shift = node("BitShift", &["a", "b"]);
        shift.attribute.push(crate::proto::AttributeProto {
            name: "direction".to_string(),
            s: b"RIGHT".to_vec(),
            r#type: crate::proto::AttributeType::String as i32,
            ..Default::default()
        });
        assert!(check(&shift).is_err());
    }
}
