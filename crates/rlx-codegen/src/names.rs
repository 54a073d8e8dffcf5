//! Rust identifiers for buffer names.

use std::collections::BTreeSet;

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
/// in order of appearance and never one of the emitter's [`RESERVED`]
/// names: a buffer named `weights` gets `WEIGHTS_2`.
pub fn const_names<'a>(buffers: impl IntoIterator<Item = &'a str>) -> Vec<String> {
    dedup_avoiding(buffers.into_iter().map(const_name), RESERVED)
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

/// [`dedup`], with the `reserved` names taken from the start.
fn dedup_avoiding(names: impl IntoIterator<Item = String>, reserved: &[&str]) -> Vec<String> {
    let mut seen: BTreeSet<String> = reserved.iter().map(|r| r.to_string()).collect();
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

    #[test]
    fn constants_avoid_the_emitters_names() {
        assert_eq!(
            const_names(["weights", "weights_2", "arena.bytes", "Weights_SHA256", "x"]),
            ["WEIGHTS_2", "WEIGHTS_2_2", "ARENA_BYTES_2", "WEIGHTS_SHA256_2", "X"]
        );
    }
}
