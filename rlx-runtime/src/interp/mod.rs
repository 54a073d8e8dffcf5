//! The reference interpreter: runs a validated `Schedule` thunk by thunk.
//!
//! It is the semantics every generated binary is tested against. Per-call
//! decisions (kernel path, temporaries, serial or parallel) come from
//! `rlx_sched::plan`, the same functions the code generator calls at gen
//! time, so generated code and interpreter run the same kernels.

mod attention;
mod cast;
mod conv;
mod elementwise;
mod gemm;
mod memory;
mod movement;
mod norm;
mod prepared;
mod reduce;
mod runner;

pub use memory::Memory;
pub use prepared::{prepare, Prepared};
pub use runner::{InterpError, Interpreter};

use rlx_sched::{Operand, Thunk};

/// Runs one thunk. The per-family functions each destructure their kinds.
pub fn exec_thunk(mem: &mut Memory<'_>, thunk: &Thunk<Operand>) {
    match thunk {
        Thunk::Sgemm { .. } => gemm::sgemm(mem, thunk),
        Thunk::SgemmT { .. } => gemm::sgemm_t(mem, thunk),
        Thunk::SgemmF16 { .. } => gemm::sgemm_f16(mem, thunk),
        Thunk::SgemmBf16 { .. } => gemm::sgemm_bf16(mem, thunk),
        Thunk::BatchedSgemm { .. } => gemm::batched_sgemm(mem, thunk),
        Thunk::FusedMmBiasAct { .. } => gemm::fused_mm_bias_act(mem, thunk),
        Thunk::BiasAdd { .. } => gemm::bias_add(mem, thunk),
        Thunk::BinaryFull { .. } => elementwise::binary_full(mem, thunk),
        Thunk::ElementwiseRegion { .. } => elementwise::elementwise_region(mem, thunk),
        Thunk::ActivationInPlace { .. } => elementwise::activation_in_place(mem, thunk),
        Thunk::Activation { .. } => elementwise::activation(mem, thunk),
        Thunk::Fma { .. } => elementwise::fma(mem, thunk),
        Thunk::Compare { .. } => elementwise::compare(mem, thunk),
        Thunk::Where { .. } => elementwise::select(mem, thunk),
        Thunk::CastF32ToI64 { .. } => cast::cast_f32_to_i64(mem, thunk),
        Thunk::CastF32ToF64 { .. } => cast::cast_f32_to_f64(mem, thunk),
        Thunk::CastF64ToF32 { .. } => cast::cast_f64_to_f32(mem, thunk),
        Thunk::CastF64ToI64 { .. } => cast::cast_f64_to_i64(mem, thunk),
        Thunk::CastF64ToI32 { .. } => cast::cast_f64_to_i32(mem, thunk),
        Thunk::CastF64ToBool { .. } => cast::cast_f64_to_bool(mem, thunk),
        Thunk::CastI64ToI32 { .. } => cast::cast_i64_to_i32(mem, thunk),
        Thunk::CastI64ToF64 { .. } => cast::cast_i64_to_f64(mem, thunk),
        Thunk::CastI32ToF64 { .. } => cast::cast_i32_to_f64(mem, thunk),
        Thunk::CastF32ToF16 { .. } => cast::cast_f32_to_f16(mem, thunk),
        Thunk::CastF16ToF32 { .. } => cast::cast_f16_to_f32(mem, thunk),
        Thunk::CastF32ToBf16 { .. } => cast::cast_f32_to_bf16(mem, thunk),
        Thunk::CastBf16ToF32 { .. } => cast::cast_bf16_to_f32(mem, thunk),
        Thunk::CastF32ToI32 { .. } => cast::cast_f32_to_i32(mem, thunk),
        Thunk::CastI64ToF32 { .. } => cast::cast_i64_to_f32(mem, thunk),
        Thunk::CastBoolToI32 { .. } => cast::cast_bool_to_i32(mem, thunk),
        Thunk::CastI32ToF32 { .. } => cast::cast_i32_to_f32(mem, thunk),
        Thunk::CastI32ToI64 { .. } => cast::cast_i32_to_i64(mem, thunk),
        Thunk::CastI32ToBool { .. } => cast::cast_i32_to_bool(mem, thunk),
        Thunk::CastI64ToBool { .. } => cast::cast_i64_to_bool(mem, thunk),
        Thunk::CastBoolToI64 { .. } => cast::cast_bool_to_i64(mem, thunk),
        Thunk::CastBoolToF32 { .. } => cast::cast_bool_to_f32(mem, thunk),
        Thunk::CastF32ToBool { .. } => cast::cast_f32_to_bool(mem, thunk),
        Thunk::CastGeneric { .. } => cast::cast_generic(mem, thunk),
        Thunk::Copy { .. } => movement::copy(mem, thunk),
        Thunk::CopyF64 { .. } => movement::copy_f64(mem, thunk),
        Thunk::CopyI64 { .. } => movement::copy_i64(mem, thunk),
        Thunk::Narrow { .. } => movement::narrow(mem, thunk),
        Thunk::Transpose { .. } => movement::transpose(mem, thunk),
        Thunk::Concat { .. } => movement::concat(mem, thunk),
        Thunk::Gather { .. } => movement::gather(mem, thunk),
        Thunk::GatherAxis { .. } => movement::gather_axis(mem, thunk),
        Thunk::LayerNorm { .. } => norm::layer_norm(mem, thunk),
        Thunk::RmsNorm { .. } => norm::rms_norm(mem, thunk),
        Thunk::FusedResidualLN { .. } => norm::fused_residual_ln(mem, thunk),
        Thunk::FusedResidualRmsNorm { .. } => norm::fused_residual_rms_norm(mem, thunk),
        Thunk::BatchNormInference { .. } => norm::batch_norm_inference(mem, thunk),
        Thunk::Softmax { .. } => attention::softmax(mem, thunk),
        Thunk::Attention { .. } => attention::attention(mem, thunk),
        Thunk::Rope { .. } => norm::rope(mem, thunk),
        Thunk::Reduce { .. } => reduce::reduce(mem, thunk),
        Thunk::ArgReduce { .. } => reduce::arg_reduce(mem, thunk),
        Thunk::Cumsum { .. } => reduce::cumsum(mem, thunk),
        Thunk::TopK { .. } => reduce::top_k(mem, thunk),
        Thunk::Conv2D { .. } => conv::conv2_d(mem, thunk),
        Thunk::Pool2D { .. } => conv::pool2_d(mem, thunk),
        Thunk::KvAppend { .. } => movement::kv_append(mem, thunk),
        Thunk::Nop {} => {}
    }
}
