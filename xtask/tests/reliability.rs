//! Bad input to `cargo xtask check-sched`, `gen` and `run`: a clear error
//! (or warning), never a hang, an abort or a panic (`docs/reliability.md`).
//!
//! Every command runs under a 20-second guard: a hang guard only, far
//! above what any of these take.

use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

const GUARD: Duration = Duration::from_secs(20);

/// A fresh directory for one test under the system temp dir.
fn temp_dir(test: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("rlx-xtask-reliability-{}-{test}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).expect("create temp dir");
    dir
}

/// Runs `cargo xtask ARGS` in `dir` with `env`, killed after [`GUARD`].
fn xtask_env(dir: &Path, args: &[&str], env: &[(&str, &str)]) -> Output {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_xtask"));
    cmd.args(args).current_dir(dir).env_remove("RLX_NUM_THREADS").stdout(Stdio::piped()).stderr(Stdio::piped());
    for (k, v) in env {
        cmd.env(k, v);
    }
    let mut child = cmd.spawn().expect("run xtask");
    let start = Instant::now();
    // Drain the pipes on threads so a chatty child cannot block on them.
    let mut stdout = child.stdout.take().expect("stdout");
    let mut stderr = child.stderr.take().expect("stderr");
    let out = std::thread::spawn(move || {
        let mut v = Vec::new();
        let _ = std::io::Read::read_to_end(&mut stdout, &mut v);
        v
    });
    let err = std::thread::spawn(move || {
        let mut v = Vec::new();
        let _ = std::io::Read::read_to_end(&mut stderr, &mut v);
        v
    });
    let status = loop {
        if let Some(status) = child.try_wait().expect("wait") {
            break status;
        }
        if start.elapsed() > GUARD {
            let _ = child.kill();
            panic!("xtask {args:?} still running after {GUARD:?}");
        }
        std::thread::sleep(Duration::from_millis(20));
    };
    Output { status, stdout: out.join().expect("stdout"), stderr: err.join().expect("stderr") }
}

fn xtask(dir: &Path, args: &[&str]) -> Output {
    xtask_env(dir, args, &[])
}

fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

const HEADER: &str =
    "rlx-sched 1\nmodel m\narena 4096 align 64\nmask_threshold 0.5\nmask_neg_inf -1e9\nscore_skip 0.0\n";

/// `input x: f32[4]`, `output y = copy of x`, under `header`.
fn copy_model(header: &str) -> String {
    format!("{header}\ninput x: f32[4] @ arena+0\noutput y: f32[4] @ arena+64\n\nCopy {{ src: x, dst: y, len: 4 }}\n")
}

/// A `.npy` file of four f32 values.
fn write_x(path: &Path) {
    let bytes: Vec<u8> = [1.0f32, -2.0, 3.5, 0.25].iter().flat_map(|v| v.to_le_bytes()).collect();
    rlx_runtime::npy::write_npy(path, rlx_sched::DType::F32, &[4], &bytes).expect("write x.npy");
}

#[test]
fn a_hundred_thousand_errors_print_the_first_hundred_quickly() {
    let dir = temp_dir("many");
    std::fs::write(dir.join("kinds.sched"), format!("{HEADER}{}", "Bogus {}\n".repeat(100_000))).unwrap();
    let fields: Vec<String> = (0..100_000).map(|i| format!("bogus{i}: 1")).collect();
    std::fs::write(dir.join("fields.sched"), format!("{HEADER}Nop {{ {} }}\n", fields.join(", "))).unwrap();
    for file in ["kinds.sched", "fields.sched"] {
        for args in
            [vec!["check-sched", file], vec!["gen", file, "-o", "out.rs"], vec!["run", file, "--input", "x=x.npy"]]
        {
            let t0 = Instant::now();
            let out = xtask(&dir, &args);
            let elapsed = t0.elapsed();
            let err = text(&out.stderr);
            assert_eq!(out.status.code(), Some(1), "{args:?}: {}", &err[..err.len().min(2000)]);
            let shown = err.matches(": error: ").count();
            assert!((1..=101).contains(&shown), "{args:?}: {shown} errors rendered");
            assert_eq!(err.lines().last(), Some("and 99900 more errors"), "{args:?}");
            // Long lines are cut: the whole output stays small.
            assert!(err.len() < 100_000, "{args:?}: {} bytes of output", err.len());
            eprintln!("{args:?}: {elapsed:?}");
        }
    }
    assert!(!dir.join("out.rs").exists());
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn an_arena_too_large_to_allocate_is_an_error_not_an_abort() {
    let dir = temp_dir("arena");
    // 2^62 bytes: valid (under isize::MAX), more than any machine has, so
    // the allocation fails on every machine (a 64 GiB one might succeed).
    let bytes = 1u64 << 62;
    std::fs::write(dir.join("big.sched"), copy_model(&HEADER.replace("arena 4096", &format!("arena {bytes}"))))
        .unwrap();
    write_x(&dir.join("x.npy"));
    let out = xtask(&dir, &["check-sched", "big.sched"]);
    assert_eq!(out.status.code(), Some(0));
    let err = text(&out.stderr);
    assert!(
        err.starts_with(&format!(
            "big.sched:3:7: warning: arena of {bytes} bytes is larger than 4294967296 bytes: running the model needs \
             that much memory at start-up"
        )),
        "{err}"
    );
    assert!(err.contains("--max-arena BYTES"), "{err}");
    let out = xtask(&dir, &["check-sched", "--max-arena", &bytes.to_string(), "big.sched"]);
    assert_eq!((out.status.code(), text(&out.stderr)), (Some(0), String::new()));
    // `gen` allocates nothing; `run` names the bytes and exits 1.
    let out = xtask(&dir, &["gen", "big.sched", "-o", "big.rs"]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let out = xtask(&dir, &["run", "big.sched", "--input", "x=x.npy"]);
    assert_eq!(out.status.code(), Some(1));
    assert_eq!(text(&out.stderr), format!("error: cannot allocate {bytes} bytes (4.0 EiB) of memory for the arena\n"));
    let _ = std::fs::remove_dir_all(&dir);
}

/// A schedule whose weights line names `path` (the sha256 is never reached).
fn weights_model(path: &str) -> String {
    copy_model(
        &HEADER.replace("mask_threshold", &format!("weights \"{path}\" sha256 \"{}\"\nmask_threshold", "0".repeat(64))),
    )
}

#[test]
fn weights_that_never_end_or_leave_the_directory_are_refused() {
    let dir = temp_dir("weights");
    let sub = dir.join("a/b/c/d");
    std::fs::create_dir_all(&sub).unwrap();
    write_x(&sub.join("x.npy"));
    std::fs::write(sub.join("zero.sched"), weights_model("../../../../dev/zero")).unwrap();
    for args in [
        vec!["check-sched", "zero.sched"],
        vec!["gen", "zero.sched", "-o", "out.rs"],
        vec!["run", "zero.sched", "--input", "x=x.npy"],
    ] {
        let out = xtask(&sub, &args);
        assert_eq!(out.status.code(), Some(1), "{args:?}");
        let err = text(&out.stderr);
        assert!(
            err.contains("error: weights path `../../../../dev/zero` leaves the directory of the .sched file"),
            "{args:?}: {err}"
        );
        assert!(err.contains("--allow-outside-weights"), "{err}");
    }
    // Allowed to leave: still not a regular file. (The temp dir may be
    // deeper than four levels, so name /dev/zero through a link.)
    #[cfg(unix)]
    {
        std::os::unix::fs::symlink("/dev/zero", dir.join("a/zero")).unwrap();
        std::fs::write(sub.join("zero.sched"), weights_model("../../../zero")).unwrap();
        for cmd in [&["check-sched"][..], &["gen", "-o", "out.rs"], &["run"]] {
            let args = [cmd, &["--allow-outside-weights", "zero.sched"]].concat();
            let out = xtask(&sub, &args);
            assert_eq!(out.status.code(), Some(1), "{args:?}");
            let err = text(&out.stderr);
            assert!(err.contains("weights path `../../../zero` is a character device, not a regular file"), "{err}");
        }
        // A FIFO beside the schedule: refused before it is opened (opening
        // it would wait for a writer forever).
        let fifo = sub.join("fifo");
        if Command::new("mkfifo").arg(&fifo).status().is_ok_and(|s| s.success()) {
            std::fs::write(sub.join("fifo.sched"), weights_model("fifo")).unwrap();
            let out = xtask(&sub, &["check-sched", "fifo.sched"]);
            assert_eq!(out.status.code(), Some(1));
            assert!(text(&out.stderr).contains("weights path `fifo` is a FIFO, not a regular file"));
            // The schedule itself: the same rule.
            let out = xtask(&sub, &["check-sched", "fifo"]);
            assert_eq!(text(&out.stderr), "error: cannot read fifo: it is a FIFO, not a regular file\n");
        }
        let out = xtask(&sub, &["check-sched", "/dev/zero"]);
        assert_eq!(text(&out.stderr), "error: cannot read /dev/zero: it is a character device, not a regular file\n");
    }
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn run_reports_bad_inputs_on_one_line() {
    let dir = temp_dir("run");
    std::fs::write(dir.join("m.sched"), copy_model(HEADER)).unwrap();
    write_x(&dir.join("x.npy"));
    let ok = xtask(&dir, &["run", "m.sched", "--input", "x=x.npy"]);
    assert_eq!(ok.status.code(), Some(0), "{}", text(&ok.stderr));
    let one_line = |args: &[&str], env: &[(&str, &str)], want: &str| {
        let out = xtask_env(&dir, args, env);
        assert_eq!(out.status.code(), Some(1), "{args:?}");
        assert_eq!(text(&out.stderr), format!("error: {want}\n"), "{args:?} {env:?}");
    };
    // An argument that does not fit the schedule exits 2, as the model CLI.
    let out = xtask(&dir, &["run", "m.sched", "--input", "x=x.npy", "--input", "x=x.npy"]);
    assert_eq!((out.status.code(), text(&out.stderr)), (Some(2), "error: input `x` is given twice\n".to_string()));
    // The OS's reason once, not twice.
    let out = xtask(&dir, &["run", "m.sched", "--input", "x=missing.npy"]);
    let err = text(&out.stderr);
    assert!(err.starts_with("error: cannot read missing.npy: "), "{err}");
    assert_eq!(err.matches("os error").count(), 1, "{err}");
    assert_eq!(err.lines().count(), 1, "{err}");
    // A garbage header: one line.
    let mut bytes = std::fs::read(dir.join("x.npy")).unwrap();
    bytes[10..14].copy_from_slice(b"{'d?");
    std::fs::write(dir.join("garbage.npy"), bytes).unwrap();
    let out = xtask(&dir, &["run", "m.sched", "--input", "x=garbage.npy"]);
    let err = text(&out.stderr);
    assert!(err.starts_with("error: garbage.npy: not a valid .npy file: "), "{err}");
    assert_eq!(err.lines().count(), 1, "{err}");
    // Thread counts, as the model CLI: 1 to 1024.
    for bad in ["0", "100000", "18446744073709551615"] {
        one_line(
            &["run", "m.sched", "--input", "x=x.npy", "--threads", bad],
            &[],
            &format!("--threads `{bad}` is out of range: give 1 to 1024 threads"),
        );
    }
    one_line(
        &["run", "m.sched", "--input", "x=x.npy"],
        &[("RLX_NUM_THREADS", "abc")],
        "RLX_NUM_THREADS `abc` is not a number: give 1 to 1024 threads",
    );
    one_line(
        &["run", "m.sched", "--input", "x=x.npy"],
        &[("RLX_NUM_THREADS", "0")],
        "RLX_NUM_THREADS `0` is out of range: give 1 to 1024 threads",
    );
    let out = xtask_env(&dir, &["run", "m.sched", "--input", "x=x.npy", "--threads", "2"], &[]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn a_schedule_without_outputs_is_a_warning() {
    let dir = temp_dir("outputs");
    let text_in = format!(
        "{HEADER}\ninput x: f32[4] @ arena+0\nscratch y: f32[4] @ arena+64\n\nCopy {{ src: x, dst: y, len: 4 }}\n"
    );
    std::fs::write(dir.join("m.sched"), text_in).unwrap();
    let out = xtask(&dir, &["check-sched", "m.sched"]);
    assert_eq!(out.status.code(), Some(0));
    let err = text(&out.stderr);
    assert!(
        err.starts_with(
            "m.sched:11:1: warning: the schedule has no output buffer: nothing its thunks compute can be read"
        ),
        "{err}"
    );
    let _ = std::fs::remove_dir_all(&dir);
}
