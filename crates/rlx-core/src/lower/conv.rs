//! Convolutions: `Conv2D` (path from `plan::conv2d_path`), its blocked,
//! 2-byte-filter and Winograd forms, and `Col2Im`.

use super::Lower;
use crate::blocked::{blocked_grouped, conv_blocked_scratch_bytes};
use crate::call::KernelCall as K;
use crate::dtype::DType;
use crate::operand::{Operand, Params};
use crate::plan::{conv2d_parallel, conv2d_path, conv2d_scratch_bytes, parallel};
use crate::shapes::{Col2ImShape, Conv2dShape};
use crate::thunk::{BlockedConv2D, BlockedConv2DHalf, Col2Im, Conv2D, WinogradConv2D};
use crate::winograd::winograd_scratch_bytes;

impl Lower for Conv2D<Operand> {
    fn lower(&self, _: &Params) -> Option<K> {
        let Conv2D { x, w, bias, out, act, .. } = *self;
        let shape = self.shape();
        let path = conv2d_path(&shape);
        let scratch = conv2d_scratch_bytes(&shape, path);
        let par = conv2d_parallel(&shape);
        Some(K::Conv2dF32 { x, w, bias, out, shape, path, act, scratch, par })
    }
}

impl Lower for Col2Im<Operand> {
    fn lower(&self, _: &Params) -> Option<K> {
        let Col2Im { src, bias, dst, n, c, h, w, h_cols, w_cols, kh, kw, sh, sw, ph, pw, dh, dw } = *self;
        let shape = Col2ImShape { n, c, h, w, h_cols, w_cols, kh, kw, sh, sw, ph, pw, dh, dw };
        let par = parallel(n * c * kh * kw * h_cols * w_cols);
        Some(K::Col2ImF32 { src, bias, dst, shape, par })
    }
}

impl Lower for BlockedConv2D<Operand> {
    fn lower(&self, _: &Params) -> Option<K> {
        let BlockedConv2D { x, w, bias, residual, out, groups, act, x_nchw, .. } = *self;
        let shape = self.shape();
        let scratch = conv_blocked_scratch_bytes(&shape);
        let par = conv2d_parallel(&shape);
        Some(if x_nchw {
            K::Conv2dNchwBlockedF32 { x, w, bias, residual, out, shape, act, scratch, par }
        } else if groups == 1 || blocked_grouped(&shape) {
            K::Conv2dBlockedF32 { x, w, bias, residual, out, shape, act, scratch, par }
        } else {
            debug_assert!(residual.is_none(), "the validator admits no residual for a depthwise convolution");
            K::DepthwiseBlockedF32 { x, w, bias, out, shape, act, scratch, par }
        })
    }
}

impl Lower for BlockedConv2DHalf<Operand> {
    fn lower(&self, _: &Params) -> Option<K> {
        let BlockedConv2DHalf { x, w, bias, residual, out, act, x_nchw, w_dtype, .. } = *self;
        let shape = self.shape();
        let scratch = conv_blocked_scratch_bytes(&shape);
        let par = conv2d_parallel(&shape);
        let bf16 = w_dtype == DType::Bf16;
        Some(K::Conv2dBlockedHalf { x, w, bias, residual, out, shape, act, bf16, x_nchw, scratch, par })
    }
}

impl Lower for WinogradConv2D<Operand> {
    fn lower(&self, _: &Params) -> Option<K> {
        let WinogradConv2D { x, w, bias, residual, out, n, c_in, h, w_in, c_out, h_out, w_out, ph, pw, act } = *self;
        let shape = Conv2dShape::winograd(n, c_in, (h, w_in), c_out, (h_out, w_out), (ph, pw));
        let scratch = winograd_scratch_bytes(&shape);
        let par = conv2d_parallel(&shape);
        Some(K::Conv2dWinogradF32 { x, u: w, bias, residual, out, shape, act, scratch, par })
    }
}
