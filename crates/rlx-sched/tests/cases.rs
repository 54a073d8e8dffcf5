//! Example schedules enumerated by outcome, and the format documentation.
//!
//! - `tests/sched/err/NAME.sched`: the rendered diagnostics of
//!   `check_source` must equal `NAME.stderr` next to it. `UPDATE_EXPECT=1`
//!   rewrites the goldens; review the diff.
//! - `tests/sched/ok/NAME.sched`: must be in canonical form (printing the
//!   parse gives the file back) and must validate without warnings.
//! - `docs/sched-format.md`: every thunk kind has an example line that
//!   parses, and the worked example is `ok/mlp_doc.sched` verbatim.

use std::fmt::Write as _;
use std::path::{Path, PathBuf};

use rlx_sched::print::print_thunk;
use rlx_sched::{check_source, parse, print, ThunkKind};

fn workspace_path(rel: &str) -> PathBuf {
    Path::new(concat!(env!("CARGO_MANIFEST_DIR"), "/../..")).join(rel)
}

/// The `.sched` files of a case folder, sorted by name.
fn sched_files(dir: &Path) -> Vec<PathBuf> {
    let mut files: Vec<PathBuf> = std::fs::read_dir(dir)
        .unwrap_or_else(|e| panic!("cannot read {}: {e}", dir.display()))
        .map(|e| e.expect("directory entry").path())
        .filter(|p| p.extension().is_some_and(|x| x == "sched"))
        .collect();
    files.sort();
    files
}

fn file_name(p: &Path) -> String {
    p.file_name().expect("file name").to_string_lossy().into_owned()
}

fn read(p: &Path) -> String {
    std::fs::read_to_string(p).unwrap_or_else(|e| panic!("cannot read {}: {e}", p.display()))
}

/// What `check_source` reports for a file, rendered as a user sees it.
fn rendered_diagnostics(path: &Path, shown_as: &str) -> Result<String, String> {
    let text = read(path);
    let dir = path.parent().expect("case folder");
    match check_source(&text, dir) {
        Err(diags) => Ok(diags.render(shown_as, &text)),
        Ok(checked) if !checked.warnings.is_empty() => Ok(checked.warnings.render(shown_as, &text)),
        Ok(_) => Err(format!("{shown_as}: expected diagnostics, but the schedule is valid")),
    }
}

#[test]
fn err_cases_match_their_goldens() {
    let dir = workspace_path("tests/sched/err");
    let update = std::env::var_os("UPDATE_EXPECT").is_some_and(|v| v == "1");
    let files = sched_files(&dir);
    assert!(files.len() >= 15, "expected at least 15 error cases in {}", dir.display());
    let mut failures = String::new();
    for path in &files {
        let shown_as = format!("err/{}", file_name(path));
        let actual = match rendered_diagnostics(path, &shown_as) {
            Ok(s) => s,
            Err(e) => {
                let _ = writeln!(failures, "{e}");
                continue;
            }
        };
        let golden = path.with_extension("stderr");
        let expected = std::fs::read_to_string(&golden).ok();
        if expected.as_deref() == Some(actual.as_str()) {
            continue;
        }
        if update {
            std::fs::write(&golden, &actual).unwrap_or_else(|e| panic!("cannot write {}: {e}", golden.display()));
            continue;
        }
        let expected = expected.unwrap_or_else(|| "(no golden file)\n".to_string());
        let _ = writeln!(
            failures,
            "{shown_as}: rendered diagnostics differ from {}\n--- expected\n{expected}--- actual\n{actual}",
            file_name(&golden)
        );
    }
    // A golden whose case was removed or renamed is stale.
    for entry in std::fs::read_dir(&dir).expect("err folder") {
        let p = entry.expect("directory entry").path();
        if p.extension().is_some_and(|x| x == "stderr") && !p.with_extension("sched").exists() {
            let _ = writeln!(failures, "{}: golden without a .sched case", file_name(&p));
        }
    }
    assert!(failures.is_empty(), "{failures}(run with UPDATE_EXPECT=1 to accept new output)");
}

#[test]
fn ok_cases_are_canonical() {
    let files = sched_files(&workspace_path("tests/sched/ok"));
    assert!(!files.is_empty());
    for path in &files {
        let text = read(path);
        let name = format!("ok/{}", file_name(path));
        let ast = parse(&text).unwrap_or_else(|d| panic!("{name} does not parse:\n{}", d.render(&name, &text)));
        let printed = print(&ast);
        assert_eq!(printed, text, "{name} is not in canonical form");
    }
}

#[test]
fn ok_cases_validate() {
    for path in sched_files(&workspace_path("tests/sched/ok")) {
        let text = read(&path);
        let name = format!("ok/{}", file_name(&path));
        match check_source(&text, path.parent().expect("case folder")) {
            Err(d) => panic!("{name} does not validate:\n{}", d.render(&name, &text)),
            // A case with warnings belongs in err/, which compares them.
            Ok(checked) => {
                assert!(checked.warnings.is_empty(), "{name} has warnings:\n{}", checked.warnings.render(&name, &text))
            }
        }
    }
}

/// The lines of fenced code blocks in a markdown text.
fn code_block_lines(markdown: &str) -> Vec<&str> {
    let mut in_block = false;
    let mut lines = Vec::new();
    for line in markdown.lines() {
        if line.trim_start().starts_with("```") {
            in_block = !in_block;
        } else if in_block {
            lines.push(line);
        }
    }
    lines
}

/// Parses one example thunk line inside the smallest header (parsing checks
/// only syntax and fields, so operands need no buffers) and checks that it
/// is written in canonical form.
fn parse_thunk_line(line: &str) -> Result<ThunkKind, String> {
    let src = format!(
        "rlx-sched 1\nmodel doc\narena 64 align 64\nmask_threshold 0.5\nmask_neg_inf -1000000000.0\nscore_skip 0.0\n\n{line}\n"
    );
    match parse(&src) {
        Ok(ast) if ast.thunks.len() == 1 => {
            let thunk = &ast.thunks[0].thunk;
            let canonical = print_thunk(thunk);
            if canonical == line {
                Ok(thunk.kind())
            } else {
                Err(format!("not in canonical form; write it as\n{canonical}"))
            }
        }
        Ok(_) => Err("no thunk parsed".to_string()),
        Err(d) => Err(d.render("doc", &src)),
    }
}

#[test]
fn docs_show_a_parsing_example_of_every_kind() {
    let docs = read(&workspace_path("docs/sched-format.md"));
    let lines = code_block_lines(&docs);
    let mut failures = String::new();
    for kind in ThunkKind::ALL {
        let prefix = format!("{} {{", kind.name());
        let examples: Vec<&str> = lines.iter().copied().filter(|l| l.starts_with(&prefix)).collect();
        if examples.is_empty() {
            let _ = writeln!(failures, "no example line of {} in docs/sched-format.md", kind.name());
        }
        for line in examples {
            match parse_thunk_line(line) {
                Ok(k) if k == *kind => {}
                Ok(k) => {
                    let _ = writeln!(failures, "example `{line}` parsed as {}", k.name());
                }
                Err(e) => {
                    let _ = writeln!(failures, "example `{line}` is rejected:\n{e}");
                }
            }
        }
    }
    assert!(failures.is_empty(), "{failures}");
}

#[test]
fn docs_worked_example_is_the_ok_case() {
    let docs = read(&workspace_path("docs/sched-format.md"));
    let example = read(&workspace_path("tests/sched/ok/mlp_doc.sched"));
    let block = format!("```text\n{example}```\n");
    assert!(
        docs.contains(&block),
        "docs/sched-format.md must contain tests/sched/ok/mlp_doc.sched verbatim in a ```text block"
    );
}
