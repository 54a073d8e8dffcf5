//! Rust identifiers for schedule names.
//!
//! Every identifier the emitter derives from a name in the schedule comes
//! from here, and is a legal, unshadowed Rust identifier whatever the name:
//! buffer constants through [`const_names`] (which passes each through
//! [`ident`]); accessors (`input_*`, `output_*`) and entry methods (`run_*`)
//! carry a prefix, so no keyword can reach them, and the validator refuses
//! the entry names whose method the `GeneratedModel` trait defines
//! (`entry`). The model name and the weights path only ever appear in
//! string literals and doc comments.

use std::collections::BTreeSet;

/// Every Rust keyword: strict (2015 and 2018), reserved, the 2024 edition's
/// `gen`, and the weak ones that are identifiers in some places only. Each
/// takes the raw form `r#NAME`, except the few in [`NOT_RAW`].
pub const KEYWORDS: &[&str] = &[
    // Strict.
    "as",
    "break",
    "const",
    "continue",
    "crate",
    "else",
    "enum",
    "extern",
    "false",
    "fn",
    "for",
    "if",
    "impl",
    "in",
    "let",
    "loop",
    "match",
    "mod",
    "move",
    "mut",
    "pub",
    "ref",
    "return",
    "self",
    "Self",
    "static",
    "struct",
    "super",
    "trait",
    "true",
    "type",
    "unsafe",
    "use",
    "where",
    "while",
    "async",
    "await",
    "dyn",
    // Reserved.
    "abstract",
    "become",
    "box",
    "do",
    "final",
    "macro",
    "override",
    "priv",
    "typeof",
    "unsized",
    "virtual",
    "yield",
    "try",
    "gen",
    // Weak.
    "macro_rules",
    "union",
    "raw",
    "safe",
];

/// Names that are no identifier even in raw form (`r#self` does not
/// compile): they get a trailing `_` instead.
pub const NOT_RAW: &[&str] = &["_", "self", "Self", "super", "crate"];

/// `name` as a legal Rust identifier, readable: itself, `r#type` for a
/// keyword, `self_` and `__` for the names that have no raw form. Two
/// different names may map to one (`_` and `__`): [`const_names`] makes
/// them unique after this.
pub fn ident(name: &str) -> String {
    if NOT_RAW.contains(&name) {
        format!("{name}_")
    } else if KEYWORDS.contains(&name) {
        format!("r#{name}")
    } else {
        name.to_string()
    }
}

/// Every name the emitter itself defines in a generated module or uses
/// inside `run` and the run parts (`run_part_N` aside): its constants and
/// statics, the weights image, the model struct, the run functions, and
/// the pointer locals and loop variables of the thunk calls. A buffer's
/// constant never takes one of them (see [`const_names`]). Constants are
/// upper case, so only the upper-case entries can collide today; the rest
/// keep the list whole for the test that checks it against the output.
pub const RESERVED: &[&str] = &[
    // Module-level constants and statics.
    "ARENA_BYTES",
    "SCRATCH_BYTES",
    "WEIGHTS_BYTES",
    "WEIGHTS_DATA_OFFSET",
    "WEIGHTS_FILE",
    "WEIGHTS_SHA256",
    "WEIGHTS",
    // Types and functions.
    "WeightsImage",
    "Model",
    "run",
    // Parameters and locals of `run`, the run parts and fused loops.
    "a",
    "w",
    "s",
    "out",
    "acc",
    "i",
    "start",
    "count",
];

/// The offset constants of `buffers` (`fc1.weight` → `FC1_WEIGHT`), unique
/// in order of appearance, legal identifiers ([`ident`]: a buffer `_` gets
/// `__`) and never one of the emitter's [`RESERVED`] names: a buffer named
/// `weights` gets `WEIGHTS_2`.
pub fn const_names<'a>(buffers: impl IntoIterator<Item = &'a str>) -> Vec<String> {
    dedup_avoiding(buffers.into_iter().map(|b| ident(&const_name(b))), RESERVED)
}

/// Whether rustc's `non_snake_case` lint accepts the function name `name`:
/// leading and trailing `_` aside, no upper-case letter and no `__`. An
/// entry `_` makes the run part `run___part_0`, a buffer `_x` the accessor
/// `input__x`; those get `#[allow(non_snake_case)]`.
pub fn is_snake_case(name: &str) -> bool {
    let inner = name.trim_matches('_');
    !inner.contains("__") && !inner.chars().any(char::is_uppercase)
}

/// `fc1.weight` → `FC1_WEIGHT`; a leading digit gets a `B_` prefix.
pub fn const_name(buffer: &str) -> String {
    let mut s: String =
        buffer.chars().map(|c| if c.is_ascii_alphanumeric() { c.to_ascii_uppercase() } else { '_' }).collect();
    if s.is_empty() || s.starts_with(|c: char| c.is_ascii_digit()) {
        s.insert_str(0, "B_");
    }
    s
}

/// `fc1.weight` → `fc1_weight`, for accessor names.
pub fn snake_name(buffer: &str) -> String {
    let mut s: String =
        buffer.chars().map(|c| if c.is_ascii_alphanumeric() { c.to_ascii_lowercase() } else { '_' }).collect();
    if s.is_empty() || s.starts_with(|c: char| c.is_ascii_digit()) {
        s.insert_str(0, "b_");
    }
    s
}

/// Makes names unique in order of appearance by appending `_2`, `_3`, ...
pub fn dedup(names: impl IntoIterator<Item = String>) -> Vec<String> {
    dedup_avoiding(names, &[])
}

/// [`dedup`], with the `reserved` names taken from the start. A raw
/// identifier is the same name as its plain form (`r#type` is `type`), so
/// names are compared without `r#`; a suffixed keyword is no keyword
/// (`type_2`).
fn dedup_avoiding(names: impl IntoIterator<Item = String>, reserved: &[&str]) -> Vec<String> {
    let mut seen: BTreeSet<String> = reserved.iter().map(|r| r.to_string()).collect();
    names
        .into_iter()
        .map(|n| {
            let bare = n.strip_prefix("r#").unwrap_or(&n);
            if seen.insert(bare.to_string()) {
                return n;
            }
            (2..)
                .map(|i| format!("{bare}_{i}"))
                .find(|candidate| seen.insert(candidate.clone()))
                .expect("some suffix is free")
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_are_valid_and_unique() {
        assert_eq!(const_name("fc1.weight"), "FC1_WEIGHT");
        assert_eq!(const_name("0x"), "B_0X");
        assert_eq!(snake_name("Layer.0/attn"), "layer_0_attn");
        assert_eq!(dedup(["A".into(), "A".into(), "A_2".into()]), ["A", "A_2", "A_2_2"]);
    }

    #[test]
    fn every_name_becomes_a_legal_identifier() {
        for &k in KEYWORDS.iter().chain(NOT_RAW) {
            let id = ident(k);
            assert_ne!(id, k, "{k}");
            // syn refuses keywords as plain identifiers and `r#self` & co.
            syn::parse_str::<syn::Ident>(&id).unwrap_or_else(|e| panic!("`{k}` became `{id}`: {e}"));
        }
        assert_eq!(ident("type"), "r#type");
        assert!(is_snake_case("run__") && is_snake_case("_run_x_part_0"));
        assert!(!is_snake_case("run___part_0") && !is_snake_case("input__x") && !is_snake_case("run_X"));
        assert_eq!(ident("Self"), "Self_");
        assert_eq!(ident("_"), "__");
        assert_eq!(ident("typed"), "typed");
        assert_eq!(
            dedup_avoiding(["r#type".into(), "type".into(), "type_2".into()], &[]),
            ["r#type", "type_2", "type_2_2"]
        );
    }

    #[test]
    fn constants_avoid_the_emitters_names() {
        assert_eq!(
            const_names(["weights", "weights_2", "arena.bytes", "Weights_SHA256", "x"]),
            ["WEIGHTS_2", "WEIGHTS_2_2", "ARENA_BYTES_2", "WEIGHTS_SHA256_2", "X"]
        );
        assert_eq!(const_names(["_", "__", "_.", "self", "Self"]), ["__", "___2", "___3", "SELF", "SELF_2"]);
    }
}
