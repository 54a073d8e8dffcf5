//! Rust identifiers for buffer names.

use std::collections::BTreeSet;

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
    let mut seen = BTreeSet::new();
    names
        .into_iter()
        .map(|n| {
            let mut candidate = n.clone();
            let mut i = 2;
            while !seen.insert(candidate.clone()) {
                candidate = format!("{n}_{i}");
                i += 1;
            }
            candidate
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
}
