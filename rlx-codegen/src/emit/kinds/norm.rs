//! Norm family and Rope.

use proc_macro2::TokenStream;
use quote::quote;
use rlx_sched::plan::parallel;
use rlx_sched::Operand;

use super::{f32_lit, lit, Ctx};

/// `Some(ptr)` or `None` for an optional operand.
fn opt(cx: &Ctx<'_>, op: &Option<Operand>) -> TokenStream {
    match op {
        Some(o) => {
            let p = cx.cptr(o, quote!(f32));
            quote!(Some(#p))
        }
        None => quote!(None),
    }
}

#[allow(clippy::too_many_arguments)]
pub(super) fn layer_norm(
    cx: &Ctx<'_>,
    x: &Operand,
    g: &Operand,
    b: &Option<Operand>,
    out: &Operand,
    rows: usize,
    h: usize,
    eps: f32,
) -> TokenStream {
    let (xp, gp, bp, op) = (cx.f32(x), cx.f32(g), opt(cx, b), cx.f32(out));
    let par = parallel(rows * h);
    let (r, hh, e) = (lit(rows), lit(h), f32_lit(eps));
    quote! { ::rlx_runtime::kernels::norm::layer_norm_f32(#xp, #gp, #bp, #op, #r, #hh, #e, #par); }
}

pub(super) fn rms_norm(cx: &Ctx<'_>, x: &Operand, g: &Operand, out: &Operand, rows: usize, h: usize, eps: f32) -> TokenStream {
    let (xp, gp, op) = (cx.f32(x), cx.f32(g), cx.f32(out));
    let par = parallel(rows * h);
    let (r, hh, e) = (lit(rows), lit(h), f32_lit(eps));
    quote! { ::rlx_runtime::kernels::norm::rms_norm_f32(#xp, #gp, #op, #r, #hh, #e, #par); }
}

/// `FusedResidualLN` (`rms == false`, `b` required) and `FusedResidualRmsNorm`.
#[allow(clippy::too_many_arguments)]
pub(super) fn fused_residual(
    cx: &Ctx<'_>,
    rms: bool,
    x: &Operand,
    res: &Operand,
    bias: &Option<Operand>,
    g: &Operand,
    b: &Option<Operand>,
    out: &Operand,
    rows: usize,
    h: usize,
    eps: f32,
) -> TokenStream {
    let (xp, rp, biasp, gp, op) = (cx.f32(x), cx.f32(res), opt(cx, bias), cx.f32(g), cx.f32(out));
    let par = parallel(rows * h);
    let (r, hh, e) = (lit(rows), lit(h), f32_lit(eps));
    if rms {
        let bp = opt(cx, b);
        quote! { ::rlx_runtime::kernels::norm::fused_residual_rms_norm_f32(#xp, #rp, #biasp, #gp, #bp, #op, #r, #hh, #e, #par); }
    } else {
        let bp = cx.f32(b.as_ref().expect("FusedResidualLN has a shift"));
        quote! { ::rlx_runtime::kernels::norm::fused_residual_ln_f32(#xp, #rp, #biasp, #gp, #bp, #op, #r, #hh, #e, #par); }
    }
}

#[allow(clippy::too_many_arguments)]
pub(super) fn batch_norm(
    cx: &Ctx<'_>,
    ops: [&Operand; 6],
    n: usize,
    c: usize,
    hw: usize,
    eps: f32,
) -> TokenStream {
    let [x, scale, bias, mean, var, out] = ops.map(|o| cx.f32(o));
    let par = parallel(n * c * hw);
    let [nn, cc, hh] = [n, c, hw].map(lit);
    let e = f32_lit(eps);
    quote! { ::rlx_runtime::kernels::norm::batch_norm_inference_f32(#x, #scale, #bias, #mean, #var, #out, #nn, #cc, #hh, #e, #par); }
}

#[allow(clippy::too_many_arguments)]
pub(super) fn rope(
    cx: &Ctx<'_>,
    x: &Operand,
    cos: &Operand,
    sin: &Operand,
    out: &Operand,
    batch: usize,
    seq: usize,
    heads: usize,
    head_dim: usize,
    interleaved: bool,
) -> TokenStream {
    let (xp, cp, sp, op) = (cx.f32(x), cx.f32(cos), cx.f32(sin), cx.f32(out));
    let par = parallel(batch * seq * heads * head_dim);
    let [b, s, h, d] = [batch, seq, heads, head_dim].map(lit);
    quote! { ::rlx_runtime::kernels::rope::rope_f32(#xp, #cp, #sp, #op, #b, #s, #h, #d, #interleaved, #par); }
}
