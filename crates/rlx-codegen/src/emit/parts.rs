//! The run parts (straight lines of kernel calls, one per thunk, each under
//! its `.sched` statement) and the run bodies that call them.

use proc_macro2::{Ident, TokenStream};
use quote::{format_ident, quote};
use rlx_sched::{Entry, Node};

use super::{allow_non_snake, call, usize_lit, Ctx, Gen};

/// Columns of a statement comment's text before it wraps: with the run
/// parts' indentation and `// `, a line stays within 100 columns.
const STATEMENT_WIDTH: usize = 89;

/// The indentation of a statement's continuation lines.
const INDENT: &str = "    ";

impl Gen<'_> {
    /// Every entry's run parts in order, and each entry's run body.
    pub(super) fn parts(&self, weights_ptr: &TokenStream) -> (Vec<TokenStream>, Vec<TokenStream>) {
        let ctx = Ctx::new(self.s, &self.const_names, self.opts.markers);
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
        let allow = allow_non_snake(name);
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
            #allow
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

    /// `#i path:line`, then the thunk's canonical `.sched` statement
    /// (`rlx_sched::print`), wrapped: the call below prints the same values
    /// positionally, and its bare scalars are named by argument markers.
    fn thunk_comment(&self, i: usize, node: &Node) -> Vec<TokenStream> {
        if !self.opts.markers {
            return Vec::new();
        }
        let statement = rlx_sched::print::print_resolved_thunk(&node.thunk, self.s.buffers());
        let head = format!("#{i} {}:{}", self.opts.sched_path, node.line);
        std::iter::once(head).chain(wrap_statement(&statement, STATEMENT_WIDTH)).map(|l| self.comment(&l)).collect()
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

/// A `.sched` statement in lines of at most `width` columns where it can:
/// it breaks after a field's `, ` (continuation lines indented by four), and
/// inside a field's list only when that field alone is too long. A single
/// item longer than `width` keeps its own line.
pub(super) fn wrap_statement(statement: &str, width: usize) -> Vec<String> {
    let mut lines = Vec::new();
    let mut line = String::new();
    for field in split_after_commas(statement, |depth| depth == 1) {
        // Too long for a continuation line of its own: break inside it.
        let too_long = INDENT.len() + field.trim_end().len() > width;
        let pieces = if too_long { split_after_commas(field, |depth| depth >= 1) } else { vec![field] };
        for piece in pieces {
            if !line.trim().is_empty() && line.len() + piece.trim_end().len() > width {
                lines.push(line.trim_end().to_string());
                line = INDENT.to_string();
            }
            line.push_str(piece);
        }
    }
    if !line.trim().is_empty() {
        lines.push(line.trim_end().to_string());
    }
    lines
}

/// `text` cut after each `, ` at a nesting depth (of `{`, `[`, `(`) that
/// `at` accepts; the pieces keep their `, `.
fn split_after_commas(text: &str, at: impl Fn(usize) -> bool) -> Vec<&str> {
    let (mut pieces, mut depth, mut start) = (Vec::new(), 0usize, 0);
    let bytes = text.as_bytes();
    for (i, &b) in bytes.iter().enumerate() {
        match b {
            b'{' | b'[' | b'(' => depth += 1,
            b'}' | b']' | b')' => depth = depth.saturating_sub(1),
            b',' if at(depth) && bytes.get(i + 1) == Some(&b' ') => {
                pieces.push(&text[start..i + 2]);
                start = i + 2;
            }
            _ => {}
        }
    }
    pieces.push(&text[start..]);
    pieces
}
