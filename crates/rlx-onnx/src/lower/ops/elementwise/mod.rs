//! Element-wise ops over every carried type: the unary functions of
//! `Activation`, arithmetic on f32 and integers (with `Mod`), comparisons,
//! boolean logic, `Where`, `Trilu`, `Cast` and `CastLike`, and the bitwise
//! ops ([`bitwise`]). Constant inputs fold ([`crate::lower::arith::fold`]);
//! the rest become thunks.
//!
//! The kernels compute in f32 and i64. An i32 operand is widened to i64,
//! computed, and narrowed back (exact: two's-complement `+ - *` agree
//! modulo 2^32, and a quotient of i32s fits i32 except `MIN / -1`, which
//! wraps either way); bools are widened to i64 for `And`/`Or`.

pub(crate) mod bitwise;

use rlx_sched::{ActKind, BinaryOp, CmpOp, DType, Thunk};

use crate::error::ImportError;
use crate::lower::arith::fold;
use crate::lower::arith::shape::broadcast;
use crate::lower::build::{
    activation, binary_thunk, broadcast_into_scratch, cast_thunk, compare_thunk, define_if_empty, numel, widen_to_i64,
    R,
};
use crate::lower::dispatch;
use crate::lower::{Lowerer, NodeCtx, Value};
use crate::tensor::{dtype_of, ConstData, ConstTensor};
use rlx_sched::thunk::{Activation, Cast, Where};

/// A storage with the shape it is seen with.
type Operand = (usize, Vec<usize>);

/// The two inputs of a binary node, which must share one type, with that
/// type and the broadcast output shape.
fn same_typed_pair(lw: &mut Lowerer, ctx: &NodeCtx<'_>) -> Result<(Operand, Operand, DType, Vec<usize>), ImportError> {
    let (lhs, ls, lt) = lw.typed_input(ctx, 0)?;
    let (rhs, rs, rt) = lw.typed_input(ctx, 1)?;
    if lt != rt {
        return Err(ctx.err(format!("inputs are {} and {}; the op needs one type", lt.name(), rt.name())));
    }
    let out = broadcast(&ls, &rs).ok_or_else(|| ctx.err(format!("shapes {ls:?} and {rs:?} do not broadcast")))?;
    Ok(((lhs, ls), (rhs, rs), lt, out))
}

/// Both inputs as constants, when they are.
fn const_pair(lw: &Lowerer, ctx: &NodeCtx<'_>) -> Result<Option<(ConstTensor, ConstTensor)>, ImportError> {
    Ok(match (lw.const_input(ctx, 0)?, lw.const_input(ctx, 1)?) {
        (Some(a), Some(b)) => Some((a, b)),
        _ => None,
    })
}

/// `Add`, `Sub`, `Mul`, `Div`, `Pow` (and `Max`/`Min`/`Mod`) of f32, i64
/// or i32 tensors.
pub(crate) fn arithmetic(lw: &mut Lowerer, ctx: &NodeCtx<'_>, op: BinaryOp) -> R {
    ctx.expect_arity(2, 2)?;
    if let Some((a, b)) = const_pair(lw, ctx)? {
        if let Some(c) = fold::binary(op, &a, &b) {
            return lw.define(ctx, 0, Value::Const(c));
        }
    }
    if op == BinaryOp::Pow {
        if let Some(n) = small_integer_exponent(lw, ctx)? {
            return integer_pow(lw, ctx, n);
        }
        if input_dtype(lw, ctx, 0)? != input_dtype(lw, ctx, 1)? {
            return mixed_pow(lw, ctx);
        }
    }
    let ((lhs, ls), (rhs, rs), dtype, out) = same_typed_pair(lw, ctx)?;
    if define_if_empty(lw, ctx, &out, dtype)? {
        return Ok(());
    }
    match dtype {
        DType::F32 | DType::I64 => {
            let dst = lw.output_storage_typed(ctx, 0, out.clone(), dtype)?;
            let thunk = binary_thunk(ctx, (lhs, &ls), (rhs, &rs), dst, &out, op, dtype.size())?;
            lw.emit(ctx, thunk);
            lw.define(ctx, 0, Value::Data { storage: dst, shape: out })
        }
        DType::I32 => {
            let l64 = widen_to_i64(lw, ctx, lhs, &ls, DType::I32)?;
            let r64 = widen_to_i64(lw, ctx, rhs, &rs, DType::I32)?;
            let wide = lw.scratch_storage(&format!("{}.i64", ctx.node.output[0]), out.clone(), DType::I64)?;
            let thunk = binary_thunk(ctx, (l64, &ls), (r64, &rs), wide, &out, op, 8)?;
            lw.emit(ctx, thunk);
            let dst = lw.output_storage_typed(ctx, 0, out.clone(), DType::I32)?;
            lw.emit(
                ctx,
                Thunk::Cast(Cast { src: wide, dst, len: numel(ctx, &out)?, from: DType::I64, to: DType::I32 }),
            );
            lw.define(ctx, 0, Value::Data { storage: dst, shape: out })
        }
        other => Err(ctx.err(format!("{} operands are not supported; f32, i64 and i32 are", other.name()))),
    }
}

/// The exponent of an f32 `Pow` when it is the constant 2 or 3 (of any
/// numeric type, one element).
fn small_integer_exponent(lw: &Lowerer, ctx: &NodeCtx<'_>) -> Result<Option<u8>, ImportError> {
    if input_dtype(lw, ctx, 0)? != DType::F32 {
        return Ok(None);
    }
    let Some(e) = lw.const_input(ctx, 1)? else { return Ok(None) };
    let value = match &e.data {
        ConstData::F32(v) if v.len() == 1 => f64::from(v[0]),
        ConstData::I64(v) if v.len() == 1 => v[0] as f64,
        ConstData::I32(v) if v.len() == 1 => f64::from(v[0]),
        ConstData::Int(_, v) if v.len() == 1 => v[0] as f64,
        _ => return Ok(None),
    };
    Ok([2u8, 3].into_iter().find(|&n| value == f64::from(n)))
}

/// `Pow(x, 2)` as `Square` and `Pow(x, 3)` as `Square` then `Mul` by `x`:
/// `x * x` and `(x * x) * x`, the products onnxruntime computes for these
/// two exponents, on the vector kernels instead of a scalar `powf` per
/// element.
fn integer_pow(lw: &mut Lowerer, ctx: &NodeCtx<'_>, n: u8) -> R {
    let (x, xs) = lw.data_input(ctx, 0)?;
    let (_, e) = lw.input(ctx, 1)?;
    let es = match &e {
        Value::Const(c) => c.shape.clone(),
        Value::Data { shape, .. } => shape.clone(),
    };
    let out = broadcast(&xs, &es).ok_or_else(|| ctx.err(format!("shapes {xs:?} and {es:?} do not broadcast")))?;
    if define_if_empty(lw, ctx, &out, DType::F32)? {
        return Ok(());
    }
    let len = numel(ctx, &out)?;
    let dst = lw.output_storage(ctx, 0, out.clone())?;
    if n == 2 {
        lw.emit(ctx, Thunk::Activation(Activation { src: x, dst, len, act: ActKind::Square }));
    } else {
        let name = lw.internal_name(&ctx.node.output[0], "square");
        let square = lw.scratch_storage(&name, out.clone(), DType::F32)?;
        lw.emit(ctx, Thunk::Activation(Activation { src: x, dst: square, len, act: ActKind::Square }));
        let thunk = binary_thunk(ctx, (square, &out), (x, &xs), dst, &out, BinaryOp::Mul, 4)?;
        lw.emit(ctx, thunk);
    }
    lw.define(ctx, 0, Value::Data { storage: dst, shape: out })
}

/// `Sum`, `Mean`, `Max` and `Min` of one or more inputs (multidirectional
/// broadcasting): a chain of binary `op`s left to right, each through
/// [`arithmetic`] (so constants fold and every carried type works as it
/// does for two inputs); `Mean` divides the sum by the count. One input is
/// its value.
pub(crate) fn variadic(lw: &mut Lowerer, ctx: &NodeCtx<'_>, op: BinaryOp, mean: bool) -> R {
    let inputs = &ctx.node.input;
    if inputs.is_empty() || inputs.iter().any(String::is_empty) {
        return Err(ctx.err("needs one or more inputs, none omitted"));
    }
    let output = ctx.node.output.first().ok_or_else(|| ctx.err("output 0 is missing"))?.clone();
    // The chain's intermediates get names no graph value has (`:` is not
    // in ONNX identifiers the exporters write; the storage names are
    // sanitized anyway).
    let step_name = |i: usize| format!("{output}:{}{i}", ctx.node.op_type);
    let steps = inputs.len() - 1 + usize::from(mean);
    let mut acc = inputs[0].clone();
    let mut step = |lw: &mut Lowerer, rhs: String, op: BinaryOp, i: usize| -> R {
        let out = if i + 1 == steps { output.clone() } else { step_name(i) };
        let node = crate::proto::NodeProto {
            input: vec![acc.clone(), rhs],
            output: vec![out.clone()],
            name: ctx.node.name.clone(),
            op_type: ctx.node.op_type.clone(),
            ..Default::default()
        };
        arithmetic(lw, &NodeCtx { node: &node, label: ctx.label.clone() }, op)?;
        acc = out;
        Ok(())
    };
    if steps == 0 {
        let node = crate::proto::NodeProto {
            input: vec![acc.clone()],
            output: vec![output],
            name: ctx.node.name.clone(),
            op_type: "Identity".to_string(),
            ..Default::default()
        };
        return dispatch::lower_node(lw, &NodeCtx { node: &node, label: ctx.label.clone() });
    }
    for (i, rhs) in inputs[1..].iter().enumerate() {
        step(lw, rhs.clone(), op, i)?;
    }
    if mean {
        let count = format!("{output}:count");
        let n = ConstTensor { shape: Vec::new(), data: ConstData::F32(vec![inputs.len() as f32]) };
        lw.values.insert(count.clone(), Value::Const(n));
        step(lw, count, BinaryOp::Div, inputs.len() - 1)?;
    }
    Ok(())
}

/// The element type of input `i`.
fn input_dtype(lw: &Lowerer, ctx: &NodeCtx<'_>, i: usize) -> Result<DType, ImportError> {
    let (_, v) = lw.input(ctx, i)?;
    Ok(match v {
        Value::Const(c) => c.data.dtype(),
        Value::Data { storage, .. } => lw.storages[storage].dtype,
    })
}

/// Input `i` converted to `to`: folded for a constant, a cast thunk into
/// scratch for data, the input itself when it already has that type.
fn input_as(lw: &mut Lowerer, ctx: &NodeCtx<'_>, i: usize, to: DType) -> Result<(usize, Vec<usize>), ImportError> {
    if let Some(c) = lw.const_input(ctx, i)? {
        if let Some(converted) = fold::cast(&c, to) {
            let name = format!("{}.{}", ctx.input_name(i).unwrap_or_default(), to.name());
            return Ok((lw.add_param(&name, &converted)?, converted.shape));
        }
    }
    let (id, shape, from) = lw.typed_input(ctx, i)?;
    if from == to {
        return Ok((id, shape));
    }
    let name = format!("{}.{}", lw.storages[id].name, to.name());
    let dst = lw.scratch_storage(&name, shape.clone(), to)?;
    lw.emit(ctx, cast_thunk(id, dst, numel(ctx, &shape)?, from, to));
    Ok((dst, shape))
}

/// `Pow` of a base and an exponent of different types, as the spec's
/// reference computes it: in floating point, the result in the base's
/// type. Integers go to f32, exactly up to 2^24 in magnitude; a larger
/// integer exponent rounds, which can change a result only where it is
/// already 0, infinite, or a power of -1 or 1 (documented in
/// docs/onnx.md). An integer result truncates toward zero, as a cast does.
fn mixed_pow(lw: &mut Lowerer, ctx: &NodeCtx<'_>) -> R {
    let base_type = input_dtype(lw, ctx, 0)?;
    if !matches!(base_type, DType::F32 | DType::I64 | DType::I32)
        || !matches!(input_dtype(lw, ctx, 1)?, DType::F32 | DType::I64 | DType::I32)
    {
        return Err(ctx.err("Pow supports f32, i64 and i32 operands"));
    }
    let (base, bs) = input_as(lw, ctx, 0, DType::F32)?;
    let (exp, es) = input_as(lw, ctx, 1, DType::F32)?;
    let out = broadcast(&bs, &es).ok_or_else(|| ctx.err(format!("shapes {bs:?} and {es:?} do not broadcast")))?;
    if define_if_empty(lw, ctx, &out, base_type)? {
        return Ok(());
    }
    if base_type == DType::F32 {
        let dst = lw.output_storage(ctx, 0, out.clone())?;
        lw.emit(ctx, binary_thunk(ctx, (base, &bs), (exp, &es), dst, &out, BinaryOp::Pow, 4)?);
        return lw.define(ctx, 0, Value::Data { storage: dst, shape: out });
    }
    let wide = lw.scratch_storage(&format!("{}.f32", ctx.node.output[0]), out.clone(), DType::F32)?;
    lw.emit(ctx, binary_thunk(ctx, (base, &bs), (exp, &es), wide, &out, BinaryOp::Pow, 4)?);
    let dst = lw.output_storage_typed(ctx, 0, out.clone(), base_type)?;
    lw.emit(ctx, cast_thunk(wide, dst, numel(ctx, &out)?, DType::F32, base_type));
    lw.define(ctx, 0, Value::Data { storage: dst, shape: out })
}

/// `Equal`, `Less`, `Greater`, `LessOrEqual`, `GreaterOrEqual` → bool.
pub(crate) fn comparison(lw: &mut Lowerer, ctx: &NodeCtx<'_>, op: CmpOp) -> R {
    ctx.expect_arity(2, 2)?;
    if let Some((a, b)) = const_pair(lw, ctx)? {
        if let Some(c) = fold::compare(op, &a, &b) {
            return lw.define(ctx, 0, Value::Const(c));
        }
    }
    let ((mut lhs, ls), (mut rhs, rs), dtype, out) = same_typed_pair(lw, ctx)?;
    if define_if_empty(lw, ctx, &out, DType::Bool)? {
        return Ok(());
    }
    let in_bytes = match dtype {
        DType::F32 => 4,
        DType::I64 => 8,
        DType::Bool if matches!(op, CmpOp::Eq | CmpOp::Ne) => 1,
        DType::I32 => {
            lhs = widen_to_i64(lw, ctx, lhs, &ls, DType::I32)?;
            rhs = widen_to_i64(lw, ctx, rhs, &rs, DType::I32)?;
            8
        }
        other => {
            return Err(
                ctx.err(format!("{} operands are not supported; f32, i64, i32 (and bool for Equal) are", other.name()))
            )
        }
    };
    let dst = lw.output_storage_typed(ctx, 0, out.clone(), DType::Bool)?;
    let thunk = compare_thunk(ctx, (lhs, &ls), (rhs, &rs), dst, &out, op, in_bytes)?;
    lw.emit(ctx, thunk);
    lw.define(ctx, 0, Value::Data { storage: dst, shape: out })
}

/// `And` / `Or` / `Xor` of bools: widened to i64, combined bitwise, narrowed back.
pub(crate) fn logical(lw: &mut Lowerer, ctx: &NodeCtx<'_>, op: BinaryOp) -> R {
    ctx.expect_arity(2, 2)?;
    if let Some((a, b)) = const_pair(lw, ctx)? {
        if let Some(c) = fold::binary(op, &a, &b) {
            return lw.define(ctx, 0, Value::Const(c));
        }
    }
    let ((lhs, ls), (rhs, rs), dtype, out) = same_typed_pair(lw, ctx)?;
    if dtype != DType::Bool {
        return Err(ctx.err(format!("inputs are {}; the op takes bool", dtype.name())));
    }
    if define_if_empty(lw, ctx, &out, DType::Bool)? {
        return Ok(());
    }
    let l64 = widen_to_i64(lw, ctx, lhs, &ls, DType::Bool)?;
    let r64 = widen_to_i64(lw, ctx, rhs, &rs, DType::Bool)?;
    let wide = lw.scratch_storage(&format!("{}.i64", ctx.node.output[0]), out.clone(), DType::I64)?;
    let thunk = binary_thunk(ctx, (l64, &ls), (r64, &rs), wide, &out, op, 8)?;
    lw.emit(ctx, thunk);
    let dst = lw.output_storage_typed(ctx, 0, out.clone(), DType::Bool)?;
    lw.emit(ctx, Thunk::Cast(Cast { src: wide, dst, len: numel(ctx, &out)?, from: DType::I64, to: DType::Bool }));
    lw.define(ctx, 0, Value::Data { storage: dst, shape: out })
}

/// `Not`: `x == false`, one `Compare` against a constant.
pub(crate) fn not(lw: &mut Lowerer, ctx: &NodeCtx<'_>) -> R {
    ctx.expect_arity(1, 1)?;
    if let Some(a) = lw.const_input(ctx, 0)? {
        if let ConstData::Bool(v) = a.data {
            return lw.define(
                ctx,
                0,
                Value::Const(ConstTensor { shape: a.shape, data: ConstData::Bool(v.iter().map(|x| !x).collect()) }),
            );
        }
    }
    let (src, shape, dtype) = lw.typed_input(ctx, 0)?;
    if dtype != DType::Bool {
        return Err(ctx.err(format!("input is {}; Not takes bool", dtype.name())));
    }
    if define_if_empty(lw, ctx, &shape, DType::Bool)? {
        return Ok(());
    }
    let falsy = lw.add_param(
        &format!("{}.false", ctx.node.output[0]),
        &ConstTensor { shape: vec![], data: ConstData::Bool(vec![false]) },
    )?;
    let dst = lw.output_storage_typed(ctx, 0, shape.clone(), DType::Bool)?;
    let thunk = compare_thunk(ctx, (src, &shape), (falsy, &[]), dst, &shape, CmpOp::Eq, 1)?;
    lw.emit(ctx, thunk);
    lw.define(ctx, 0, Value::Data { storage: dst, shape })
}

/// `IsNaN`: `x != x`, one `Compare` of the input with itself (true exactly
/// for NaN).
pub(crate) fn is_nan(lw: &mut Lowerer, ctx: &NodeCtx<'_>) -> R {
    ctx.expect_arity(1, 1)?;
    if let Some(c) = lw.const_input(ctx, 0)? {
        if let ConstData::F32(v) = &c.data {
            let data = ConstData::Bool(v.iter().map(|x| x.is_nan()).collect());
            return lw.define(ctx, 0, Value::Const(ConstTensor { shape: c.shape, data }));
        }
    }
    let (x, shape) = lw.data_input(ctx, 0)?;
    if define_if_empty(lw, ctx, &shape, DType::Bool)? {
        return Ok(());
    }
    let dst = lw.output_storage_typed(ctx, 0, shape.clone(), DType::Bool)?;
    let thunk = compare_thunk(ctx, (x, &shape), (x, &shape), dst, &shape, CmpOp::Ne, 4)?;
    lw.emit(ctx, thunk);
    lw.define(ctx, 0, Value::Data { storage: dst, shape })
}

/// `IsInf(x)`: which elements are an infinity of the detected signs
/// (`detect_positive`, `detect_negative`, both by default). A comparison
/// with the infinity, of `|x|` when both signs count; all false when
/// neither does.
pub(crate) fn is_inf(lw: &mut Lowerer, ctx: &NodeCtx<'_>) -> R {
    ctx.expect_arity(1, 1)?;
    let flag = |name| -> Result<bool, ImportError> {
        match ctx.int_attr(name, 1)? {
            0 => Ok(false),
            1 => Ok(true),
            v => Err(ctx.bad_attr(name, format!("is {v}; must be 0 or 1"))),
        }
    };
    let (pos, neg) = (flag("detect_positive")?, flag("detect_negative")?);
    if let Some(c) = lw.const_input(ctx, 0)? {
        if let ConstData::F32(v) = &c.data {
            let inf = |x: &f32| x.is_infinite() && if x.is_sign_positive() { pos } else { neg };
            let data = ConstData::Bool(v.iter().map(inf).collect());
            return lw.define(ctx, 0, Value::Const(ConstTensor { shape: c.shape, data }));
        }
    }
    let (x, shape) = lw.data_input(ctx, 0)?;
    if lw.storages[x].dtype != DType::F32 {
        return Err(ctx.err("the input must be a float tensor"));
    }
    if define_if_empty(lw, ctx, &shape, DType::Bool)? {
        return Ok(());
    }
    let len = numel(ctx, &shape)?;
    let (src, target) = match (pos, neg) {
        (false, false) => {
            let data = ConstData::Bool(vec![false; len]);
            return lw.define(ctx, 0, Value::Const(ConstTensor { shape, data }));
        }
        (true, false) => (x, f32::INFINITY),
        (false, true) => (x, f32::NEG_INFINITY),
        (true, true) => {
            let abs = lw.scratch_storage(&format!("{}.abs", ctx.label), shape.clone(), DType::F32)?;
            lw.emit(ctx, Thunk::Activation(Activation { src: x, dst: abs, len, act: rlx_sched::ActKind::Abs }));
            (abs, f32::INFINITY)
        }
    };
    let inf = lw.add_param(
        &format!("{}.inf", ctx.label),
        &ConstTensor { shape: vec![1], data: ConstData::F32(vec![target]) },
    )?;
    let dst = lw.output_storage_typed(ctx, 0, shape.clone(), DType::Bool)?;
    let thunk = compare_thunk(ctx, (src, &shape), (inf, &[1]), dst, &shape, CmpOp::Eq, 4)?;
    lw.emit(ctx, thunk);
    lw.define(ctx, 0, Value::Data { storage: dst, shape })
}

/// `Where(cond, x, y)`: operands that are neither one element nor the
/// output's shape are broadcast into scratch first (the kernel reads
/// full-length or scalar operands).
pub(crate) fn select(lw: &mut Lowerer, ctx: &NodeCtx<'_>) -> R {
    ctx.expect_arity(3, 3)?;
    if let (Some(c), Some(x), Some(y)) = (lw.const_input(ctx, 0)?, lw.const_input(ctx, 1)?, lw.const_input(ctx, 2)?) {
        if let Some(r) = fold::select(&c, &x, &y) {
            return lw.define(ctx, 0, Value::Const(r));
        }
    }
    let (cond, cs, ct) = lw.typed_input(ctx, 0)?;
    if ct != DType::Bool {
        return Err(ctx.err(format!("condition is {}; Where takes bool", ct.name())));
    }
    let (x, xs, xt) = lw.typed_input(ctx, 1)?;
    let (y, ys, yt) = lw.typed_input(ctx, 2)?;
    if xt != yt {
        return Err(ctx.err(format!("X is {} and Y is {}; Where needs one type", xt.name(), yt.name())));
    }
    if xt.size() != 4 && xt.size() != 8 {
        return Err(ctx.err(format!("{} values are not supported; 4- and 8-byte types are", xt.name())));
    }
    let out = broadcast(&cs, &xs)
        .and_then(|s| broadcast(&s, &ys))
        .ok_or_else(|| ctx.err(format!("shapes {cs:?}, {xs:?} and {ys:?} do not broadcast")))?;
    if define_if_empty(lw, ctx, &out, xt)? {
        return Ok(());
    }
    let len = numel(ctx, &out)?;
    let operand = |lw: &mut Lowerer, id: usize, shape: &[usize]| -> Result<(usize, bool), ImportError> {
        let n = numel(ctx, shape)?;
        if n == len {
            Ok((id, false))
        } else if n == 1 {
            Ok((id, true))
        } else {
            Ok((broadcast_into_scratch(lw, ctx, id, shape, &out)?, false))
        }
    };
    let (cond, cond_scalar) = operand(lw, cond, &cs)?;
    let (x, true_scalar) = operand(lw, x, &xs)?;
    let (y, false_scalar) = operand(lw, y, &ys)?;
    let dst = lw.output_storage_typed(ctx, 0, out.clone(), xt)?;
    lw.emit(
        ctx,
        Thunk::Where(Where {
            cond,
            on_true: x,
            on_false: y,
            dst,
            len,
            elem_bytes: xt.size(),
            cond_elem_bytes: 1,
            cond_scalar,
            true_scalar,
            false_scalar,
        }),
    );
    lw.define(ctx, 0, Value::Data { storage: dst, shape: out })
}

/// `Cast` between the carried types; a cast to the same type is a view.
pub(crate) fn cast(lw: &mut Lowerer, ctx: &NodeCtx<'_>) -> R {
    ctx.expect_arity(1, 1)?;
    let to_attr = ctx.int_attr("to", 0)?;
    let to = i32::try_from(to_attr).ok().and_then(dtype_of).ok_or_else(|| {
        ctx.bad_attr(
            "to",
            format!(
                "is {} ({to_attr}); supported targets: {}",
                crate::tensor::data_type_name(to_attr as i32),
                crate::tensor::CARRIED_TYPES
            ),
        )
    })?;
    match crate::tensor::interface_dtype_of(to_attr as i32) {
        // A 2-byte float is computed in f32: the cast rounds to its
        // precision and range and stays f32, so its values are the spec's.
        Some(half @ (DType::F16 | DType::Bf16)) => round_to_half(lw, ctx, half),
        _ => cast_to(lw, ctx, to),
    }
}

/// `Cast` to FLOAT16 / BFLOAT16 of a value computed in f32: rounded to
/// `half` (through a 2-byte temporary) and widened back.
fn round_to_half(lw: &mut Lowerer, ctx: &NodeCtx<'_>, half: DType) -> R {
    if let Some(c) = lw.const_input(ctx, 0)? {
        if let Some(ConstTensor { shape, data: ConstData::F32(v) }) = fold::cast(&c, DType::F32) {
            let round = |x: f32| match half {
                DType::Bf16 => half::bf16::from_f32(x).to_f32(),
                _ => half::f16::from_f32(x).to_f32(),
            };
            let data = ConstData::F32(v.into_iter().map(round).collect());
            return lw.define(ctx, 0, Value::Const(ConstTensor { shape, data }));
        }
    }
    let (src, shape, from) = lw.typed_input(ctx, 0)?;
    if define_if_empty(lw, ctx, &shape, DType::F32)? {
        return Ok(());
    }
    let len = numel(ctx, &shape)?;
    let narrow = lw.scratch_storage(&format!("{}.{}", ctx.label, half.name()), shape.clone(), half)?;
    lw.emit(ctx, cast_thunk(src, narrow, len, from, half));
    let dst = lw.output_storage_typed(ctx, 0, shape.clone(), DType::F32)?;
    lw.emit(ctx, cast_thunk(narrow, dst, len, half, DType::F32));
    lw.define(ctx, 0, Value::Data { storage: dst, shape })
}

/// `CastLike`: a `Cast` to the element type of input 1 (whose values are
/// not read).
pub(crate) fn cast_like(lw: &mut Lowerer, ctx: &NodeCtx<'_>) -> R {
    ctx.expect_arity(2, 2)?;
    let to = input_dtype(lw, ctx, 1)?;
    cast_to(lw, ctx, to)
}

/// Output 0 as input 0 converted to `to`.
fn cast_to(lw: &mut Lowerer, ctx: &NodeCtx<'_>, to: DType) -> R {
    if let Some(c) = lw.const_input(ctx, 0)? {
        if let Some(r) = fold::cast(&c, to) {
            return lw.define(ctx, 0, Value::Const(r));
        }
    }
    let (src, shape, from) = lw.typed_input(ctx, 0)?;
    if from == to {
        return lw.define(ctx, 0, Value::Data { storage: src, shape });
    }
    if define_if_empty(lw, ctx, &shape, to)? {
        return Ok(());
    }
    let len = numel(ctx, &shape)?;
    let dst = lw.output_storage_typed(ctx, 0, shape.clone(), to)?;
    lw.emit(ctx, cast_thunk(src, dst, len, from, to));
    lw.define(ctx, 0, Value::Data { storage: dst, shape })
}

/// `Mod`: with `fmod = 1` the truncated remainder (C `fmod`, sign of the
/// dividend) of f32, i64 or i32; with `fmod = 0` (the default) the floored
/// one (sign of the divisor) of integers, computed exactly in i64. The
/// spec requires `fmod = 1` for floating-point inputs.
pub(crate) fn modulo(lw: &mut Lowerer, ctx: &NodeCtx<'_>) -> R {
    ctx.expect_arity(2, 2)?;
    let fmod = match ctx.int_attr("fmod", 0)? {
        0 => false,
        1 => true,
        v => return Err(ctx.bad_attr("fmod", format!("is {v}; must be 0 or 1"))),
    };
    if !fmod && input_dtype(lw, ctx, 0)? == DType::F32 {
        return Err(ctx.bad_attr("fmod", "is 0, which the spec does not allow for floating-point inputs"));
    }
    arithmetic(lw, ctx, if fmod { BinaryOp::Mod } else { BinaryOp::FloorMod })
}

/// `Trilu`: the upper (`upper = 1`, the default) or lower triangle of the
/// last two axes, from diagonal `k` (a constant input, 0 when absent); the
/// rest is 0. One `Where` against a constant `[N, M]` mask (broadcast over
/// the batch axes into scratch when there are any).
pub(crate) fn trilu(lw: &mut Lowerer, ctx: &NodeCtx<'_>) -> R {
    ctx.expect_arity(1, 2)?;
    let upper = match ctx.int_attr("upper", 1)? {
        0 => false,
        1 => true,
        v => return Err(ctx.bad_attr("upper", format!("is {v}; must be 0 or 1"))),
    };
    let k = match ctx.input_name(1) {
        None => 0,
        Some(_) => match lw.const_ints(ctx, 1)?.1.as_slice() {
            [k] => *k,
            other => return Err(ctx.err(format!("k {other:?} must be one value"))),
        },
    };
    let (x, xs, dtype) = lw.typed_input(ctx, 0)?;
    let rank = xs.len();
    if rank < 2 {
        return Err(ctx.err(format!("input must have rank 2 or more, got shape {xs:?}")));
    }
    if dtype.size() != 4 && dtype.size() != 8 {
        return Err(ctx.err(format!("{} values are not supported; f32, i64 and i32 are", dtype.name())));
    }
    if define_if_empty(lw, ctx, &xs, dtype)? {
        return Ok(());
    }
    let (n, m) = (xs[rank - 2], xs[rank - 1]);
    let keep = |i: usize, j: usize| {
        let d = j as i64 - i as i64;
        if upper {
            d >= k
        } else {
            d <= k
        }
    };
    lw.count_table(ctx, "the mask", &[n, m], 1)?;
    let mask: Vec<bool> = (0..n).flat_map(|i| (0..m).map(move |j| keep(i, j))).collect();
    let name = ctx.node.output[0].clone();
    let mask =
        lw.add_param(&format!("{name}.mask"), &ConstTensor { shape: vec![n, m], data: ConstData::Bool(mask) })?;
    let mask = if rank == 2 { mask } else { broadcast_into_scratch(lw, ctx, mask, &[n, m], &xs)? };
    let zero = match dtype {
        DType::F32 => ConstData::F32(vec![0.0]),
        other => ConstData::from_ints(other, [0]).expect("4- and 8-byte integers are carried"),
    };
    let zero = lw.add_param(&format!("{name}.zero"), &ConstTensor { shape: vec![], data: zero })?;
    let dst = lw.output_storage_typed(ctx, 0, xs.clone(), dtype)?;
    lw.emit(
        ctx,
        Thunk::Where(Where {
            cond: mask,
            on_true: x,
            on_false: zero,
            dst,
            len: numel(ctx, &xs)?,
            elem_bytes: dtype.size(),
            cond_elem_bytes: 1,
            cond_scalar: false,
            true_scalar: false,
            false_scalar: true,
        }),
    );
    lw.define(ctx, 0, Value::Data { storage: dst, shape: xs })
}

pub(crate) fn unary(lw: &mut Lowerer, ctx: &NodeCtx<'_>, act: ActKind) -> R {
    ctx.expect_arity(1, 1)?;
    if let Some(c) = lw.const_input(ctx, 0)? {
        if let Some(folded) = fold::unary(act, &c) {
            return lw.define(ctx, 0, Value::Const(folded));
        }
    }
    activation(lw, ctx, act)
}
