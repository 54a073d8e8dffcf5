//! Scratch memory per thunk, sized at gen time.

use crate::schedule::{Operand, Schedule, Segment};
use crate::thunk::Thunk;

const F32: usize = 4;

fn overlap(a: &Operand, a_bytes: usize, b: &Operand, b_bytes: usize) -> bool {
    a.segment == Segment::Arena
        && b.segment == Segment::Arena
        && super::ranges_overlap(a.offset, a_bytes, b.offset, b_bytes)
}

/// Whether a GEMM writing `c` must go through a temporary because `c`
/// overlaps one of its inputs.
pub fn gemm_needs_temp(a: &Operand, a_bytes: usize, b: &Operand, b_bytes: usize, c: &Operand, c_bytes: usize) -> bool {
    overlap(a, a_bytes, c, c_bytes) || overlap(b, b_bytes, c, c_bytes)
}

/// GEMMs with at most this many rows stream half-precision weights through
/// a stack tile; larger ones widen all of `b` into scratch first.
pub const HALF_WEIGHT_DIRECT_MAX_M: usize = 8;

/// f32 elements of scratch a half-weight GEMM needs for widened weights.
pub const fn half_weight_scratch_elems(m: usize, k: usize, n: usize) -> usize {
    if m <= HALF_WEIGHT_DIRECT_MAX_M {
        0
    } else {
        k * n
    }
}

/// Bytes of scratch one thunk needs (0 for most kinds). Scratch is shared:
/// thunks run one after another, so a schedule needs the maximum.
pub fn scratch_bytes(t: &Thunk<Operand>) -> usize {
    match t {
        Thunk::Sgemm { a, b, c, m, k, n } | Thunk::SgemmT { a, b, c, m, k, n, .. } => {
            if gemm_needs_temp(a, m * k * F32, b, k * n * F32, c, m * n * F32) {
                m * n * F32
            } else {
                0
            }
        }
        // `[m*n output temporary when aliased][k*n widened weights when
        // m is above the streaming limit]`.
        Thunk::SgemmF16 { a, b, c, m, k, n } | Thunk::SgemmBf16 { a, b, c, m, k, n } => {
            let temp = if gemm_needs_temp(a, m * k * F32, b, k * n * 2, c, m * n * F32) { m * n } else { 0 };
            (temp + half_weight_scratch_elems(*m, *k, *n)) * F32
        }
        Thunk::BatchedSgemm { a, b, c, batch, m, k, n, a_bcast, b_bcast } => {
            let a_count = if *a_bcast { 1 } else { *batch };
            let b_count = if *b_bcast { 1 } else { *batch };
            let c_bytes = batch * m * n * F32;
            if gemm_needs_temp(a, a_count * m * k * F32, b, b_count * k * n * F32, c, c_bytes) {
                c_bytes
            } else {
                0
            }
        }
        Thunk::FusedMmBiasAct { a, w, c, m, k, n, .. } => {
            if gemm_needs_temp(a, m * k * F32, w, k * n * F32, c, m * n * F32) {
                m * n * F32
            } else {
                0
            }
        }
        // One score matrix per (batch, head), so heads can run in parallel.
        Thunk::Attention { batch, seq, kv_seq, heads, .. } => batch * heads * seq * kv_seq * F32,
        // A row copy plus one "taken" flag per element.
        Thunk::TopK { axis_dim, .. } => axis_dim * F32 + axis_dim,
        // im2col of one group of one image.
        Thunk::Conv2D { c_in, groups, kh, kw, h_out, w_out, .. } => {
            (c_in / (*groups).max(1)) * kh * kw * h_out * w_out * F32
        }
        Thunk::BiasAdd { .. }
        | Thunk::BinaryFull { .. }
        | Thunk::ElementwiseRegion { .. }
        | Thunk::ActivationInPlace { .. }
        | Thunk::Activation { .. }
        | Thunk::Fma { .. }
        | Thunk::Compare { .. }
        | Thunk::Where { .. }
        | Thunk::CastF32ToI64 { .. }
        | Thunk::CastF32ToF64 { .. }
        | Thunk::CastF64ToF32 { .. }
        | Thunk::CastF64ToI64 { .. }
        | Thunk::CastF64ToI32 { .. }
        | Thunk::CastF64ToBool { .. }
        | Thunk::CastI64ToI32 { .. }
        | Thunk::CastI64ToF64 { .. }
        | Thunk::CastI32ToF64 { .. }
        | Thunk::CastF32ToF16 { .. }
        | Thunk::CastF16ToF32 { .. }
        | Thunk::CastF32ToBf16 { .. }
        | Thunk::CastBf16ToF32 { .. }
        | Thunk::CastF32ToI32 { .. }
        | Thunk::CastI64ToF32 { .. }
        | Thunk::CastBoolToI32 { .. }
        | Thunk::CastI32ToF32 { .. }
        | Thunk::CastI32ToI64 { .. }
        | Thunk::CastI32ToBool { .. }
        | Thunk::CastI64ToBool { .. }
        | Thunk::CastBoolToI64 { .. }
        | Thunk::CastBoolToF32 { .. }
        | Thunk::CastF32ToBool { .. }
        | Thunk::CastGeneric { .. }
        | Thunk::Copy { .. }
        | Thunk::CopyF64 { .. }
        | Thunk::CopyI64 { .. }
        | Thunk::Narrow { .. }
        | Thunk::Transpose { .. }
        | Thunk::Concat { .. }
        | Thunk::Gather { .. }
        | Thunk::GatherAxis { .. }
        | Thunk::LayerNorm { .. }
        | Thunk::RmsNorm { .. }
        | Thunk::FusedResidualLN { .. }
        | Thunk::FusedResidualRmsNorm { .. }
        | Thunk::BatchNormInference { .. }
        | Thunk::Softmax { .. }
        | Thunk::Rope { .. }
        | Thunk::Reduce { .. }
        | Thunk::ArgReduce { .. }
        | Thunk::Cumsum { .. }
        | Thunk::Pool2D { .. }
        | Thunk::KvAppend { .. }
        | Thunk::Nop {} => 0,
    }
}

/// Scratch bytes a whole schedule needs, rounded up to 64.
pub fn schedule_scratch_bytes(s: &Schedule) -> usize {
    let max = s.nodes.iter().map(|n| scratch_bytes(&n.thunk)).max().unwrap_or(0);
    max.div_ceil(64) * 64
}
