//! 2-D convolution, NCHW input and OIHW weights.
//!
//! `out[b, co, ho, wo] = bias[co] + sum over ci in co's group, ki, kj of
//! w[co, ci', ki, kj] * x[b, ci, ho*sh + ki*dh - ph, wo*sw + kj*dw - pw]`,
//! where input positions outside `[0, h) x [0, w_in)` count as zero (the
//! leading padding is `ph`/`pw`; trailing padding is whatever `h_out` /
//! `w_out` imply).
//!
//! Four paths, chosen at gen time by [`conv2d_path`] (details in
//! `docs/kernels/conv.md`). Three are one product per image and group of
//! the group's weights (the left operand, read in place) by the patch
//! matrix, which is never stored: the tiled GEMM asks for each pass's
//! slice (`kernels::gemm::tiled::run_produced`) and each output starts
//! from its channel's bias and takes one fused multiply-add per patch
//! element in order, the same bits on every path:
//! - `PhaseGemm`: the input split once into phase planes in scratch, the
//!   product run on a grid slightly wider than the output, each slice a
//!   stream of 64-byte copies (`phases`);
//! - `Im2colGemm`: each slice unfolded from the input (`im2col`), for
//!   outputs too narrow for the grid;
//! - `Pointwise`: a 1x1, stride-1, unpadded convolution, whose input is
//!   the grid's one plane per channel;
//! - `Depthwise` (`groups == c_in`, at most 8 filters per input channel):
//!   direct, per-ISA
//!   (`depthwise`).

mod blocked;
mod col2im;
mod depthwise;
mod depthwise_blocked;
mod im2col;
mod phases;
mod winograd;

#[cfg(test)]
mod test_util;
#[cfg(test)]
mod tests;

use std::ops::Range;

use rlx_core::ActKind;

use crate::kernels::gemm::packed_gemm_row_bias_produced_f32;
use phases::Planes;

pub use blocked::{conv2d_blocked_f32, conv2d_blocked_half, conv2d_nchw_blocked_f32};
pub use col2im::col2im_f32;
pub use depthwise_blocked::depthwise_blocked_f32;
pub use rlx_core::plan::{conv2d_path, conv2d_scratch_bytes};
pub use rlx_core::shapes::{Col2ImShape, Conv2dShape, ConvGrid, ConvPath};
pub use winograd::conv2d_winograd_f32;

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
/// `act` is applied to every output after its bias, through the
/// activation family's kernel, so the result has the bits of a separate
/// `Activation`. `par` (the caller's `rlx_core::plan::conv2d_parallel`)
/// parallelises the phase planes and the product's tasks, or the
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
    act: ActKind,
    scratch: *mut f32,
    par: bool,
) {
    if s.n == 0 || s.c_out == 0 || s.out_plane() == 0 {
        return;
    }
    match path {
        // SAFETY: forwarded contract.
        ConvPath::Depthwise => unsafe { depthwise::depthwise(x, w, bias, out, s, act, par) },
        ConvPath::PhaseGemm | ConvPath::Pointwise | ConvPath::Im2colGemm => {
            // SAFETY: forwarded contract.
            unsafe { gemm_path(x, w, bias, out, s, path, act, scratch, par) }
        }
    }
}

/// The product paths of [`conv2d_f32`]: per image and group, the input
/// split into phase planes in scratch (`PhaseGemm`; `Pointwise` reads it in
/// place), one product whose passes slice them (or unfold the input:
/// `Im2colGemm`), and, when the grid is wider than the output, its rows
/// squeezed into `out`.
///
/// # Safety
///
/// As [`conv2d_f32`], `path` one of the three.
unsafe fn gemm_path(
    x: *const f32,
    w: *const f32,
    bias: *const f32,
    out: *mut f32,
    s: &Conv2dShape,
    path: ConvPath,
    act: ActKind,
    scratch: *mut f32,
    par: bool,
) {
    let grid = match path {
        ConvPath::PhaseGemm => s.grid().expect("the validator bounds a convolution's grid"),
        // The output itself: no dropped columns.
        _ => ConvGrid { pitch: s.w_out, cols: s.out_plane(), plane_len: s.h * s.w_in, phases: 1 },
    };
    let (k, p) = (s.patch_len(), s.out_plane());
    let in_plane = s.h * s.w_in;
    let planes_len = if path == ConvPath::PhaseGemm { s.c_in_g() * grid.phases * grid.plane_len } else { 0 };
    // The product goes straight to `out` when the grid is the output,
    // else to scratch after the planes.
    let squeeze = grid.pitch != s.w_out;
    for b in 0..s.n {
        for g in 0..s.groups {
            // Image `b`, group `g`: its input channels, weights rows and
            // output channels lie inside the extents.
            let x_g = x.wrapping_add((b * s.c_in + g * s.c_in_g()) * in_plane);
            let bias_g = (!bias.is_null()).then(|| bias.wrapping_add(g * s.c_out_g()));
            let w_g = w.wrapping_add(g * s.c_out_g() * k);
            let out_g = out.wrapping_add((b * s.c_out + g * s.c_out_g()) * p);
            let planes = match path {
                ConvPath::PhaseGemm => {
                    // SAFETY: the group's channels; the planes fill the front
                    // of the scratch.
                    unsafe { phases::build_phases(x_g, s, &grid, scratch, par) };
                    Planes::phases(scratch, &grid)
                }
                _ => Planes::input(x_g, s),
            };
            let x_g = SendPtr(x_g.cast_mut());
            let produce = |p0: usize, kc: usize, cols: Range<usize>, dst: *mut f32| {
                // SAFETY: the planes (or the input) are complete and
                // unchanged during the product; the product asks for rows
                // and columns inside it.
                unsafe {
                    if path == ConvPath::Im2colGemm {
                        im2col::unfold_pass(x_g.get(), s, p0, kc, cols, dst)
                    } else {
                        planes.produce(s, p0, kc, cols, dst)
                    }
                }
            };
            let (c, ldc) = if squeeze { (scratch.wrapping_add(planes_len), grid.cols) } else { (out_g, p) };
            // SAFETY: weights and bias of the group; `c` holds
            // `c_out / groups` rows of `ldc` (the output, or the scratch
            // after the planes).
            unsafe {
                packed_gemm_row_bias_produced_f32(
                    w_g,
                    k,
                    &produce,
                    bias_g,
                    c,
                    ldc,
                    (s.c_out_g(), k, grid.cols),
                    act,
                    par,
                )
            };
            if squeeze {
                // SAFETY: the grid product just written, and the group's
                // output channels.
                unsafe { squeeze_grid(c, out_g, s, grid.pitch, par) };
            }
        }
    }
}

/// Copies the first `w_out` columns of each grid row of `c_out / groups`
/// channels (`h_out * pitch` values each) to `out`.
///
/// # Safety
///
/// `grid` valid for the channels' grid values, `out` for their outputs,
/// not overlapping.
unsafe fn squeeze_grid(grid: *const f32, out: *mut f32, s: &Conv2dShape, pitch: usize, par: bool) {
    let (grid, out) = (SendPtr(grid.cast_mut()), SendPtr(out));
    let rows = s.c_out_g() * s.h_out;
    let run = |first: usize, count: usize| {
        for r in first..first + count {
            // SAFETY: grid row `r` and output row `r`, inside the caller's
            // extents; each written by this iteration only.
            unsafe { std::ptr::copy_nonoverlapping(grid.get().add(r * pitch), out.get().add(r * s.w_out), s.w_out) };
        }
    };
    if par {
        crate::threads::par_for(rows, crate::kernels::reduce::units_per_chunk(s.w_out), &run);
    } else {
        run(0, rows);
    }
}
