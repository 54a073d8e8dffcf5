//! `Conv2D` (path from `plan::conv2d_path`), `Pool2D`, their blocked
//! forms and the conversions into and out of the blocked layout.

use super::not_in_family;
use crate::blocked::conv_blocked_scratch_bytes;
use crate::call::KernelCall as K;
use crate::call::QuantElem;
use crate::dtype::DType;
use crate::operand::Operand;
use crate::plan::{
    conv2d_parallel, conv2d_path, conv2d_scratch_bytes, int_conv2d_scratch_bytes, parallel, resize_parallel,
    resize_scratch_bytes,
};
use crate::qconv::qconv_scratch_bytes;
use crate::shapes::{Col2ImShape, Conv2dShape, Pool2dShape, PoolKind, ResizeShape};
use crate::thunk::Thunk;
use crate::winograd::winograd_scratch_bytes;

pub(super) fn lower(t: &Thunk<Operand>) -> K {
    match *t {
        Thunk::Conv2D { x, w, bias, out, act, .. } => {
            let shape = t.conv2d_shape().expect("a convolution");
            let path = conv2d_path(&shape);
            let scratch = conv2d_scratch_bytes(&shape, path);
            let par = conv2d_parallel(&shape);
            K::Conv2dF32 { x, w, bias, out, shape, path, act, scratch, par }
        }
        Thunk::IntConv2D { x, w, x_zero, w_zero, out, x_dtype, w_dtype, w_zero_len, .. } => {
            let shape = t.conv2d_shape().expect("a convolution");
            let elem = |d: DType| if d == DType::I8 { QuantElem::I8 } else { QuantElem::U8 };
            K::IntConv2d {
                scratch: int_conv2d_scratch_bytes(&shape),
                x_elem: elem(x_dtype),
                w_elem: elem(w_dtype),
                x,
                w,
                x_zero,
                w_zero,
                out,
                shape,
                w_zero_len,
                par: conv2d_parallel(&shape),
            }
        }
        Thunk::QLinearConv2D { x, w, bias, scale, zero, out, x_pad, scale_len, x_nhwc, out_nhwc, .. } => {
            let shape = t.conv2d_shape().expect("a convolution");
            K::QLinearConv2d {
                scratch: qconv_scratch_bytes(&shape),
                x,
                w,
                bias,
                scale,
                zero,
                out,
                shape,
                x_pad,
                scale_len,
                x_nhwc,
                out_nhwc,
                par: conv2d_parallel(&shape),
            }
        }
        Thunk::Resize {
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
        } => {
            let shape = ResizeShape {
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
            };
            let scratch = resize_scratch_bytes(&shape);
            let par = resize_parallel(&shape);
            K::ResizeF32 { src, dst, shape, scratch, par }
        }
        Thunk::Col2Im { src, bias, dst, n, c, h, w, h_cols, w_cols, kh, kw, sh, sw, ph, pw, dh, dw } => {
            let shape = Col2ImShape { n, c, h, w, h_cols, w_cols, kh, kw, sh, sw, ph, pw, dh, dw };
            let par = parallel(n * c * kh * kw * h_cols * w_cols);
            K::Col2ImF32 { src, bias, dst, shape, par }
        }
        Thunk::Pool2D { src, dst, n, c, h, w, h_out, w_out, kh, kw, sh, sw, ph, pw, kind, count_include_pad } => {
            let shape = Pool2dShape { n, c, h, w, h_out, w_out, kh, kw, sh, sw, ph, pw };
            let kind = PoolKind::from_reduce_op(kind)
                .unwrap_or_else(|| unreachable!("the validator admits only max and mean pooling, not {}", kind.name()));
            let par = parallel(n * c * h_out * w_out * kh * kw);
            K::Pool2dF32 { src, dst, shape, kind, count_include_pad, par }
        }
        Thunk::BlockedConv2D { x, w, bias, residual, out, groups, act, x_nchw, .. } => {
            let shape = t.conv2d_shape().expect("a convolution");
            let scratch = conv_blocked_scratch_bytes(&shape);
            let par = conv2d_parallel(&shape);
            if x_nchw {
                K::Conv2dNchwBlockedF32 { x, w, bias, residual, out, shape, act, scratch, par }
            } else if groups == 1 {
                K::Conv2dBlockedF32 { x, w, bias, residual, out, shape, act, scratch, par }
            } else {
                debug_assert!(residual.is_none(), "the validator admits a residual for one group only");
                K::DepthwiseBlockedF32 { x, w, bias, out, shape, act, scratch, par }
            }
        }
        Thunk::BlockedConv2DHalf { x, w, bias, residual, out, act, x_nchw, w_dtype, .. } => {
            let shape = t.conv2d_shape().expect("a convolution");
            let scratch = conv_blocked_scratch_bytes(&shape);
            let par = conv2d_parallel(&shape);
            let bf16 = w_dtype == DType::Bf16;
            K::Conv2dBlockedHalf { x, w, bias, residual, out, shape, act, bf16, x_nchw, scratch, par }
        }
        Thunk::WinogradConv2D { x, w, bias, residual, out, n, c_in, h, w_in, c_out, h_out, w_out, ph, pw, act } => {
            let shape = Conv2dShape::winograd(n, c_in, (h, w_in), c_out, (h_out, w_out), (ph, pw));
            let scratch = winograd_scratch_bytes(&shape);
            let par = conv2d_parallel(&shape);
            K::Conv2dWinogradF32 { x, u: w, bias, residual, out, shape, act, scratch, par }
        }
        Thunk::BlockedPool2D {
            src,
            dst,
            n,
            c,
            h,
            w,
            h_out,
            w_out,
            kh,
            kw,
            sh,
            sw,
            ph,
            pw,
            kind,
            count_include_pad,
        } => {
            let shape = Pool2dShape { n, c, h, w, h_out, w_out, kh, kw, sh, sw, ph, pw };
            let kind = PoolKind::from_reduce_op(kind)
                .unwrap_or_else(|| unreachable!("the validator admits only max and mean pooling, not {}", kind.name()));
            let par = parallel(n * c * h_out * w_out * kh * kw);
            K::Pool2dBlockedF32 { src, dst, shape, kind, count_include_pad, par }
        }
        Thunk::ToBlocked { src, dst, n, c, hw } => {
            K::NchwToBlockedF32 { src, dst, n, c, hw, par: parallel(n * c * hw) }
        }
        Thunk::FromBlocked { src, dst, n, c, hw } => {
            K::BlockedToNchwF32 { src, dst, n, c, hw, par: parallel(n * c * hw) }
        }
        _ => not_in_family("conv", t),
    }
}
