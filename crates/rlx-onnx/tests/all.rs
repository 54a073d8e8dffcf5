//! The importer's integration tests, one binary: each module is one op family
//! or one concern (import, fusion, blocked layout, onnxruntime references).

mod attention_exports;
mod attention_op;
mod blocked;
mod common;
mod composed_ops;
mod control_ops;
mod conv_nd_ops;
mod conv_transpose_ops;
mod data_ops;
mod fusion;
mod fuzz_ops;
mod fuzz_regressions;
mod group_norm_ops;
mod half_weights;
mod import;
mod import_budget;
mod int_types;
mod linear_attention_ops;
mod llama;
mod loss_ops;
mod lower_layers;
mod lp_onehot_ops;
mod nn_ops;
mod onnxruntime;
mod op_list;
mod pad_fold;
mod prepack;
mod quant_ops;
mod recurrent_ops;
mod resize_ops;
mod sample_ops;
mod scatter_ops;
mod signal_ops;
mod torch_exports;
mod transposes;
