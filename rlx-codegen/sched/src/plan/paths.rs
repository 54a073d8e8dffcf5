//! Kernel paths for attention and convolution, chosen from the thunk's
//! dims alone.

/// Below this many multiply-adds per (batch, head), attention computes its
/// two products with strided dot/axpy loops; from here on, with two BLAS
/// calls. Measured with `rlx-runtime/benches/attention_conv.rs`.
pub const ATTENTION_GEMM_MIN_WORK: usize = 1024;

/// Whether an attention's products go through BLAS (else the direct path).
pub fn attention_uses_gemm(seq: usize, kv_seq: usize, head_dim: usize, v_head_dim: usize) -> bool {
    seq.saturating_mul(kv_seq).saturating_mul(head_dim.saturating_add(v_head_dim)) >= ATTENTION_GEMM_MIN_WORK
}

/// How a `Conv2D` runs.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum ConvPath {
    /// Unfold patches into scratch, then one GEMM per image and group.
    Im2colGemm,
    /// 1x1, stride 1, no padding, same size: one GEMM per image and group
    /// on the input itself.
    Pointwise,
    /// One filter per channel: direct multiply-adds.
    Depthwise,
}

/// The path of a convolution with these fields.
#[allow(clippy::too_many_arguments)]
pub fn conv2d_path(
    c_in: usize,
    c_out: usize,
    groups: usize,
    h: usize,
    w_in: usize,
    h_out: usize,
    w_out: usize,
    (kh, kw): (usize, usize),
    (sh, sw): (usize, usize),
    (ph, pw): (usize, usize),
) -> ConvPath {
    if groups == c_in && c_out == c_in {
        ConvPath::Depthwise
    } else if kh == 1 && kw == 1 && sh == 1 && sw == 1 && ph == 0 && pw == 0 && h_out == h && w_out == w_in {
        ConvPath::Pointwise
    } else {
        ConvPath::Im2colGemm
    }
}
