//! `cargo xtask run` on a schedule with entry points: `--entry NAME` runs
//! that entry (default: the first), asks only for its inputs and writes
//! only its outputs; names that do not fit are one-line errors with exit
//! status 2, as the model CLI's bad arguments.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use rlx_sched::DType;

/// Two entries over one arena: `first` copies `a` to `ya`, `second` writes
/// `relu(b)` to `yb`.
const TWO_ENTRIES: &str = "rlx-sched 1\nmodel two\narena 256 align 64\nmask_threshold 0.5\n\
    mask_neg_inf -1e9\nscore_skip 0.0\n\n\
    input a: f32[4] @ arena+0\ninput b: f32[4] @ arena+64\n\
    output ya: f32[4] @ arena+128\noutput yb: f32[4] @ arena+192\n\n\
    entry first { inputs: [a], outputs: [ya] }\nCopy { src: a, dst: ya, len: 4 }\n\n\
    entry second { inputs: [b], outputs: [yb] }\nActivation { src: b, dst: yb, len: 4, act: relu }\n";

/// One unnamed entry: `y` is a copy of `x`.
const NO_ENTRIES: &str = "rlx-sched 1\nmodel one\narena 128 align 64\nmask_threshold 0.5\n\
    mask_neg_inf -1e9\nscore_skip 0.0\n\ninput x: f32[4] @ arena+0\noutput y: f32[4] @ arena+64\n\n\
    Copy { src: x, dst: y, len: 4 }\n";

const X: [f32; 4] = [1.0, -2.0, 3.5, -0.25];

/// A fresh directory holding both schedules and `x.npy` (the values [`X`]).
fn setup(test: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("rlx-xtask-run-{}-{test}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).expect("create temp dir");
    std::fs::write(dir.join("two.sched"), TWO_ENTRIES).unwrap();
    std::fs::write(dir.join("one.sched"), NO_ENTRIES).unwrap();
    let bytes: Vec<u8> = X.iter().flat_map(|v| v.to_le_bytes()).collect();
    rlx_runtime::npy::write_npy(&dir.join("x.npy"), DType::F32, &[4], &bytes).expect("write x.npy");
    dir
}

fn xtask(dir: &Path, args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_xtask"))
        .arg("run")
        .args(args)
        .current_dir(dir)
        .env_remove("RLX_NUM_THREADS")
        .output()
        .expect("run xtask")
}

fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

fn read_f32(path: &Path) -> Vec<f32> {
    let arr = rlx_runtime::npy::read_npy(path).expect("read output");
    assert_eq!((arr.dtype, arr.shape.as_slice()), (DType::F32, &[4usize][..]));
    arr.bytes.chunks_exact(4).map(|c| f32::from_le_bytes(c.try_into().unwrap())).collect()
}

/// The run fails with exit status 2 and `error: {want}` as its one line,
/// and writes no file.
fn bad_arg(dir: &Path, args: &[&str], want: &str) {
    let out = xtask(dir, args);
    assert_eq!(out.status.code(), Some(2), "{args:?}: {}", text(&out.stderr));
    assert_eq!(text(&out.stderr), format!("error: {want}\n"), "{args:?}");
    assert_eq!(text(&out.stdout), "", "{args:?}");
}

#[test]
fn the_first_entry_runs_by_default_and_needs_only_its_inputs() {
    let dir = setup("default");
    let out = xtask(&dir, &["two.sched", "--input", "a=x.npy", "--output", "ya=ya.npy"]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    assert_eq!(read_f32(&dir.join("ya.npy")), X);
    // Without --output: a summary of the entry's outputs only.
    let out = xtask(&dir, &["two.sched", "--input", "a=x.npy"]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    assert_eq!(text(&out.stdout), "ya: f32[4] (16 bytes)\n");
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn entry_runs_the_entry_named() {
    let dir = setup("named");
    let out = xtask(&dir, &["two.sched", "--entry", "second", "--input", "b=x.npy", "--output", "yb=yb.npy"]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    assert_eq!(read_f32(&dir.join("yb.npy")), X.map(|v| v.max(0.0)));
    let out = xtask(&dir, &["two.sched", "--entry", "second", "--input", "b=x.npy"]);
    assert_eq!(text(&out.stdout), "yb: f32[4] (16 bytes)\n");
    // The first entry named explicitly is the default.
    let out = xtask(&dir, &["two.sched", "--entry", "first", "--input", "a=x.npy", "--output", "ya=ya.npy"]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    assert_eq!(read_f32(&dir.join("ya.npy")), X);
    // A schedule without entry lines runs whole without --entry.
    let out = xtask(&dir, &["one.sched", "--input", "x=x.npy", "--output", "y=y.npy"]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    assert_eq!(read_f32(&dir.join("y.npy")), X);
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn another_entrys_inputs_and_outputs_are_errors() {
    let dir = setup("other");
    bad_arg(
        &dir,
        &["two.sched", "--entry", "second", "--input", "b=x.npy", "--output", "ya=ya.npy"],
        "output `ya` is written by entry `first`, not by entry `second` (pass --entry first)",
    );
    bad_arg(
        &dir,
        &["two.sched", "--input", "a=x.npy", "--input", "b=x.npy"],
        "input `b` is read by entry `second`, not by entry `first` (pass --entry second)",
    );
    bad_arg(&dir, &["two.sched", "--entry", "second"], "missing input `b`: expected f32[4] (pass --input b=PATH.npy)");
    bad_arg(
        &dir,
        &["two.sched", "--input", "a=x.npy", "--output", "z=z.npy"],
        "no output named `z`; the outputs of entry `first` are: ya",
    );
    bad_arg(&dir, &["one.sched", "--input", "z=x.npy"], "no input named `z`; the inputs of the schedule are: x");
    assert!(!dir.join("ya.npy").exists() && !dir.join("z.npy").exists());
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn an_unknown_entry_is_an_error_listing_the_entries() {
    let dir = setup("unknown");
    bad_arg(
        &dir,
        &["two.sched", "--entry", "third", "--input", "a=x.npy"],
        "no entry named `third`; the schedule's entries are: first, second",
    );
    bad_arg(
        &dir,
        &["one.sched", "--entry", "first", "--input", "x=x.npy"],
        "no entry named `first`: the schedule has no `entry` lines",
    );
    let _ = std::fs::remove_dir_all(&dir);
}
