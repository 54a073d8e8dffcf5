//! `BitwiseAnd`, `BitwiseOr`, `BitwiseXor`, `BitwiseNot` and `BitShift`
//! of integers. The unsigned types these ops take reach here as i64
//! copies (`promote`), so each is one or a few i64 binary ops whose
//! result is cast back to the input's type.

use rlx_sched::{BinaryOp, DType};

use super::arithmetic;
use crate::lower::build::R;
use crate::lower::{ImportError, Lowerer, NodeCtx, Value};
use crate::proto::NodeProto;
use crate::tensor::{ConstData, ConstTensor};

/// `BitwiseAnd` / `BitwiseOr` / `BitwiseXor` of two integer tensors.
pub(crate) fn bitwise(lw: &mut Lowerer, ctx: &NodeCtx<'_>, op: BinaryOp) -> R {
    ctx.expect_arity(2, 2)?;
    check_ints(lw, ctx, 0)?;
    arithmetic(lw, ctx, op)
}

/// `BitwiseNot`: `x ^ -1` (every bit flipped; the cast back to the input's
/// type keeps its low bits).
pub(crate) fn bitwise_not(lw: &mut Lowerer, ctx: &NodeCtx<'_>) -> R {
    ctx.expect_arity(1, 1)?;
    let dtype = check_ints(lw, ctx, 0)?;
    let ones = constant(lw, ctx, "ones", ConstData::from_ints(dtype, [-1]).expect("an integer type"));
    let output = ctx.node.output.first().ok_or_else(|| ctx.err("output 0 is missing"))?.clone();
    binary(lw, ctx, [ctx.node.input[0].clone(), ones], output, BinaryOp::BitXor)
}

/// `BitShift` of unsigned integers (`direction` `LEFT` or `RIGHT`): a shift
/// by the type's width or more gives 0, as numpy and onnxruntime give. The
/// i64 kernels take the amount mod 64, so the shift runs in two steps of at
/// most 32 (`min(y, 32)`, then `min(y - that, 32)`): together `min(y, 64)`,
/// which moves every bit of a 64-bit value out.
pub(crate) fn bit_shift(lw: &mut Lowerer, ctx: &NodeCtx<'_>) -> R {
    ctx.expect_arity(2, 2)?;
    let op = match ctx.string_attr("direction")?.as_deref() {
        Some("LEFT") => BinaryOp::Shl,
        Some("RIGHT") => BinaryOp::Shr,
        other => {
            return Err(ctx.bad_attr("direction", format!("is {other:?}; must be \"LEFT\" or \"RIGHT\"")));
        }
    };
    let dtype = check_ints(lw, ctx, 0)?;
    let (x, y) = (ctx.node.input[0].clone(), ctx.node.input[1].clone());
    let output = ctx.node.output.first().ok_or_else(|| ctx.err("output 0 is missing"))?.clone();
    let cap = constant(lw, ctx, "cap", ConstData::from_ints(dtype, [32]).expect("an integer type"));
    let first = lw.internal_name(&output, "shift_a");
    binary(lw, ctx, [y.clone(), cap.clone()], first.clone(), BinaryOp::Min)?;
    let rest = lw.internal_name(&output, "shift_rest");
    binary(lw, ctx, [y, first.clone()], rest.clone(), BinaryOp::Sub)?;
    let second = lw.internal_name(&output, "shift_b");
    binary(lw, ctx, [rest, cap], second.clone(), BinaryOp::Min)?;
    let partial = lw.internal_name(&output, "shifted");
    binary(lw, ctx, [x, first], partial.clone(), op)?;
    binary(lw, ctx, [partial, second], output, op)
}

/// The type of input `i`, which must be an integer type the ops compute in.
fn check_ints(lw: &mut Lowerer, ctx: &NodeCtx<'_>, i: usize) -> Result<DType, ImportError> {
    let (name, value) = lw.input(ctx, i)?;
    let dtype = match value {
        Value::Data { storage, .. } => lw.storages[storage].dtype,
        Value::Const(c) => c.data.dtype(),
    };
    if !matches!(dtype, DType::I64 | DType::I32) {
        return Err(ctx.err(format!("input `{name}` is {dtype}; the op takes integers")));
    }
    Ok(dtype)
}

/// Defines a one-element constant named after the node's output and `what`.
fn constant(lw: &mut Lowerer, ctx: &NodeCtx<'_>, what: &str, data: ConstData) -> String {
    lw.constant(ctx.node.output.first().map_or("", String::as_str), what, ConstTensor { shape: Vec::new(), data })
}

/// `output = op(inputs[0], inputs[1])` through the arithmetic lowering
/// (folding constants, broadcasting, i32 through i64).
fn binary(lw: &mut Lowerer, ctx: &NodeCtx<'_>, inputs: [String; 2], output: String, op: BinaryOp) -> R {
    let node = NodeProto {
        input: inputs.to_vec(),
        output: vec![output],
        name: ctx.node.name.clone(),
        op_type: ctx.node.op_type.clone(),
        ..Default::default()
    };
    arithmetic(lw, &NodeCtx { node: &node, label: ctx.label.clone() }, op)
}
