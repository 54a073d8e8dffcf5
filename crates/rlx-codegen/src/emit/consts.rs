//! The module-level constants: the three sizes, one offset per buffer and
//! the compile-time checks of those offsets.

use proc_macro2::TokenStream;
use quote::quote;
use rlx_sched::Segment;

use super::{usize_lit, Gen};

/// Above the checks in every generated file, saying what they guarantee:
/// they bound what a hand edit can break, but an offset moved onto another
/// live buffer, or anywhere else the plan did not choose, still builds.
const ASSERTS_TITLE: [&str; 2] = [
    "Compile-time checks: each buffer lies inside its segment and is aligned for its element type.",
    "They do not check that an offset is the planned one: a moved buffer may land on a live one.",
];

impl Gen<'_> {
    /// `ARENA_BYTES`, `SCRATCH_BYTES` and `WEIGHTS_BYTES`.
    pub(super) fn sizes(&self) -> TokenStream {
        let arena = usize_lit(self.s.arena_size());
        let scratch = self.calls.iter().flatten().map(|c| c.scratch_bytes()).max().unwrap_or(0).div_ceil(64) * 64;
        let scratch = usize_lit(scratch);
        let weights = usize_lit(self.s.weights().as_ref().map_or(0, |w| w.data_len));
        quote! {
            /// Arena bytes.
            pub const ARENA_BYTES: usize = #arena;
            /// Scratch bytes (aliasing temporaries, attention scores, im2col).
            pub const SCRATCH_BYTES: usize = #scratch;
            /// Bytes of the weights' data section.
            pub const WEIGHTS_BYTES: usize = #weights;
        }
    }

    /// One documented `pub const` per buffer: its byte offset in its segment.
    pub(super) fn offsets(&self) -> TokenStream {
        let title = self.comment("Byte offsets of every buffer in its segment.");
        let offsets = self.s.buffers().iter().enumerate().map(|(i, b)| {
            let ident = self.const_ident(i);
            let off = usize_lit(b.offset);
            let doc =
                format!(" `{}`: {}{:?} in the {} ({}).", b.name, b.dtype, b.shape, b.segment.name(), b.role.name());
            quote! { #[doc = #doc] pub const #ident: usize = #off; }
        });
        quote! { #title #(#offsets)* }
    }

    /// Per buffer, `OFF + BYTES <= LIMIT && OFF % ALIGN == 0` as a `const`
    /// assertion (see [`ASSERTS_TITLE`] for what that does not catch).
    pub(super) fn asserts(&self) -> TokenStream {
        let title = ASSERTS_TITLE.map(|line| self.comment(line));
        let asserts = self.s.buffers().iter().enumerate().map(|(i, b)| {
            let ident = self.const_ident(i);
            let bytes = usize_lit(b.bytes());
            let align = usize_lit(b.dtype.align());
            let limit = match b.segment {
                Segment::Arena => quote!(ARENA_BYTES),
                Segment::Weights => quote!(WEIGHTS_BYTES),
            };
            quote! { const _: () = assert!(#ident + #bytes <= #limit && #ident % #align == 0); }
        });
        quote! { #(#title)* #(#asserts)* }
    }
}
