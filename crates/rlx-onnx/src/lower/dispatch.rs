//! The dispatcher: one table maps each supported ONNX op to the family
//! function that lowers it. The table is expanded into the `match` of
//! [`lower_op`] and into [`SUPPORTED_OPS`], so the list a user sees and the
//! ops the importer lowers cannot differ.

use rlx_sched::{ActKind, ArgOp, BinaryOp, CmpOp, PoolKind, ReduceOp};

use super::attributes::ATTRIBUTES;
use super::build::{pad_fold, R};
use super::ops::{
    attention_op, compose, control, conv_nd, conv_transpose, einsum, elementwise, group_norm, index_compose, int_conv,
    linear_attention, loss, lp, matmul, movement, nn, norm, onehot, quant, recurrent, reduce, resize, rotary, sample,
    scatter, signal, slice, softmax, space, view, window,
};
use super::{promote, Lowerer, NodeCtx};
use crate::error::ImportError;

/// Expands the op table: each row is `"Op" => family::function(extra
/// arguments);`, the function called as `function(lw, ctx, extra...)`.
/// Rows are sorted by op name, which [`SUPPORTED_OPS`] promises.
macro_rules! op_table {
    ($($op:literal => $($f:ident)::+ ($($arg:expr),*);)*) => {
        /// The ONNX ops the importer lowers (default domain), sorted.
        pub const SUPPORTED_OPS: &[&str] = &[$($op),*];

        /// Lowers `op` by its row of the table; `None` for an op without one.
        fn lower_by_table(lw: &mut Lowerer, ctx: &NodeCtx<'_>, op: &str) -> Option<R> {
            Some(match op {
                $($op => $($f)::+(lw, ctx $(, $arg)*),)*
                _ => return None,
            })
        }
    };
}

op_table! {
    "Abs" => elementwise::unary(ActKind::Abs);
    "Acos" => elementwise::unary(ActKind::Acos);
    "Acosh" => elementwise::unary(ActKind::Acosh);
    "Add" => elementwise::arithmetic(BinaryOp::Add);
    "AffineGrid" => sample::affine_grid();
    "And" => elementwise::logical(BinaryOp::BitAnd);
    "ArgMax" => reduce::arg_reduce(ArgOp::Max);
    "ArgMin" => reduce::arg_reduce(ArgOp::Min);
    "Asin" => elementwise::unary(ActKind::Asin);
    "Asinh" => elementwise::unary(ActKind::Asinh);
    "Atan" => elementwise::unary(ActKind::Atan);
    "Atanh" => elementwise::unary(ActKind::Atanh);
    "Attention" => attention_op::attention();
    "AveragePool" => pool(PoolKind::Mean);
    "BatchNormalization" => norm::batch_norm();
    "BitCast" => compose::bit_cast();
    "BitShift" => elementwise::bitwise::bit_shift();
    "BitwiseAnd" => elementwise::bitwise::bitwise(BinaryOp::BitAnd);
    "BitwiseNot" => elementwise::bitwise::bitwise_not();
    "BitwiseOr" => elementwise::bitwise::bitwise(BinaryOp::BitOr);
    "BitwiseXor" => elementwise::bitwise::bitwise(BinaryOp::BitXor);
    "BlackmanWindow" => compose::window(compose::Window::Blackman);
    "Cast" => elementwise::cast();
    "CastLike" => elementwise::cast_like();
    "CausalConvWithState" => compose::causal_conv_with_state();
    "Ceil" => elementwise::unary(ActKind::Ceil);
    "Celu" => nn::celu();
    "CenterCropPad" => compose::center_crop_pad();
    "Clip" => nn::clip();
    "Col2Im" => conv_transpose::col2im();
    "Compress" => compose::compress();
    "Concat" => movement::concat();
    "Constant" => view::constant();
    "ConstantOfShape" => movement::constant_of_shape();
    "Conv" => conv();
    "ConvInteger" => int_conv::conv_integer();
    "ConvTranspose" => conv_transpose();
    "Cos" => elementwise::unary(ActKind::Cos);
    "Cosh" => elementwise::unary(ActKind::Cosh);
    "CumProd" => reduce::cumulative(BinaryOp::Mul);
    "CumSum" => reduce::cumulative(BinaryOp::Add);
    "DFT" => signal::dft();
    "DepthToSpace" => space::depth_to_space();
    "DequantizeLinear" => quant::dequantize();
    "Det" => compose::det();
    "Div" => elementwise::arithmetic(BinaryOp::Div);
    "Dropout" => nn::dropout();
    "DynamicQuantizeLinear" => quant::dynamic_quantize();
    "Einsum" => einsum::einsum();
    "Elu" => nn::elu();
    "Equal" => elementwise::comparison(CmpOp::Eq);
    "Erf" => elementwise::unary(ActKind::Erf);
    "Exp" => elementwise::unary(ActKind::Exp);
    "Expand" => movement::expand();
    "EyeLike" => movement::eye_like();
    "Flatten" => view::flatten();
    "Floor" => elementwise::unary(ActKind::Floor);
    "GRU" => recurrent::recurrent(recurrent::Op::Gru);
    "Gather" => movement::gather();
    "GatherElements" => scatter::gather_elements();
    "GatherND" => scatter::gather_nd();
    "Gelu" => nn::gelu();
    "Gemm" => matmul::gemm();
    "GlobalAveragePool" => window::global_pool(PoolKind::Mean);
    "GlobalMaxPool" => window::global_pool(PoolKind::Max);
    "Greater" => elementwise::comparison(CmpOp::Gt);
    "GreaterOrEqual" => elementwise::comparison(CmpOp::Ge);
    "GridSample" => sample::grid_sample();
    "GroupNormalization" => group_norm::group_norm();
    "HammingWindow" => compose::window(compose::Window::Hamming);
    "HannWindow" => compose::window(compose::Window::Hann);
    "HardSigmoid" => nn::hard_sigmoid();
    "HardSwish" => elementwise::unary(ActKind::HardSwish);
    "Hardmax" => softmax::hardmax();
    "Identity" => view::identity();
    "If" => control::if_op();
    "InstanceNormalization" => group_norm::instance_norm();
    "IsInf" => elementwise::is_inf();
    "IsNaN" => elementwise::is_nan();
    "LRN" => compose::lrn();
    "LSTM" => recurrent::recurrent(recurrent::Op::Lstm);
    "LayerNormalization" => norm::layer_norm();
    "LeakyRelu" => nn::leaky_relu();
    "Less" => elementwise::comparison(CmpOp::Lt);
    "LessOrEqual" => elementwise::comparison(CmpOp::Le);
    "LinearAttention" => linear_attention::linear_attention();
    "Log" => elementwise::unary(ActKind::Log);
    "LogSoftmax" => softmax::log_softmax();
    "Loop" => control::loop_op();
    "LpNormalization" => lp::lp_normalization();
    "LpPool" => lp::lp_pool();
    "MatMul" => matmul::matmul();
    "MatMulInteger" => quant::matmul_integer();
    "Max" => elementwise::variadic(BinaryOp::Max, false);
    "MaxPool" => pool(PoolKind::Max);
    "MaxUnpool" => index_compose::max_unpool();
    "Mean" => elementwise::variadic(BinaryOp::Add, true);
    "MeanVarianceNormalization" => compose::mean_variance_normalization();
    "Min" => elementwise::variadic(BinaryOp::Min, false);
    "Mish" => elementwise::unary(ActKind::Mish);
    "Mod" => elementwise::modulo();
    "Mul" => elementwise::arithmetic(BinaryOp::Mul);
    "Neg" => elementwise::unary(ActKind::Neg);
    "NegativeLogLikelihoodLoss" => loss::nll_loss();
    "NonZero" => compose::non_zero();
    "Not" => elementwise::not();
    "OneHot" => onehot::one_hot();
    "Or" => elementwise::logical(BinaryOp::BitOr);
    "PRelu" => nn::prelu();
    "Pad" => movement::pad();
    "Pow" => elementwise::arithmetic(BinaryOp::Pow);
    "QLinearConv" => int_conv::qlinear_conv();
    "QLinearMatMul" => quant::qlinear_matmul();
    "QuantizeLinear" => quant::quantize();
    "RMSNormalization" => norm::rms_norm();
    "RNN" => recurrent::recurrent(recurrent::Op::Rnn);
    "Range" => movement::range();
    "Reciprocal" => elementwise::unary(ActKind::Recip);
    "ReduceL1" => reduce::reduce(ReduceOp::L1);
    "ReduceL2" => reduce::reduce(ReduceOp::L2);
    "ReduceLogSum" => reduce::reduce_log_sum();
    "ReduceLogSumExp" => reduce::reduce(ReduceOp::LogSumExp);
    "ReduceMax" => reduce::reduce(ReduceOp::Max);
    "ReduceMean" => reduce::reduce(ReduceOp::Mean);
    "ReduceMin" => reduce::reduce(ReduceOp::Min);
    "ReduceProd" => reduce::reduce(ReduceOp::Prod);
    "ReduceSum" => reduce::reduce(ReduceOp::Sum);
    "ReduceSumSquare" => reduce::reduce(ReduceOp::SumSquare);
    "Relu" => elementwise::unary(ActKind::Relu);
    "Reshape" => view::reshape();
    "Resize" => resize::resize();
    "ReverseSequence" => index_compose::reverse_sequence();
    "RotaryEmbedding" => rotary::rotary_embedding();
    "Round" => elementwise::unary(ActKind::Round);
    "STFT" => signal::stft();
    "Scan" => control::scan();
    "Scatter" => scatter::scatter_elements();
    "ScatterElements" => scatter::scatter_elements();
    "ScatterND" => scatter::scatter_nd();
    "Selu" => nn::selu();
    "Shape" => view::shape_op();
    "Shrink" => nn::shrink();
    "Sigmoid" => elementwise::unary(ActKind::Sigmoid);
    "Sign" => elementwise::unary(ActKind::Sign);
    "Sin" => elementwise::unary(ActKind::Sin);
    "Sinh" => elementwise::unary(ActKind::Sinh);
    "Size" => view::size_op();
    "Slice" => slice::slice();
    "Softmax" => softmax::softmax();
    "SoftmaxCrossEntropyLoss" => loss::softmax_cross_entropy();
    "Softplus" => elementwise::unary(ActKind::Softplus);
    "Softsign" => elementwise::unary(ActKind::Softsign);
    "SpaceToDepth" => space::space_to_depth();
    "Split" => slice::split();
    "Sqrt" => elementwise::unary(ActKind::Sqrt);
    "Squeeze" => view::squeeze();
    "Sub" => elementwise::arithmetic(BinaryOp::Sub);
    "Sum" => elementwise::variadic(BinaryOp::Add, false);
    "Swish" => compose::swish();
    "Tan" => elementwise::unary(ActKind::Tan);
    "Tanh" => elementwise::unary(ActKind::Tanh);
    "TensorScatter" => index_compose::tensor_scatter();
    "ThresholdedRelu" => nn::thresholded_relu();
    "Tile" => compose::tile();
    "TopK" => reduce::top_k();
    "Transpose" => movement::transpose();
    "Trilu" => elementwise::trilu();
    "Unsqueeze" => view::unsqueeze();
    "Where" => elementwise::select();
    "Xor" => elementwise::logical(BinaryOp::BitXor);
}

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

/// Lowers one node, counted against the import budget (its constants
/// too, once it is lowered).
pub(crate) fn lower_node(lw: &mut Lowerer, ctx: &NodeCtx<'_>) -> R {
    lw.budget.node(ctx)?;
    lower_counted(lw, ctx)?;
    lw.budget.check_bytes(ctx)
}

fn lower_counted(lw: &mut Lowerer, ctx: &NodeCtx<'_>) -> R {
    if let Some(node) = pad_fold::absorb(lw, ctx)? {
        return lower_counted(lw, &NodeCtx { node: &node, label: ctx.label.clone() });
    }
    if promote::lower_widened(lw, ctx)? {
        return Ok(());
    }
    lower_op(lw, ctx)
}

/// Lowers a node whose integer inputs are all of the types ops compute in
/// (see [`promote`]).
pub(crate) fn lower_op(lw: &mut Lowerer, ctx: &NodeCtx<'_>) -> R {
    let node = ctx.node;
    if node.domain == "ai.onnx.preview" && node.op_type == "FlexAttention" {
        return attention_op::flex_attention(lw, ctx);
    }
    if !(node.domain.is_empty() || node.domain == "ai.onnx") {
        return Err(unsupported(ctx, &format!("{}:{}", node.domain, node.op_type)));
    }
    lower_by_table(lw, ctx, &node.op_type).unwrap_or_else(|| Err(unsupported(ctx, &node.op_type)))?;
    // After the op's own checks, whose messages say more about an
    // attribute the op reads (`min` of `Clip` became an input, say).
    check_attributes(ctx, lw.opset)
}

/// The schema version of `op` in force at `opset` (the first version for
/// an op defined after it) and the attributes it defines; `None` for an
/// op the importer does not lower.
pub fn op_attributes(op: &str, opset: i64) -> Option<(i64, &'static [&'static str])> {
    let at = ATTRIBUTES.binary_search_by(|(name, _)| (*name).cmp(op)).ok()?;
    let versions = ATTRIBUTES[at].1;
    versions.iter().rev().find(|(since, _)| *since <= opset).or(versions.first()).copied()
}

/// Every attribute of the node is one its op's schema defines at the
/// model's opset: an attribute the op does not have is an error, as the
/// ONNX checker and onnxruntime make it, never ignored.
fn check_attributes(ctx: &NodeCtx<'_>, opset: i64) -> R {
    let op = ctx.node.op_type.as_str();
    let Some((since, defined)) = op_attributes(op, opset) else { return Ok(()) };
    match ctx.node.attribute.iter().find(|a| !defined.contains(&a.name.as_str())) {
        None => Ok(()),
        Some(a) => {
            let list = if defined.is_empty() { "none".to_string() } else { defined.join(", ") };
            Err(ctx.bad_attr(
                &a.name,
                format!(
                    "is not an attribute of {op} at opset {opset} (its schema since opset {since} defines: {list})"
                ),
            ))
        }
    }
}

fn unsupported(ctx: &NodeCtx<'_>, op: &str) -> ImportError {
    ImportError::UnsupportedOp { op: op.to_string(), node: ctx.label.clone(), supported: SUPPORTED_OPS.join(", ") }
}

/// `Conv`: a 1-D one as 2-D over a height of 1, 3-D and up by columns,
/// 2-D in one kernel call.
fn conv(lw: &mut Lowerer, ctx: &NodeCtx<'_>) -> R {
    if window::is_1d(lw, ctx)? {
        window::as_2d(lw, ctx)
    } else if conv_nd::is_nd(lw, ctx)? {
        conv_nd::conv_nd(lw, ctx)
    } else {
        window::conv(lw, ctx)
    }
}

/// `ConvTranspose`, split by rank as [`conv`].
fn conv_transpose(lw: &mut Lowerer, ctx: &NodeCtx<'_>) -> R {
    if window::is_1d(lw, ctx)? {
        window::as_2d(lw, ctx)
    } else if conv_nd::is_nd(lw, ctx)? {
        conv_nd::conv_transpose_nd(lw, ctx)
    } else {
        conv_transpose::conv_transpose(lw, ctx)
    }
}

/// `MaxPool` / `AveragePool`: a 1-D one as 2-D over a height of 1.
fn pool(lw: &mut Lowerer, ctx: &NodeCtx<'_>, kind: PoolKind) -> R {
    if window::is_1d(lw, ctx)? {
        window::as_2d(lw, ctx)
    } else {
        window::pool(lw, ctx, kind)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every lowered op has its schema's attributes, in the op list's
    /// order (`python3 xtask/onnx_attributes.py` regenerates them).
    #[test]
    fn every_lowered_op_has_its_schemas_attributes() {
        let ops: Vec<&str> = ATTRIBUTES.iter().map(|(op, _)| *op).collect();
        assert_eq!(ops, SUPPORTED_OPS, "run python3 xtask/onnx_attributes.py");
        for (op, versions) in ATTRIBUTES {
            assert!(!versions.is_empty() && versions.windows(2).all(|w| w[0].0 < w[1].0), "{op}");
        }
    }

    #[test]
    fn the_op_list_is_sorted_without_repeats() {
        for pair in SUPPORTED_OPS.windows(2) {
            assert!(pair[0] < pair[1], "`{}` and `{}` are out of order or repeated", pair[0], pair[1]);
        }
    }
}
