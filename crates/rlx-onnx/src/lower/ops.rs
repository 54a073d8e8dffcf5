//! One lowering function per supported ONNX op.

use rlx_sched::{ActKind, ArgOp, BinaryOp, CmpOp, DType, ReduceOp, Thunk};

use super::shape::{broadcast, broadcast_strides, checked_numel, normalize_axis, reshape_target};
use super::{
    attention_op, bitwise, compose, control, conv_nd, conv_transpose, einsum, fold, group_norm, index_compose,
    int_conv, linear_attention, logic, loss, lp, movement, nn, norm, onehot, promote, quant, recurrent, reduce, resize,
    rotary, sample, scatter, signal, slice, softmax, space, window, Lowerer, NodeCtx, Value,
};
use crate::error::ImportError;
use crate::tensor::{read_tensor, ConstData, ConstTensor};
use rlx_sched::thunk::{
    self as kinds, Activation, BatchedSgemm, BiasAdd, BinaryFull, CopyI64, FusedMmBiasAct, Narrow, Sgemm, SgemmT,
    Transpose,
};

/// The ONNX ops the importer lowers (default domain), sorted.
pub const SUPPORTED_OPS: &[&str] = &[
    "Abs",
    "Acos",
    "Acosh",
    "Add",
    "AffineGrid",
    "And",
    "ArgMax",
    "ArgMin",
    "Asin",
    "Asinh",
    "Atan",
    "Atanh",
    "Attention",
    "AveragePool",
    "BatchNormalization",
    "BitCast",
    "BitShift",
    "BitwiseAnd",
    "BitwiseNot",
    "BitwiseOr",
    "BitwiseXor",
    "BlackmanWindow",
    "Cast",
    "CastLike",
    "CausalConvWithState",
    "Ceil",
    "Celu",
    "CenterCropPad",
    "Clip",
    "Col2Im",
    "Compress",
    "Concat",
    "Constant",
    "ConstantOfShape",
    "Conv",
    "ConvInteger",
    "ConvTranspose",
    "Cos",
    "Cosh",
    "CumProd",
    "CumSum",
    "DFT",
    "DepthToSpace",
    "DequantizeLinear",
    "Det",
    "Div",
    "Dropout",
    "DynamicQuantizeLinear",
    "Einsum",
    "Elu",
    "Equal",
    "Erf",
    "Exp",
    "Expand",
    "EyeLike",
    "Flatten",
    "Floor",
    "GRU",
    "Gather",
    "GatherElements",
    "GatherND",
    "Gelu",
    "Gemm",
    "GlobalAveragePool",
    "GlobalMaxPool",
    "Greater",
    "GreaterOrEqual",
    "GridSample",
    "GroupNormalization",
    "HammingWindow",
    "HannWindow",
    "HardSigmoid",
    "HardSwish",
    "Hardmax",
    "Identity",
    "If",
    "InstanceNormalization",
    "IsInf",
    "IsNaN",
    "LRN",
    "LSTM",
    "LayerNormalization",
    "LeakyRelu",
    "Less",
    "LessOrEqual",
    "LinearAttention",
    "Log",
    "LogSoftmax",
    "Loop",
    "LpNormalization",
    "LpPool",
    "MatMul",
    "MatMulInteger",
    "Max",
    "MaxPool",
    "MaxUnpool",
    "Mean",
    "MeanVarianceNormalization",
    "Min",
    "Mish",
    "Mod",
    "Mul",
    "Neg",
    "NegativeLogLikelihoodLoss",
    "NonZero",
    "Not",
    "OneHot",
    "Or",
    "PRelu",
    "Pad",
    "Pow",
    "QLinearConv",
    "QLinearMatMul",
    "QuantizeLinear",
    "RMSNormalization",
    "RNN",
    "Range",
    "Reciprocal",
    "ReduceL1",
    "ReduceL2",
    "ReduceLogSum",
    "ReduceLogSumExp",
    "ReduceMax",
    "ReduceMean",
    "ReduceMin",
    "ReduceProd",
    "ReduceSum",
    "ReduceSumSquare",
    "Relu",
    "Reshape",
    "Resize",
    "ReverseSequence",
    "RotaryEmbedding",
    "Round",
    "STFT",
    "Scan",
    "Scatter",
    "ScatterElements",
    "ScatterND",
    "Selu",
    "Shape",
    "Shrink",
    "Sigmoid",
    "Sign",
    "Sin",
    "Sinh",
    "Size",
    "Slice",
    "Softmax",
    "SoftmaxCrossEntropyLoss",
    "Softplus",
    "Softsign",
    "SpaceToDepth",
    "Split",
    "Sqrt",
    "Squeeze",
    "Sub",
    "Sum",
    "Swish",
    "Tan",
    "Tanh",
    "TensorScatter",
    "ThresholdedRelu",
    "Tile",
    "TopK",
    "Transpose",
    "Trilu",
    "Unsqueeze",
    "Where",
    "Xor",
];

/// The input positions of `op_type` that must be known at import time
/// (shapes, axes, `k`, pads, slice bounds, split sizes): a model that feeds
/// them from a graph input needs `--const` for it.
pub fn const_inputs(op_type: &str) -> &'static [usize] {
    match op_type {
        "Reshape" | "Expand" | "Squeeze" | "Unsqueeze" | "TopK" | "CumSum" | "CumProd" | "Split" | "OneHot"
        | "Tile" | "CenterCropPad" => &[1],
        // The output grid's size.
        "AffineGrid" => &[1],
        // The window's size.
        "HannWindow" | "HammingWindow" | "BlackmanWindow" => &[0],
        "Col2Im" => &[1, 2],
        // Their outputs' shapes are their inputs' values.
        "ConstantOfShape" => &[0],
        "Range" => &[0, 1, 2],
        // Their outputs' shapes depend on these values.
        "Compress" => &[1],
        "MaxUnpool" => &[2],
        "NonZero" => &[0],
        // The transform length and axis; the frame step and length.
        "DFT" => &[1, 2],
        "STFT" => &[1, 3],
        // The trip count and the initial condition: the loop is unrolled.
        "Loop" => &[0, 1],
        "Resize" => &[1, 2, 3],
        "ReduceMean" | "ReduceSum" | "ReduceMax" | "ReduceMin" | "ReduceL2" | "ReduceProd" | "ReduceL1"
        | "ReduceSumSquare" | "ReduceLogSum" | "ReduceLogSumExp" | "Trilu" => &[1],
        "Dropout" => &[1, 2],
        "Slice" => &[1, 2, 3, 4],
        "Pad" => &[1, 2, 3],
        "Clip" => &[1, 2],
        // The weights, biases, lengths and peepholes of a recurrent layer.
        "LSTM" => &[1, 2, 3, 4, 7],
        "GRU" | "RNN" => &[1, 2, 3, 4],
        _ => &[],
    }
}

/// A plain copy of a whole tensor of `dtype`.
pub(super) fn copy_thunk(src: usize, dst: usize, shape: &[usize], dtype: DType) -> Thunk<usize> {
    let len = shape.iter().product();
    match dtype.size() {
        4 => Thunk::Copy(kinds::Copy { src, dst, len }),
        8 => Thunk::CopyI64(CopyI64 { src, dst, len }),
        elem_bytes => {
            Thunk::Narrow(Narrow { src, dst, outer: 1, src_stride: len, dst_stride: len, inner: len, elem_bytes })
        }
    }
}

pub(super) type R = Result<(), ImportError>;

/// A `Transpose` of f32 `src` by `perm` into `dst`.
pub(super) fn permute_thunk(
    ctx: &NodeCtx<'_>,
    src: usize,
    shape: &[usize],
    perm: &[usize],
    dst: usize,
) -> Result<Thunk<usize>, ImportError> {
    let strides = super::shape::row_major_strides(shape);
    Ok(Thunk::Transpose(Transpose {
        src,
        dst,
        in_total: numel(ctx, shape)?,
        out_dims: perm.iter().map(|&p| shape[p]).collect(),
        in_strides: perm.iter().map(|&p| strides[p]).collect(),
        elem_bytes: 4,
    }))
}

pub(super) fn lower_node(lw: &mut Lowerer, ctx: &NodeCtx<'_>) -> R {
    if promote::lower_widened(lw, ctx)? {
        return Ok(());
    }
    lower_op(lw, ctx)
}

/// Lowers a node whose integer inputs are all of the types ops compute in
/// (see [`promote`]).
pub(super) fn lower_op(lw: &mut Lowerer, ctx: &NodeCtx<'_>) -> R {
    let node = ctx.node;
    if node.domain == "ai.onnx.preview" && node.op_type == "FlexAttention" {
        return attention_op::flex_attention(lw, ctx);
    }
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
        "HardSwish" => unary(lw, ctx, ActKind::HardSwish),
        "Mish" => unary(lw, ctx, ActKind::Mish),
        "Softplus" => unary(lw, ctx, ActKind::Softplus),
        "Softsign" => unary(lw, ctx, ActKind::Softsign),
        "Sin" => unary(lw, ctx, ActKind::Sin),
        "Cos" => unary(lw, ctx, ActKind::Cos),
        "Tan" => unary(lw, ctx, ActKind::Tan),
        "Asin" => unary(lw, ctx, ActKind::Asin),
        "Acos" => unary(lw, ctx, ActKind::Acos),
        "Atan" => unary(lw, ctx, ActKind::Atan),
        "Sinh" => unary(lw, ctx, ActKind::Sinh),
        "Cosh" => unary(lw, ctx, ActKind::Cosh),
        "Asinh" => unary(lw, ctx, ActKind::Asinh),
        "Acosh" => unary(lw, ctx, ActKind::Acosh),
        "Atanh" => unary(lw, ctx, ActKind::Atanh),
        "Sign" => unary(lw, ctx, ActKind::Sign),
        "Round" => unary(lw, ctx, ActKind::Round),
        "Floor" => unary(lw, ctx, ActKind::Floor),
        "Ceil" => unary(lw, ctx, ActKind::Ceil),
        "Reciprocal" => unary(lw, ctx, ActKind::Recip),
        "Add" => logic::arithmetic(lw, ctx, BinaryOp::Add),
        "Sub" => logic::arithmetic(lw, ctx, BinaryOp::Sub),
        "Mul" => logic::arithmetic(lw, ctx, BinaryOp::Mul),
        "Div" => logic::arithmetic(lw, ctx, BinaryOp::Div),
        "Pow" => logic::arithmetic(lw, ctx, BinaryOp::Pow),
        "Max" => logic::variadic(lw, ctx, BinaryOp::Max, false),
        "Min" => logic::variadic(lw, ctx, BinaryOp::Min, false),
        "Sum" => logic::variadic(lw, ctx, BinaryOp::Add, false),
        "Mean" => logic::variadic(lw, ctx, BinaryOp::Add, true),
        "Equal" => logic::comparison(lw, ctx, CmpOp::Eq),
        "Less" => logic::comparison(lw, ctx, CmpOp::Lt),
        "LessOrEqual" => logic::comparison(lw, ctx, CmpOp::Le),
        "Greater" => logic::comparison(lw, ctx, CmpOp::Gt),
        "GreaterOrEqual" => logic::comparison(lw, ctx, CmpOp::Ge),
        "And" => logic::logical(lw, ctx, BinaryOp::BitAnd),
        "Or" => logic::logical(lw, ctx, BinaryOp::BitOr),
        "Xor" => logic::logical(lw, ctx, BinaryOp::BitXor),
        "Mod" => logic::modulo(lw, ctx),
        "BitwiseAnd" => bitwise::bitwise(lw, ctx, BinaryOp::BitAnd),
        "BitwiseOr" => bitwise::bitwise(lw, ctx, BinaryOp::BitOr),
        "BitwiseXor" => bitwise::bitwise(lw, ctx, BinaryOp::BitXor),
        "BitwiseNot" => bitwise::bitwise_not(lw, ctx),
        "BitShift" => bitwise::bit_shift(lw, ctx),
        "QuantizeLinear" => quant::quantize(lw, ctx),
        "DequantizeLinear" => quant::dequantize(lw, ctx),
        "DynamicQuantizeLinear" => quant::dynamic_quantize(lw, ctx),
        "MatMulInteger" => quant::matmul_integer(lw, ctx),
        "Tile" => compose::tile(lw, ctx),
        "Det" => compose::det(lw, ctx),
        "LRN" => compose::lrn(lw, ctx),
        "ReverseSequence" => index_compose::reverse_sequence(lw, ctx),
        "MaxUnpool" => index_compose::max_unpool(lw, ctx),
        "TensorScatter" => index_compose::tensor_scatter(lw, ctx),
        "LinearAttention" => linear_attention::linear_attention(lw, ctx),
        "Swish" => compose::swish(lw, ctx),
        "MeanVarianceNormalization" => compose::mean_variance_normalization(lw, ctx),
        "Compress" => compose::compress(lw, ctx),
        "NonZero" => compose::non_zero(lw, ctx),
        "CausalConvWithState" => compose::causal_conv_with_state(lw, ctx),
        "DFT" => signal::dft(lw, ctx),
        "STFT" => signal::stft(lw, ctx),
        "RotaryEmbedding" => rotary::rotary_embedding(lw, ctx),
        "CenterCropPad" => compose::center_crop_pad(lw, ctx),
        "Scan" => control::scan(lw, ctx),
        "If" => control::if_op(lw, ctx),
        "Loop" => control::loop_op(lw, ctx),
        "BitCast" => compose::bit_cast(lw, ctx),
        "HannWindow" => compose::window(lw, ctx, compose::Window::Hann),
        "HammingWindow" => compose::window(lw, ctx, compose::Window::Hamming),
        "BlackmanWindow" => compose::window(lw, ctx, compose::Window::Blackman),
        "QLinearMatMul" => quant::qlinear_matmul(lw, ctx),
        "ConvInteger" => int_conv::conv_integer(lw, ctx),
        "QLinearConv" => int_conv::qlinear_conv(lw, ctx),
        "Trilu" => logic::trilu(lw, ctx),
        "Not" => logic::not(lw, ctx),
        "IsNaN" => logic::is_nan(lw, ctx),
        "IsInf" => logic::is_inf(lw, ctx),
        "Where" => logic::select(lw, ctx),
        "Cast" => logic::cast(lw, ctx),
        "CastLike" => logic::cast_like(lw, ctx),
        "Expand" => movement::expand(lw, ctx),
        "Slice" => slice::slice(lw, ctx),
        "Split" => slice::split(lw, ctx),
        "Pad" => movement::pad(lw, ctx),
        "ConstantOfShape" => movement::constant_of_shape(lw, ctx),
        "EyeLike" => movement::eye_like(lw, ctx),
        "Range" => movement::range(lw, ctx),
        "TopK" => reduce::top_k(lw, ctx),
        "CumSum" => reduce::cumulative(lw, ctx, BinaryOp::Add),
        "CumProd" => reduce::cumulative(lw, ctx, BinaryOp::Mul),
        "Einsum" => einsum::einsum(lw, ctx),
        "MatMul" => matmul(lw, ctx),
        "Gemm" => gemm(lw, ctx),
        "Softmax" => softmax::softmax(lw, ctx),
        "LogSoftmax" => softmax::log_softmax(lw, ctx),
        "Hardmax" => softmax::hardmax(lw, ctx),
        "NegativeLogLikelihoodLoss" => loss::nll_loss(lw, ctx),
        "SoftmaxCrossEntropyLoss" => loss::softmax_cross_entropy(lw, ctx),
        "OneHot" => onehot::one_hot(lw, ctx),
        "LpNormalization" => lp::lp_normalization(lw, ctx),
        "LpPool" => lp::lp_pool(lw, ctx),
        "DepthToSpace" => space::depth_to_space(lw, ctx),
        "SpaceToDepth" => space::space_to_depth(lw, ctx),
        "Reshape" => reshape(lw, ctx),
        "Flatten" => flatten(lw, ctx),
        "Identity" => identity(lw, ctx),
        "Squeeze" => squeeze(lw, ctx),
        "Unsqueeze" => unsqueeze(lw, ctx),
        "Transpose" => movement::transpose(lw, ctx),
        "Constant" => constant(lw, ctx),
        "Shape" => shape_op(lw, ctx),
        "Size" => size_op(lw, ctx),
        "Gather" => movement::gather(lw, ctx),
        "GatherElements" => scatter::gather_elements(lw, ctx),
        "GatherND" => scatter::gather_nd(lw, ctx),
        "ScatterElements" | "Scatter" => scatter::scatter_elements(lw, ctx),
        "ScatterND" => scatter::scatter_nd(lw, ctx),
        "GridSample" => sample::grid_sample(lw, ctx),
        "AffineGrid" => sample::affine_grid(lw, ctx),
        "Concat" => movement::concat(lw, ctx),
        "Clip" => nn::clip(lw, ctx),
        "LeakyRelu" => nn::leaky_relu(lw, ctx),
        "HardSigmoid" => nn::hard_sigmoid(lw, ctx),
        "Gelu" => nn::gelu(lw, ctx),
        "Attention" => attention_op::attention(lw, ctx),
        "Elu" => nn::elu(lw, ctx),
        "Selu" => nn::selu(lw, ctx),
        "Celu" => nn::celu(lw, ctx),
        "ThresholdedRelu" => nn::thresholded_relu(lw, ctx),
        "Shrink" => nn::shrink(lw, ctx),
        "PRelu" => nn::prelu(lw, ctx),
        "Dropout" => nn::dropout(lw, ctx),
        "LayerNormalization" => norm::layer_norm(lw, ctx),
        "RMSNormalization" => norm::rms_norm(lw, ctx),
        "GroupNormalization" => group_norm::group_norm(lw, ctx),
        "InstanceNormalization" => group_norm::instance_norm(lw, ctx),
        "Conv" | "ConvTranspose" | "MaxPool" | "AveragePool" if window::is_1d(lw, ctx)? => window::as_2d(lw, ctx),
        "ConvTranspose" if conv_nd::is_nd(lw, ctx)? => conv_nd::conv_transpose_nd(lw, ctx),
        "ConvTranspose" => conv_transpose::conv_transpose(lw, ctx),
        "Col2Im" => conv_transpose::col2im(lw, ctx),
        "Resize" => resize::resize(lw, ctx),
        "Conv" if conv_nd::is_nd(lw, ctx)? => conv_nd::conv_nd(lw, ctx),
        "LSTM" => recurrent::recurrent(lw, ctx, recurrent::Op::Lstm),
        "GRU" => recurrent::recurrent(lw, ctx, recurrent::Op::Gru),
        "RNN" => recurrent::recurrent(lw, ctx, recurrent::Op::Rnn),
        "Conv" => window::conv(lw, ctx),
        "MaxPool" => window::pool(lw, ctx, ReduceOp::Max),
        "AveragePool" => window::pool(lw, ctx, ReduceOp::Mean),
        "GlobalAveragePool" => window::global_pool(lw, ctx, ReduceOp::Mean),
        "GlobalMaxPool" => window::global_pool(lw, ctx, ReduceOp::Max),
        "BatchNormalization" => norm::batch_norm(lw, ctx),
        "ReduceMean" => reduce::reduce(lw, ctx, ReduceOp::Mean),
        "ReduceSum" => reduce::reduce(lw, ctx, ReduceOp::Sum),
        "ReduceMax" => reduce::reduce(lw, ctx, ReduceOp::Max),
        "ReduceL2" => reduce::reduce(lw, ctx, ReduceOp::L2),
        "ReduceMin" => reduce::reduce(lw, ctx, ReduceOp::Min),
        "ReduceProd" => reduce::reduce(lw, ctx, ReduceOp::Prod),
        "ReduceL1" => reduce::reduce(lw, ctx, ReduceOp::L1),
        "ReduceSumSquare" => reduce::reduce(lw, ctx, ReduceOp::SumSquare),
        "ReduceLogSumExp" => reduce::reduce(lw, ctx, ReduceOp::LogSumExp),
        "ReduceLogSum" => reduce::reduce_log_sum(lw, ctx),
        "ArgMax" => reduce::arg_reduce(lw, ctx, ArgOp::Max),
        "ArgMin" => reduce::arg_reduce(lw, ctx, ArgOp::Min),
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
    if let Some(c) = lw.const_input(ctx, 0)? {
        if let Some(folded) = fold::unary(act, &c) {
            return lw.define(ctx, 0, Value::Const(folded));
        }
    }
    activation(lw, ctx, act)
}

/// `Activation` of input 0 (arity already checked).
pub(super) fn activation(lw: &mut Lowerer, ctx: &NodeCtx<'_>, act: ActKind) -> R {
    let (src, shape) = lw.data_input(ctx, 0)?;
    let len = numel(ctx, &shape)?;
    let dst = lw.output_storage(ctx, 0, shape.clone())?;
    lw.emit(ctx, Thunk::Activation(Activation { src, dst, len, act }));
    lw.define(ctx, 0, Value::Data { storage: dst, shape })
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
        Thunk::Sgemm(Sgemm { a, b, c, m: rows, k, n })
    } else if a_count == 1 {
        Thunk::BatchedSgemm(BatchedSgemm { a, b, c, batch, m, k, n, a_bcast: true, b_bcast: false })
    } else if a_count == batch && b_count == batch {
        Thunk::BatchedSgemm(BatchedSgemm { a, b, c, batch, m, k, n, a_bcast: false, b_bcast: false })
    } else {
        // Batch dims that broadcast both ways: each operand is expanded to
        // the full batch first (one stride-0 `Transpose` each).
        let full =
            |rows: usize, cols: usize| -> Vec<usize> { batch_shape.iter().copied().chain([rows, cols]).collect() };
        let (a_full, b_full) = (full(m, k), full(k, n));
        let a = if a_count == batch { a } else { movement::broadcast_into_scratch(lw, ctx, a, &a2, &a_full)? };
        let b = if b_count == batch { b } else { movement::broadcast_into_scratch(lw, ctx, b, &b2, &b_full)? };
        Thunk::BatchedSgemm(BatchedSgemm { a, b, c, batch, m, k, n, a_bcast: false, b_bcast: false })
    };
    lw.emit(ctx, thunk);
    lw.define(ctx, 0, Value::Data { storage: c, shape: out_shape })
}

fn gemm(lw: &mut Lowerer, ctx: &NodeCtx<'_>) -> R {
    ctx.expect_arity(2, 3)?;
    let (alpha, beta) = (ctx.float_attr("alpha", 1.0)?, ctx.float_attr("beta", 1.0)?);
    let flag = |name: &str| -> Result<bool, ImportError> {
        match ctx.int_attr(name, 0)? {
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
        // `beta = 0` drops C, as the spec's formula does.
        Some(_) if beta != 0.0 => {
            let (c_id, c_shape) = scaled_input(lw, ctx, 2, beta)?;
            if broadcast(&c_shape, &out).as_deref() != Some(out.as_slice()) {
                return Err(ctx.err(format!("C of shape {c_shape:?} does not broadcast to {out:?}")));
            }
            Some((c_id, c_shape))
        }
        _ => None,
    };
    let y = lw.output_storage(ctx, 0, out.clone())?;
    let row_bias = |s: &[usize]| s == [n] || s == [1, n];
    match bias {
        Some((c_id, c_shape)) if !ta && !tb && alpha == 1.0 && row_bias(&c_shape) => {
            lw.emit(
                ctx,
                Thunk::FusedMmBiasAct(FusedMmBiasAct { a, w: b, bias: c_id, c: y, m, k, n, act: ActKind::Identity }),
            );
        }
        bias => {
            let product = if ta || tb {
                Thunk::SgemmT(SgemmT { a, b, c: y, m, k, n, ta, tb })
            } else {
                Thunk::Sgemm(Sgemm { a, b, c: y, m, k, n })
            };
            lw.emit(ctx, product);
            if alpha != 1.0 {
                let scale = lw.add_param(
                    &format!("{}.alpha", ctx.node.output[0]),
                    &ConstTensor { shape: vec![], data: ConstData::F32(vec![alpha]) },
                )?;
                lw.emit(ctx, logic::binary_thunk(ctx, (y, &out), (scale, &[]), y, &out, BinaryOp::Mul, 4)?);
            }
            match bias {
                None => {}
                Some((c_id, c_shape)) if row_bias(&c_shape) => {
                    lw.emit(ctx, Thunk::BiasAdd(BiasAdd { src: y, bias: c_id, dst: y, rows: m, cols: n }));
                }
                Some((c_id, c_shape)) => {
                    let len = numel(ctx, &out)?;
                    let c_len = numel(ctx, &c_shape)?;
                    // y is read element for element, so the in-place
                    // add is an exact alias the validator allows.
                    lw.emit(
                        ctx,
                        Thunk::BinaryFull(BinaryFull {
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
                        }),
                    );
                }
            }
        }
    }
    lw.define(ctx, 0, Value::Data { storage: y, shape: out })
}

/// Input `i` (f32) times `factor`: the input itself when `factor` is 1,
/// a folded constant for a constant, else one `BinaryFull` into scratch.
fn scaled_input(
    lw: &mut Lowerer,
    ctx: &NodeCtx<'_>,
    i: usize,
    factor: f32,
) -> Result<(usize, Vec<usize>), ImportError> {
    if factor == 1.0 {
        return lw.data_input(ctx, i);
    }
    if let Some(c) = lw.const_input(ctx, i)? {
        if let ConstData::F32(v) = &c.data {
            let scaled =
                ConstTensor { shape: c.shape.clone(), data: ConstData::F32(v.iter().map(|x| x * factor).collect()) };
            let name = format!("{}.scaled", ctx.input_name(i).unwrap_or_default());
            return Ok((lw.add_param(&name, &scaled)?, c.shape));
        }
    }
    let (id, shape) = lw.data_input(ctx, i)?;
    let f = lw.add_param(
        &format!("{}.factor", ctx.node.output[0]),
        &ConstTensor { shape: vec![], data: ConstData::F32(vec![factor]) },
    )?;
    let dst = lw.scratch_storage(&format!("{}.scaled", ctx.node.output[0]), shape.clone(), DType::F32)?;
    lw.emit(ctx, logic::binary_thunk(ctx, (id, &shape), (f, &[]), dst, &shape, BinaryOp::Mul, 4)?);
    Ok((dst, shape))
}

fn reshape(lw: &mut Lowerer, ctx: &NodeCtx<'_>) -> R {
    ctx.expect_arity(2, 2)?;
    let (_, input) = lw.input(ctx, 0)?;
    let (_, spec) = lw.const_ints(ctx, 1)?;
    let allowzero = ctx.int_attr("allowzero", 0)? != 0;
    let shape = reshape_target(value_shape(&input), &spec, allowzero).map_err(|m| ctx.err(m))?;
    view(lw, ctx, input, shape)
}

fn flatten(lw: &mut Lowerer, ctx: &NodeCtx<'_>) -> R {
    ctx.expect_arity(1, 1)?;
    let (_, input) = lw.input(ctx, 0)?;
    let s = value_shape(&input).to_vec();
    let axis = ctx.int_attr("axis", 1)?;
    // `axis` lies in [-rank, rank]; a negative one counts from the rank
    // (so -1 keeps the last axis apart), not from rank + 1.
    let rank = s.len() as i64;
    let a = usize::try_from(if axis < 0 { axis + rank } else { axis })
        .ok()
        .filter(|&a| a <= s.len())
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
        Ok(ctx.ints_attr("axes")?.map(<[i64]>::to_vec))
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

fn constant(lw: &mut Lowerer, ctx: &NodeCtx<'_>) -> R {
    ctx.expect_arity(0, 0)?;
    let c = if let Some(t) = ctx.tensor_attr("value")? {
        read_tensor(t, std::path::Path::new(".")).map_err(|e| ctx.bad_attr("value", e.to_string()))?
    } else if ctx.has_attr("value_float") {
        ConstTensor { shape: vec![], data: ConstData::F32(vec![ctx.float_attr("value_float", 0.0)?]) }
    } else if ctx.has_attr("value_int") {
        ConstTensor { shape: vec![], data: ConstData::I64(vec![ctx.int_attr("value_int", 0)?]) }
    } else if let Some(v) = ctx.ints_attr("value_ints")? {
        ConstTensor { shape: vec![v.len()], data: ConstData::I64(v.to_vec()) }
    } else {
        let names: Vec<&str> = ctx.node.attribute.iter().map(|a| a.name.as_str()).collect();
        return Err(ctx.err(format!("has attributes {names:?}; supported: value, value_float, value_int, value_ints")));
    };
    lw.define(ctx, 0, Value::Const(c))
}

/// `Size` is always known at import time: the element count as an int64
/// scalar.
fn size_op(lw: &mut Lowerer, ctx: &NodeCtx<'_>) -> R {
    ctx.expect_arity(1, 1)?;
    let (_, input) = lw.input(ctx, 0)?;
    let n = numel(ctx, value_shape(&input))?;
    let n = i64::try_from(n).map_err(|_| ctx.err(format!("{n} elements do not fit int64")))?;
    lw.define(ctx, 0, Value::Const(ConstTensor { shape: vec![], data: ConstData::I64(vec![n]) }))
}

/// `Shape` is always known at import time: it folds to a constant.
fn shape_op(lw: &mut Lowerer, ctx: &NodeCtx<'_>) -> R {
    ctx.expect_arity(1, 1)?;
    let (_, input) = lw.input(ctx, 0)?;
    let s = value_shape(&input);
    let rank = s.len() as i64;
    // Opset 15 `start`/`end`, clamped to [0, rank] as the spec says.
    let clamp = |v: i64| (if v < 0 { v + rank } else { v }).clamp(0, rank) as usize;
    let (start, end) = (clamp(ctx.int_attr("start", 0)?), clamp(ctx.int_attr("end", rank)?));
    let dims: Vec<i64> = s.get(start..end.max(start)).unwrap_or(&[]).iter().map(|&d| d as i64).collect();
    lw.define(ctx, 0, Value::Const(ConstTensor { shape: vec![dims.len()], data: ConstData::I64(dims) }))
}
