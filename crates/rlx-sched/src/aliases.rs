//! Older spellings the parser accepts for operations a general kind
//! covers: each is read as its general kind with fields renamed and
//! fixed. The canonical printer writes the general kind, so a file
//! that uses an alias reprints in the general spelling; the generated code
//! and its bits are the same either way (`docs/sched-format.md`, "Kind
//! aliases").

use crate::span::Span;
use crate::thunk::ThunkKind;
use crate::value::{FieldError, Value, ValueKind};

/// One alias: `name` written with its own fields, read as `kind`.
#[derive(Clone, Copy, Debug)]
pub struct Alias {
    pub name: &'static str,
    pub kind: ThunkKind,
    /// `(written field, general field)`: a written field may feed several
    /// general ones (`ActivationInPlace`'s `data` is `src` and `dst`).
    pub renames: &'static [(&'static str, &'static str)],
    /// General fields the alias fixes, with their value as written in
    /// `.sched` (an identifier).
    pub fixed: &'static [(&'static str, &'static str)],
}

macro_rules! cast_aliases {
    ($($name:literal: $from:literal -> $to:literal),* $(,)?) => {
        &[$(Alias { name: $name, kind: ThunkKind::Cast, renames: &[], fixed: &[("from", $from), ("to", $to)] }),*]
    };
}

const CASTS: &[Alias] = cast_aliases![
    "CastF32ToI64": "f32" -> "i64",
    "CastF32ToF64": "f32" -> "f64",
    "CastF64ToF32": "f64" -> "f32",
    "CastF64ToI64": "f64" -> "i64",
    "CastF64ToI32": "f64" -> "i32",
    "CastF64ToBool": "f64" -> "bool",
    "CastI64ToI32": "i64" -> "i32",
    "CastI64ToF64": "i64" -> "f64",
    "CastI32ToF64": "i32" -> "f64",
    "CastF32ToF16": "f32" -> "f16",
    "CastF16ToF32": "f16" -> "f32",
    "CastF32ToBf16": "f32" -> "bf16",
    "CastBf16ToF32": "bf16" -> "f32",
    "CastF32ToI32": "f32" -> "i32",
    "CastI64ToF32": "i64" -> "f32",
    "CastBoolToI32": "bool" -> "i32",
    "CastI32ToF32": "i32" -> "f32",
    "CastI32ToI64": "i32" -> "i64",
    "CastI32ToBool": "i32" -> "bool",
    "CastI64ToBool": "i64" -> "bool",
    "CastBoolToI64": "bool" -> "i64",
    "CastBoolToF32": "bool" -> "f32",
    "CastF32ToBool": "f32" -> "bool",
];

const OTHERS: &[Alias] = &[
    Alias {
        name: "CastGeneric",
        kind: ThunkKind::Cast,
        renames: &[("src_dtype", "from"), ("dst_dtype", "to")],
        fixed: &[],
    },
    Alias { name: "Cumsum", kind: ThunkKind::Cumulative, renames: &[], fixed: &[("op", "add"), ("dtype", "f32")] },
    Alias {
        name: "ActivationInPlace",
        kind: ThunkKind::Activation,
        renames: &[("data", "src"), ("data", "dst")],
        fixed: &[],
    },
];

/// Every alias.
pub fn all() -> impl Iterator<Item = &'static Alias> {
    CASTS.iter().chain(OTHERS)
}

/// The alias spelled `name`, if any.
pub fn find(name: &str) -> Option<&'static Alias> {
    all().find(|a| a.name == name)
}

/// Aliases are equal when they are the same spelling.
impl PartialEq for Alias {
    fn eq(&self, other: &Self) -> bool {
        self.name == other.name
    }
}

impl Alias {
    /// The name a field of the general kind is written with in this
    /// spelling (the first written field that feeds it).
    pub fn written_field(&self, general: &'static str) -> &'static str {
        self.renames.iter().find(|(_, to)| *to == general).map_or(general, |(from, _)| *from)
    }

    /// The fields the alias is written with, in the general kind's order.
    pub fn fields(&self) -> Vec<&'static str> {
        let mut out: Vec<&'static str> = Vec::new();
        for f in self.kind.fields() {
            if self.fixed.iter().any(|(n, _)| *n == f.name) {
                continue;
            }
            let written = self.renames.iter().find(|(_, to)| *to == f.name).map_or(f.name, |(from, _)| *from);
            if !out.contains(&written) {
                out.push(written);
            }
        }
        out
    }

    /// The written fields as the general kind's: renamed, with the fixed
    /// ones added (at `whole`, the thunk's span). A written field that the
    /// alias does not have is an error naming the alias' fields.
    pub fn translate(
        &self,
        fields: Vec<(String, Span, Value)>,
        whole: Span,
    ) -> Result<Vec<(String, Span, Value)>, Vec<FieldError>> {
        let own = self.fields();
        let mut out = Vec::new();
        let mut errors = Vec::new();
        for (name, span, value) in fields {
            if !own.contains(&name.as_str()) {
                errors.push(
                    FieldError::new(span, format!("unknown field `{name}` in {}", self.name))
                        .with_hint(format!("expected one of {}", own.join(", "))),
                );
                continue;
            }
            let targets: Vec<&str> = self.renames.iter().filter(|(from, _)| *from == name).map(|(_, to)| *to).collect();
            if targets.is_empty() {
                out.push((name, span, value));
            } else {
                for to in targets {
                    out.push((to.to_string(), span, value.clone()));
                }
            }
        }
        for (name, ident) in self.fixed {
            out.push((name.to_string(), whole, Value { kind: ValueKind::Ident(ident.to_string()), span: whole }));
        }
        if errors.is_empty() {
            Ok(out)
        } else {
            Err(errors)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn aliases_are_not_kinds_and_name_real_fields() {
        for a in all() {
            assert!(ThunkKind::from_name(a.name).is_none(), "{} is a kind and an alias", a.name);
            let general: Vec<_> = a.kind.fields().iter().map(|f| f.name).collect();
            for (_, to) in a.renames {
                assert!(general.contains(to), "{}: {to} is not a field of {}", a.name, a.kind.name());
            }
            for (f, _) in a.fixed {
                assert!(general.contains(f), "{}: {f} is not a field of {}", a.name, a.kind.name());
            }
        }
    }

    #[test]
    fn alias_fields_replace_renamed_and_fixed_ones() {
        assert_eq!(find("CastI64ToF32").unwrap().fields(), ["src", "dst", "len"]);
        assert_eq!(find("CastGeneric").unwrap().fields(), ["src", "dst", "len", "src_dtype", "dst_dtype"]);
        assert_eq!(find("ActivationInPlace").unwrap().fields(), ["data", "len", "act"]);
        assert_eq!(
            find("Cumsum").unwrap().fields(),
            ["src", "dst", "outer", "axis_dim", "inner", "exclusive", "reverse"]
        );
    }
}
