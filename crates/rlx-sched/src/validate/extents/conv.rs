//! Convolution and pooling (NCHW and blocked), with the output-size
//! rules, and the conversions between the two layouts.

use rlx_core::blocked::{channel_blocks, conv_blocked_scratch_bytes_checked, half_filter_fits, CHANNEL_BLOCK};
use rlx_core::plan::{
    int_conv2d_scratch_bytes_checked, resize_axis_scale, resize_scratch_bytes_checked, resize_taps, resize_weighted,
};
use rlx_core::qconv::{qconv_scratch_bytes_checked, QCONV_IN_QUAD, QCONV_OUT_BLOCK};
use rlx_core::shapes::{Conv2dShape, ResizeShape};
use rlx_core::winograd::{winograd_applies, winograd_scratch_bytes_checked, WINOGRAD_POINTS};

use super::Rules;
use crate::dtype::DType;
use crate::ops::{ReduceOp, ResizeMode};
use crate::thunk::Thunk;
use crate::validate::access::{Elem, F32};
use crate::validate::messages;

/// Fields that count steps or sizes of a window and must not be zero.
fn positive<O>(r: &mut Rules<'_, O>, fields: &[(&'static str, usize)]) {
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
fn conv_window<O>(
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
fn pool_window<O>(
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

/// A convolution thunk's shape.
fn conv_shape<O>(t: &Thunk<O>) -> Conv2dShape {
    t.conv2d_shape().unwrap_or_else(|| unreachable!("conv_shape called on {:?}", t.kind()))
}

/// The rules on a convolution's sizes, whatever its layout.
fn conv_geometry<O>(r: &mut Rules<'_, O>, s: &Conv2dShape) {
    let Conv2dShape { c_in, h, w_in, c_out, h_out, w_out, kh, kw, sh, sw, ph, pw, dh, dw, groups, .. } = *s;
    positive(r, &[("groups", groups), ("kh", kh), ("kw", kw), ("sh", sh), ("sw", sw), ("dh", dh), ("dw", dw)]);
    if groups > 0 {
        r.require(c_in % groups == 0, "groups", || messages::groups_divide("c_in", c_in, groups));
        r.require(c_out % groups == 0, "groups", || messages::groups_divide("c_out", c_out, groups));
    }
    conv_window(r, "h_out", h_out, h, ph, kh, sh, dh, ["h_out", "h", "ph", "kh", "sh", "dh"]);
    conv_window(r, "w_out", w_out, w_in, pw, kw, sw, dw, ["w_out", "w_in", "pw", "kw", "sw", "dw"]);
}

pub(super) fn conv2d<'a, O>(r: &mut Rules<'a, O>, t: &'a Thunk<O>) {
    let Thunk::Conv2D { x, w, bias, out, .. } = t else { unreachable!("conv2d called on {:?}", t.kind()) };
    let s = conv_shape(t);
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

/// The 8-bit integer convolution: `Conv2D`'s geometry, `x` and `w` of
/// their 8-bit types, `out` i32 (written while the inputs are read).
pub(super) fn int_conv2d<'a, O>(r: &mut Rules<'a, O>, t: &'a Thunk<O>) {
    let Thunk::IntConv2D { x, w, x_zero, w_zero, out, c_out, x_dtype, w_dtype, w_zero_len, .. } = t else {
        unreachable!("int_conv2d called on {:?}", t.kind())
    };
    let s = conv_shape(t);
    conv_geometry(r, &s);
    const EIGHT_BIT: &[DType] = &[DType::U8, DType::I8];
    let types_ok = r.dtype_in("x_dtype", *x_dtype, EIGHT_BIT) & r.dtype_in("w_dtype", *w_dtype, EIGHT_BIT);
    r.require(*w_zero_len == 1 || *w_zero_len == *c_out, "w_zero_len", || {
        messages::int_conv_zero_len(*w_zero_len, *c_out)
    });
    if !types_ok || s.groups == 0 {
        return;
    }
    let (xe, we) = (Elem::Exact(*x_dtype), Elem::Exact(*w_dtype));
    r.read("x", x, xe, &[s.n, s.c_in, s.h, s.w_in], "n*c_in*h*w_in");
    r.read("w", w, we, &[s.c_out, s.c_in_g(), s.kh, s.kw], "c_out*(c_in/groups)*kh*kw");
    r.read_opt("x_zero", x_zero, xe, &[1], "1");
    r.read_opt("w_zero", w_zero, we, &[*w_zero_len], "w_zero_len");
    r.write("out", out, Elem::Exact(DType::I32), &[s.n, s.c_out, s.h_out, s.w_out], "n*c_out*h_out*w_out");
    r.scratch(
        "h_out",
        int_conv2d_scratch_bytes_checked(&s),
        "a64(c_out*ceil(patch/2)*4) + 2*a64(c_out*4) + a64(h_out*w_out*4) + ceil(patch/2)*h_out*w_out*4, a64 = rounded up to 64, patch = (c_in/groups)*kh*kw (0 when depthwise)",
    );
}

pub(super) fn qlinear_conv2d<'a, O>(r: &mut Rules<'a, O>, t: &'a Thunk<O>) {
    let Thunk::QLinearConv2D { x, w, bias, scale, zero, out, x_pad, scale_len, .. } = t else {
        unreachable!("qlinear_conv2d called on {:?}", t.kind())
    };
    let s = conv_shape(t);
    conv_geometry(r, &s);
    r.require(s.groups <= 1 || (s.groups == s.c_in && s.groups == s.c_out), "groups", || {
        messages::qconv_groups(s.groups, s.c_in, s.c_out)
    });
    r.require(*x_pad <= 255, "x_pad", || messages::qconv_pad(*x_pad));
    r.require(*scale_len == 1 || *scale_len == s.c_out, "scale_len", || messages::qconv_scale_len(*scale_len, s.c_out));
    let (u8_, i8_) = (Elem::Exact(DType::U8), Elem::Exact(DType::I8));
    if s.groups == 0 {
        return;
    }
    let (blocks, quads) = (s.c_out.div_ceil(QCONV_OUT_BLOCK), s.c_in_g().div_ceil(QCONV_IN_QUAD));
    r.read("x", x, u8_, &[s.n, s.c_in, s.h, s.w_in], "n*c_in*h*w_in");
    r.read(
        "w",
        w,
        i8_,
        &[blocks, s.kh, s.kw, quads, QCONV_OUT_BLOCK * QCONV_IN_QUAD],
        "ceil(c_out/16)*kh*kw*ceil((c_in/groups)/4)*64",
    );
    r.read_opt("bias", bias, Elem::Exact(DType::I32), &[s.c_out], "c_out");
    r.read("scale", scale, F32, &[*scale_len], "scale_len");
    r.read_opt("zero", zero, u8_, &[1], "1");
    r.write("out", out, u8_, &[s.n, s.c_out, s.h_out, s.w_out], "n*c_out*h_out*w_out");
    r.scratch(
        "h_out",
        qconv_scratch_bytes_checked(&s),
        "padded_rows*padded_cols*c, c = c_in rounded up to 4 (groups 1) or to 16 (depthwise)",
    );
}

pub(super) fn conv2d_blocked<'a, O>(r: &mut Rules<'a, O>, t: &'a Thunk<O>) {
    let Thunk::BlockedConv2D { x, w, bias, residual, out, x_nchw, .. } = t else {
        unreachable!("conv2d_blocked called on {:?}", t.kind())
    };
    let s = conv_shape(t);
    conv_geometry(r, &s);
    let depthwise = s.groups > 1;
    r.require(s.groups <= 1 || (s.groups == s.c_in && s.groups == s.c_out), "groups", || {
        messages::blocked_groups(s.groups, s.c_in, s.c_out)
    });
    r.require(!*x_nchw || s.groups == 1, "x_nchw", || messages::blocked_nchw_groups(s.groups));
    r.require(residual.is_none() || s.groups == 1, "residual", || messages::blocked_residual_groups(s.groups));
    let ob = channel_blocks(s.c_out);
    if depthwise {
        r.read("w", w, F32, &[ob, s.kh, s.kw, CHANNEL_BLOCK], "ceil(c_out/16)*kh*kw*16");
    } else {
        r.read("w", w, F32, &[ob, s.c_in, s.kh, s.kw, CHANNEL_BLOCK], "ceil(c_out/16)*c_in*kh*kw*16");
    }
    blocked_activations(r, &s, *x_nchw, [x, out], bias, residual);
}

/// `BlockedConv2D` of one group with a 16-bit filter.
pub(super) fn conv2d_blocked_half<'a, O>(r: &mut Rules<'a, O>, t: &'a Thunk<O>) {
    let Thunk::BlockedConv2DHalf { x, w, bias, residual, out, x_nchw, w_dtype, .. } = t else {
        unreachable!("conv2d_blocked_half called on {:?}", t.kind())
    };
    let s = conv_shape(t);
    conv_geometry(r, &s);
    r.require(half_filter_fits(s.c_in, s.kh, s.kw), "kh", || messages::half_filter_too_large(&s));
    if r.dtype_in("w_dtype", *w_dtype, &[DType::F16, DType::Bf16]) {
        let dims = [channel_blocks(s.c_out), s.c_in, s.kh, s.kw, CHANNEL_BLOCK];
        r.read("w", w, Elem::Exact(*w_dtype), &dims, "ceil(c_out/16)*c_in*kh*kw*16");
    }
    blocked_activations(r, &s, *x_nchw, [x, out], bias, residual);
}

/// The reads and writes of a blocked convolution besides its filter.
fn blocked_activations<'a, O>(
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

pub(super) fn conv2d_winograd<'a, O>(r: &mut Rules<'a, O>, t: &'a Thunk<O>) {
    let Thunk::WinogradConv2D { x, w, bias, residual, out, n, c_in, h, w_in, c_out, h_out, w_out, ph, pw, .. } = t
    else {
        unreachable!("conv2d_winograd called on {:?}", t.kind())
    };
    let s = Conv2dShape::winograd(*n, *c_in, (*h, *w_in), *c_out, (*h_out, *w_out), (*ph, *pw));
    conv_geometry(r, &s);
    r.require_hint(winograd_applies(&s), "ph", || messages::winograd_shape(&s), || messages::winograd_shape_hint(&s));
    let (ib, ob) = (channel_blocks(s.c_in), channel_blocks(s.c_out));
    r.read("x", x, F32, &[s.n, ib, s.h, s.w_in, CHANNEL_BLOCK], "n*ceil(c_in/16)*h*w_in*16");
    r.read("w", w, F32, &[WINOGRAD_POINTS, ob, s.c_in, CHANNEL_BLOCK], "36*ceil(c_out/16)*c_in*16");
    r.read_opt("bias", bias, F32, &[ob, CHANNEL_BLOCK], "ceil(c_out/16)*16");
    let out_dims = [s.n, ob, s.h_out, s.w_out, CHANNEL_BLOCK];
    r.read_opt("residual", residual, F32, &out_dims, "n*ceil(c_out/16)*h_out*w_out*16");
    r.write("out", out, F32, &out_dims, "n*ceil(c_out/16)*h_out*w_out*16");
    r.scratch("h_out", winograd_scratch_bytes_checked(&s), "36*ceil(c_in/16)*ceil(h_out/4)*ceil(w_out/4)*16*4");
}

pub(super) fn pool2d<'a, O>(r: &mut Rules<'a, O>, t: &'a Thunk<O>) {
    let (Thunk::Pool2D { src, dst, n, c, h, w, h_out, w_out, kh, kw, sh, sw, ph, pw, kind, count_include_pad }
    | Thunk::BlockedPool2D { src, dst, n, c, h, w, h_out, w_out, kh, kw, sh, sw, ph, pw, kind, count_include_pad }) = t
    else {
        unreachable!("pool2d called on {:?}", t.kind())
    };
    r.require(matches!(kind, ReduceOp::Max | ReduceOp::Mean), "kind", || messages::pool_kind(kind.name()));
    r.require(!count_include_pad || *kind == ReduceOp::Mean, "count_include_pad", messages::count_include_pad_max);
    positive(r, &[("kh", *kh), ("kw", *kw), ("sh", *sh), ("sw", *sw)]);
    pool_window(r, "h_out", *h_out, *h, "ph", *ph, *kh, *sh, ["h_out", "h", "ph", "kh", "sh", "dh"]);
    pool_window(r, "w_out", *w_out, *w, "pw", *pw, *kw, *sw, ["w_out", "w", "pw", "kw", "sw", "dw"]);
    if matches!(t, Thunk::BlockedPool2D { .. }) {
        let cb = channel_blocks(*c);
        r.read("src", src, F32, &[*n, cb, *h, *w, CHANNEL_BLOCK], "n*ceil(c/16)*h*w*16");
        r.write("dst", dst, F32, &[*n, cb, *h_out, *w_out, CHANNEL_BLOCK], "n*ceil(c/16)*h_out*w_out*16");
    } else {
        r.read("src", src, F32, &[*n, *c, *h, *w], "n*c*h*w");
        r.write("dst", dst, F32, &[*n, *c, *h_out, *w_out], "n*c*h_out*w_out");
    }
}

/// `Col2Im`: positive window, stride and dilation; the columns, bias and
/// image extents. Any padding and grid are valid (pixels no column
/// reaches keep the bias, columns outside the image are dropped).
pub(super) fn col2im<'a, O>(r: &mut Rules<'a, O>, t: &'a Thunk<O>) {
    let Thunk::Col2Im { src, bias, dst, n, c, h, w, h_cols, w_cols, kh, kw, sh, sw, ph: _, pw: _, dh, dw } = t else {
        unreachable!("col2im called on {:?}", t.kind())
    };
    positive(r, &[("kh", *kh), ("kw", *kw), ("sh", *sh), ("sw", *sw), ("dh", *dh), ("dw", *dw)]);
    r.read("src", src, F32, &[*n, *c, *kh, *kw, *h_cols, *w_cols], "n*c*kh*kw*h_cols*w_cols");
    if let Some(bias) = bias {
        r.read("bias", bias, F32, &[*c], "c");
    }
    r.write("dst", dst, F32, &[*n, *c, *h, *w], "n*c*h*w");
}

/// `Resize`: a positive finite scale unless `by_size`, a non-empty source when there is
/// output to read it for, a finite `cubic_a` and roi, antialias only for
/// linear and cubic, `exclude_outside` not for nearest (the reference
/// renormalizes a lone excluded tap by 0), the weighted path's table in
/// scratch, the extents.
pub(super) fn resize<'a, O>(r: &mut Rules<'a, O>, t: &'a Thunk<O>) {
    let Thunk::Resize {
        src,
        dst,
        outer,
        in_len,
        out_len,
        inner,
        scale,
        by_size,
        mode,
        coord,
        cubic_a,
        exclude_outside,
        antialias,
        roi_start,
        roi_end,
        extrapolation,
    } = t
    else {
        unreachable!("resize called on {:?}", t.kind())
    };
    r.require(*by_size || (scale.is_finite() && *scale > 0.0), "scale", || {
        format!("`scale` is {scale}; it must be positive and finite (or `by_size: true`)")
    });
    r.require(*in_len > 0 || *out_len == 0, "in_len", || "`in_len` is 0 but the output reads it".to_string());
    r.finite("cubic_a", *cubic_a, false);
    r.finite("roi_start", *roi_start, false);
    r.finite("roi_end", *roi_end, false);
    let linear_or_cubic = matches!(mode, ResizeMode::Linear | ResizeMode::Cubic);
    r.require(!*antialias || linear_or_cubic, "antialias", || messages::resize_nearest_field("antialias", *mode));
    r.require(!*exclude_outside || linear_or_cubic, "exclude_outside", || {
        messages::resize_nearest_field("exclude_outside", *mode)
    });
    let shape = ResizeShape {
        outer: *outer,
        in_len: *in_len,
        out_len: *out_len,
        inner: *inner,
        scale: *scale,
        by_size: *by_size,
        mode: *mode,
        coord: *coord,
        cubic_a: *cubic_a,
        exclude_outside: *exclude_outside,
        antialias: *antialias,
        roi_start: *roi_start,
        roi_end: *roi_end,
        extrapolation: *extrapolation,
    };
    let scale_ok = *by_size || (scale.is_finite() && *scale > 0.0);
    if scale_ok && *out_len > 0 && *in_len > 0 && resize_weighted(*mode, *antialias) {
        let s = resize_axis_scale(*in_len, *out_len, *scale, *by_size);
        if resize_taps(*mode, *antialias, s).is_none() {
            r.issue("scale", messages::resize_filter_too_wide(s), None);
        } else {
            r.scratch("out_len", resize_scratch_bytes_checked(&shape), "out_len*(taps+1)*8");
        }
    }
    r.read("src", src, F32, &[*outer, *in_len, *inner], "outer*in_len*inner");
    r.write("dst", dst, F32, &[*outer, *out_len, *inner], "outer*out_len*inner");
}

/// `ToBlocked` / `FromBlocked`: `[n, c, hw]` plain on one side, blocked on
/// the other.
pub(super) fn reorder<'a, O>(r: &mut Rules<'a, O>, t: &'a Thunk<O>) {
    let (Thunk::ToBlocked { src, dst, n, c, hw } | Thunk::FromBlocked { src, dst, n, c, hw }) = t else {
        unreachable!("reorder called on {:?}", t.kind())
    };
    let plain = [*n, *c, *hw];
    let blocked = [*n, channel_blocks(*c), *hw, CHANNEL_BLOCK];
    if matches!(t, Thunk::ToBlocked { .. }) {
        r.read("src", src, F32, &plain, "n*c*hw");
        r.write("dst", dst, F32, &blocked, "n*ceil(c/16)*hw*16");
    } else {
        r.read("src", src, F32, &blocked, "n*ceil(c/16)*hw*16");
        r.write("dst", dst, F32, &plain, "n*c*hw");
    }
}
