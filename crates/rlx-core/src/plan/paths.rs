//! Kernel paths for attention and convolution, chosen from the thunk's
//! dims alone.

use crate::pack::PANEL;
use crate::shapes::{AttentionPath, AttentionShape, Conv2dShape, ConvPath};

/// Below this many multiply-adds per (batch, head), attention computes its
/// two products with strided dot/axpy loops; from here on, with two BLAS
/// calls. Measured with `crates/rlx-runtime/benches/attention_conv.rs`.
pub const ATTENTION_GEMM_MIN_WORK: usize = 1024;

/// Whether an attention's products go through BLAS (else the direct path).
pub fn attention_uses_gemm(seq: usize, kv_seq: usize, head_dim: usize, v_head_dim: usize) -> bool {
    seq.saturating_mul(kv_seq).saturating_mul(head_dim.saturating_add(v_head_dim)) >= ATTENTION_GEMM_MIN_WORK
}

/// The path of a convolution of this shape.
pub fn conv2d_path(s: &Conv2dShape) -> ConvPath {
    if s.groups == s.c_in && s.c_out == s.c_in {
        ConvPath::Depthwise
    } else if s.kh == 1
        && s.kw == 1
        && s.sh == 1
        && s.sw == 1
        && s.ph == 0
        && s.pw == 0
        && s.h_out == s.h
        && s.w_out == s.w_in
    {
        ConvPath::Pointwise
    } else {
        ConvPath::Im2colGemm
    }
}

/// Scratch bytes a convolution on `path` needs: the patches of one group
/// of one image (the input channels for `Pointwise`), in the tiled GEMM's
/// panel layout (`crate::pack`: columns rounded up to 16).
pub fn conv2d_scratch_bytes(s: &Conv2dShape, path: ConvPath) -> usize {
    match path {
        ConvPath::Im2colGemm | ConvPath::Pointwise => s.patch_len() * s.out_plane().div_ceil(PANEL) * PANEL * 4,
        ConvPath::Depthwise => 0,
    }
}

/// The attention path for a shape ([`attention_uses_gemm`]).
pub fn attention_path(shape: &AttentionShape) -> AttentionPath {
    if attention_uses_gemm(shape.seq, shape.kv_seq, shape.head_dim, shape.v_head_dim) {
        AttentionPath::Gemm
    } else {
        AttentionPath::Direct
    }
}

/// Scratch bytes attention needs: one `seq x kv_seq` f32 score matrix per
/// (batch, head), so heads can run in parallel.
pub fn attention_scratch_bytes(shape: &AttentionShape) -> usize {
    shape.batch * shape.heads * attention_unit_scratch_elems(shape) * 4
}

/// f32 elements of one (batch, head) unit's scratch: its `seq x kv_seq`
/// score matrix, then `K^T` and `V` packed for the tiled GEMM (`head_dim x
/// kv_seq` and `kv_seq x v_head_dim`, columns rounded up to panels of 16),
/// which the GEMM path uses. Sized for either path, so a caller may run any
/// path on any shape (the tests do).
pub fn attention_unit_scratch_elems(shape: &AttentionShape) -> usize {
    shape.seq * shape.kv_seq
        + shape.head_dim * shape.kv_seq.div_ceil(PANEL) * PANEL
        + shape.kv_seq * shape.v_head_dim.div_ceil(PANEL) * PANEL
}

/// Scratch bytes top-k needs: one u32 index per row element.
pub fn top_k_scratch_bytes(axis_dim: usize) -> usize {
    axis_dim * 4
}
