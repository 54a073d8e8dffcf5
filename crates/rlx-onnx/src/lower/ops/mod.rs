//! The op families, one module each. A family never imports another: what
//! two families share lives in [`crate::lower::build`] (or, for pure shape
//! and constant arithmetic, [`crate::lower::arith`]), and an op composed of
//! other ops lowers them through the dispatcher (`Lowerer::lower_part`).
//! `crates/rlx-onnx/tests/lower_layers.rs` checks this.

pub(crate) mod attention_op;
pub(crate) mod compose;
pub(crate) mod control;
pub(crate) mod conv_nd;
pub(crate) mod conv_transpose;
pub(crate) mod einsum;
pub(crate) mod elementwise;
pub(crate) mod group_norm;
pub(crate) mod index_compose;
pub(crate) mod int_conv;
pub(crate) mod linear_attention;
pub(crate) mod loss;
pub(crate) mod lp;
pub(crate) mod matmul;
pub(crate) mod movement;
pub(crate) mod nn;
pub(crate) mod norm;
pub(crate) mod onehot;
pub(crate) mod quant;
pub(crate) mod recurrent;
pub(crate) mod reduce;
pub(crate) mod resize;
pub(crate) mod rotary;
pub(crate) mod sample;
pub(crate) mod scatter;
pub(crate) mod signal;
pub(crate) mod slice;
pub(crate) mod softmax;
pub(crate) mod space;
pub(crate) mod view;
pub(crate) mod window;
