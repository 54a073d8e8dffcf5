//! `cargo xtask conformance`: the ONNX backend node tests
//! (`onnx/backend/test/data/node`) of the supported ops, imported, run in
//! the reference interpreter and compared with the expected outputs at
//! ONNX's tolerances; a sample of the passing ones also as generated code.
//! See `docs/conformance.md`.

mod case;
mod compare;
mod generated;
mod tree;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use anyhow::Result;

use case::Outcome;

/// What to run.
#[derive(Debug)]
pub(crate) struct Options {
    /// Only these ops (empty: every op the importer supports, `rlx_onnx::SUPPORTED_OPS`).
    pub ops: Vec<String>,
    /// How many passing tests also run as generated code (0: none).
    pub generated: usize,
    /// The node-test directory (default: the cache, fetched when missing).
    pub data: Option<PathBuf>,
    /// List passing tests too, and unshortened reasons.
    pub verbose: bool,
    /// Every test of the tree, not only the single-node tests of `ops`.
    pub all: bool,
}

/// Runs the conformance tests and prints the report; exit status 1 only
/// when the generated code disagrees with the interpreter (the pass rate
/// itself is information).
pub(crate) fn conformance(root: &Path, opts: &Options) -> Result<ExitCode> {
    let dir = tree::locate(root, opts.data.as_deref())?;
    let given: Vec<String> = opts.ops.iter().map(|o| o.trim().to_string()).filter(|o| !o.is_empty()).collect();
    let ops: Vec<String> =
        if given.is_empty() { rlx_onnx::SUPPORTED_OPS.iter().map(|s| s.to_string()).collect() } else { given.clone() };
    let listing = if opts.all { tree::list_all(&dir)? } else { tree::list(&dir, &ops)? };
    let work = root.join("target").join("conformance").join("models");
    let outcomes: Vec<Outcome> =
        case::quiet_panics(|| listing.in_scope.iter().map(|t| case::run_test(t, &work, opts.verbose)).collect());

    print_per_op(&listing, &outcomes, opts.verbose);
    if opts.all {
        print_reasons(&outcomes);
    } else {
        print_untested_ops(&listing, &ops, !given.is_empty());
    }
    for (test, reason) in &listing.unreadable {
        println!("unreadable: {test}: {reason}");
    }
    print_out_of_scope(&listing, opts.verbose);
    let generated_ok = run_generated(root, &listing, &outcomes, opts.generated, opts.verbose);
    let passed = outcomes.iter().filter(|o| matches!(o, Outcome::Pass(_))).count();
    if opts.all {
        println!(
            "whole suite: {} tests: {passed} passed, {} failed, {} not expressible as .npy",
            outcomes.len() + listing.out_of_scope.len() + listing.unreadable.len(),
            outcomes.len() - passed + listing.unreadable.len(),
            listing.out_of_scope.len()
        );
    }
    println!("{passed} passed, {} failed", outcomes.len() - passed);
    Ok(if generated_ok { ExitCode::SUCCESS } else { ExitCode::FAILURE })
}

/// `Op: P/T passed` per op (sorted by name), each failing test under it.
fn print_per_op(listing: &tree::Listing, outcomes: &[Outcome], verbose: bool) {
    let mut by_op: BTreeMap<&str, Vec<(&str, &Outcome)>> = BTreeMap::new();
    for (test, outcome) in listing.in_scope.iter().zip(outcomes) {
        by_op.entry(test.op.as_str()).or_default().push((test.name.as_str(), outcome));
    }
    for (op, tests) in &by_op {
        let passed = tests.iter().filter(|(_, o)| matches!(o, Outcome::Pass(_))).count();
        println!("{op}: {passed}/{} passed", tests.len());
        for (name, outcome) in tests {
            match outcome {
                Outcome::Fail(reason) => println!("  {name}: {reason}"),
                Outcome::Pass(_) if verbose => println!("  {name}: ok"),
                Outcome::Pass(_) => {}
            }
        }
    }
}

/// `--all`: the failures grouped by reason, most frequent first (an
/// unsupported op is one reason per op; other reasons up to their first
/// `:`, so a shape or value mismatch counts under its output).
fn print_reasons(outcomes: &[Outcome]) {
    let mut by_reason: BTreeMap<String, usize> = BTreeMap::new();
    for o in outcomes {
        if let Outcome::Fail(reason) = o {
            *by_reason.entry(reason_key(reason)).or_default() += 1;
        }
    }
    let mut counts: Vec<(String, usize)> = by_reason.into_iter().collect();
    counts.sort_by(|a, b| b.1.cmp(&a.1).then(a.0.cmp(&b.0)));
    println!("failures by reason:");
    for (reason, n) in counts {
        println!("  {n:>4}  {reason}");
    }
}

/// The group of a failure reason: `unsupported ONNX op `Mod`` as is, an
/// element type the importer does not carry by its name, the rest up to
/// the node name or first `:`.
fn reason_key(reason: &str) -> String {
    let reason = reason.strip_prefix("data set 0: ").unwrap_or(reason);
    if let Some(at) = reason.find("has ONNX data type ") {
        let name = reason[at..].split(['(', ')']).nth(1).unwrap_or("?");
        return format!("element type {name} not carried");
    }
    if let Some(end) = reason.find(" (node `") {
        return reason[..end].to_string();
    }
    reason.split(':').next().unwrap_or(reason).trim().to_string()
}

/// Ops without an in-scope test, which the per-op lines cannot show: those
/// whose tests are all out of scope, and (for an explicit `--ops`) those
/// the tree has no single-node test of, likely a misspelling.
fn print_untested_ops(listing: &tree::Listing, ops: &[String], explicit: bool) {
    let has_in_scope = |op: &str| listing.in_scope.iter().any(|t| t.op == op);
    let has_out_of_scope = |op: &str| listing.out_of_scope.iter().any(|t| t.op == op);
    let mut only_out: Vec<&str> =
        ops.iter().map(String::as_str).filter(|o| !has_in_scope(o) && has_out_of_scope(o)).collect();
    only_out.sort_unstable();
    only_out.dedup();
    if !only_out.is_empty() {
        println!("only out-of-scope tests: {}", only_out.join(", "));
    }
    let mut none: Vec<&str> =
        ops.iter().map(String::as_str).filter(|o| !has_in_scope(o) && !has_out_of_scope(o)).collect();
    none.sort_unstable();
    none.dedup();
    if explicit && !none.is_empty() {
        println!("no single-node tests: {}", none.join(", "));
    }
}

/// One line: how many selected tests are out of scope, by element type
/// (each test under the first such type of its inputs, then outputs);
/// `verbose` lists them.
fn print_out_of_scope(listing: &tree::Listing, verbose: bool) {
    let mut by_type: BTreeMap<&str, usize> = BTreeMap::new();
    for t in &listing.out_of_scope {
        *by_type.entry(t.dtype.as_str()).or_default() += 1;
    }
    let mut counts: Vec<(&str, usize)> = by_type.into_iter().collect();
    // Most frequent first; the name breaks ties, so the line is stable.
    counts.sort_by(|a, b| b.1.cmp(&a.1).then(a.0.cmp(b.0)));
    let list: Vec<String> = counts.iter().map(|(t, n)| format!("{t} {n}")).collect();
    let n = listing.out_of_scope.len();
    let tests = if n == 1 { "test" } else { "tests" };
    if n == 0 {
        println!("out of scope: 0 tests");
    } else {
        println!("out of scope: {n} {tests} with other element types ({})", list.join(", "));
    }
    if verbose {
        for t in &listing.out_of_scope {
            println!("  {} ({}): {}", t.test, t.op, t.dtype);
        }
    }
}

/// The generated-code line (and a line per disagreeing test, per sampled
/// test when `verbose`); false when
/// the generated code disagrees with the interpreter or cannot be built.
fn run_generated(root: &Path, listing: &tree::Listing, outcomes: &[Outcome], count: usize, verbose: bool) -> bool {
    if count == 0 {
        println!("generated code: not checked (--generated 0)");
        return true;
    }
    let passing: Vec<(&str, &[case::PassedSet])> = listing
        .in_scope
        .iter()
        .zip(outcomes)
        .filter_map(|(t, o)| match o {
            Outcome::Pass(sets) => Some((t.name.as_str(), sets.as_slice())),
            Outcome::Fail(_) => None,
        })
        .collect();
    let sampled: Vec<(&str, &[case::PassedSet])> =
        generated::sample(passing.len(), count).into_iter().map(|i| passing[i]).collect();
    if sampled.is_empty() {
        println!("generated code: 0/0 sampled tests bit-identical to the interpreter (no test passed)");
        return true;
    }
    match generated::check(root, &sampled) {
        Ok(verdicts) => {
            let same = verdicts.iter().filter(|v| v.is_ok()).count();
            println!("generated code: {same}/{} sampled tests bit-identical to the interpreter", sampled.len());
            for ((name, _), verdict) in sampled.iter().zip(&verdicts) {
                match verdict {
                    Err(reason) => println!("  {name}: {reason}"),
                    Ok(()) if verbose => println!("  {name}: bit-identical"),
                    Ok(()) => {}
                }
            }
            same == sampled.len()
        }
        Err(e) => {
            println!("generated code: failed: {}", format!("{e:#}").replace('\n', " "));
            false
        }
    }
}

#[cfg(test)]
mod tests {
    use super::reason_key;

    #[test]
    fn failure_reasons_group_by_op_type_or_prefix() {
        assert_eq!(reason_key("unsupported ONNX op `Mod` (node `n`)"), "unsupported ONNX op `Mod`");
        assert_eq!(
            reason_key("input `x`: tensor `x`: has ONNX data type 11 (DOUBLE); supported: FLOAT"),
            "element type DOUBLE not carried"
        );
        assert_eq!(reason_key("data set 0: output 0: shape [2] != expected [3]"), "output 0");
    }
}
