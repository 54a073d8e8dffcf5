//! The `.sched` field syntax of every thunk kind: `rlx_core`'s thunk table
//! expanded a second time, into conversions between a kind's written
//! fields and a [`Thunk`].

// The thunk table names field types bare: every enum of `rlx_core::ops`
// (the field enums and the activation, mask and step types) is in scope
// through the glob, so a new field enum needs no edit here.
#[allow(clippy::wildcard_imports)]
use rlx_core::ops::*;
use rlx_core::thunk::{self as kinds, Dims, Op, Ops, OptOp, Steps};
use rlx_core::{DType, Thunk, ThunkKind};

use crate::span::Span;
use crate::value::{FieldError, FieldValue, Value};

/// Conversions between a thunk and its `.sched` fields.
pub trait FieldSyntax: Sized {
    /// Builds a thunk of `kind` from its written fields. Reports every
    /// unknown, duplicate, missing and ill-typed field.
    fn from_fields(kind: ThunkKind, fields: &[(String, Span, Value)], whole: Span) -> Result<Self, Vec<FieldError>>;

    /// The thunk's fields in canonical order, as values.
    fn to_fields(&self) -> Vec<(&'static str, Value)>;
}

macro_rules! field_syntax {
    ($( $(#[$doc:meta])* $kind:ident in $family:ident { $( $field:ident : $ty:ident $(<$o:ident>)? ),* $(,)? } )*) => {
        impl<O: FieldValue> FieldSyntax for Thunk<O> {
            #[allow(unused_mut, unused_variables)]
            fn from_fields(
                kind: ThunkKind,
                fields: &[(String, Span, Value)],
                whole: Span,
            ) -> Result<Thunk<O>, Vec<FieldError>> {
                let mut lookup = FieldLookup::new(kind, fields, whole);
                match kind {
                    $( ThunkKind::$kind => {
                        $( let $field: Option<$ty $(<$o>)?> = lookup.take(stringify!($field)); )*
                        lookup.finish()?;
                        Ok(Thunk::$kind(kinds::$kind { $( $field: $field.expect("checked by finish") ),* }))
                    } )*
                }
            }

            fn to_fields(&self) -> Vec<(&'static str, Value)> {
                match self {
                    $( Thunk::$kind(kinds::$kind { $( $field ),* }) => vec![$( (stringify!($field), FieldValue::to_value($field)) ),*], )*
                }
            }
        }
    };
}

rlx_core::thunk_table!(field_syntax);

/// Matches written fields against a kind's field list.
struct FieldLookup<'a> {
    kind: ThunkKind,
    fields: &'a [(String, Span, Value)],
    used: Vec<bool>,
    whole: Span,
    errors: Vec<FieldError>,
    missing: Vec<&'static str>,
}

impl<'a> FieldLookup<'a> {
    fn new(kind: ThunkKind, fields: &'a [(String, Span, Value)], whole: Span) -> Self {
        let mut errors = Vec::new();
        let expected = kind.fields();
        // Names of known fields seen so far: a set, so that a hostile line
        // of many repeated fields stays linear.
        let mut seen = std::collections::HashSet::new();
        for (name, span, _) in fields {
            if !expected.iter().any(|f| f.name == name) {
                let names: Vec<_> = expected.iter().map(|f| f.name).collect();
                let hint = if names.is_empty() {
                    format!("{} takes no fields", kind.name())
                } else {
                    format!("expected one of {}", names.join(", "))
                };
                errors
                    .push(FieldError::new(*span, format!("unknown field `{name}` in {}", kind.name())).with_hint(hint));
            } else if !seen.insert(name.as_str()) {
                errors.push(FieldError::new(*span, format!("field `{name}` is given twice")));
            }
        }
        FieldLookup { kind, fields, used: vec![false; fields.len()], whole, errors, missing: Vec::new() }
    }

    fn take<T: FieldValue>(&mut self, name: &'static str) -> Option<T> {
        let Some(i) = self.fields.iter().position(|(n, _, _)| n == name) else {
            self.missing.push(name);
            return None;
        };
        self.used[i] = true;
        match T::from_value(&self.fields[i].2) {
            Ok(v) => Some(v),
            Err(e) => {
                self.errors.push(FieldError { message: format!("field `{name}`: {}", e.message), ..e });
                None
            }
        }
    }

    fn finish(mut self) -> Result<(), Vec<FieldError>> {
        if !self.missing.is_empty() {
            let s = if self.missing.len() == 1 { "" } else { "s" };
            self.errors.push(FieldError::new(
                self.whole,
                format!("{} is missing field{s} {}", self.kind.name(), self.missing.join(", ")),
            ));
        }
        if self.errors.is_empty() {
            Ok(())
        } else {
            Err(self.errors)
        }
    }
}
