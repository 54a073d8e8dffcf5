//! `cargo xtask check-sched` end to end: the binary on valid, warning-only,
//! invalid and missing files.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

/// `tests/sched`, where the cases live; the binary runs from there so the
/// paths it prints are the ones in the golden files (`err/NAME.sched`).
fn cases() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../tests/sched")
}

fn check_sched(rel: &str) -> Output {
    Command::new(env!("CARGO_BIN_EXE_xtask"))
        .args(["check-sched", rel])
        .current_dir(cases())
        .output()
        .expect("run xtask")
}

fn text(bytes: &[u8]) -> String {
    String::from_utf8(bytes.to_vec()).expect("utf-8 output")
}

#[test]
fn a_valid_schedule_prints_one_summary_line() {
    let out = check_sched("ok/validate_weights_mlp.sched");
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    assert_eq!(text(&out.stdout), "ok: weights_mlp: 4 thunks, 6 buffers, arena 192 bytes, weights 456 bytes\n");
    assert_eq!(text(&out.stderr), "");
}

#[test]
fn warnings_are_printed_before_the_summary() {
    let out = check_sched("err/validate_read_never_written.sched");
    assert_eq!(out.status.code(), Some(0));
    let golden = std::fs::read_to_string(cases().join("err/validate_read_never_written.stderr")).expect("golden");
    assert_eq!(text(&out.stderr), golden);
    assert_eq!(text(&out.stdout), "ok: t: 1 thunks, 3 buffers, arena 4096 bytes, weights 0 bytes\n");
}

#[test]
fn errors_are_rendered_and_exit_with_1() {
    for case in ["validate_view_past_end", "validate_many_errors", "syntax_many_errors"] {
        let out = check_sched(&format!("err/{case}.sched"));
        assert_eq!(out.status.code(), Some(1), "{case}");
        let golden = std::fs::read_to_string(cases().join(format!("err/{case}.stderr"))).expect("golden");
        assert_eq!(text(&out.stderr), golden, "{case}");
        assert_eq!(text(&out.stdout), "", "{case}");
    }
}

#[test]
fn a_missing_file_is_a_one_line_error() {
    let out = check_sched("ok/no_such_file.sched");
    assert_eq!(out.status.code(), Some(1));
    let err = text(&out.stderr);
    assert!(err.starts_with("error: cannot read ok/no_such_file.sched: "), "{err}");
    assert_eq!(err.lines().count(), 1, "{err}");
}

#[test]
fn usage_errors_do_not_panic() {
    let out = Command::new(env!("CARGO_BIN_EXE_xtask")).arg("check-sched").output().expect("run xtask");
    assert_eq!(out.status.code(), Some(2));
    assert!(!text(&out.stderr).contains("panicked"));
}
