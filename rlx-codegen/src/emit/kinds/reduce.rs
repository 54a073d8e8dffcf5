//! Reductions: `Reduce`, `ArgReduce`, `Cumsum`, `TopK`.

use proc_macro2::TokenStream;
use quote::{format_ident, quote};
use rlx_sched::plan::parallel;
use rlx_sched::{ArgOp, Operand, ReduceOp};

use super::{lit, Ctx};

fn reduce_op(op: ReduceOp) -> TokenStream {
    let v = format_ident!("{}", format!("{op:?}"));
    quote!(::rlx_runtime::ReduceOp::#v)
}

fn arg_op(op: ArgOp) -> TokenStream {
    let v = format_ident!("{}", format!("{op:?}"));
    quote!(::rlx_runtime::ArgOp::#v)
}

pub(super) fn reduce(cx: &Ctx<'_>, src: &Operand, dst: &Operand, dims: [usize; 3], op: ReduceOp) -> TokenStream {
    let par = parallel(dims.iter().product());
    let (sp, dp) = (cx.f32(src), cx.f32(dst));
    let [o, a, i] = dims.map(lit);
    let op = reduce_op(op);
    quote! { ::rlx_runtime::kernels::reduce::reduce_f32(#sp, #dp, #o, #a, #i, #op, #par); }
}

pub(super) fn arg_reduce(
    cx: &Ctx<'_>,
    src: &Operand,
    dst: &Operand,
    dims: [usize; 3],
    op: ArgOp,
    select_last: bool,
    indices_i64: bool,
) -> TokenStream {
    let par = parallel(dims.iter().product());
    let (sp, dp) = (cx.f32(src), cx.ptr(dst, quote!(u8)));
    let [o, a, i] = dims.map(lit);
    let op = arg_op(op);
    quote! { ::rlx_runtime::kernels::reduce::arg_reduce_f32(#sp, #dp, #o, #a, #i, #op, #select_last, #indices_i64, #par); }
}

pub(super) fn cumsum(
    cx: &Ctx<'_>,
    src: &Operand,
    dst: &Operand,
    dims: [usize; 3],
    exclusive: bool,
    reverse: bool,
) -> TokenStream {
    let par = parallel(dims.iter().product());
    let (sp, dp) = (cx.f32(src), cx.f32(dst));
    let [o, a, i] = dims.map(lit);
    quote! { ::rlx_runtime::kernels::reduce::cumsum_f32(#sp, #dp, #o, #a, #i, #exclusive, #reverse, #par); }
}

#[allow(clippy::too_many_arguments)]
pub(super) fn top_k(
    cx: &Ctx<'_>,
    src: &Operand,
    dst: &Operand,
    values: &Option<Operand>,
    outer: usize,
    axis_dim: usize,
    k: usize,
    largest: bool,
    indices_i64: bool,
) -> TokenStream {
    let (sp, dp) = (cx.f32(src), cx.ptr(dst, quote!(u8)));
    let vp = match values {
        Some(v) => cx.f32(v),
        None => quote!(::core::ptr::null_mut()),
    };
    let [o, a, kk] = [outer, axis_dim, k].map(lit);
    let s = cx.scratch(quote!(u32));
    quote! { ::rlx_runtime::kernels::reduce::top_k_f32(#sp, #dp, #vp, #o, #a, #kk, #largest, #indices_i64, #s); }
}
