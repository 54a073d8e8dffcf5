//! GEMM family: `Sgemm`, `SgemmT`, `SgemmF16`, `SgemmBf16`, `BatchedSgemm`,
//! `FusedMmBiasAct`, `BiasAdd`. The aliasing temporary is decided here, at
//! gen time, with the interpreter's rule (`plan::gemm_needs_temp`).

use proc_macro2::TokenStream;
use quote::quote;
use rlx_sched::plan::{gemm_needs_temp, parallel};
use rlx_sched::Operand;

use super::{act, lit, Ctx};

const F32: usize = 4;

pub(super) fn sgemm(cx: &Ctx<'_>, a: &Operand, b: &Operand, c: &Operand, m: usize, kk: usize, n: usize) -> TokenStream {
    let (ap, bp, cp) = (cx.f32(a), cx.f32(b), cx.f32(c));
    let (m_, k_, n_) = (lit(m), lit(kk), lit(n));
    if gemm_needs_temp(a, m * kk * F32, b, kk * n * F32, c, m * n * F32) {
        let s = cx.scratch(quote!(f32));
        quote! { ::rlx_runtime::kernels::gemm::sgemm_f32_via(#s, #ap, #bp, #cp, #m_, #k_, #n_); }
    } else {
        quote! { ::rlx_runtime::kernels::gemm::sgemm_f32(#ap, #bp, #cp, #m_, #k_, #n_); }
    }
}

#[allow(clippy::too_many_arguments)]
pub(super) fn sgemm_t(
    cx: &Ctx<'_>,
    a: &Operand,
    b: &Operand,
    c: &Operand,
    m: usize,
    kk: usize,
    n: usize,
    ta: bool,
    tb: bool,
) -> TokenStream {
    let (ap, bp, cp) = (cx.f32(a), cx.f32(b), cx.f32(c));
    let (m_, k_, n_) = (lit(m), lit(kk), lit(n));
    if gemm_needs_temp(a, m * kk * F32, b, kk * n * F32, c, m * n * F32) {
        let s = cx.scratch(quote!(f32));
        quote! { ::rlx_runtime::kernels::gemm::sgemm_t_f32_via(#s, #ap, #bp, #cp, #m_, #k_, #n_, #ta, #tb); }
    } else {
        quote! { ::rlx_runtime::kernels::gemm::sgemm_t_f32(#ap, #bp, #cp, #m_, #k_, #n_, #ta, #tb); }
    }
}

/// `SgemmF16` (`bf16 == false`) and `SgemmBf16`.
#[allow(clippy::too_many_arguments)]
pub(super) fn sgemm_half(
    cx: &Ctx<'_>,
    bf16: bool,
    a: &Operand,
    b: &Operand,
    c: &Operand,
    m: usize,
    kk: usize,
    n: usize,
) -> TokenStream {
    let (ap, bp, cp) = (cx.f32(a), cx.ptr(b, quote!(u16)), cx.f32(c));
    let (m_, k_, n_) = (lit(m), lit(kk), lit(n));
    let par = parallel(kk * n);
    let s = cx.scratch(quote!(f32));
    let via = gemm_needs_temp(a, m * kk * F32, b, kk * n * 2, c, m * n * F32);
    match (bf16, via) {
        (false, true) => quote! { ::rlx_runtime::kernels::gemm::sgemm_f16w_via(#s, #ap, #bp, #cp, #m_, #k_, #n_, #par); },
        (false, false) => quote! { ::rlx_runtime::kernels::gemm::sgemm_f16w(#ap, #bp, #cp, #m_, #k_, #n_, #s, #par); },
        (true, true) => quote! { ::rlx_runtime::kernels::gemm::sgemm_bf16w_via(#s, #ap, #bp, #cp, #m_, #k_, #n_, #par); },
        (true, false) => quote! { ::rlx_runtime::kernels::gemm::sgemm_bf16w(#ap, #bp, #cp, #m_, #k_, #n_, #s, #par); },
    }
}

#[allow(clippy::too_many_arguments)]
pub(super) fn batched(
    cx: &Ctx<'_>,
    a: &Operand,
    b: &Operand,
    c: &Operand,
    batch: usize,
    m: usize,
    kk: usize,
    n: usize,
    a_bcast: bool,
    b_bcast: bool,
) -> TokenStream {
    let a_count = if a_bcast { 1 } else { batch };
    let b_count = if b_bcast { 1 } else { batch };
    let (ap, bp, cp) = (cx.f32(a), cx.f32(b), cx.f32(c));
    let (batch_, m_, k_, n_) = (lit(batch), lit(m), lit(kk), lit(n));
    let par = batch > 1 && parallel(batch * m * kk * n);
    if gemm_needs_temp(a, a_count * m * kk * F32, b, b_count * kk * n * F32, c, batch * m * n * F32) {
        let s = cx.scratch(quote!(f32));
        quote! { ::rlx_runtime::kernels::gemm::batched_sgemm_f32_via(#s, #ap, #bp, #cp, #batch_, #m_, #k_, #n_, #a_bcast, #b_bcast, #par); }
    } else {
        quote! { ::rlx_runtime::kernels::gemm::batched_sgemm_f32(#ap, #bp, #cp, #batch_, #m_, #k_, #n_, #a_bcast, #b_bcast, #par); }
    }
}

#[allow(clippy::too_many_arguments)]
pub(super) fn fused_mm_bias_act(
    cx: &Ctx<'_>,
    a: &Operand,
    w: &Operand,
    bias: &Operand,
    c: &Operand,
    m: usize,
    kk: usize,
    n: usize,
    activation: rlx_sched::ActKind,
) -> TokenStream {
    let (ap, wp, bp, cp) = (cx.f32(a), cx.f32(w), cx.f32(bias), cx.f32(c));
    let (m_, k_, n_) = (lit(m), lit(kk), lit(n));
    let par = parallel(m * n);
    let act = act(activation);
    if gemm_needs_temp(a, m * kk * F32, w, kk * n * F32, c, m * n * F32) {
        let s = cx.scratch(quote!(f32));
        quote! { ::rlx_runtime::kernels::gemm::fused_mm_bias_act_f32_via(#s, #ap, #wp, #bp, #cp, #m_, #k_, #n_, #act, #par); }
    } else {
        quote! { ::rlx_runtime::kernels::gemm::fused_mm_bias_act_f32(#ap, #wp, #bp, #cp, #m_, #k_, #n_, #act, #par); }
    }
}

pub(super) fn bias_add(cx: &Ctx<'_>, src: &Operand, bias: &Operand, dst: &Operand, rows: usize, cols: usize) -> TokenStream {
    let (sp, bp, dp) = (cx.f32(src), cx.f32(bias), cx.f32(dst));
    let par = parallel(rows * cols);
    let (r, c) = (lit(rows), lit(cols));
    quote! { ::rlx_runtime::kernels::gemm::bias_add_f32(#sp, #bp, #dp, #r, #c, #par); }
}
