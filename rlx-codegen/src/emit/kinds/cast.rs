//! Casts: each named kind calls its entry; `CastGeneric` calls the typed
//! generic kernel (or the SIMD entry for f32 <-> f16/bf16).

use proc_macro2::TokenStream;
use quote::{format_ident, quote};
use rlx_sched::{DType, Operand};

use super::{lit, Ctx};

/// The element type casts use for a dtype (bool as the cast module's
/// `Bool` byte type).
fn cast_type(d: DType) -> TokenStream {
    match d {
        DType::Bool => quote!(::rlx_runtime::kernels::cast::Bool),
        other => crate::emit::rust_type(other),
    }
}

/// The pointer element type of a named cast's operand.
fn named_type(d: DType) -> TokenStream {
    match d {
        DType::Bool => quote!(u8),
        other => crate::emit::rust_type(other),
    }
}

/// A named `Cast{Src}To{Dst}` kind.
pub(super) fn named(cx: &Ctx<'_>, src: &Operand, dst: &Operand, len: usize, from: DType, to: DType) -> TokenStream {
    let f = format_ident!("cast_{}_to_{}", from.name(), to.name());
    let (sp, dp, n) = (cx.ptr(src, named_type(from)), cx.ptr(dst, named_type(to)), lit(len));
    quote! { ::rlx_runtime::kernels::cast::#f(#sp, #dp, #n); }
}

pub(super) fn generic(cx: &Ctx<'_>, src: &Operand, dst: &Operand, len: usize, from: DType, to: DType) -> TokenStream {
    match (from, to) {
        (DType::F32, DType::F16) | (DType::F16, DType::F32) | (DType::F32, DType::Bf16) | (DType::Bf16, DType::F32) => {
            named(cx, src, dst, len, from, to)
        }
        _ => {
            let (s, d) = (cast_type(from), cast_type(to));
            let (sp, dp, n) = (cx.ptr(src, s.clone()), cx.ptr(dst, d.clone()), lit(len));
            quote! { ::rlx_runtime::kernels::cast::cast_slice::<#s, #d>(#sp, #dp, #n); }
        }
    }
}
