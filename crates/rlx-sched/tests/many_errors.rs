//! Files with very many errors: parsing, validating and rendering stay
//! linear in the input, and rendering shows the first diagnostics and one
//! `and N more errors` line (`docs/reliability.md`).
//!
//! The time caps are hang guards only, far above what these take.

use std::path::Path;
use std::time::{Duration, Instant};

use rlx_sched::{check_source, diag::MAX_RENDERED};

const HEADER: &str =
    "rlx-sched 1\nmodel m\narena 4096000 align 64\nmask_threshold 0.5\nmask_neg_inf -1e9\nscore_skip 0.0\n";
const GUARD: Duration = Duration::from_secs(20);

/// Checks and renders `text`; returns the rendering and asserts it shows
/// at most [`MAX_RENDERED`] diagnostics and counts exactly `errors` errors.
fn check_many(name: &str, text: &str, errors: usize) -> String {
    let t0 = Instant::now();
    let diags = check_source(text, Path::new(".")).expect_err("invalid");
    let out = diags.render("f.sched", text);
    assert!(t0.elapsed() < GUARD, "{name}: {:?}", t0.elapsed());
    assert_eq!(diags.0.iter().filter(|d| d.is_error()).count(), errors, "{name}");
    let shown = out.lines().filter(|l| l.starts_with("f.sched")).count();
    assert_eq!(shown, MAX_RENDERED, "{name}");
    let last = out.lines().last().unwrap_or_default();
    assert_eq!(last, format!("and {} more errors", errors - MAX_RENDERED), "{name}");
    // The shown lines are short even when the file is one huge line.
    assert!(out.len() < 200 * MAX_RENDERED * 8, "{name}: {} bytes", out.len());
    out
}

#[test]
fn many_unknown_kinds() {
    check_many("kinds", &format!("{HEADER}{}", "Bogus {}\n".repeat(100_000)), 100_000);
}

#[test]
fn many_unknown_fields_on_one_line() {
    let fields: Vec<String> = (0..100_000).map(|i| format!("bogus{i}: 1")).collect();
    let text = format!("{HEADER}Nop {{ {} }}\n", fields.join(", "));
    let out = check_many("fields", &text, 100_000);
    assert!(out.contains("...bogus"), "long lines are cut");
}

#[test]
fn many_repeated_fields_on_one_line() {
    let text = format!("{HEADER}Copy {{ src: x, dst: y, len: 1, {} }}\n", vec!["len: 1"; 100_000].join(", "));
    check_many("repeated", &text, 100_000);
}

#[test]
fn many_overlapping_inputs() {
    let text =
        format!("{HEADER}{}", (0..100_000).map(|i| format!("input x{i}: f32[4] @ arena+0\n")).collect::<String>());
    // Every pair overlaps; the first 10,000 pairs are reported, then one
    // error says there are more.
    let out = check_many("overlaps", &text, 10_001);
    assert!(out.starts_with("f.sched: error: more than 10000 pairs of buffers overlap"), "{}", &out[..200]);
}

#[test]
fn many_unknown_operands_among_many_buffers() {
    let n = 50_000;
    let buffers: String = (0..n).map(|i| format!("scratch b{i}: f32[4] @ arena+{}\n", 16 * i)).collect();
    let thunks: String = (0..n).map(|i| format!("Copy {{ src: c{i}, dst: b{i}, len: 4 }}\n")).collect();
    let out = check_many("operands", &format!("{HEADER}{buffers}{thunks}"), n);
    // The first ones still get their hint.
    assert!(out.contains("help: did you mean `b0`?"), "{}", &out[..600]);
}

#[test]
fn many_reads_before_a_distant_write() {
    let n = 50_000;
    let buffers: String = std::iter::once("scratch s: f32[4] @ arena+0\n".to_string())
        .chain((0..n).map(|i| format!("scratch t{i}: f32[4] @ arena+{}\n", 64 + 16 * i)))
        .collect();
    let thunks: String = (0..n).map(|i| format!("Copy {{ src: s, dst: t{i}, len: 4 }}\n")).collect();
    let text = format!("{HEADER}{buffers}{thunks}Copy {{ src: t0, dst: s, len: 4 }}\n");
    let out = check_many("reads", &text, n);
    assert!(out.contains(&format!("the thunk on line {} writes them later", 8 + 2 * n)), "{}", &out[..600]);
}
