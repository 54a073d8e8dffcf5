//! The validator's side of the case folders: an `ok/` case is valid *and*
//! has no warnings (a warning-only schedule is valid, so its case lives in
//! `err/` with the warning as its golden output, see `cases.rs`).

use std::path::{Path, PathBuf};

use rlx_sched::check_source;

fn ok_cases() -> Vec<PathBuf> {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../tests/sched/ok");
    let mut files: Vec<PathBuf> = std::fs::read_dir(&dir)
        .unwrap_or_else(|e| panic!("cannot read {}: {e}", dir.display()))
        .map(|e| e.expect("directory entry").path())
        .filter(|p| p.extension().is_some_and(|x| x == "sched"))
        .collect();
    files.sort();
    files
}

#[test]
fn ok_cases_have_no_warnings() {
    let files = ok_cases();
    assert!(!files.is_empty());
    for path in files {
        let text = std::fs::read_to_string(&path).expect("read ok case");
        let name = format!("ok/{}", path.file_name().expect("file name").to_string_lossy());
        match check_source(&text, path.parent().expect("case folder")) {
            Ok(c) => assert!(c.warnings.is_empty(), "{name} has warnings:\n{}", c.warnings.render(&name, &text)),
            Err(d) => panic!("{name} does not validate:\n{}", d.render(&name, &text)),
        }
    }
}
