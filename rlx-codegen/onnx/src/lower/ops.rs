//! One lowering function per supported ONNX op.

use rlx_sched::{ActKind, ArgOp, BinaryOp, DType, ReduceOp, Thunk};

use super::shape::{broadcast, broadcast_strides, checked_numel, normalize_axis, reshape_target};
use super::{nn, Lowerer, NodeCtx, Value};
use crate::error::ImportError;
use crate::tensor::{read_tensor, ConstData, ConstTensor};

/// The ONNX ops the importer lowers (default domain), sorted.
pub const SUPPORTED_OPS: &[&str] = &[
    "Abs",
    "Add",
    "ArgMax",
    "ArgMin",
    "AveragePool",
    "BatchNormalization",
    "Clip",
    "Concat",
    "Constant",
    "Conv",
    "Div",
    "Erf",
    "Exp",
    "Flatten",
    "Gather",
    "Gelu",
    "Gemm",
    "GlobalAveragePool",
    "GlobalMaxPool",
    "HardSigmoid",
    "Identity",
    "LayerNormalization",
    "LeakyRelu",
    "Log",
    "MatMul",
    "MaxPool",
    "Mul",
    "Neg",
    "Pow",
    "ReduceL2",
    "ReduceMax",
    "ReduceMean",
    "ReduceSum",
    "Relu",
    "Reshape",
    "Shape",
    "Sigmoid",
    "Softmax",
    "Sqrt",
    "Squeeze",
    "Sub",
    "Tanh",
    "Transpose",
    "Unsqueeze",
];

/// The input positions of `op_type` that must be known at import time
/// (shapes, axes, `k`, pads, slice bounds, split sizes): a model that feeds
/// them from a graph input needs `--const` for it.
pub fn const_inputs(op_type: &str) -> &'static [usize] {
    match op_type {
        "Reshape" | "Expand" | "Squeeze" | "Unsqueeze" | "TopK" | "CumSum" | "Split" => &[1],
        "ReduceMean" | "ReduceSum" | "ReduceMax" | "ReduceMin" | "ReduceL2" | "ReduceProd" => &[1],
        "Slice" => &[1, 2, 3, 4],
        "Pad" => &[1, 2, 3],
        "Clip" => &[1, 2],
        _ => &[],
    }
}

/// A plain copy of a whole tensor of `dtype`.
pub(super) fn copy_thunk(src: usize, dst: usize, shape: &[usize], dtype: DType) -> Thunk<usize> {
    let len = shape.iter().product();
    match dtype.size() {
        4 => Thunk::Copy { src, dst, len },
        8 => Thunk::CopyI64 { src, dst, len },
        elem_bytes => {
            Thunk::Narrow { src, dst, outer: 1, src_stride: len, dst_stride: len, inner: len, elem_bytes }
        }
    }
}

pub(super) type R = Result<(), ImportError>;

pub(super) fn lower_node(lw: &mut Lowerer, ctx: &NodeCtx<'_>) -> R {
    let node = ctx.node;
    if !(node.domain.is_empty() || node.domain == "ai.onnx") {
        return Err(unsupported(ctx, &format!("{}:{}", node.domain, node.op_type)));
    }
    match node.op_type.as_str() {
        "Relu" => unary(lw, ctx, ActKind::Relu),
        "Sigmoid" => unary(lw, ctx, ActKind::Sigmoid),
        "Tanh" => unary(lw, ctx, ActKind::Tanh),
        "Exp" => unary(lw, ctx, ActKind::Exp),
        "Log" => unary(lw, ctx, ActKind::Log),
        "Sqrt" => unary(lw, ctx, ActKind::Sqrt),
        "Neg" => unary(lw, ctx, ActKind::Neg),
        "Abs" => unary(lw, ctx, ActKind::Abs),
        "Erf" => unary(lw, ctx, ActKind::Erf),
        "Add" => binary(lw, ctx, BinaryOp::Add),
        "Sub" => binary(lw, ctx, BinaryOp::Sub),
        "Mul" => binary(lw, ctx, BinaryOp::Mul),
        "Div" => binary(lw, ctx, BinaryOp::Div),
        "MatMul" => matmul(lw, ctx),
        "Gemm" => gemm(lw, ctx),
        "Softmax" => softmax(lw, ctx),
        "Reshape" => reshape(lw, ctx),
        "Flatten" => flatten(lw, ctx),
        "Identity" => identity(lw, ctx),
        "Squeeze" => squeeze(lw, ctx),
        "Unsqueeze" => unsqueeze(lw, ctx),
        "Transpose" => transpose(lw, ctx),
        "Constant" => constant(lw, ctx),
        "Shape" => shape_op(lw, ctx),
        "Gather" => gather(lw, ctx),
        "Concat" => concat(lw, ctx),
        "Pow" => binary(lw, ctx, BinaryOp::Pow),
        "Clip" => nn::clip(lw, ctx),
        "LeakyRelu" => nn::leaky_relu(lw, ctx),
        "HardSigmoid" => nn::hard_sigmoid(lw, ctx),
        "Gelu" => nn::gelu(lw, ctx),
        "LayerNormalization" => nn::layer_norm(lw, ctx),
        "Conv" => nn::conv(lw, ctx),
        "MaxPool" => nn::pool(lw, ctx, ReduceOp::Max),
        "AveragePool" => nn::pool(lw, ctx, ReduceOp::Mean),
        "GlobalAveragePool" => nn::global_pool(lw, ctx, ReduceOp::Mean),
        "GlobalMaxPool" => nn::global_pool(lw, ctx, ReduceOp::Max),
        "BatchNormalization" => nn::batch_norm(lw, ctx),
        "ReduceMean" => nn::reduce(lw, ctx, ReduceOp::Mean),
        "ReduceSum" => nn::reduce(lw, ctx, ReduceOp::Sum),
        "ReduceMax" => nn::reduce(lw, ctx, ReduceOp::Max),
        "ReduceL2" => nn::reduce(lw, ctx, ReduceOp::L2),
        "ArgMax" => nn::arg_reduce(lw, ctx, ArgOp::Max),
        "ArgMin" => nn::arg_reduce(lw, ctx, ArgOp::Min),
        other => Err(unsupported(ctx, other)),
    }
}

fn unsupported(ctx: &NodeCtx<'_>, op: &str) -> ImportError {
    ImportError::UnsupportedOp { op: op.to_string(), node: ctx.label.clone(), supported: SUPPORTED_OPS.join(", ") }
}

pub(super) fn numel(ctx: &NodeCtx<'_>, shape: &[usize]) -> Result<usize, ImportError> {
    checked_numel(shape).ok_or_else(|| ctx.err(format!("shape {shape:?} has too many elements")))
}

/// Binds output 0 to a new view of the same data: a storage view, or a
/// reshaped constant.
fn view(lw: &mut Lowerer, ctx: &NodeCtx<'_>, input: Value, shape: Vec<usize>) -> R {
    let out = match input {
        Value::Data { storage, .. } => Value::Data { storage, shape },
        Value::Const(c) => Value::Const(ConstTensor { shape, data: c.data }),
    };
    lw.define(ctx, 0, out)
}

fn value_shape(v: &Value) -> &[usize] {
    match v {
        Value::Data { shape, .. } | Value::Const(ConstTensor { shape, .. }) => shape,
    }
}

fn unary(lw: &mut Lowerer, ctx: &NodeCtx<'_>, act: ActKind) -> R {
    ctx.expect_arity(1, 1)?;
    activation(lw, ctx, act)
}

/// `Activation` of input 0 (arity already checked).
pub(super) fn activation(lw: &mut Lowerer, ctx: &NodeCtx<'_>, act: ActKind) -> R {
    let (src, shape) = lw.data_input(ctx, 0)?;
    let len = numel(ctx, &shape)?;
    let dst = lw.output_storage(ctx, 0, shape.clone())?;
    lw.emit(ctx, Thunk::Activation { src, dst, len, act });
    lw.define(ctx, 0, Value::Data { storage: dst, shape })
}

fn binary(lw: &mut Lowerer, ctx: &NodeCtx<'_>, op: BinaryOp) -> R {
    ctx.expect_arity(2, 2)?;
    let (lhs, ls) = lw.data_input(ctx, 0)?;
    let (rhs, rs) = lw.data_input(ctx, 1)?;
    let out = broadcast(&ls, &rs).ok_or_else(|| ctx.err(format!("shapes {ls:?} and {rs:?} do not broadcast")))?;
    let len = numel(ctx, &out)?;
    let (lhs_len, rhs_len) = (numel(ctx, &ls)?, numel(ctx, &rs)?);
    if len == 0 {
        return Err(ctx.err("produces an empty tensor, which is not supported"));
    }
    let dst = lw.output_storage(ctx, 0, out.clone())?;
    // The flat form (`i % operand_len`) covers an operand whose shape,
    // without leading 1s, is a suffix of the output's (equal shapes, a
    // scalar, a bias row); any other broadcast goes through per-axis
    // strides.
    let flat = |s: &[usize], _: usize| {
        let core = &s[s.iter().take_while(|&&d| d == 1).count()..];
        out.ends_with(core)
    };
    let (dims, l_strides, r_strides) = if flat(&ls, lhs_len) && flat(&rs, rhs_len) {
        (vec![], vec![], vec![])
    } else {
        (out.clone(), broadcast_strides(&ls, &out), broadcast_strides(&rs, &out))
    };
    lw.emit(
        ctx,
        Thunk::BinaryFull {
            lhs,
            rhs,
            dst,
            len,
            lhs_len,
            rhs_len,
            op,
            out_dims_bcast: dims,
            bcast_lhs_strides: l_strides,
            bcast_rhs_strides: r_strides,
            elem_bytes: 4,
        },
    );
    lw.define(ctx, 0, Value::Data { storage: dst, shape: out })
}

fn matmul(lw: &mut Lowerer, ctx: &NodeCtx<'_>) -> R {
    ctx.expect_arity(2, 2)?;
    let (a, a_shape) = lw.data_input(ctx, 0)?;
    let (b, b_shape) = lw.data_input(ctx, 1)?;
    if a_shape.is_empty() || b_shape.is_empty() {
        return Err(ctx.err("scalar operands are not allowed"));
    }
    // A 1-D operand is promoted to a matrix and its axis dropped after.
    let a2: Vec<usize> = if a_shape.len() == 1 { vec![1, a_shape[0]] } else { a_shape.clone() };
    let b2: Vec<usize> = if b_shape.len() == 1 { vec![b_shape[0], 1] } else { b_shape.clone() };
    let (m, k) = (a2[a2.len() - 2], a2[a2.len() - 1]);
    let (kb, n) = (b2[b2.len() - 2], b2[b2.len() - 1]);
    if k != kb {
        return Err(ctx.err(format!("inner dims differ: {a_shape:?} @ {b_shape:?}")));
    }
    let (a_batch, b_batch) = (&a2[..a2.len() - 2], &b2[..b2.len() - 2]);
    let batch_shape = broadcast(a_batch, b_batch)
        .ok_or_else(|| ctx.err(format!("batch dims of {a_shape:?} and {b_shape:?} do not broadcast")))?;
    let (a_count, b_count, batch) = (numel(ctx, a_batch)?, numel(ctx, b_batch)?, numel(ctx, &batch_shape)?);
    let mut out_shape = batch_shape.clone();
    if a_shape.len() > 1 {
        out_shape.push(m);
    }
    if b_shape.len() > 1 {
        out_shape.push(n);
    }
    let c = lw.output_storage(ctx, 0, out_shape.clone())?;
    let thunk = if b_count == 1 {
        // Every batch uses the one matrix b: fold the batch into the rows
        // of one product (a is contiguous).
        let rows = a_count.checked_mul(m).ok_or_else(|| ctx.err("too many rows"))?;
        Thunk::Sgemm { a, b, c, m: rows, k, n }
    } else if a_count == 1 {
        Thunk::BatchedSgemm { a, b, c, batch, m, k, n, a_bcast: true, b_bcast: false }
    } else if a_count == batch && b_count == batch {
        Thunk::BatchedSgemm { a, b, c, batch, m, k, n, a_bcast: false, b_bcast: false }
    } else {
        return Err(ctx.err(format!(
            "batch broadcasting of {a_shape:?} @ {b_shape:?} is not supported (batch dims must be equal, or one side unbatched)"
        )));
    };
    lw.emit(ctx, thunk);
    lw.define(ctx, 0, Value::Data { storage: c, shape: out_shape })
}

fn gemm(lw: &mut Lowerer, ctx: &NodeCtx<'_>) -> R {
    ctx.expect_arity(2, 3)?;
    for attr in ["alpha", "beta"] {
        let v = ctx.float_attr(attr, 1.0);
        if v != 1.0 {
            return Err(ctx.bad_attr(attr, format!("is {v}; only alpha = beta = 1.0 is supported")));
        }
    }
    let flag = |name: &str| -> Result<bool, ImportError> {
        match ctx.int_attr(name, 0) {
            0 => Ok(false),
            1 => Ok(true),
            v => Err(ctx.bad_attr(name, format!("is {v}; must be 0 or 1"))),
        }
    };
    let (ta, tb) = (flag("transA")?, flag("transB")?);
    let (a, a_shape) = lw.data_input(ctx, 0)?;
    let (b, b_shape) = lw.data_input(ctx, 1)?;
    if a_shape.len() != 2 || b_shape.len() != 2 {
        return Err(ctx.err(format!("A and B must be matrices, got {a_shape:?} and {b_shape:?}")));
    }
    let (m, k) = if ta { (a_shape[1], a_shape[0]) } else { (a_shape[0], a_shape[1]) };
    let (kb, n) = if tb { (b_shape[1], b_shape[0]) } else { (b_shape[0], b_shape[1]) };
    if k != kb {
        return Err(ctx.err(format!("inner dims differ: {a_shape:?} (transA={ta}) and {b_shape:?} (transB={tb})")));
    }
    let out = vec![m, n];
    let bias = match ctx.input_name(2) {
        Some(_) => {
            let (c_id, c_shape) = lw.data_input(ctx, 2)?;
            if broadcast(&c_shape, &out).as_deref() != Some(out.as_slice()) {
                return Err(ctx.err(format!("C of shape {c_shape:?} does not broadcast to {out:?}")));
            }
            Some((c_id, c_shape))
        }
        None => None,
    };
    let y = lw.output_storage(ctx, 0, out.clone())?;
    let row_bias = |s: &[usize]| s == [n] || s == [1, n];
    match bias {
        Some((c_id, c_shape)) if !ta && !tb && row_bias(&c_shape) => {
            lw.emit(ctx, Thunk::FusedMmBiasAct { a, w: b, bias: c_id, c: y, m, k, n, act: ActKind::Identity });
        }
        bias => {
            let product = if ta || tb {
                Thunk::SgemmT { a, b, c: y, m, k, n, ta, tb }
            } else {
                Thunk::Sgemm { a, b, c: y, m, k, n }
            };
            lw.emit(ctx, product);
            match bias {
                None => {}
                Some((c_id, c_shape)) if row_bias(&c_shape) => {
                    lw.emit(ctx, Thunk::BiasAdd { src: y, bias: c_id, dst: y, rows: m, cols: n });
                }
                Some((c_id, c_shape)) => {
                    let len = numel(ctx, &out)?;
                    let c_len = numel(ctx, &c_shape)?;
                    // y is read element for element, so the in-place
                    // add is an exact alias the validator allows.
                    lw.emit(
                        ctx,
                        Thunk::BinaryFull {
                            lhs: y,
                            rhs: c_id,
                            dst: y,
                            len,
                            lhs_len: len,
                            rhs_len: c_len,
                            op: BinaryOp::Add,
                            out_dims_bcast: out.clone(),
                            bcast_lhs_strides: broadcast_strides(&out, &out),
                            bcast_rhs_strides: broadcast_strides(&c_shape, &out),
                            elem_bytes: 4,
                        },
                    );
                }
            }
        }
    }
    lw.define(ctx, 0, Value::Data { storage: y, shape: out })
}

fn softmax(lw: &mut Lowerer, ctx: &NodeCtx<'_>) -> R {
    ctx.expect_arity(1, 1)?;
    let (src, shape) = lw.data_input(ctx, 0)?;
    let rank = shape.len();
    // Opset 13 made Softmax act on one axis (default -1); before, it
    // flattened to 2-D at `axis` (default 1), which the row softmax does
    // exactly for any axis.
    let modern = lw.opset >= 13;
    let axis = ctx.int_attr("axis", if modern { -1 } else { 1 });
    let a = normalize_axis(axis, rank, 0)
        .ok_or_else(|| ctx.bad_attr("axis", format!("is {axis}, out of range for rank {rank}")))?;
    if modern && a + 1 != rank {
        return Err(ctx.bad_attr("axis", format!("is {axis}; only the last axis is supported (rank {rank})")));
    }
    let rows = numel(ctx, &shape[..a])?;
    let cols = numel(ctx, &shape[a..])?;
    let dst = lw.output_storage(ctx, 0, shape.clone())?;
    lw.emit(ctx, Thunk::Softmax { src, dst, rows, cols });
    lw.define(ctx, 0, Value::Data { storage: dst, shape })
}

fn reshape(lw: &mut Lowerer, ctx: &NodeCtx<'_>) -> R {
    ctx.expect_arity(2, 2)?;
    let (_, input) = lw.input(ctx, 0)?;
    let (_, spec) = lw.const_ints(ctx, 1)?;
    let allowzero = ctx.int_attr("allowzero", 0) != 0;
    let shape = reshape_target(value_shape(&input), &spec, allowzero).map_err(|m| ctx.err(m))?;
    view(lw, ctx, input, shape)
}

fn flatten(lw: &mut Lowerer, ctx: &NodeCtx<'_>) -> R {
    ctx.expect_arity(1, 1)?;
    let (_, input) = lw.input(ctx, 0)?;
    let s = value_shape(&input).to_vec();
    let axis = ctx.int_attr("axis", 1);
    let a = normalize_axis(axis, s.len(), 1)
        .ok_or_else(|| ctx.bad_attr("axis", format!("is {axis}, out of range for rank {}", s.len())))?;
    let shape = vec![numel(ctx, &s[..a])?, numel(ctx, &s[a..])?];
    view(lw, ctx, input, shape)
}

fn identity(lw: &mut Lowerer, ctx: &NodeCtx<'_>) -> R {
    ctx.expect_arity(1, 1)?;
    let (_, input) = lw.input(ctx, 0)?;
    let shape = value_shape(&input).to_vec();
    view(lw, ctx, input, shape)
}

/// The axes of Squeeze/Unsqueeze: an input since opset 13, an attribute
/// before.
fn axes(lw: &Lowerer, ctx: &NodeCtx<'_>) -> Result<Option<Vec<i64>>, ImportError> {
    if lw.opset >= 13 {
        if ctx.has_attr("axes") {
            return Err(ctx.bad_attr("axes", "is an input since opset 13, not an attribute"));
        }
        match ctx.input_name(1) {
            Some(_) => Ok(Some(lw.const_ints(ctx, 1)?.1)),
            None => Ok(None),
        }
    } else {
        Ok(ctx.ints_attr("axes").map(<[i64]>::to_vec))
    }
}

fn squeeze(lw: &mut Lowerer, ctx: &NodeCtx<'_>) -> R {
    ctx.expect_arity(1, 2)?;
    let (_, input) = lw.input(ctx, 0)?;
    let s = value_shape(&input).to_vec();
    let drop: Vec<usize> = match axes(lw, ctx)? {
        None => (0..s.len()).filter(|&d| s[d] == 1).collect(),
        Some(list) => {
            let mut out = Vec::new();
            for ax in list {
                let d = normalize_axis(ax, s.len(), 0)
                    .ok_or_else(|| ctx.err(format!("axis {ax} is out of range for rank {}", s.len())))?;
                if s[d] != 1 {
                    return Err(ctx.err(format!("axis {ax} has size {}, not 1", s[d])));
                }
                out.push(d);
            }
            out
        }
    };
    let shape = (0..s.len()).filter(|d| !drop.contains(d)).map(|d| s[d]).collect();
    view(lw, ctx, input, shape)
}

fn unsqueeze(lw: &mut Lowerer, ctx: &NodeCtx<'_>) -> R {
    ctx.expect_arity(1, 2)?;
    let (_, input) = lw.input(ctx, 0)?;
    let s = value_shape(&input).to_vec();
    let list = axes(lw, ctx)?.ok_or_else(|| ctx.err("needs axes"))?;
    let rank = s.len() + list.len();
    let mut is_new = vec![false; rank];
    for &ax in &list {
        let d =
            normalize_axis(ax, rank, 0).ok_or_else(|| ctx.err(format!("axis {ax} is out of range for rank {rank}")))?;
        if std::mem::replace(&mut is_new[d], true) {
            return Err(ctx.err(format!("axis {ax} is given twice")));
        }
    }
    let mut old = s.iter();
    let shape = is_new.iter().map(|&new| if new { 1 } else { *old.next().expect("rank counts match") }).collect();
    view(lw, ctx, input, shape)
}

fn transpose(lw: &mut Lowerer, ctx: &NodeCtx<'_>) -> R {
    ctx.expect_arity(1, 1)?;
    let (src, s) = lw.data_input(ctx, 0)?;
    let rank = s.len();
    let perm: Vec<usize> = match ctx.ints_attr("perm") {
        None => (0..rank).rev().collect(),
        Some(p) => {
            let mut seen = vec![false; rank];
            let mut out = Vec::with_capacity(rank);
            for &d in p {
                let ok = usize::try_from(d).ok().filter(|&d| d < rank && !seen[d]);
                let d = ok.ok_or_else(|| ctx.bad_attr("perm", format!("{p:?} is not a permutation of 0..{rank}")))?;
                seen[d] = true;
                out.push(d);
            }
            if out.len() != rank {
                return Err(ctx.bad_attr("perm", format!("{p:?} is not a permutation of 0..{rank}")));
            }
            out
        }
    };
    let in_strides_all = super::shape::row_major_strides(&s);
    let out_dims: Vec<usize> = perm.iter().map(|&d| s[d]).collect();
    let in_strides: Vec<usize> = perm.iter().map(|&d| in_strides_all[d]).collect();
    let in_total = numel(ctx, &s)?;
    let dst = lw.output_storage(ctx, 0, out_dims.clone())?;
    lw.emit(ctx, Thunk::Transpose { src, dst, in_total, out_dims: out_dims.clone(), in_strides, elem_bytes: 4 });
    lw.define(ctx, 0, Value::Data { storage: dst, shape: out_dims })
}

fn constant(lw: &mut Lowerer, ctx: &NodeCtx<'_>) -> R {
    ctx.expect_arity(0, 0)?;
    let c = if let Some(t) = ctx.tensor_attr("value") {
        read_tensor(t, std::path::Path::new(".")).map_err(|e| ctx.bad_attr("value", e.to_string()))?
    } else if ctx.has_attr("value_float") {
        ConstTensor { shape: vec![], data: ConstData::F32(vec![ctx.float_attr("value_float", 0.0)]) }
    } else if ctx.has_attr("value_int") {
        ConstTensor { shape: vec![], data: ConstData::I64(vec![ctx.int_attr("value_int", 0)]) }
    } else if let Some(v) = ctx.ints_attr("value_ints") {
        ConstTensor { shape: vec![v.len()], data: ConstData::I64(v.to_vec()) }
    } else {
        let names: Vec<&str> = ctx.node.attribute.iter().map(|a| a.name.as_str()).collect();
        return Err(ctx.err(format!("has attributes {names:?}; supported: value, value_float, value_int, value_ints")));
    };
    lw.define(ctx, 0, Value::Const(c))
}

/// `Shape` is always known at import time: it folds to a constant.
fn shape_op(lw: &mut Lowerer, ctx: &NodeCtx<'_>) -> R {
    ctx.expect_arity(1, 1)?;
    let (_, input) = lw.input(ctx, 0)?;
    let s = value_shape(&input);
    let rank = s.len() as i64;
    // Opset 15 `start`/`end`, clamped to [0, rank] as the spec says.
    let clamp = |v: i64| (if v < 0 { v + rank } else { v }).clamp(0, rank) as usize;
    let (start, end) = (clamp(ctx.int_attr("start", 0)), clamp(ctx.int_attr("end", rank)));
    let dims: Vec<i64> = s.get(start..end.max(start)).unwrap_or(&[]).iter().map(|&d| d as i64).collect();
    lw.define(ctx, 0, Value::Const(ConstTensor { shape: vec![dims.len()], data: ConstData::I64(dims) }))
}

/// Outer/axis/inner sizes of a shape around `axis`.
fn split_at_axis(shape: &[usize], axis: usize) -> (usize, usize, usize) {
    let outer = shape[..axis].iter().product();
    let inner = shape[axis + 1..].iter().product();
    (outer, shape[axis], inner)
}

/// `Gather` of constants folds (shape arithmetic); gathering data rows is
/// not lowered yet.
fn gather(lw: &mut Lowerer, ctx: &NodeCtx<'_>) -> R {
    ctx.expect_arity(2, 2)?;
    let (_, data) = lw.input(ctx, 0)?;
    let Value::Const(ConstTensor { shape, data: ConstData::I64(values) }) = data else {
        return Err(ctx.err("only gathers from integer constants (shape arithmetic) are supported"));
    };
    let (idx_shape, idx) = lw.const_ints(ctx, 1)?;
    let rank = shape.len();
    let axis = ctx.int_attr("axis", 0);
    let a = normalize_axis(axis, rank, 0)
        .ok_or_else(|| ctx.bad_attr("axis", format!("is {axis}, out of range for rank {rank}")))?;
    let (outer, dim, inner) = split_at_axis(&shape, a);
    let mut out = Vec::new();
    for o in 0..outer {
        for &i in &idx {
            let j = if i < 0 { i + dim as i64 } else { i };
            let j = usize::try_from(j)
                .ok()
                .filter(|&j| j < dim)
                .ok_or_else(|| ctx.err(format!("index {i} is out of range for axis size {dim}")))?;
            out.extend_from_slice(&values[(o * dim + j) * inner..(o * dim + j + 1) * inner]);
        }
    }
    let out_shape: Vec<usize> = shape[..a].iter().chain(&idx_shape).chain(&shape[a + 1..]).copied().collect();
    lw.define(ctx, 0, Value::Const(ConstTensor { shape: out_shape, data: ConstData::I64(out) }))
}

/// `Concat`: of integer constants it folds; of f32 data it is a `Concat`
/// thunk.
fn concat(lw: &mut Lowerer, ctx: &NodeCtx<'_>) -> R {
    let n = ctx.node.input.len();
    if n == 0 {
        return Err(ctx.err("has no inputs"));
    }
    let values: Vec<Value> = (0..n).map(|i| lw.input(ctx, i).map(|(_, v)| v)).collect::<Result<_, _>>()?;
    let first = value_shape(&values[0]).to_vec();
    let rank = first.len();
    let axis = ctx.int_attr("axis", 0);
    let a = normalize_axis(axis, rank, 0)
        .ok_or_else(|| ctx.bad_attr("axis", format!("is {axis}, out of range for rank {rank}")))?;
    let mut out_shape = first.clone();
    out_shape[a] = 0;
    for v in &values {
        let s = value_shape(v);
        let same_rest = s.len() == rank && (0..rank).all(|d| d == a || s[d] == first[d]);
        if !same_rest {
            return Err(ctx.err(format!("input shapes {first:?} and {s:?} differ outside axis {axis}")));
        }
        out_shape[a] = out_shape[a].checked_add(s[a]).ok_or_else(|| ctx.err("the output is too large"))?;
    }
    let outer: usize = numel(ctx, &first[..a])?;
    let all_int = values.iter().all(|v| matches!(v, Value::Const(ConstTensor { data: ConstData::I64(_), .. })));
    if all_int {
        let mut out = Vec::new();
        for o in 0..outer {
            for v in &values {
                let Value::Const(ConstTensor { shape, data: ConstData::I64(d) }) = v else { unreachable!("checked") };
                let row: usize = shape[a..].iter().product();
                out.extend_from_slice(&d[o * row..(o + 1) * row]);
            }
        }
        return lw.define(ctx, 0, Value::Const(ConstTensor { shape: out_shape, data: ConstData::I64(out) }));
    }
    let mut inputs = Vec::with_capacity(n);
    let mut inner = Vec::with_capacity(n);
    for i in 0..n {
        let (id, s) = lw.data_input(ctx, i)?;
        inner.push(numel(ctx, &s[a..])?);
        inputs.push(id);
    }
    let dst = lw.output_storage(ctx, 0, out_shape.clone())?;
    lw.emit(ctx, Thunk::Concat { inputs, dst, outer, inner, elem_bytes: 4 });
    lw.define(ctx, 0, Value::Data { storage: dst, shape: out_shape })
}
