//! Buffer names: ONNX tensor names made into `.sched` identifiers.

use std::collections::BTreeSet;

/// Hands out unique `.sched` identifiers (`[A-Za-z_][A-Za-z0-9_.]*`, not a
/// reserved word) derived from ONNX names.
#[derive(Debug, Default)]
pub(crate) struct NameTable {
    taken: BTreeSet<String>,
}

fn is_reserved(s: &str) -> bool {
    matches!(s, "none" | "true" | "false" | "inf" | "nan")
        || (s.len() > 2 && s.starts_with("in") && s[2..].bytes().all(|b| b.is_ascii_digit()))
}

/// `name` with every character outside `[A-Za-z0-9_.]` replaced by `_`,
/// prefixed with `_` when it would not start an identifier or is reserved.
pub(crate) fn sanitize(name: &str) -> String {
    let mut s: String =
        name.chars().map(|c| if c.is_ascii_alphanumeric() || c == '_' || c == '.' { c } else { '_' }).collect();
    let starts_ok = s.starts_with(|c: char| c.is_ascii_alphabetic() || c == '_');
    if !starts_ok || is_reserved(&s) {
        s.insert(0, '_');
    }
    s
}

impl NameTable {
    /// A fresh identifier for `name`: its sanitized form, with `_2`, `_3`,
    /// ... appended when that is already taken.
    pub(crate) fn fresh(&mut self, name: &str) -> String {
        let base = sanitize(name);
        let mut candidate = base.clone();
        let mut n = 2;
        while self.taken.contains(&candidate) {
            candidate = format!("{base}_{n}");
            n += 1;
        }
        self.taken.insert(candidate.clone());
        candidate
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_become_unique_identifiers() {
        let mut t = NameTable::default();
        assert_eq!(t.fresh("fc1.weight"), "fc1.weight");
        assert_eq!(t.fresh("/layer/MatMul:0"), "_layer_MatMul_0");
        assert_eq!(t.fresh("0"), "_0");
        assert_eq!(t.fresh("in3"), "_in3");
        assert_eq!(t.fresh("none"), "_none");
        assert_eq!(t.fresh("input"), "input");
        assert_eq!(t.fresh("x"), "x");
        assert_eq!(t.fresh("x"), "x_2");
        assert_eq!(t.fresh("x"), "x_3");
        assert_eq!(t.fresh(""), "_");
    }
}
