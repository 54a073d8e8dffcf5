//! Builds the token stream of a generated model file.
//!
//! Layout of the output, in order, one function per section: the sizes
//! and buffer offset constants and their `const` assertions (`consts`),
//! the weights (`weights`), the `Model` struct with typed accessors, `INFO`,
//! `new` and `run` (with entry points: a `run_NAME` method per entry and
//! `run_entry`; `model`), then the run parts: straight lines of kernel
//! calls, one per thunk, each preceded by a comment with the thunk's
//! `.sched` line (`parts`).

mod call;
mod consts;
mod ctx;
mod model;
mod parts;
mod weights;

use proc_macro2::{Literal, TokenStream};
use quote::{format_ident, quote};
use rlx_sched::{DType, KernelCall, Schedule};

use crate::comments::marker;
use crate::names;
use crate::Options;
pub(crate) use ctx::Ctx;

/// What every section reads: the schedule, the options, the names chosen
/// for its buffers and every thunk lowered once (the calls the parts print
/// and the scratch they share).
struct Gen<'a> {
    s: &'a Schedule,
    opts: &'a Options,
    /// One offset constant per buffer (`names::const_names`).
    const_names: Vec<String>,
    /// One accessor suffix per buffer: `input_*`/`output_*` methods, so
    /// nothing else has those names.
    accessor_names: Vec<String>,
    /// Each node's call, `None` for a thunk that lowers to nothing.
    calls: Vec<Option<KernelCall>>,
}

impl<'a> Gen<'a> {
    fn new(s: &'a Schedule, opts: &'a Options) -> Self {
        Gen {
            s,
            opts,
            const_names: names::const_names(s.buffers().iter().map(|b| b.name.as_str())),
            accessor_names: names::dedup(s.buffers().iter().map(|b| names::snake_name(&b.name))),
            calls: s.nodes().iter().map(|n| rlx_sched::lower::lower(&n.thunk, &s.params())).collect(),
        }
    }

    /// A comment marker, or nothing when markers are off (the proc-macro).
    fn comment(&self, text: &str) -> TokenStream {
        comment(self.opts, text)
    }

    /// A blank line between items.
    fn blank(&self) -> TokenStream {
        self.comment("")
    }

    /// The offset constant of buffer `i`.
    fn const_ident(&self, i: usize) -> proc_macro2::Ident {
        format_ident!("{}", self.const_names[i])
    }
}

/// The whole generated file, before formatting.
pub fn emit(s: &Schedule, opts: &Options) -> TokenStream {
    let g = Gen::new(s, opts);
    let weights = g.weights();
    let (parts, run_bodies) = g.parts(&weights.ptr);
    let sections = [
        g.sizes(),
        g.offsets(),
        g.asserts(),
        weights.item.clone(),
        g.model_struct(&weights.field),
        g.inherent_impl(&run_bodies),
        g.trait_impl(&weights.init, &run_bodies),
    ];
    let blank = g.blank();
    let (first, rest) = sections.split_first().expect("sections");
    quote! {
        #first
        #(#blank #rest)*
        #(#blank #parts)*
    }
}

fn usize_lit(n: usize) -> Literal {
    Literal::usize_unsuffixed(n)
}

/// The Rust element type of a dtype, as a path.
pub(crate) fn rust_type(d: DType) -> TokenStream {
    match d {
        DType::F32 => quote!(f32),
        DType::F64 => quote!(f64),
        DType::F16 => quote!(::rlx_runtime::half::f16),
        DType::Bf16 => quote!(::rlx_runtime::half::bf16),
        DType::I8 => quote!(i8),
        DType::U8 | DType::Bool => quote!(u8),
        DType::I16 => quote!(i16),
        DType::U16 => quote!(u16),
        DType::I32 => quote!(i32),
        DType::U32 => quote!(u32),
        DType::I64 => quote!(i64),
        DType::U64 => quote!(u64),
    }
}

fn dtype_path(d: DType) -> TokenStream {
    let v = format_ident!("{}", format!("{d:?}"));
    quote!(::rlx_runtime::DType::#v)
}

/// `#[allow(non_snake_case)]` for a function named `name` when the lint
/// would flag it (a schedule name with `_` at an end; `names::is_snake_case`),
/// else nothing: the generated code builds without warnings.
fn allow_non_snake(name: &proc_macro2::Ident) -> TokenStream {
    if names::is_snake_case(&name.to_string()) {
        TokenStream::new()
    } else {
        quote!(#[allow(non_snake_case)])
    }
}

/// A comment marker, or nothing when markers are off (the proc-macro).
fn comment(opts: &Options, text: &str) -> TokenStream {
    if opts.markers {
        marker(text)
    } else {
        TokenStream::new()
    }
}

#[cfg(test)]
mod tests;
