//! `Conv2D` (path chosen at gen time) and `Pool2D`.

use proc_macro2::TokenStream;
use quote::quote;
use rlx_sched::plan::{conv2d_path, parallel, ConvPath};
use rlx_sched::{Operand, ReduceOp};

use super::{lit, Ctx};

/// `Conv2D`'s dims in table order: n, c_in, h, w_in, c_out, h_out, w_out,
/// kh, kw, sh, sw, ph, pw, dh, dw, groups.
pub(super) fn conv2d(
    cx: &Ctx<'_>,
    x: &Operand,
    w: &Operand,
    bias: &Option<Operand>,
    out: &Operand,
    d: [usize; 16],
) -> TokenStream {
    let [n, c_in, h, w_in, c_out, h_out, w_out, kh, kw, sh, sw, ph, pw, _dh, _dw, groups] = d;
    let path = match conv2d_path(c_in, c_out, groups, h, w_in, h_out, w_out, (kh, kw), (sh, sw), (ph, pw)) {
        ConvPath::Im2colGemm => quote!(::rlx_runtime::kernels::conv::ConvPath::Im2colGemm),
        ConvPath::Pointwise => quote!(::rlx_runtime::kernels::conv::ConvPath::Pointwise),
        ConvPath::Depthwise => quote!(::rlx_runtime::kernels::conv::ConvPath::Depthwise),
    };
    let par = parallel(n * c_out * h_out * w_out);
    let (xp, wp, op) = (cx.f32(x), cx.f32(w), cx.f32(out));
    let bp = match bias {
        Some(b) => cx.cptr(b, quote!(f32)),
        None => quote!(::core::ptr::null()),
    };
    let [n, c_in, h, w_in, c_out, h_out, w_out, kh, kw, sh, sw, ph, pw, dh, dw, groups] = d.map(lit);
    let s = cx.scratch(quote!(f32));
    quote! {
        ::rlx_runtime::kernels::conv::conv2d_f32(
            #xp, #wp, #bp, #op,
            &::rlx_runtime::kernels::conv::Conv2dShape {
                n: #n, c_in: #c_in, h: #h, w_in: #w_in, c_out: #c_out, h_out: #h_out, w_out: #w_out,
                kh: #kh, kw: #kw, sh: #sh, sw: #sw, ph: #ph, pw: #pw, dh: #dh, dw: #dw, groups: #groups,
            },
            #path,
            #s,
            #par,
        );
    }
}

/// `Pool2D`'s dims in table order: n, c, h, w, h_out, w_out, kh, kw, sh,
/// sw, ph, pw.
pub(super) fn pool2d(
    cx: &Ctx<'_>,
    src: &Operand,
    dst: &Operand,
    d: [usize; 12],
    kind: ReduceOp,
    count_include_pad: bool,
) -> TokenStream {
    let [n, c, _h, _w, h_out, w_out, kh, kw, ..] = d;
    let par = parallel(n * c * h_out * w_out * kh * kw);
    let (sp, dp) = (cx.f32(src), cx.f32(dst));
    let kind = match kind {
        ReduceOp::Max => quote!(::rlx_runtime::kernels::pool::PoolKind::Max),
        _ => quote!(::rlx_runtime::kernels::pool::PoolKind::Mean),
    };
    let [n, c, h, w, h_out, w_out, kh, kw, sh, sw, ph, pw] = d.map(lit);
    quote! {
        ::rlx_runtime::kernels::pool::pool2d_f32(
            #sp, #dp,
            &::rlx_runtime::kernels::pool::Pool2dShape {
                n: #n, c: #c, h: #h, w: #w, h_out: #h_out, w_out: #w_out,
                kh: #kh, kw: #kw, sh: #sh, sw: #sw, ph: #ph, pw: #pw,
            },
            #kind,
            #count_include_pad,
            #par,
        );
    }
}
