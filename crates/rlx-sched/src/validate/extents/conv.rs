//! NCHW convolution and pooling, with the output-size rules.

use super::Rules;
use crate::ops::ReduceOp;
use crate::thunk::Thunk;
use crate::validate::access::F32;
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

pub(super) fn conv2d<'a, O>(r: &mut Rules<'a, O>, t: &'a Thunk<O>) {
    let Thunk::Conv2D {
        x,
        w,
        bias,
        out,
        n,
        c_in,
        h,
        w_in,
        c_out,
        h_out,
        w_out,
        kh,
        kw,
        sh,
        sw,
        ph,
        pw,
        dh,
        dw,
        groups,
        act: _,
    } = t
    else {
        unreachable!("conv2d called on {:?}", t.kind())
    };
    positive(r, &[("groups", *groups), ("kh", *kh), ("kw", *kw), ("sh", *sh), ("sw", *sw), ("dh", *dh), ("dw", *dw)]);
    if *groups > 0 {
        r.require(c_in % groups == 0, "groups", || messages::groups_divide("c_in", *c_in, *groups));
        r.require(c_out % groups == 0, "groups", || messages::groups_divide("c_out", *c_out, *groups));
    }
    conv_window(r, "h_out", *h_out, *h, *ph, *kh, *sh, *dh, ["h_out", "h", "ph", "kh", "sh", "dh"]);
    conv_window(r, "w_out", *w_out, *w_in, *pw, *kw, *sw, *dw, ["w_out", "w_in", "pw", "kw", "sw", "dw"]);
    let c_per_group = c_in / (*groups).max(1);
    r.read("x", x, F32, &[*n, *c_in, *h, *w_in], "n*c_in*h*w_in");
    r.read("w", w, F32, &[*c_out, c_per_group, *kh, *kw], "c_out*(c_in/groups)*kh*kw");
    r.read_opt("bias", bias, F32, &[*c_out], "c_out");
    r.write("out", out, F32, &[*n, *c_out, *h_out, *w_out], "n*c_out*h_out*w_out");
    // One group's phase planes and grid product (`plan::conv2d_scratch_bytes`).
    let shape = rlx_core::shapes::Conv2dShape {
        n: *n,
        c_in: *c_in,
        h: *h,
        w_in: *w_in,
        c_out: *c_out,
        h_out: *h_out,
        w_out: *w_out,
        kh: *kh,
        kw: *kw,
        sh: *sh,
        sw: *sw,
        ph: *ph,
        pw: *pw,
        dh: *dh,
        dw: *dw,
        groups: *groups,
    };
    let path = rlx_core::plan::conv2d_path(&shape);
    let bytes = rlx_core::plan::conv2d_scratch_bytes_checked(&shape, path);
    r.scratch(
        "h_out",
        bytes,
        "(c_in/groups)*sh*sw*(h_out+(kh-1)*dh/sh+1)*pitch*4 (+ c_out/groups*h_out*pitch*4), pitch = w_out+(kw-1)*dw/sw",
    );
}

pub(super) fn pool2d<'a, O>(r: &mut Rules<'a, O>, t: &'a Thunk<O>) {
    let Thunk::Pool2D { src, dst, n, c, h, w, h_out, w_out, kh, kw, sh, sw, ph, pw, kind, count_include_pad } = t
    else {
        unreachable!("pool2d called on {:?}", t.kind())
    };
    r.require(matches!(kind, ReduceOp::Max | ReduceOp::Mean), "kind", || messages::pool_kind(kind.name()));
    r.require(!count_include_pad || *kind == ReduceOp::Mean, "count_include_pad", messages::count_include_pad_max);
    positive(r, &[("kh", *kh), ("kw", *kw), ("sh", *sh), ("sw", *sw)]);
    pool_window(r, "h_out", *h_out, *h, "ph", *ph, *kh, *sh, ["h_out", "h", "ph", "kh", "sh", "dh"]);
    pool_window(r, "w_out", *w_out, *w, "pw", *pw, *kw, *sw, ["w_out", "w", "pw", "kw", "sw", "dw"]);
    r.read("src", src, F32, &[*n, *c, *h, *w], "n*c*h*w");
    r.write("dst", dst, F32, &[*n, *c, *h_out, *w_out], "n*c*h_out*w_out");
}
