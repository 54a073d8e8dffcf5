//! Quantized family: integer products and convolutions, dynamic
//! quantization and requantization. Element types become type arguments
//! here; scratch sizes come from `plan` and `qconv`.

use super::Lower;
use crate::call::{KernelCall as K, QuantElem};
use crate::dtype::DType;
use crate::operand::{Operand, Params};
use crate::plan::{
    conv2d_parallel, int_conv2d_scratch_bytes, int_gemm_packed_scratch_bytes, int_gemm_scratch_bytes,
    packed_gemm_parallel, parallel,
};
use crate::qconv::qconv_scratch_bytes;
use crate::thunk::{DynamicQuantize, IntConv2D, IntGemm, IntGemmPacked, QLinearConv2D, Requantize};

impl Lower for IntGemmPacked<Operand> {
    fn lower(&self, _: &Params) -> Option<K> {
        let IntGemmPacked { a, w, w_sums, a_zero, w_zero, scale, bias, c, m, k, n, a_dtype, w_zero_len, scale_len } =
            *self;
        let a_elem = if a_dtype == DType::I8 { QuantElem::I8 } else { QuantElem::U8 };
        let scratch = int_gemm_packed_scratch_bytes(m, k, w_zero.is_some());
        let par = packed_gemm_parallel(m, k, n);
        Some(match scale {
            None => K::IntGemmPacked { scratch, a_elem, a, w, w_sums, a_zero, w_zero, c, m, k, n, w_zero_len, par },
            Some(scale) => K::IntGemmPackedF32 {
                scratch,
                a_elem,
                a,
                w,
                w_sums,
                a_zero,
                w_zero,
                scale,
                bias,
                c,
                m,
                k,
                n,
                w_zero_len,
                scale_len,
                par,
            },
        })
    }
}

impl Lower for IntGemm<Operand> {
    fn lower(&self, _: &Params) -> Option<K> {
        let IntGemm { a, b, a_zero, b_zero, c, batch, m, k, n, a_dtype, b_dtype, b_zero_len, b_bcast } = *self;
        let elem = |d: DType| if d == DType::I8 { QuantElem::I8 } else { QuantElem::U8 };
        Some(K::IntGemm {
            scratch: int_gemm_scratch_bytes(batch, m, k, n),
            a_elem: elem(a_dtype),
            b_elem: elem(b_dtype),
            a,
            b,
            a_zero,
            b_zero,
            c,
            batch,
            m,
            k,
            n,
            b_zero_len,
            b_bcast,
            par: packed_gemm_parallel(batch * m, k, n),
        })
    }
}

impl Lower for DynamicQuantize<Operand> {
    fn lower(&self, _: &Params) -> Option<K> {
        let DynamicQuantize { x, y, scale, zero, len } = *self;
        Some(K::DynamicQuantize { x, y, scale, zero, len, par: parallel(len) })
    }
}

impl Lower for Requantize<Operand> {
    fn lower(&self, _: &Params) -> Option<K> {
        let Requantize { acc, bias, scale, zero, out, outer, channels, inner, scale_len, out_dtype } = *self;
        Some(K::Requantize {
            out_elem: if out_dtype == DType::I8 { QuantElem::I8 } else { QuantElem::U8 },
            acc,
            bias,
            scale,
            zero,
            out,
            outer,
            channels,
            inner,
            scale_len,
            par: parallel(outer * channels * inner),
        })
    }
}

impl Lower for IntConv2D<Operand> {
    fn lower(&self, _: &Params) -> Option<K> {
        let IntConv2D { x, w, x_zero, w_zero, out, x_dtype, w_dtype, w_zero_len, .. } = *self;
        let shape = self.shape();
        let elem = |d: DType| if d == DType::I8 { QuantElem::I8 } else { QuantElem::U8 };
        Some(K::IntConv2d {
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
        })
    }
}

impl Lower for QLinearConv2D<Operand> {
    fn lower(&self, _: &Params) -> Option<K> {
        let QLinearConv2D { x, w, bias, scale, zero, out, x_pad, scale_len, x_nhwc, out_nhwc, .. } = *self;
        let shape = self.shape();
        Some(K::QLinearConv2d {
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
        })
    }
}
