//! Movement family: copies, `Narrow`, `Transpose` (path chosen at gen
//! time), `Concat`, `Gather`, `GatherAxis`, `KvAppend`.

use proc_macro2::TokenStream;
use quote::quote;
use rlx_sched::plan::{copy_parallel, narrow_parallel, parallel, transpose_path, TransposePath};
use rlx_sched::{DType, Operand};

use super::{lit, lits, Ctx};

/// `Copy` (f32), `CopyF64`, `CopyI64`.
pub(super) fn copy(cx: &Ctx<'_>, src: &Operand, dst: &Operand, len: usize, ty: &str) -> TokenStream {
    let (t, f, eb) = match ty {
        "f64" => (quote!(f64), quote!(copy_f64), 8),
        "i64" => (quote!(i64), quote!(copy_i64), 8),
        _ => (quote!(f32), quote!(copy_f32), 4),
    };
    let par = copy_parallel(src, dst, len, eb);
    let (sp, dp, n) = (cx.ptr(src, t.clone()), cx.ptr(dst, t), lit(len));
    quote! { ::rlx_runtime::kernels::movement::#f(#sp, #dp, #n, #par); }
}

#[allow(clippy::too_many_arguments)]
pub(super) fn narrow(
    cx: &Ctx<'_>,
    src: &Operand,
    dst: &Operand,
    outer: usize,
    src_stride: usize,
    dst_stride: usize,
    inner: usize,
    elem_bytes: usize,
) -> TokenStream {
    let par = narrow_parallel(outer, inner, dst_stride);
    let (sp, dp) = (cx.ptr(src, quote!(u8)), cx.ptr(dst, quote!(u8)));
    let [o, ss, ds, i, eb] = [outer, src_stride, dst_stride, inner, elem_bytes].map(lit);
    quote! { ::rlx_runtime::kernels::movement::narrow(#sp, #dp, #o, #ss, #ds, #i, #eb, #par); }
}

fn elem_type(elem_bytes: usize) -> TokenStream {
    match elem_bytes {
        1 => quote!(u8),
        2 => quote!(u16),
        4 => quote!(u32),
        8 => quote!(u64),
        _ => quote!([u64; 2]),
    }
}

pub(super) fn transpose(
    cx: &Ctx<'_>,
    src: &Operand,
    dst: &Operand,
    in_total: usize,
    out_dims: &[usize],
    in_strides: &[usize],
    elem_bytes: usize,
) -> TokenStream {
    let path = transpose_path(out_dims, in_strides, elem_bytes, in_total);
    let par = parallel(out_dims.iter().product());
    let t = elem_type(elem_bytes);
    let (sp, dp) = (cx.ptr(src, t.clone()), cx.ptr(dst, t.clone()));
    let m = quote!(::rlx_runtime::kernels::movement);
    match path {
        TransposePath::Empty => quote!(),
        TransposePath::Copy { len } => {
            let len = lit(len);
            quote! { #m::transpose_copy::<#t>(#sp, #dp, #len, #par); }
        }
        TransposePath::Splat { len } => {
            let len = lit(len);
            quote! { #m::transpose_splat::<#t>(#sp, #dp, #len, #par); }
        }
        TransposePath::BroadcastRuns { lead_dims, lead_strides, run } => {
            let (d, s, run) = (lits(&lead_dims), lits(&lead_strides), lit(run));
            quote! { #m::transpose_broadcast_runs::<#t>(#sp, #dp, &[#d], &[#s], #run, #par); }
        }
        TransposePath::InnerRows { lead_dims, lead_strides, row } => {
            let (d, s, row) = (lits(&lead_dims), lits(&lead_strides), lit(row));
            quote! { #m::transpose_inner_rows::<#t>(#sp, #dp, &[#d], &[#s], #row, #par); }
        }
        TransposePath::BatchedSwap { lead_dims, lead_strides, rows, cols, src_ld } => {
            let (d, s) = (lits(&lead_dims), lits(&lead_strides));
            let [rows, cols, ld] = [rows, cols, src_ld].map(lit);
            quote! { #m::transpose_batched_swap::<#t>(#sp, #dp, &[#d], &[#s], #rows, #cols, #ld, #par); }
        }
        TransposePath::Rank2 { rows, cols, s0, s1 } => {
            let [rows, cols, s0, s1] = [rows, cols, s0, s1].map(lit);
            quote! { #m::transpose_rank2::<#t>(#sp, #dp, #rows, #cols, #s0, #s1, #par); }
        }
        TransposePath::General { dims, strides } => {
            let (d, s) = (lits(&dims), lits(&strides));
            quote! { #m::transpose_general::<#t>(#sp, #dp, &[#d], &[#s], #par); }
        }
    }
}

pub(super) fn concat(
    cx: &Ctx<'_>,
    inputs: &[Operand],
    dst: &Operand,
    outer: usize,
    inner: &[usize],
    elem_bytes: usize,
) -> TokenStream {
    let par = parallel(outer * inner.iter().sum::<usize>());
    let ptrs = inputs.iter().map(|op| cx.cptr(op, quote!(u8)));
    let dp = cx.ptr(dst, quote!(u8));
    let (o, i, eb) = (lit(outer), lits(inner), lit(elem_bytes));
    quote! { ::rlx_runtime::kernels::movement::concat(&[#(#ptrs),*], #dp, #o, &[#i], #eb, #par); }
}

fn index_type(d: DType) -> TokenStream {
    match d {
        DType::I32 => quote!(i32),
        DType::F32 => quote!(f32),
        _ => quote!(i64),
    }
}

#[allow(clippy::too_many_arguments)]
pub(super) fn gather(
    cx: &Ctx<'_>,
    table: &Operand,
    indices: &Operand,
    dst: &Operand,
    num_indices: usize,
    row_len: usize,
    vocab: usize,
    index_dtype: DType,
) -> TokenStream {
    let it = index_type(index_dtype);
    let par = parallel(num_indices * row_len);
    let (tp, ip, dp) = (cx.f32(table), cx.ptr(indices, it.clone()), cx.f32(dst));
    let [n, r, v] = [num_indices, row_len, vocab].map(lit);
    quote! { ::rlx_runtime::kernels::movement::gather_f32::<#it>(#tp, #ip, #dp, #n, #r, #v, #par); }
}

#[allow(clippy::too_many_arguments)]
pub(super) fn gather_axis(
    cx: &Ctx<'_>,
    src: &Operand,
    indices: &Operand,
    dst: &Operand,
    outer: usize,
    axis_dim: usize,
    inner: usize,
    num_indices: usize,
    elem_bytes: usize,
    index_dtype: DType,
) -> TokenStream {
    let it = index_type(index_dtype);
    let par = parallel(outer * num_indices * inner);
    let (sp, ip, dp) = (cx.ptr(src, quote!(u8)), cx.ptr(indices, it.clone()), cx.ptr(dst, quote!(u8)));
    let [o, a, i, n, eb] = [outer, axis_dim, inner, num_indices, elem_bytes].map(lit);
    quote! { ::rlx_runtime::kernels::movement::gather_axis::<#it>(#sp, #ip, #dp, #o, #a, #i, #n, #eb, #par); }
}

#[allow(clippy::too_many_arguments)]
pub(super) fn kv_append(
    cx: &Ctx<'_>,
    src: &Operand,
    cache: &Operand,
    batch: usize,
    new_len: usize,
    max_len: usize,
    row: usize,
    pos: usize,
    elem_bytes: usize,
) -> TokenStream {
    let par = parallel(batch * new_len * row);
    let (sp, cp) = (cx.ptr(src, quote!(u8)), cx.ptr(cache, quote!(u8)));
    let [b, nl, ml, r, p, eb] = [batch, new_len, max_len, row, pos, elem_bytes].map(lit);
    quote! { ::rlx_runtime::kernels::movement::kv_append(#sp, #cp, #b, #nl, #ml, #r, #p, #eb, #par); }
}
