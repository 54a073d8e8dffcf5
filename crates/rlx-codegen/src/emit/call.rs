//! Prints a lowered [`KernelCall`] as Rust source.
//!
//! `rlx_core`'s kernel-call table expanded into one `match`: each arm
//! prints the entry's path, its type arguments and its arguments, in the
//! order and form `rlx_runtime::exec::execute` passes them. There is no
//! per-kind code here; what to call was decided by `rlx_core::lower`.

use proc_macro2::TokenStream;
use quote::quote;
use rlx_core::{ConstExpr, Expr, KernelCall, Operand, TypeArg};

use super::ctx::{f32_lit, lit, Ctx};

/// Tokens of a Rust type or path written as text by the tables.
fn tokens(text: &str) -> TokenStream {
    text.parse().unwrap_or_else(|e| panic!("the kernel-call table names an invalid type `{text}`: {e}"))
}

/// The element type of a pointer argument: a type argument's chosen type
/// when `name` is one of the entry's type parameters, else `name` itself.
fn elem(name: &str, types: &[(&str, &'static str)]) -> TokenStream {
    let text = types.iter().find(|(p, _)| *p == name).map_or(name, |(_, t)| t);
    tokens(text)
}

/// A constant value as an expression.
pub(crate) fn expr(e: &Expr) -> TokenStream {
    match e {
        Expr::Usize(n) => {
            let n = lit(*n);
            quote!(#n)
        }
        Expr::F32(x) => f32_lit(*x),
        Expr::Bool(b) => quote!(#b),
        Expr::Path(p) => tokens(p),
        Expr::Struct(p, fields) => {
            let p = tokens(p);
            let names = fields.iter().map(|(n, _)| quote::format_ident!("{n}"));
            let values = fields.iter().map(|(_, v)| expr(v));
            quote!(#p { #(#names: #values),* })
        }
        Expr::Tuple(p, items) => {
            let p = tokens(p);
            let items = items.iter().map(expr);
            quote!(#p(#(#items),*))
        }
        Expr::Slice(items) => {
            let items = items.iter().map(expr);
            quote!(&[#(#items),*])
        }
    }
}

fn ptr(cx: &Ctx<'_>, op: &Operand, ty: TokenStream) -> TokenStream {
    cx.ptr(op, ty)
}

/// One argument as the entry's parameter expects it.
macro_rules! arg {
    ($cx:ident, $types:ident, $v:ident, In $t:ty) => { ptr($cx, $v, elem(stringify!($t), &$types)) };
    ($cx:ident, $types:ident, $v:ident, Out $t:ty) => { ptr($cx, $v, elem(stringify!($t), &$types)) };
    ($cx:ident, $types:ident, $v:ident, OptIn $t:ty) => {
        match $v {
            Some(op) => {
                let p = $cx.cptr(op, elem(stringify!($t), &$types));
                quote!(Some(#p))
            }
            None => quote!(None),
        }
    };
    ($cx:ident, $types:ident, $v:ident, NullIn $t:ty) => {
        match $v {
            Some(op) => ptr($cx, op, elem(stringify!($t), &$types)),
            None => quote!(::core::ptr::null()),
        }
    };
    ($cx:ident, $types:ident, $v:ident, NullOut $t:ty) => {
        match $v {
            Some(op) => ptr($cx, op, elem(stringify!($t), &$types)),
            None => quote!(::core::ptr::null_mut()),
        }
    };
    ($cx:ident, $types:ident, $v:ident, Ins $t:ty) => {{
        let ptrs = $v.iter().map(|op| $cx.cptr(op, elem(stringify!($t), &$types)));
        quote!(&[#(#ptrs),*])
    }};
    ($cx:ident, $types:ident, $v:ident, Scratch $t:ty) => {{
        let _ = $v;
        $cx.scratch(elem(stringify!($t), &$types))
    }};
    ($cx:ident, $types:ident, $v:ident, Val $t:ty) => { expr(&$v.const_expr()) };
    ($cx:ident, $types:ident, $v:ident, Ref $t:ty) => {{
        let e = expr(&$v.const_expr());
        quote!(&#e)
    }};
    ($cx:ident, $types:ident, $v:ident, Dims) => { expr(&$v[..].const_expr()) };
    ($cx:ident, $types:ident, $v:ident, Steps) => { expr(&$v[..].const_expr()) };
    ($cx:ident, $types:ident, $v:ident, usize) => { $cx.named(stringify!($v), expr(&$v.const_expr())) };
    ($cx:ident, $types:ident, $v:ident, bool) => { $cx.named(stringify!($v), expr(&$v.const_expr())) };
    ($cx:ident, $types:ident, $v:ident, f32) => { $cx.named(stringify!($v), expr(&$v.const_expr())) };
}

macro_rules! define_print {
    ($d:tt $(
        $(#[$doc:meta])*
        $name:ident = $($path:ident)::+ < $($tf:ident : $tp:ident = $tk:ident),* > ( $( $arg:ident : $kind:ident $(<$t:ty>)? ),* $(,)? );
    )*) => {
        /// The statement that makes `call`.
        pub(crate) fn print(cx: &Ctx<'_>, call: &KernelCall) -> TokenStream {
            match call {
                $( KernelCall::$name { $( $tf, )* $( $arg ),* } => {
                    let types: [(&str, &'static str); 0 $( + { let _ = stringify!($tf); 1 } )*] =
                        [$( (stringify!($tp), $tf.rust_type()) ),*];
                    let path = tokens(concat!("::rlx_runtime::kernels::", stringify!($($path)::+)));
                    let generics: Vec<TokenStream> = types.iter().map(|(_, t)| tokens(t)).collect();
                    let turbofish = if generics.is_empty() { quote!() } else { quote!(::<#(#generics),*>) };
                    let args: Vec<TokenStream> = vec![$( arg!(cx, types, $arg, $kind $($t)?) ),*];
                    quote! { #path #turbofish(#(#args),*); }
                } )*
            }
        }
    };
}

rlx_core::kernel_call_table!(define_print $);
