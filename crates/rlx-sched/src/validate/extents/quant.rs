//! The 8-bit kinds: integer products and convolutions, dynamic
//! quantization and requantization.

use rlx_core::plan::{
    int_conv2d_scratch_bytes_checked, int_gemm_packed_scratch_bytes_checked, int_gemm_scratch_bytes_checked,
};
use rlx_core::qconv::{qconv_scratch_bytes_checked, QCONV_IN_QUAD, QCONV_OUT_BLOCK};

use super::conv::conv_geometry;
use super::{Extents, Rules};
use crate::dtype::DType;
use crate::thunk::{DynamicQuantize, IntConv2D, IntGemm, IntGemmPacked, QLinearConv2D, Requantize};
use crate::validate::access::{Elem, F32};
use crate::validate::messages;

/// The 8-bit integer convolution: `Conv2D`'s geometry, `x` and `w` of
/// their 8-bit types, `out` i32 (written while the inputs are read).
impl<O> Extents<O> for IntConv2D<O> {
    fn rules<'a>(&'a self, r: &mut Rules<'a, O>) {
        let IntConv2D { x, w, x_zero, w_zero, out, c_out, x_dtype, w_dtype, w_zero_len, .. } = self;
        let s = self.shape();
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
}

impl<O> Extents<O> for QLinearConv2D<O> {
    fn rules<'a>(&'a self, r: &mut Rules<'a, O>) {
        let QLinearConv2D { x, w, bias, scale, zero, out, x_pad, scale_len, .. } = self;
        let s = self.shape();
        conv_geometry(r, &s);
        r.require(s.groups <= 1 || (s.groups == s.c_in && s.groups == s.c_out), "groups", || {
            messages::qconv_groups(s.groups, s.c_in, s.c_out)
        });
        r.require(*x_pad <= 255, "x_pad", || messages::qconv_pad(*x_pad));
        r.require(*scale_len == 1 || *scale_len == s.c_out, "scale_len", || {
            messages::qconv_scale_len(*scale_len, s.c_out)
        });
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
}

/// The 8-bit integer product: `a`, `b` and the zero points of their
/// types (u8 or i8), `c` i32; no operand may overlap `c` (the kernel
/// writes each row while reading the inputs).
impl<O> Extents<O> for IntGemm<O> {
    fn rules<'a>(&'a self, r: &mut Rules<'a, O>) {
        let IntGemm { a, b, a_zero, b_zero, c, batch, m, k, n, a_dtype, b_dtype, b_zero_len, b_bcast } = self;
        const EIGHT_BIT: &[DType] = &[DType::U8, DType::I8];
        let types_ok = r.dtype_in("a_dtype", *a_dtype, EIGHT_BIT) & r.dtype_in("b_dtype", *b_dtype, EIGHT_BIT);
        r.require(*b_zero_len == 1 || *b_zero_len == *n, "b_zero_len", || messages::int_gemm_zero_len(*b_zero_len, *n));
        if !types_ok {
            return;
        }
        let (ae, be) = (Elem::Exact(*a_dtype), Elem::Exact(*b_dtype));
        let (b_count, b_formula) = if *b_bcast { (1, "k*n (b_bcast)") } else { (*batch, "batch*k*n") };
        r.read("a", a, ae, &[*batch, *m, *k], "batch*m*k");
        r.read("b", b, be, &[b_count, *k, *n], b_formula);
        r.read_opt("a_zero", a_zero, ae, &[1], "1");
        r.read_opt("b_zero", b_zero, be, &[*b_zero_len], "b_zero_len");
        r.write("c", c, Elem::Exact(DType::I32), &[*batch, *m, *n], "batch*m*n");
        // The packed b (i16 pairs) and a's pairs (i32).
        r.scratch("k", int_gemm_scratch_bytes_checked(*batch, *m, *k, *n), "a64(ceil(k/2)*n*4) + batch*m*ceil(k/2)*4");
    }
}

/// The 8-bit product on a packed i8 weight: `a` of `a_dtype` (u8 or i8),
/// `w` the packed blocks (`ceil(n/16) * ceil(k/4) * 64` bytes; any bytes
/// are a valid packing), `w_sums` and `w_zero` i32, `c` i32, or f32 with
/// `scale`; no operand may overlap `c`.
impl<O> Extents<O> for IntGemmPacked<O> {
    fn rules<'a>(&'a self, r: &mut Rules<'a, O>) {
        let IntGemmPacked { a, w, w_sums, a_zero, w_zero, scale, bias, c, m, k, n, a_dtype, w_zero_len, scale_len } =
            self;
        let type_ok = r.dtype_in("a_dtype", *a_dtype, &[DType::U8, DType::I8]);
        for (field, len) in [("w_zero_len", *w_zero_len), ("scale_len", *scale_len)] {
            r.require(len == 1 || len == *n, field, || messages::packed_int_gemm_len(field, len, *n));
        }
        r.require(bias.is_none() || scale.is_some(), "bias", messages::packed_int_gemm_bias_without_scale);
        if !type_ok {
            return;
        }
        let (ae, i32e) = (Elem::Exact(*a_dtype), Elem::Exact(DType::I32));
        r.read("a", a, ae, &[*m, *k], "m*k");
        r.read(
            "w",
            w,
            Elem::Exact(DType::I8),
            &[n.div_ceil(QCONV_OUT_BLOCK), k.div_ceil(QCONV_IN_QUAD), QCONV_OUT_BLOCK * QCONV_IN_QUAD],
            "ceil(n/16)*ceil(k/4)*64",
        );
        r.read("w_sums", w_sums, i32e, &[*n], "n");
        r.read_opt("a_zero", a_zero, ae, &[1], "1");
        r.read_opt("w_zero", w_zero, i32e, &[*w_zero_len], "w_zero_len");
        r.read_opt("scale", scale, F32, &[*scale_len], "scale_len");
        r.read_opt("bias", bias, F32, &[*n], "n");
        let c_elem = if scale.is_some() { F32 } else { i32e };
        r.write("c", c, c_elem, &[*m, *n], "m*n");
        r.scratch(
            "m",
            int_gemm_packed_scratch_bytes_checked(*m, *k, w_zero.is_some()),
            "a64(m*4) (with w_zero) + m*ceil(k/4)*8",
        );
    }
}

/// `x` f32 to `y` u8 with the range's `scale` (one f32) and `zero` (one
/// u8); no output overlaps `x` or another output.
impl<O> Extents<O> for DynamicQuantize<O> {
    fn rules<'a>(&'a self, r: &mut Rules<'a, O>) {
        let DynamicQuantize { x, y, scale, zero, len } = self;
        let u8_ = Elem::Exact(DType::U8);
        r.read("x", x, F32, &[*len], "len");
        r.write("y", y, u8_, &[*len], "len");
        r.write("scale", scale, F32, &[1], "1");
        r.write("zero", zero, u8_, &[1], "1");
    }
}

/// i32 sums to 8-bit values: `acc` i32, `bias` i32 per channel, `scale`
/// f32 (1 or per channel), `zero` and `out` of `out_dtype` (u8 or i8).
impl<O> Extents<O> for Requantize<O> {
    fn rules<'a>(&'a self, r: &mut Rules<'a, O>) {
        let Requantize { acc, bias, scale, zero, out, outer, channels, inner, scale_len, out_dtype } = self;
        let type_ok = r.dtype_in("out_dtype", *out_dtype, &[DType::U8, DType::I8]);
        r.require(*scale_len == 1 || *scale_len == *channels, "scale_len", || {
            messages::requantize_scale_len(*scale_len, *channels)
        });
        let dims = [*outer, *channels, *inner];
        r.read("acc", acc, Elem::Exact(DType::I32), &dims, "outer*channels*inner");
        r.read_opt("bias", bias, Elem::Exact(DType::I32), &[*channels], "channels");
        r.read("scale", scale, F32, &[*scale_len], "scale_len");
        if type_ok {
            let q = Elem::Exact(*out_dtype);
            r.read_opt("zero", zero, q, &[1], "1");
            r.write("out", out, q, &dims, "outer*channels*inner");
        }
    }
}
