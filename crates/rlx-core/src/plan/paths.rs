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

/// Filters per input channel up to which a grouped convolution with one
/// input channel per group runs on the depthwise kernel: fewer output
/// channels per group than about half a microkernel strip leave the
/// product's registers idle (LeNet's 1 -> 6 first layer: 35 GF/s as a
/// product).
pub const DEPTHWISE_MAX_MULTIPLIER: usize = 8;

/// The path of a convolution of this shape.
pub fn conv2d_path(s: &Conv2dShape) -> ConvPath {
    if s.c_in > 0
        && s.groups == s.c_in
        && s.c_out.is_multiple_of(s.c_in)
        && s.c_out >= s.c_in
        && s.c_out / s.c_in <= DEPTHWISE_MAX_MULTIPLIER
    {
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
    } else if s.grid().is_some_and(|g| (g.pitch - s.w_out) * GRID_WASTE_DENOMINATOR <= g.pitch) {
        ConvPath::PhaseGemm
    } else {
        ConvPath::Im2colGemm
    }
}

/// The phase-plane grid is used while its dropped columns are at most
/// `1 / GRID_WASTE_DENOMINATOR` of it. Slicing the planes is so much
/// cheaper than unfolding that the grid wins even where a fifth of it is
/// dropped: on ResNet-18's 3x3 layers at 7x7 (9-wide grid, 22% dropped)
/// 77 against 72 GF/s, at 56x56 (3.4%) 92 against 76
/// (`product_paths_timing`, one thread). Unfolding is for the degenerate
/// shapes: a kernel much wider than the output.
pub const GRID_WASTE_DENOMINATOR: usize = 2;

/// Scratch bytes a convolution on `path` needs (`kernels::conv`): for
/// `PhaseGemm`, one group's phase planes ([`Conv2dShape::grid`]) and,
/// when the grid is wider than the output, the product on the grid before
/// its dropped columns are squeezed out. `Im2colGemm` and `Pointwise`
/// read their input in place; `Depthwise` works on the stack. `None` when a size overflows.
pub fn conv2d_scratch_bytes_checked(s: &Conv2dShape, path: ConvPath) -> Option<usize> {
    match path {
        ConvPath::PhaseGemm => {
            let g = s.grid()?;
            let planes = s.c_in_g().checked_mul(g.phases)?.checked_mul(g.plane_len)?;
            let product = if g.pitch == s.w_out { 0 } else { s.c_out_g().checked_mul(g.cols)? };
            planes.checked_add(product)?.checked_mul(4)
        }
        ConvPath::Im2colGemm | ConvPath::Pointwise | ConvPath::Depthwise => Some(0),
    }
}

/// [`conv2d_scratch_bytes_checked`] of a validated shape (which cannot
/// overflow).
pub fn conv2d_scratch_bytes(s: &Conv2dShape, path: ConvPath) -> usize {
    conv2d_scratch_bytes_checked(s, path).expect("the validator bounds a convolution's scratch")
}

/// Whether a convolution is worth splitting across threads: by its
/// multiply-adds, like a GEMM ([`super::PACKED_GEMM_PAR_MIN_MACS`]), not by
/// its outputs. A late ResNet layer has only 25K outputs but 115M
/// multiply-adds, and ran on one core under an output-count rule.
pub fn conv2d_parallel(s: &Conv2dShape) -> bool {
    let macs = s.n.saturating_mul(s.c_out).saturating_mul(s.out_plane()).saturating_mul(s.patch_len());
    let min = if s.groups > 1 { DEPTHWISE_PAR_MIN_MACS } else { super::PACKED_GEMM_PAR_MIN_MACS };
    macs >= min
}

/// Below this many multiply-adds a grouped (depthwise) convolution runs on
/// one thread. Lower than a GEMM's: its input is usually the output of a
/// parallel pointwise convolution, half of it in the other core's cache,
/// and a split reads each half where it was written (`par_for` gives each
/// worker a contiguous share, the calling one the first) while one thread pulls
/// it all across: a 7x7x1152 3x3 depthwise layer (508K multiply-adds) took
/// 21 us alone and 46 us serial between two parallel layers.
pub const DEPTHWISE_PAR_MIN_MACS: usize = 1 << 18;

/// The attention path for a shape ([`attention_uses_gemm`]).
pub fn attention_path(shape: &AttentionShape) -> AttentionPath {
    if attention_uses_gemm(shape.seq, shape.kv_seq, shape.head_dim, shape.v_head_dim) {
        AttentionPath::Gemm
    } else {
        AttentionPath::Direct
    }
}

/// Scratch bytes attention needs: one unit
/// ([`attention_unit_scratch_elems_checked`]) per (batch, head), so heads
/// can run in parallel. `None` on overflow.
pub fn attention_scratch_bytes_checked(shape: &AttentionShape) -> Option<usize> {
    shape.batch.checked_mul(shape.heads)?.checked_mul(attention_unit_scratch_elems_checked(shape)?)?.checked_mul(4)
}

/// [`attention_scratch_bytes_checked`] of a validated thunk.
pub fn attention_scratch_bytes(shape: &AttentionShape) -> usize {
    attention_scratch_bytes_checked(shape).expect("the validator bounds attention's scratch")
}

/// f32 elements of one (batch, head) unit's scratch: its `seq x kv_seq`
/// score matrix, then `K^T` and `V` packed for the tiled GEMM (`head_dim x
/// kv_seq` and `kv_seq x v_head_dim`, columns rounded up to panels of 16),
/// which the GEMM path uses. Sized for either path, so a caller may run any
/// path on any shape (the tests do). `None` on overflow.
pub fn attention_unit_scratch_elems_checked(shape: &AttentionShape) -> Option<usize> {
    let panels = |x: usize| x.checked_add(PANEL - 1).map(|x| x / PANEL * PANEL);
    let scores = shape.seq.checked_mul(shape.kv_seq)?;
    let kt = shape.head_dim.checked_mul(panels(shape.kv_seq)?)?;
    let v = shape.kv_seq.checked_mul(panels(shape.v_head_dim)?)?;
    scores.checked_add(kt)?.checked_add(v)
}

/// [`attention_unit_scratch_elems_checked`] of a validated thunk.
pub fn attention_unit_scratch_elems(shape: &AttentionShape) -> usize {
    attention_unit_scratch_elems_checked(shape).expect("the validator bounds attention's scratch")
}

/// Scratch bytes top-k needs: one u32 index per row element. `None` on
/// overflow.
pub fn top_k_scratch_bytes_checked(axis_dim: usize) -> Option<usize> {
    axis_dim.checked_mul(4)
}

/// [`top_k_scratch_bytes_checked`] of a validated thunk.
pub fn top_k_scratch_bytes(axis_dim: usize) -> usize {
    top_k_scratch_bytes_checked(axis_dim).expect("the validator bounds top-k's scratch")
}

/// Whether an `IntConv2D` runs the direct per-channel loop (one input
/// channel per group: a depthwise convolution, whose patch is too short
/// for the packed product to pay) rather than im2col + the packed product.
pub fn int_conv2d_direct(s: &Conv2dShape) -> bool {
    s.groups > 1 && s.c_in == s.groups
}

/// Bytes of scratch an `IntConv2D` needs on the im2col path. The 16-bit
/// form: every output channel's `w - w_zero` as i32 pairs of patch
/// elements, then one group's unfolded `x - x_zero` as i16 pairs of patch
/// rows per output pixel. The 8-bit form (AVX-512 VNNI) packs quads of the
/// same into at most as many bytes and adds two i32 per output channel and
/// one per output pixel (its zero-point corrections), so the sum of both
/// covers either. Each part starts 64-byte aligned. `None` when a size
/// overflows.
pub fn int_conv2d_scratch_bytes_checked(s: &Conv2dShape) -> Option<usize> {
    if int_conv2d_direct(s) {
        return Some(0);
    }
    let align = |b: usize| b.checked_add(63).map(|b| b / 64 * 64);
    let pairs = s.c_in_g().checked_mul(s.kh)?.checked_mul(s.kw)?.div_ceil(2);
    let plane = s.h_out.checked_mul(s.w_out)?;
    let weights = align(s.c_out.checked_mul(pairs)?.checked_mul(4)?)?;
    let corrections = align(s.c_out.checked_mul(4)?)?.checked_mul(2)?.checked_add(align(plane.checked_mul(4)?)?)?;
    weights.checked_add(corrections)?.checked_add(pairs.checked_mul(plane)?.checked_mul(4)?)
}

/// [`int_conv2d_scratch_bytes_checked`] of a validated shape.
pub fn int_conv2d_scratch_bytes(s: &Conv2dShape) -> usize {
    int_conv2d_scratch_bytes_checked(s).expect("the validator bounds an integer convolution's scratch")
}
