//! Turns resolved operands into pointer expressions.

use proc_macro2::{Literal, TokenStream};
use quote::{format_ident, quote};
use rlx_sched::{Operand, Schedule, Segment};

/// What the call printer needs to know about the schedule.
pub(crate) struct Ctx<'a> {
    pub schedule: &'a Schedule,
    const_names: &'a [String],
    /// Name the bare scalar arguments (see [`Ctx::named`]).
    markers: bool,
}

impl<'a> Ctx<'a> {
    pub fn new(schedule: &'a Schedule, const_names: &'a [String], markers: bool) -> Self {
        Ctx { schedule, const_names, markers }
    }

    /// A bare `usize`, `bool` or `f32` argument, marked so that it reads
    /// `value, // name` after formatting: positional literals alone do not
    /// say which dimension or flag they are, and some (the `par` flag) are
    /// decisions of the lowering that the `.sched` line does not show.
    pub fn named(&self, name: &str, value: TokenStream) -> TokenStream {
        if self.markers {
            crate::comments::arg_marker(name, value)
        } else {
            value
        }
    }

    /// The byte offset of an operand as an expression: `H1`, `H1 + 64`, or
    /// a literal for raw offsets.
    fn offset(&self, op: &Operand) -> TokenStream {
        match op.buffer {
            Some(i) => {
                let name = format_ident!("{}", self.const_names[i]);
                let within = op.offset - self.schedule.buffers()[i].offset;
                if within == 0 {
                    quote!(#name)
                } else {
                    let d = Literal::usize_unsuffixed(within);
                    quote!(#name + #d)
                }
            }
            None => {
                let d = Literal::usize_unsuffixed(op.offset);
                quote!(#d)
            }
        }
    }

    /// `a.add(OFF).cast::<T>()` (arena, `*mut T`) or `w.add(OFF).cast::<T>()`
    /// (weights, `*const T`).
    pub fn ptr(&self, op: &Operand, ty: TokenStream) -> TokenStream {
        let off = self.offset(op);
        match op.segment {
            Segment::Arena => quote!(a.add(#off).cast::<#ty>()),
            Segment::Weights => quote!(w.add(#off).cast::<#ty>()),
        }
    }

    /// A `*const T`, for inputs passed where a kernel takes `*const`
    /// inside a struct or an `Option` (no implicit coercion there).
    pub fn cptr(&self, op: &Operand, ty: TokenStream) -> TokenStream {
        let p = self.ptr(op, ty);
        match op.segment {
            Segment::Arena => quote!(#p.cast_const()),
            Segment::Weights => p,
        }
    }

    /// The scratch buffer, typed.
    pub fn scratch(&self, ty: TokenStream) -> TokenStream {
        quote!(s.cast::<#ty>())
    }
}

/// A `usize` literal without suffix.
pub(crate) fn lit(n: usize) -> Literal {
    Literal::usize_unsuffixed(n)
}

/// An `f32` literal that round-trips the exact bits, including non-finite
/// values.
pub(crate) fn f32_lit(x: f32) -> TokenStream {
    if x.is_nan() {
        quote!(f32::NAN)
    } else if x == f32::INFINITY {
        quote!(f32::INFINITY)
    } else if x == f32::NEG_INFINITY {
        quote!(f32::NEG_INFINITY)
    } else {
        let l = Literal::f32_suffixed(x);
        quote!(#l)
    }
}
