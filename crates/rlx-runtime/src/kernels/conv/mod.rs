//! 2-D convolution, NCHW input and OIHW weights.
//!
//! `out[b, co, ho, wo] = bias[co] + sum over ci in co's group, ki, kj of
//! w[co, ci', ki, kj] * x[b, ci, ho*sh + ki*dh - ph, wo*sw + kj*dw - pw]`,
//! where input positions outside `[0, h) x [0, w_in)` count as zero (the
//! leading padding is `ph`/`pw`; trailing padding is whatever `h_out` /
//! `w_out` imply).
//!
//! Three paths, chosen at gen time by [`conv2d_path`]:
//! - `Im2colGemm`: per image and group, the input patches are unfolded
//!   into a `[(c_in/groups)*kh*kw, h_out*w_out]` matrix in scratch,
//!   written in the tiled GEMM's panel layout, then one product of the
//!   group's weights by it (`kernels::gemm::tiled`: the weights are the left
//!   operand, read in place; each output starts from its channel's bias and
//!   takes one fused multiply-add per patch element in order);
//! - `Pointwise`: a 1x1, stride-1, unpadded convolution is already a GEMM
//!   on the input: no unfolding, only the input packed into panels in
//!   scratch;
//! - `Depthwise` (`groups == c_in == c_out`): direct per-plane FMAs, each
//!   output accumulating its window in `(ki, kj)` order.
//!
//! The SIMD work is in the tiled GEMM's microkernels and in the shared
//! `axpy` (`kernels::attention`), so this family has no per-ISA files.

mod depthwise;
mod im2col;

#[cfg(test)]
mod tests;

use std::ops::Range;

use crate::kernels::gemm::{pack_rows_f32, packed_gemm_row_bias_f32};

pub use rlx_core::plan::{conv2d_path, conv2d_scratch_bytes};
pub use rlx_core::shapes::{Conv2dShape, ConvPath};

/// The outputs `o < out_len` whose input index `o * stride + offset` falls
/// inside `[0, in_len)`: always one contiguous range (empty possibly).
pub(crate) fn valid_outputs(out_len: usize, stride: usize, offset: isize, in_len: usize) -> Range<usize> {
    let stride = stride.max(1) as isize;
    // o * stride + offset >= 0  <=>  o >= ceil(-offset / stride).
    let lo = if offset >= 0 { 0 } else { ((-offset) + stride - 1) / stride };
    // o * stride + offset < in_len  <=>  o < ceil((in_len - offset) / stride).
    let room = in_len as isize - offset;
    let hi = if room <= 0 { 0 } else { (room + stride - 1) / stride };
    let hi = (hi as usize).min(out_len);
    let lo = (lo as usize).min(hi);
    lo..hi
}

/// Shares raw base pointers with pool threads.
#[derive(Clone, Copy)]
pub(crate) struct SendPtr<T>(pub *mut T);
// SAFETY: users split work so threads write disjoint outputs and only read
// shared inputs.
unsafe impl<T> Sync for SendPtr<T> {}
// SAFETY: as above.
unsafe impl<T> Send for SendPtr<T> {}

impl<T> SendPtr<T> {
    /// The pointer; a method so closures capture the `Sync` wrapper.
    pub(crate) fn get(self) -> *mut T {
        self.0
    }
}

/// The convolution of the module docs, on `path` (from [`conv2d_path`]).
///
/// `par` (the caller's `rlx_core::plan::parallel(n * c_out * h_out *
/// w_out)`) parallelises the unfolding and the product's tiles, or the
/// depthwise planes; results are bit-identical either way.
///
/// # Safety
///
/// - `x` valid for reads of `n * c_in * h * w_in` f32, `w` of `c_out *
///   (c_in / groups) * kh * kw`, `bias` null or valid for `c_out`;
/// - `out` valid for writes of `n * c_out * h_out * w_out`, overlapping no
///   input;
/// - `scratch` valid for [`conv2d_scratch_bytes`] bytes (4-byte aligned,
///   overlapping nothing else) when that is non-zero;
/// - `groups >= 1` dividing `c_in` and `c_out`; every `Pointwise` /
///   `Depthwise` precondition of [`conv2d_path`] when that path is given.
pub unsafe fn conv2d_f32(
    x: *const f32,
    w: *const f32,
    bias: *const f32,
    out: *mut f32,
    s: &Conv2dShape,
    path: ConvPath,
    scratch: *mut f32,
    par: bool,
) {
    if s.n == 0 || s.c_out == 0 || s.out_plane() == 0 {
        return;
    }
    match path {
        // SAFETY: forwarded contract.
        ConvPath::Depthwise => unsafe { depthwise::depthwise(x, w, bias, out, s, par) },
        ConvPath::Pointwise | ConvPath::Im2colGemm => {
            let (k, p) = (s.patch_len(), s.out_plane());
            let in_plane = s.h * s.w_in;
            for b in 0..s.n {
                for g in 0..s.groups {
                    // SAFETY: image `b`, group `g`: its input channels,
                    // weights rows and output channels lie inside the
                    // extents; the patch matrix fills the scratch.
                    unsafe {
                        let x_g = x.add((b * s.c_in + g * s.c_in_g()) * in_plane);
                        if path == ConvPath::Pointwise {
                            pack_rows_f32(x_g, p, k, p, scratch, par);
                        } else {
                            im2col::im2col(x_g, s, scratch, par);
                        }
                        let bias_g = (!bias.is_null()).then(|| bias.add(g * s.c_out_g()));
                        packed_gemm_row_bias_f32(
                            w.add(g * s.c_out_g() * k),
                            k,
                            scratch,
                            bias_g,
                            out.add((b * s.c_out + g * s.c_out_g()) * p),
                            p,
                            (s.c_out_g(), k, p),
                            par,
                        );
                    }
                }
            }
        }
    }
}
