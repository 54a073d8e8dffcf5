//! The run parts (straight lines of kernel calls, one per thunk, each under
//! a comment naming it) and the run bodies that call them.

use proc_macro2::{Ident, TokenStream};
use quote::{format_ident, quote};
use rlx_sched::{Entry, Node};

use super::{call, usize_lit, Ctx, Gen};

impl Gen<'_> {
    /// Every entry's run parts in order, and each entry's run body.
    pub(super) fn parts(&self, weights_ptr: &TokenStream) -> (Vec<TokenStream>, Vec<TokenStream>) {
        let ctx = Ctx::new(self.s, &self.const_names);
        let mut parts = Vec::new();
        let mut run_bodies = Vec::with_capacity(self.s.entries().len());
        for entry in self.s.entries() {
            let names = self.entry_parts(&ctx, entry, &mut parts);
            // An entry with a parallel call runs inside the pool (one hand-off
            // per run rather than one per parallel call); one without never
            // touches it.
            let in_pool = entry.nodes.clone().any(|i| self.calls[i].as_ref().is_some_and(|c| c.parallel()));
            run_bodies.push(self.run_body(weights_ptr, &names, in_pool));
        }
        (parts, run_bodies)
    }

    /// An entry's thunks in parts of `thunks_per_fn`: straight-line
    /// functions small enough for rustc, never spanning two entries.
    /// Appends them to `parts` and returns their names.
    fn entry_parts(&self, ctx: &Ctx<'_>, entry: &Entry, parts: &mut Vec<TokenStream>) -> Vec<Ident> {
        let nodes: Vec<_> = entry.nodes.clone().map(|i| (i, &self.s.nodes()[i])).collect();
        let prefix = entry.name.as_ref().map_or_else(|| "run_part".to_string(), |n| format!("run_{n}_part"));
        let chunks = nodes.chunks(self.opts.thunks_per_fn.max(1));
        chunks
            .enumerate()
            .map(|(k, chunk)| {
                let name = format_ident!("{prefix}_{k}");
                parts.push(self.part(ctx, &name, chunk));
                name
            })
            .collect()
    }

    /// One run part: its thunks' calls in order.
    fn part(&self, ctx: &Ctx<'_>, name: &Ident, chunk: &[(usize, &Node)]) -> TokenStream {
        let first = chunk.first().map_or(0, |(i, _)| *i);
        let last = chunk.last().map_or(0, |(i, _)| *i);
        let doc = format!(" Thunks #{first} to #{last}.");
        let stmts = chunk.iter().enumerate().map(|(j, (i, node))| {
            let gap = if j > 0 { self.blank() } else { TokenStream::new() };
            let thunk = self.thunk(ctx, *i, node);
            quote! { #gap #thunk }
        });
        quote! {
            #[doc = #doc]
            ///
            /// # Safety
            ///
            /// `a` must point to the model's arena, `w` to the weights' data
            /// section and `s` to its scratch, as set up by `Model::new`.
            #[allow(unused_variables)]
            unsafe fn #name(a: *mut u8, w: *const u8, s: *mut u8) {
                unsafe {
                    #(#stmts)*
                }
            }
        }
    }

    /// Thunk `i`: its comment, its call (none for a thunk that lowers to
    /// nothing) and the profiler's mark.
    fn thunk(&self, ctx: &Ctx<'_>, i: usize, node: &Node) -> TokenStream {
        let comment = self.thunk_comment(i, node);
        let call = self.calls[i].as_ref().map(|c| call::print(ctx, c)).unwrap_or_default();
        let idx = usize_lit(i);
        quote! {
            #(#comment)*
            #call
            #[cfg(feature = "profile")]
            ::rlx_runtime::profile::mark(#idx);
        }
    }

    /// `#i Kind  path:line`.
    fn thunk_comment(&self, i: usize, node: &Node) -> Vec<TokenStream> {
        vec![self.comment(&format!("#{i} {}  {}:{}", node.thunk.kind().name(), self.opts.sched_path, node.line))]
    }

    /// The body of a run method: the parts in order, inside the pool when
    /// `in_pool`.
    fn run_body(&self, weights_ptr: &TokenStream, part_names: &[Ident], in_pool: bool) -> TokenStream {
        let safety = self.comment(if in_pool {
            "SAFETY: the validator proved every access in bounds and aligned; the parts capture only pointers that outlive the call."
        } else {
            "SAFETY: the validator proved every access in bounds and aligned."
        });
        let calls = if in_pool {
            quote! {
                unsafe {
                    ::rlx_runtime::threads::run_in_pool(&mut || {
                        #(#part_names(a, w, s);)*
                    });
                }
            }
        } else {
            quote! {
                unsafe {
                    #(#part_names(a, w, s);)*
                }
            }
        };
        quote! {
            let a = self.arena.as_mut_ptr();
            let s = self.scratch.as_mut_ptr();
            let w: *const u8 = #weights_ptr;
            #[cfg(feature = "profile")]
            ::rlx_runtime::profile::start();
            #safety
            #calls
        }
    }
}
