//! A validated thunk to its one kernel call, written once per kind.
//!
//! [`lower`] is a pure function of the thunk's fields (and the schedule's
//! attention scalars). It makes every decision the seed interpreter made
//! per call — the broadcast or transpose path, whether a GEMM output goes
//! through a temporary, serial or parallel, the conv and attention paths,
//! the element types of generic entries — and returns them as a
//! [`KernelCall`]. The interpreter executes that value; the code generator
//! prints it. The `match` below has no `_` arm: a new thunk kind does not
//! compile until it is lowered.
//!
//! The thunk must have passed `rlx_sched::validate`: the lowering trusts
//! its fields (element sizes, extents, aliasing) the way the kernels do.

mod cast;
mod conv;
mod elementwise;
mod gather_scatter;
mod gemm;
mod movement;
mod norm;
mod recurrent;
mod reduce;
mod sample;

use crate::call::KernelCall;
use crate::operand::{Operand, Params};
use crate::thunk::Thunk;

/// The kernel call of a validated thunk, or `None` when it does nothing
/// (`Nop`, an empty transpose or fused chain).
pub fn lower(thunk: &Thunk<Operand>, params: &Params) -> Option<KernelCall> {
    use Thunk as T;
    Some(match thunk {
        T::Sgemm { .. }
        | T::SgemmT { .. }
        | T::SgemmF16 { .. }
        | T::SgemmBf16 { .. }
        | T::BatchedSgemm { .. }
        | T::FusedMmBiasAct { .. }
        | T::PackedGemm { .. }
        | T::PackedGemmHalf { .. }
        | T::IntGemm { .. }
        | T::IntGemmPacked { .. }
        | T::Requantize { .. }
        | T::DynamicQuantize { .. }
        | T::BiasAdd { .. } => gemm::lower(thunk),
        T::BinaryFull { .. }
        | T::ElementwiseRegion { .. }
        | T::ActivationInPlace { .. }
        | T::Activation { .. }
        | T::Fma { .. }
        | T::Compare { .. }
        | T::Where { .. } => return elementwise::lower(thunk),
        T::CastF32ToI64 { .. }
        | T::CastF32ToF64 { .. }
        | T::CastF64ToF32 { .. }
        | T::CastF64ToI64 { .. }
        | T::CastF64ToI32 { .. }
        | T::CastF64ToBool { .. }
        | T::CastI64ToI32 { .. }
        | T::CastI64ToF64 { .. }
        | T::CastI32ToF64 { .. }
        | T::CastF32ToF16 { .. }
        | T::CastF16ToF32 { .. }
        | T::CastF32ToBf16 { .. }
        | T::CastBf16ToF32 { .. }
        | T::CastF32ToI32 { .. }
        | T::CastI64ToF32 { .. }
        | T::CastBoolToI32 { .. }
        | T::CastI32ToF32 { .. }
        | T::CastI32ToI64 { .. }
        | T::CastI32ToBool { .. }
        | T::CastI64ToBool { .. }
        | T::CastBoolToI64 { .. }
        | T::CastBoolToF32 { .. }
        | T::CastF32ToBool { .. }
        | T::CastGeneric { .. } => cast::lower(thunk),
        T::Copy { .. }
        | T::CopyF64 { .. }
        | T::CopyI64 { .. }
        | T::Narrow { .. }
        | T::Transpose { .. }
        | T::Concat { .. }
        | T::Gather { .. }
        | T::GatherAxis { .. }
        | T::KvAppend { .. }
        | T::KvWrite { .. } => return movement::lower(thunk),
        T::GatherElements { .. } | T::GatherNd { .. } | T::ScatterElements { .. } | T::ScatterNd { .. } => {
            gather_scatter::lower(thunk)
        }
        T::GridSample { .. } => sample::lower(thunk),
        T::LayerNorm { .. }
        | T::RmsNorm { .. }
        | T::FusedResidualLN { .. }
        | T::FusedResidualRmsNorm { .. }
        | T::BatchNormInference { .. }
        | T::Softmax { .. }
        | T::Attention { .. }
        | T::Rope { .. }
        | T::RopeAt { .. }
        | T::CachedAttention { .. } => norm::lower(thunk, params),
        T::Reduce { .. }
        | T::ArgReduce { .. }
        | T::Cumsum { .. }
        | T::Cumulative { .. }
        | T::TopK { .. }
        | T::TopKI64 { .. } => reduce::lower(thunk),
        T::Conv2D { .. }
        | T::Pool2D { .. }
        | T::Col2Im { .. }
        | T::IntConv2D { .. }
        | T::QLinearConv2D { .. }
        | T::Resize { .. }
        | T::BlockedConv2D { .. }
        | T::BlockedConv2DHalf { .. }
        | T::WinogradConv2D { .. }
        | T::BlockedPool2D { .. } => conv::lower(thunk),
        T::ToBlocked { .. } | T::FromBlocked { .. } => conv::lower(thunk),
        T::Recurrent { .. } => recurrent::lower(thunk),
        T::Nop {} => return None,
    })
}

/// Bytes of scratch a thunk's call uses (0 for most kinds).
pub fn scratch_bytes(thunk: &Thunk<Operand>, params: &Params) -> usize {
    lower(thunk, params).map_or(0, |c| c.scratch_bytes())
}

/// A family lowering handed a kind it does not own: a bug in [`lower`]'s
/// dispatch, not a user error.
#[track_caller]
fn not_in_family(family: &str, t: &Thunk<Operand>) -> ! {
    unreachable!("{family} lowering got {:?}", t.kind())
}

const F32: usize = 4;
