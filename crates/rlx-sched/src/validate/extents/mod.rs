//! The extent rules: for every thunk kind, which operands it reads and
//! writes, how many bytes of which element type, how inputs may overlap
//! outputs, and which field values are consistent.
//!
//! Each kind implements [`Extents`] in the module of its family (the
//! `family` column of `rlx_core::thunk_table!`); the router [`rules`] is
//! generated from the table, so a kind without rules does not compile. All
//! arithmetic is checked: a product that overflows is reported, never
//! wrapped and never a panic.

mod activation;
mod attention;
mod cast;
mod conv;
mod elementwise;
mod gather_scatter;
mod gemm;
mod movement;
mod norm;
mod pool;
mod quant;
mod recurrent;
mod reduce;
mod rope;
mod sample;
mod softmax;

use super::access::{Access, Alias, Dir, Elem, Issue, Pattern};
use super::messages;
use crate::dtype::DType;
use crate::thunk::Thunk;

/// Collects the accesses and field issues of one thunk.
pub(crate) struct Rules<'a, O> {
    pub accesses: Vec<Access<'a, O>>,
    pub issues: Vec<Issue>,
    /// The most scratch the kind's lowering may ask for, from the same
    /// `rlx_core` size functions the lowering calls.
    pub scratch: usize,
}

/// The product of `dims`, `None` on overflow. A zero factor makes it zero
/// whatever the others are.
pub(crate) fn product(dims: &[usize]) -> Option<usize> {
    if dims.contains(&0) {
        return Some(0);
    }
    dims.iter().try_fold(1usize, |acc, &d| acc.checked_mul(d))
}

/// The largest flat index `sum((dims[i] - 1) * strides[i])` of a strided
/// walk over non-empty `dims`; `None` on overflow.
pub(crate) fn max_index(dims: &[usize], strides: &[usize]) -> Option<usize> {
    dims.iter().zip(strides).try_fold(0usize, |acc, (&d, &s)| acc.checked_add(d.saturating_sub(1).checked_mul(s)?))
}

impl<'a, O> Rules<'a, O> {
    fn new() -> Self {
        Rules { accesses: Vec::new(), issues: Vec::new(), scratch: 0 }
    }

    pub(crate) fn issue(&mut self, field: &'static str, message: String, hint: Option<String>) {
        self.issues.push(Issue { field, message, hint });
    }

    /// Records an issue at `field` unless `ok`.
    pub(crate) fn require(&mut self, ok: bool, field: &'static str, message: impl FnOnce() -> String) {
        if !ok {
            self.issue(field, message(), None);
        }
    }

    /// Records an issue with a hint at `field` unless `ok`.
    pub(crate) fn require_hint(
        &mut self,
        ok: bool,
        field: &'static str,
        message: impl FnOnce() -> String,
        hint: impl FnOnce() -> String,
    ) {
        if !ok {
            self.issue(field, message(), Some(hint()));
        }
    }

    /// An access of `product(dims)` contiguous elements.
    fn dense_access(
        &mut self,
        dir: Dir,
        alias: Alias,
        field: &'static str,
        index: Option<usize>,
        op: &'a O,
        elem: Elem,
        dims: &[usize],
        formula: &'static str,
    ) {
        let elems = product(dims);
        let bytes = elems.and_then(|n| n.checked_mul(elem.size()));
        match (elems, bytes) {
            (Some(elems), Some(bytes)) => self.accesses.push(Access {
                field,
                index,
                op,
                dir,
                alias,
                elem,
                pattern: Pattern::dense(bytes),
                formula,
                elems: Some(elems),
            }),
            _ => self.issue(field, messages::extent_overflow(field, formula), Some(messages::overflow_hint())),
        }
    }

    /// Reads `product(dims)` elements; the input never overlaps an output.
    pub(crate) fn read(&mut self, field: &'static str, op: &'a O, elem: Elem, dims: &[usize], formula: &'static str) {
        self.dense_access(Dir::Read, Alias::No, field, None, op, elem, dims, formula);
    }

    /// Reads `product(dims)` elements that may overlap an output as `alias` says.
    pub(crate) fn read_alias(
        &mut self,
        alias: Alias,
        field: &'static str,
        op: &'a O,
        elem: Elem,
        dims: &[usize],
        formula: &'static str,
    ) {
        self.dense_access(Dir::Read, alias, field, None, op, elem, dims, formula);
    }

    /// Reads element `index` of an operand list.
    pub(crate) fn read_item(
        &mut self,
        alias: Alias,
        field: &'static str,
        index: usize,
        op: &'a O,
        elem: Elem,
        dims: &[usize],
        formula: &'static str,
    ) {
        self.dense_access(Dir::Read, alias, field, Some(index), op, elem, dims, formula);
    }

    /// Reads an optional operand (`none` reads nothing).
    pub(crate) fn read_opt(
        &mut self,
        field: &'static str,
        op: &'a Option<O>,
        elem: Elem,
        dims: &[usize],
        formula: &'static str,
    ) {
        if let Some(op) = op {
            self.read(field, op, elem, dims, formula);
        }
    }

    pub(crate) fn write(&mut self, field: &'static str, op: &'a O, elem: Elem, dims: &[usize], formula: &'static str) {
        self.dense_access(Dir::Write, Alias::No, field, None, op, elem, dims, formula);
    }

    pub(crate) fn update(&mut self, field: &'static str, op: &'a O, elem: Elem, dims: &[usize], formula: &'static str) {
        self.dense_access(Dir::ReadWrite, Alias::No, field, None, op, elem, dims, formula);
    }

    /// A strided access; `pattern` is `None` when computing it overflowed.
    pub(crate) fn strided(
        &mut self,
        dir: Dir,
        field: &'static str,
        op: &'a O,
        elem: Elem,
        pattern: Option<Pattern>,
        formula: &'static str,
    ) {
        match pattern {
            Some(pattern) => self.accesses.push(Access {
                field,
                index: None,
                op,
                dir,
                alias: Alias::No,
                elem,
                pattern,
                formula,
                elems: None,
            }),
            None => self.issue(field, messages::extent_overflow(field, formula), Some(messages::overflow_hint())),
        }
    }

    /// Checks that the scratch a kind needs (see `rlx_core::lower`)
    /// is computable; `None` means it overflowed.
    pub(crate) fn scratch(&mut self, field: &'static str, bytes: Option<usize>, formula: &'static str) {
        match bytes {
            Some(b) if b <= isize::MAX as usize / 2 => self.scratch = self.scratch.max(b),
            _ => self.issue(field, messages::scratch_overflow(formula), Some(messages::overflow_hint())),
        }
    }

    /// `elem_bytes` of a kind that only moves bytes.
    pub(crate) fn byte_elem(&mut self, field: &'static str, elem_bytes: usize) -> Option<Elem> {
        if matches!(elem_bytes, 1 | 2 | 4 | 8 | 16) {
            Some(Elem::Bytes(elem_bytes))
        } else {
            self.issue(field, messages::bad_elem_bytes(elem_bytes, "1, 2, 4, 8 or 16"), None);
            None
        }
    }

    /// A dtype field that must be one of `allowed`.
    pub(crate) fn dtype_in(&mut self, field: &'static str, dtype: DType, allowed: &[DType]) -> bool {
        let ok = allowed.contains(&dtype);
        if !ok {
            let names: Vec<_> = allowed.iter().map(|d| d.name()).collect();
            self.issue(field, messages::bad_dtype_field(field, dtype, &names.join(", ")), None);
        }
        ok
    }

    /// A float field that must be finite (and not negative if `non_negative`).
    pub(crate) fn finite(&mut self, field: &'static str, x: f32, non_negative: bool) {
        if !x.is_finite() {
            self.issue(field, messages::not_finite(field), None);
        } else if non_negative && x < 0.0 {
            self.issue(field, messages::negative(field), None);
        }
    }
}

/// A kind's extent rules: the accesses it makes and the issues of its
/// fields. Every kind implements it in the module of its family.
pub(crate) trait Extents<O> {
    fn rules<'a>(&'a self, r: &mut Rules<'a, O>);
}

macro_rules! extents_router {
    ($( $(#[$doc:meta])* $kind:ident in $family:ident { $($fields:tt)* } )*) => {
        /// The accesses and field issues of `t`, by kind.
        pub(crate) fn rules<O>(t: &Thunk<O>) -> Rules<'_, O> {
            let mut r = Rules::new();
            match t {
                $( Thunk::$kind(k) => Extents::rules(k, &mut r), )*
            }
            r
        }
    };
}

rlx_core::thunk_table!(extents_router);

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn products_short_circuit_on_zero_and_detect_overflow() {
        assert_eq!(product(&[]), Some(1));
        assert_eq!(product(&[3, 4]), Some(12));
        assert_eq!(product(&[usize::MAX, 0, usize::MAX]), Some(0));
        assert_eq!(product(&[usize::MAX, 2]), None);
    }

    #[test]
    fn max_index_is_the_last_coordinate_dotted_with_strides() {
        assert_eq!(max_index(&[2, 3], &[3, 1]), Some(5));
        assert_eq!(max_index(&[2, 3], &[0, 1]), Some(2));
        assert_eq!(max_index(&[usize::MAX, 2], &[2, 1]), None);
    }
}
