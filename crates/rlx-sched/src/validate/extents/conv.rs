//! Convolutions (NCHW, blocked, 2-byte filters, Winograd) and `Col2Im`,
//! with the window rules pooling and the 8-bit convolutions share.

use rlx_core::blocked::{
    blocked_grouped, channel_blocks, conv_blocked_scratch_bytes_checked, half_filter_fits, CHANNEL_BLOCK,
};
use rlx_core::shapes::Conv2dShape;
use rlx_core::winograd::{winograd_applies, winograd_scratch_bytes_checked, WINOGRAD_POINTS};

use super::{Extents, Rules};
use crate::dtype::DType;
use crate::thunk::{BlockedConv2D, BlockedConv2DHalf, Col2Im, Conv2D, WinogradConv2D};
use crate::validate::access::{Elem, F32};
use crate::validate::messages;

/// Fields that count steps or sizes of a window and must not be zero.
pub(super) fn positive<O>(r: &mut Rules<'_, O>, fields: &[(&'static str, usize)]) {
    for &(field, value) in fields {
        r.require(value > 0, field, || messages::must_be_positive(field));
    }
}

/// The convolution output-size rule along one axis. ONNX gives
/// `out = floor((in + pad_begin + pad_end - ext) / stride) + 1` with
/// `ext = (kernel - 1) * dilation + 1`; the format only stores the leading
/// padding, so the trailing padding is implied by `out`. Accepted: the last
/// window starts inside the input or its leading padding
/// (`(out-1)*stride < in + pad`, which covers ceil mode), or it ends within
/// a trailing padding no larger than the leading one
/// (`(out-1)*stride + ext <= in + 2*pad`).
pub(super) fn conv_window<O>(
    r: &mut Rules<'_, O>,
    out_field: &'static str,
    out: usize,
    input: usize,
    pad: usize,
    kernel: usize,
    stride: usize,
    dilation: usize,
    axis: [&'static str; 6],
) {
    if out == 0 || kernel == 0 || stride == 0 || dilation == 0 {
        return;
    }
    let last = (out - 1).checked_mul(stride);
    let ext = (kernel - 1).checked_mul(dilation).and_then(|e| e.checked_add(1));
    let inside = input.checked_add(pad);
    let padded = inside.and_then(|i| i.checked_add(pad));
    let (Some(last), Some(ext), Some(inside), Some(padded)) = (last, ext, inside, padded) else {
        return r.issue(out_field, messages::field_overflow(out_field), None);
    };
    let ok = last < inside || last.checked_add(ext).is_some_and(|end| end <= padded);
    r.require_hint(
        ok,
        out_field,
        || messages::conv_window(out_field, out, last, inside, axis),
        || messages::conv_window_hint(axis),
    );
}

/// The pooling output-size rule along one axis: every window must hold at
/// least one real element (`pad < kernel`, the last window starts inside
/// the input or its leading padding), else a max-pool would produce -inf
/// and a mean-pool divide by nothing.
pub(super) fn pool_window<O>(
    r: &mut Rules<'_, O>,
    out_field: &'static str,
    out: usize,
    input: usize,
    pad_field: &'static str,
    pad: usize,
    kernel: usize,
    stride: usize,
    axis: [&'static str; 6],
) {
    if out == 0 || kernel == 0 || stride == 0 {
        return;
    }
    r.require(pad < kernel, pad_field, || messages::pad_not_below_kernel(pad_field, pad, axis[3], kernel));
    r.require(input > 0, out_field, || messages::pool_empty_input(out_field, out, axis[1]));
    let (Some(last), Some(inside)) = ((out - 1).checked_mul(stride), input.checked_add(pad)) else {
        return r.issue(out_field, messages::field_overflow(out_field), None);
    };
    r.require_hint(
        input == 0 || last < inside,
        out_field,
        || messages::conv_window(out_field, out, last, inside, axis),
        || messages::pool_window_hint(axis),
    );
}

/// The rules on a convolution's sizes, whatever its layout.
pub(super) fn conv_geometry<O>(r: &mut Rules<'_, O>, s: &Conv2dShape) {
    let Conv2dShape { c_in, h, w_in, c_out, h_out, w_out, kh, kw, sh, sw, ph, pw, dh, dw, groups, .. } = *s;
    positive(r, &[("groups", groups), ("kh", kh), ("kw", kw), ("sh", sh), ("sw", sw), ("dh", dh), ("dw", dw)]);
    if groups > 0 {
        r.require(c_in % groups == 0, "groups", || messages::groups_divide("c_in", c_in, groups));
        r.require(c_out % groups == 0, "groups", || messages::groups_divide("c_out", c_out, groups));
    }
    conv_window(r, "h_out", h_out, h, ph, kh, sh, dh, ["h_out", "h", "ph", "kh", "sh", "dh"]);
    conv_window(r, "w_out", w_out, w_in, pw, kw, sw, dw, ["w_out", "w_in", "pw", "kw", "sw", "dw"]);
}

/// The reads and writes of a blocked convolution besides its filter.
pub(super) fn blocked_activations<'a, O>(
    r: &mut Rules<'a, O>,
    s: &Conv2dShape,
    x_nchw: bool,
    [x, out]: [&'a O; 2],
    bias: &'a Option<O>,
    residual: &'a Option<O>,
) {
    let (ib, ob) = (channel_blocks(s.c_in), channel_blocks(s.c_out));
    if x_nchw {
        r.read("x", x, F32, &[s.n, s.c_in, s.h, s.w_in], "n*c_in*h*w_in");
    } else {
        r.read("x", x, F32, &[s.n, ib, s.h, s.w_in, CHANNEL_BLOCK], "n*ceil(c_in/16)*h*w_in*16");
    }
    r.read_opt("bias", bias, F32, &[ob, CHANNEL_BLOCK], "ceil(c_out/16)*16");
    let out_dims = [s.n, ob, s.h_out, s.w_out, CHANNEL_BLOCK];
    r.read_opt("residual", residual, F32, &out_dims, "n*ceil(c_out/16)*h_out*w_out*16");
    r.write("out", out, F32, &out_dims, "n*ceil(c_out/16)*h_out*w_out*16");
    r.scratch("h_out", conv_blocked_scratch_bytes_checked(s), "ceil(c_in/16)*padded_rows*padded_cols*16*4");
}

impl<O> Extents<O> for Conv2D<O> {
    fn rules<'a>(&'a self, r: &mut Rules<'a, O>) {
        let Conv2D { x, w, bias, out, .. } = self;
        let s = self.shape();
        conv_geometry(r, &s);
        r.read("x", x, F32, &[s.n, s.c_in, s.h, s.w_in], "n*c_in*h*w_in");
        r.read("w", w, F32, &[s.c_out, s.c_in_g(), s.kh, s.kw], "c_out*(c_in/groups)*kh*kw");
        r.read_opt("bias", bias, F32, &[s.c_out], "c_out");
        r.write("out", out, F32, &[s.n, s.c_out, s.h_out, s.w_out], "n*c_out*h_out*w_out");
        // One group's phase planes and grid product (`plan::conv2d_scratch_bytes`).
        let path = rlx_core::plan::conv2d_path(&s);
        let bytes = rlx_core::plan::conv2d_scratch_bytes_checked(&s, path);
        r.scratch(
            "h_out",
            bytes,
            "(c_in/groups)*sh*sw*(h_out+(kh-1)*dh/sh+1)*pitch*4 (+ c_out/groups*h_out*pitch*4), pitch = w_out+(kw-1)*dw/sw",
        );
    }
}

impl<O> Extents<O> for BlockedConv2D<O> {
    fn rules<'a>(&'a self, r: &mut Rules<'a, O>) {
        let BlockedConv2D { x, w, bias, residual, out, x_nchw, .. } = self;
        let s = self.shape();
        conv_geometry(r, &s);
        let grouped = blocked_grouped(&s);
        let depthwise = s.groups > 1 && !grouped;
        r.require(s.groups <= 1 || grouped || (s.groups == s.c_in && s.groups == s.c_out), "groups", || {
            messages::blocked_groups(s.groups, s.c_in, s.c_out)
        });
        r.require(!*x_nchw || s.groups == 1, "x_nchw", || messages::blocked_nchw_groups(s.groups));
        r.require(residual.is_none() || !depthwise, "residual", || messages::blocked_residual_groups(s.groups));
        let ob = channel_blocks(s.c_out);
        if depthwise {
            r.read("w", w, F32, &[ob, s.kh, s.kw, CHANNEL_BLOCK], "ceil(c_out/16)*kh*kw*16");
        } else {
            r.read("w", w, F32, &[ob, s.c_in_g(), s.kh, s.kw, CHANNEL_BLOCK], "ceil(c_out/16)*(c_in/groups)*kh*kw*16");
        }
        blocked_activations(r, &s, *x_nchw, [x, out], bias, residual);
    }
}

/// `BlockedConv2D` of one group with a 16-bit filter.
impl<O> Extents<O> for BlockedConv2DHalf<O> {
    fn rules<'a>(&'a self, r: &mut Rules<'a, O>) {
        let BlockedConv2DHalf { x, w, bias, residual, out, x_nchw, w_dtype, .. } = self;
        let s = self.shape();
        conv_geometry(r, &s);
        r.require(half_filter_fits(s.c_in, s.kh, s.kw), "kh", || messages::half_filter_too_large(&s));
        if r.dtype_in("w_dtype", *w_dtype, &[DType::F16, DType::Bf16]) {
            let dims = [channel_blocks(s.c_out), s.c_in, s.kh, s.kw, CHANNEL_BLOCK];
            r.read("w", w, Elem::Exact(*w_dtype), &dims, "ceil(c_out/16)*c_in*kh*kw*16");
        }
        blocked_activations(r, &s, *x_nchw, [x, out], bias, residual);
    }
}

impl<O> Extents<O> for WinogradConv2D<O> {
    fn rules<'a>(&'a self, r: &mut Rules<'a, O>) {
        let WinogradConv2D { x, w, bias, residual, out, n, c_in, h, w_in, c_out, h_out, w_out, ph, pw, .. } = self;
        let s = Conv2dShape::winograd(*n, *c_in, (*h, *w_in), *c_out, (*h_out, *w_out), (*ph, *pw));
        conv_geometry(r, &s);
        r.require_hint(
            winograd_applies(&s),
            "ph",
            || messages::winograd_shape(&s),
            || messages::winograd_shape_hint(&s),
        );
        let (ib, ob) = (channel_blocks(s.c_in), channel_blocks(s.c_out));
        r.read("x", x, F32, &[s.n, ib, s.h, s.w_in, CHANNEL_BLOCK], "n*ceil(c_in/16)*h*w_in*16");
        r.read("w", w, F32, &[WINOGRAD_POINTS, ob, s.c_in, CHANNEL_BLOCK], "36*ceil(c_out/16)*c_in*16");
        r.read_opt("bias", bias, F32, &[ob, CHANNEL_BLOCK], "ceil(c_out/16)*16");
        let out_dims = [s.n, ob, s.h_out, s.w_out, CHANNEL_BLOCK];
        r.read_opt("residual", residual, F32, &out_dims, "n*ceil(c_out/16)*h_out*w_out*16");
        r.write("out", out, F32, &out_dims, "n*ceil(c_out/16)*h_out*w_out*16");
        r.scratch("h_out", winograd_scratch_bytes_checked(&s), "36*ceil(c_in/16)*ceil(h_out/4)*ceil(w_out/4)*16*4");
    }
}

/// `Col2Im`: positive window, stride and dilation; the columns, bias and
/// image extents. Any padding and grid are valid (pixels no column
/// reaches keep the bias, columns outside the image are dropped).
impl<O> Extents<O> for Col2Im<O> {
    fn rules<'a>(&'a self, r: &mut Rules<'a, O>) {
        let Col2Im { src, bias, dst, n, c, h, w, h_cols, w_cols, kh, kw, sh, sw, ph: _, pw: _, dh, dw } = self;
        positive(r, &[("kh", *kh), ("kw", *kw), ("sh", *sh), ("sw", *sw), ("dh", *dh), ("dw", *dw)]);
        r.read("src", src, F32, &[*n, *c, *kh, *kw, *h_cols, *w_cols], "n*c*kh*kw*h_cols*w_cols");
        if let Some(bias) = bias {
            r.read("bias", bias, F32, &[*c], "c");
        }
        r.write("dst", dst, F32, &[*n, *c, *h, *w], "n*c*h*w");
    }
}
