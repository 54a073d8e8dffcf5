//! The differential run cases, `tests/sched/run/*.sched`, checked at the
//! schedule level (the `rlx-tests` crate compiles and runs them):
//!
//! - each one is in canonical form, validates, and has no warnings (a run
//!   case that reads never-written bytes would compare zeros with zeros and
//!   prove nothing);
//! - each is named `<kind>_<variant>.sched` after a thunk kind it uses;
//! - every thunk kind appears in at least [`MIN_CASES_PER_KIND`] of them.
//!
//! Every test collects all failures before failing, so one run lists every
//! case to fix.

use std::collections::{BTreeMap, BTreeSet};
use std::fmt::Write as _;
use std::path::{Path, PathBuf};

use rlx_sched::{check_source, parse, print, ThunkKind};

/// How many run cases must use each thunk kind.
const MIN_CASES_PER_KIND: usize = 3;

fn run_dir() -> PathBuf {
    Path::new(concat!(env!("CARGO_MANIFEST_DIR"), "/../../tests/sched/run")).to_path_buf()
}

/// The run cases, sorted by name.
fn run_cases() -> Vec<PathBuf> {
    let dir = run_dir();
    let mut files: Vec<PathBuf> = std::fs::read_dir(&dir)
        .unwrap_or_else(|e| panic!("cannot read {}: {e}", dir.display()))
        .map(|e| e.expect("directory entry").path())
        .filter(|p| p.extension().is_some_and(|x| x == "sched"))
        .collect();
    files.sort();
    assert!(!files.is_empty(), "no run cases in {}", dir.display());
    files
}

fn shown(p: &Path) -> String {
    format!("run/{}", p.file_name().expect("file name").to_string_lossy())
}

fn read(p: &Path) -> String {
    std::fs::read_to_string(p).unwrap_or_else(|e| panic!("cannot read {}: {e}", p.display()))
}

/// The thunk kinds a case uses, or its parse errors rendered.
fn kinds_of(path: &Path) -> Result<BTreeSet<ThunkKind>, String> {
    let text = read(path);
    let ast = parse(&text).map_err(|d| d.render(&shown(path), &text))?;
    Ok(ast.thunks.iter().map(|t| t.thunk.kind()).collect())
}

/// A kind's name in file names: `SgemmF16` is `sgemm_f16`, `TopKI64`
/// is `top_ki64`, `FusedResidualLN` is `fused_residual_ln` (an
/// underscore before each capital that follows a lower-case letter or a
/// digit, as the interpreter's function names).
fn snake(kind: ThunkKind) -> String {
    let mut out = String::new();
    let mut prev: Option<char> = None;
    for c in kind.name().chars() {
        if c.is_ascii_uppercase() && prev.is_some_and(|p| p.is_ascii_lowercase() || p.is_ascii_digit()) {
            out.push('_');
        }
        out.push(c.to_ascii_lowercase());
        prev = Some(c);
    }
    out
}

#[test]
fn snake_names_follow_the_interpreter_functions() {
    assert_eq!(snake(ThunkKind::Sgemm), "sgemm");
    assert_eq!(snake(ThunkKind::SgemmT), "sgemm_t");
    assert_eq!(snake(ThunkKind::SgemmBf16), "sgemm_bf16");
    assert_eq!(snake(ThunkKind::TopKI64), "top_ki64");
    assert_eq!(snake(ThunkKind::FusedResidualLN), "fused_residual_ln");
    assert_eq!(snake(ThunkKind::Conv2D), "conv2_d");
    assert_eq!(snake(ThunkKind::TopK), "top_k");
}

/// Where a file and its canonical form first differ, for the message.
fn first_difference(text: &str, canonical: &str) -> String {
    match text.lines().zip(canonical.lines()).enumerate().find(|(_, (a, b))| a != b) {
        Some((i, (a, b))) => format!("first difference at line {}:\n  file:      {a}\n  canonical: {b}", i + 1),
        None => format!("{} lines vs {} canonical lines", text.lines().count(), canonical.lines().count()),
    }
}

#[test]
fn run_cases_are_canonical_and_validate_without_warnings() {
    let mut failures = String::new();
    let files = run_cases();
    for path in &files {
        let name = shown(path);
        let text = read(path);
        let ast = match parse(&text) {
            Ok(ast) => ast,
            Err(d) => {
                let _ = writeln!(failures, "{name} does not parse:\n{}", d.render(&name, &text));
                continue;
            }
        };
        let printed = print(&ast);
        if printed != text {
            let _ = writeln!(failures, "{name} is not in canonical form, {}", first_difference(&text, &printed));
        }
        match check_source(&text, path.parent().expect("case folder")) {
            Err(d) => {
                let _ = writeln!(failures, "{name} does not validate:\n{}", d.render(&name, &text));
            }
            Ok(checked) if !checked.warnings.is_empty() => {
                let _ = writeln!(failures, "{name} has warnings:\n{}", checked.warnings.render(&name, &text));
            }
            Ok(_) => {}
        }
    }
    assert!(failures.is_empty(), "{} run case(s) checked, failures:\n{failures}", files.len());
}

#[test]
fn run_cases_are_named_after_a_kind_they_use() {
    let mut failures = String::new();
    for path in run_cases() {
        let stem = path.file_stem().expect("file stem").to_string_lossy().into_owned();
        // A case that does not parse is reported by the test above.
        let Ok(kinds) = kinds_of(&path) else { continue };
        // The longest kind name the stem starts with, so that `sgemm_t_ta`
        // names `SgemmT` and `sgemm_tail` names `Sgemm`.
        let named = ThunkKind::ALL
            .iter()
            .filter(|k| stem.starts_with(&format!("{}_", snake(**k))))
            .max_by_key(|k| snake(**k).len());
        match named {
            Some(k) if kinds.contains(k) => {}
            Some(k) => {
                let _ = writeln!(failures, "{}: named after {} but does not use it", shown(&path), k.name());
            }
            None => {
                let _ = writeln!(failures, "{}: not named `<kind>_<variant>.sched`", shown(&path));
            }
        }
    }
    assert!(failures.is_empty(), "{failures}");
}

#[test]
fn every_kind_appears_in_enough_run_cases() {
    let mut count: BTreeMap<ThunkKind, usize> = ThunkKind::ALL.iter().map(|k| (*k, 0)).collect();
    let mut failures = String::new();
    for path in run_cases() {
        match kinds_of(&path) {
            Ok(kinds) => {
                for k in kinds {
                    *count.entry(k).or_default() += 1;
                }
            }
            Err(e) => {
                let _ = writeln!(failures, "{e}");
            }
        }
    }
    for (kind, n) in &count {
        if *n < MIN_CASES_PER_KIND {
            let _ = writeln!(failures, "{} appears in {n} run case(s), fewer than {MIN_CASES_PER_KIND}", kind.name());
        }
    }
    assert!(failures.is_empty(), "{failures}");
}
