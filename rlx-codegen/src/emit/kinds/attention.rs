//! Softmax and Attention. The attention path (direct loops or BLAS) and
//! serial/parallel are decided here.

use proc_macro2::TokenStream;
use quote::quote;
use rlx_sched::plan::{attention_uses_gemm, parallel};
use rlx_sched::{MaskKind, Operand, Params};

use super::{f32_lit, lit, Ctx};

pub(super) fn softmax(cx: &Ctx<'_>, src: &Operand, dst: &Operand, rows: usize, cols: usize) -> TokenStream {
    let (sp, dp) = (cx.f32(src), cx.f32(dst));
    let par = parallel(rows * cols);
    let (r, c) = (lit(rows), lit(cols));
    quote! { ::rlx_runtime::kernels::softmax::softmax_f32(#sp, #dp, #r, #c, #par); }
}

fn mask_kind(m: MaskKind) -> TokenStream {
    match m {
        MaskKind::None => quote!(::rlx_runtime::MaskKind::None),
        MaskKind::Causal => quote!(::rlx_runtime::MaskKind::Causal),
        MaskKind::SlidingWindow(w) => {
            let w = lit(w);
            quote!(::rlx_runtime::MaskKind::SlidingWindow(#w))
        }
        MaskKind::Custom => quote!(::rlx_runtime::MaskKind::Custom),
        MaskKind::Bias => quote!(::rlx_runtime::MaskKind::Bias),
    }
}

/// The fields of an `Attention` thunk the emitter needs besides operands.
pub(super) struct AttentionDims {
    pub batch: usize,
    pub seq: usize,
    pub kv_seq: usize,
    pub heads: usize,
    pub kv_heads: usize,
    pub head_dim: usize,
    pub v_head_dim: usize,
    pub strides: [usize; 3],
    pub bhsd: bool,
    pub mask_kind: MaskKind,
    pub scale: f32,
    pub softcap: f32,
}

pub(super) fn attention(
    cx: &Ctx<'_>,
    [q, k, v]: [&Operand; 3],
    mask: &Option<Operand>,
    out: &Operand,
    d: &AttentionDims,
    params: &Params,
) -> TokenStream {
    let (qp, kp, vp, op) = (cx.f32(q), cx.f32(k), cx.f32(v), cx.f32(out));
    let mp = match mask {
        Some(m) => cx.cptr(m, quote!(f32)),
        None => quote!(::core::ptr::null()),
    };
    let path = if attention_uses_gemm(d.seq, d.kv_seq, d.head_dim, d.v_head_dim) {
        quote!(::rlx_runtime::kernels::attention::AttentionPath::Gemm)
    } else {
        quote!(::rlx_runtime::kernels::attention::AttentionPath::Direct)
    };
    let par = parallel(d.batch * d.heads * d.seq * d.kv_seq);
    let [batch, seq, kv_seq, heads, kv_heads, head_dim, v_head_dim] =
        [d.batch, d.seq, d.kv_seq, d.heads, d.kv_heads, d.head_dim, d.v_head_dim].map(lit);
    let [qs, ks, vs] = d.strides.map(lit);
    let bhsd = d.bhsd;
    let mk = mask_kind(d.mask_kind);
    let [scale, softcap, thr, neg, skip] =
        [d.scale, d.softcap, params.mask_threshold, params.mask_neg_inf, params.score_skip].map(f32_lit);
    let s = cx.scratch(quote!(f32));
    quote! {
        ::rlx_runtime::kernels::attention::attention_f32(
            #qp, #kp, #vp, #mp, #op,
            &::rlx_runtime::kernels::attention::AttentionShape {
                batch: #batch, seq: #seq, kv_seq: #kv_seq, heads: #heads, kv_heads: #kv_heads,
                head_dim: #head_dim, v_head_dim: #v_head_dim,
                q_row_stride: #qs, k_row_stride: #ks, v_row_stride: #vs, bhsd: #bhsd,
            },
            &::rlx_runtime::kernels::attention::AttentionScores {
                mask_kind: #mk, scale: #scale, softcap: #softcap,
                mask_threshold: #thr, mask_neg_inf: #neg, score_skip: #skip,
            },
            #path,
            #s,
            #par,
        );
    }
}
