//! Matrix products and the bias add.

use super::{product, Rules};
use crate::dtype::DType;
use crate::thunk::Thunk;
use crate::validate::access::{Alias, Elem, F32};
use crate::validate::messages;
use rlx_core::qconv::{QCONV_IN_QUAD, QCONV_OUT_BLOCK};

/// `c[m,n] = a[m,k] @ b[k,n]` with `b` of `b_elem`. The output may overlap
/// either input anywhere: the caller goes through a temporary
/// (`plan::gemm_needs_temp`).
pub(super) fn gemm<'a, O>(r: &mut Rules<'a, O>, a: &'a O, b: &'a O, c: &'a O, [m, k, n]: [usize; 3], b_elem: Elem) {
    r.read_alias(Alias::Any, "a", a, F32, &[m, k], "m*k");
    r.read_alias(Alias::Any, "b", b, b_elem, &[k, n], "k*n");
    r.write("c", c, F32, &[m, n], "m*n");
    // The temporary is as large as `c`.
    r.scratch("c", product(&[m, n, 4]), "m*n*4");
}

pub(super) fn batched_sgemm<'a, O>(r: &mut Rules<'a, O>, t: &'a Thunk<O>) {
    let Thunk::BatchedSgemm { a, b, c, batch, m, k, n, a_bcast, b_bcast } = t else {
        unreachable!("batched_sgemm called on {:?}", t.kind())
    };
    let (a_count, a_formula) = if *a_bcast { (1, "m*k (a_bcast)") } else { (*batch, "batch*m*k") };
    let (b_count, b_formula) = if *b_bcast { (1, "k*n (b_bcast)") } else { (*batch, "batch*k*n") };
    r.read_alias(Alias::Any, "a", a, F32, &[a_count, *m, *k], a_formula);
    r.read_alias(Alias::Any, "b", b, F32, &[b_count, *k, *n], b_formula);
    r.write("c", c, F32, &[*batch, *m, *n], "batch*m*n");
    r.scratch("c", product(&[*batch, *m, *n, 4]), "batch*m*n*4");
}

/// The 8-bit integer product: `a`, `b` and the zero points of their
/// types (u8 or i8), `c` i32; no operand may overlap `c` (the kernel
/// writes each row while reading the inputs).
pub(super) fn int_gemm<'a, O>(r: &mut Rules<'a, O>, t: &'a Thunk<O>) {
    let Thunk::IntGemm { a, b, a_zero, b_zero, c, batch, m, k, n, a_dtype, b_dtype, b_zero_len, b_bcast } = t else {
        unreachable!("int_gemm called on {:?}", t.kind())
    };
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
    let kp = k.div_ceil(2);
    let packed = product(&[kp, *n, 4]).and_then(|b| b.checked_add(63));
    r.scratch(
        "k",
        packed.zip(product(&[*batch, *m, kp, 4])).and_then(|(b, a)| b.checked_add(a)),
        "ceil(k/2)*(n*4 + batch*m*4)",
    );
}

/// The 8-bit product on a packed i8 weight: `a` of `a_dtype` (u8 or i8),
/// `w` the packed blocks (`ceil(n/16) * ceil(k/4) * 64` bytes; any bytes
/// are a valid packing), `w_sums` and `w_zero` i32, `c` i32, or f32 with
/// `scale`; no operand may overlap `c`.
pub(super) fn int_gemm_packed<'a, O>(r: &mut Rules<'a, O>, t: &'a Thunk<O>) {
    let Thunk::IntGemmPacked { a, w, w_sums, a_zero, w_zero, scale, bias, c, m, k, n, a_dtype, w_zero_len, scale_len } =
        t
    else {
        unreachable!("int_gemm_packed called on {:?}", t.kind())
    };
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
    let widened = product(&[*m, k.div_ceil(QCONV_IN_QUAD), 8]);
    r.scratch("m", widened.and_then(|w| w.checked_add(m.checked_mul(4)?.checked_add(63)?)), "a64(m*4) + m*ceil(k/4)*8");
}

/// `c = act(a @ w + bias)`. `a` and `w` may overlap `c` (a temporary is
/// used), but `bias` is read after the product is stored, so it must not.
pub(super) fn fused_mm_bias_act<'a, O>(r: &mut Rules<'a, O>, t: &'a Thunk<O>) {
    let Thunk::FusedMmBiasAct { a, w, bias, c, m, k, n, act: _ } = t else {
        unreachable!("fused_mm_bias_act called on {:?}", t.kind())
    };
    r.read_alias(Alias::Any, "a", a, F32, &[*m, *k], "m*k");
    r.read_alias(Alias::Any, "w", w, F32, &[*k, *n], "k*n");
    r.read("bias", bias, F32, &[*n], "n");
    r.write("c", c, F32, &[*m, *n], "m*n");
    r.scratch("c", product(&[*m, *n, 4]), "m*n*4");
}

/// `c = act(a @ unpack(w) + bias)`: `w` holds a prepacked matrix (the
/// importer writes it to the weights file; any bytes of the right size are
/// a valid packing, so `w` may be any buffer). As for `FusedMmBiasAct`, `a`
/// may overlap `c` (a temporary is used); `w` and `bias` must not.
pub(super) fn packed_gemm<'a, O>(r: &mut Rules<'a, O>, t: &'a Thunk<O>) {
    let Thunk::PackedGemm { a, w, bias, c, m, k, n, act: _ } = t else {
        unreachable!("packed_gemm called on {:?}", t.kind())
    };
    packed(r, [a, w, c], bias, [*m, *k, *n], F32);
}

/// `PackedGemm` with the packed weight in f16 or bf16 (`w_dtype`).
pub(super) fn packed_gemm_half<'a, O>(r: &mut Rules<'a, O>, t: &'a Thunk<O>) {
    let Thunk::PackedGemmHalf { a, w, bias, c, m, k, n, act: _, w_dtype } = t else {
        unreachable!("packed_gemm_half called on {:?}", t.kind())
    };
    if r.dtype_in("w_dtype", *w_dtype, &[DType::F16, DType::Bf16]) {
        packed(r, [a, w, c], bias, [*m, *k, *n], Elem::Exact(*w_dtype));
    }
}

/// The accesses of a product with a prepacked weight of `w_elem`.
fn packed<'a, O>(
    r: &mut Rules<'a, O>,
    [a, w, c]: [&'a O; 3],
    bias: &'a Option<O>,
    [m, k, n]: [usize; 3],
    w_elem: Elem,
) {
    r.read_alias(Alias::Any, "a", a, F32, &[m, k], "m*k");
    match crate::pack::packed_len(k, n) {
        Some(len) => r.read("w", w, w_elem, &[len], "k*ceil(n/16)*16"),
        None => r.issue("w", messages::extent_overflow("w", "k*ceil(n/16)*16"), Some(messages::overflow_hint())),
    }
    r.read_opt("bias", bias, F32, &[n], "n");
    r.write("c", c, F32, &[m, n], "m*n");
    r.scratch("c", product(&[m, n, 4]), "m*n*4");
}

pub(super) fn bias_add<'a, O>(r: &mut Rules<'a, O>, t: &'a Thunk<O>) {
    let Thunk::BiasAdd { src, bias, dst, rows, cols } = t else { unreachable!("bias_add called on {:?}", t.kind()) };
    r.read_alias(Alias::Exact, "src", src, F32, &[*rows, *cols], "rows*cols");
    r.read("bias", bias, F32, &[*cols], "cols");
    r.write("dst", dst, F32, &[*rows, *cols], "rows*cols");
}

/// `x` f32 to `y` u8 with the range's `scale` (one f32) and `zero` (one
/// u8); no output overlaps `x` or another output.
pub(super) fn dynamic_quantize<'a, O>(r: &mut Rules<'a, O>, t: &'a Thunk<O>) {
    let Thunk::DynamicQuantize { x, y, scale, zero, len } = t else {
        unreachable!("dynamic_quantize called on {:?}", t.kind())
    };
    let u8_ = Elem::Exact(DType::U8);
    r.read("x", x, F32, &[*len], "len");
    r.write("y", y, u8_, &[*len], "len");
    r.write("scale", scale, F32, &[1], "1");
    r.write("zero", zero, u8_, &[1], "1");
}

/// i32 sums to 8-bit values: `acc` i32, `bias` i32 per channel, `scale`
/// f32 (1 or per channel), `zero` and `out` of `out_dtype` (u8 or i8).
pub(super) fn requantize<'a, O>(r: &mut Rules<'a, O>, t: &'a Thunk<O>) {
    let Thunk::Requantize { acc, bias, scale, zero, out, outer, channels, inner, scale_len, out_dtype } = t else {
        unreachable!("requantize called on {:?}", t.kind())
    };
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
