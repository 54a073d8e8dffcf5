//! The C libraries end to end: `mlp`'s built once with `build`, then
//! driven from C (`tests/c/mlp.c`, compiled with the system `cc`) and from
//! Python through `ctypes` (`tests/c/mlp.py`) on the model's samples;
//! `bert_tiny`'s (integer and float inputs) from a C program running two
//! handles on two threads (`tests/c/bert_tiny.c`). Each output is compared
//! with the numpy reference in `models/NAME/expected/`.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::OnceLock;

use super::{build, lib_target_dir, Library};

fn root() -> PathBuf {
    crate::root()
}

/// The library, built once per test binary (both tests use it).
fn library() -> &'static Library {
    static LIB: OnceLock<Library> = OnceLock::new();
    LIB.get_or_init(|| build(&root(), "mlp").unwrap_or_else(|e| panic!("building libmlp.a: {e:#}")))
}

/// Fails, saying what to install, when `tool` is not on PATH: these tests
/// never pass without running (in CI, CI=true, or anywhere else).
fn require(tool: &str, what: &str) {
    let found = Command::new(tool).arg("--version").output().is_ok_and(|o| o.status.success());
    let ci = std::env::var("CI").is_ok_and(|v| v == "true");
    assert!(found, "`{tool}` is not on PATH{}: the C library test needs {what}", if ci { " in CI" } else { "" });
}

fn run(cmd: &mut Command) -> String {
    let out = cmd.output().unwrap_or_else(|e| panic!("running {cmd:?}: {e}"));
    let text = format!("{}{}", String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr));
    assert!(out.status.success(), "{cmd:?} failed:\n{text}");
    text
}

/// The samples as raw little-endian f32 (what the C and Python drivers
/// read), and how many there are.
fn write_samples(dir: &Path) -> (PathBuf, usize) {
    let x = rlx_runtime::npy::read_npy(&root().join("models/mlp/samples/x.npy")).unwrap();
    assert_eq!(x.dtype, rlx_runtime::DType::F32);
    let path = dir.join("x.f32");
    std::fs::write(&path, &x.bytes).unwrap();
    (path, x.shape[0])
}

/// Compares the drivers' raw f32 outputs with `expected/probs.npy` with the
/// model test's bound (models/mlp/tests/model.rs: 1e-5 absolute).
fn check_outputs(out: &Path, count: usize) {
    check_against(out, count, "models/mlp/expected/probs.npy", 1e-5);
}

/// Compares raw f32 outputs with the `.npy` reference at `expected`
/// (relative to the workspace), `count` samples, within `bound` absolute.
fn check_against(out: &Path, count: usize, expected: &str, bound: f32) {
    let exp = rlx_runtime::npy::read_npy(&root().join(expected)).unwrap();
    assert_eq!(exp.shape[0], count);
    let got = std::fs::read(out).unwrap();
    assert_eq!(got.len(), exp.bytes.len(), "output length");
    let floats =
        |b: &[u8]| -> Vec<f32> { b.chunks_exact(4).map(|c| f32::from_le_bytes(c.try_into().unwrap())).collect() };
    for (j, (g, e)) in floats(&got).iter().zip(floats(&exp.bytes)).enumerate() {
        assert!((g - e).abs() <= bound, "{expected}[{j}]: got {g}, expected {e}");
    }
}

fn work_dir(test: &str) -> PathBuf {
    let dir = lib_target_dir(&root()).join("tests").join(test);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

#[test]
fn a_c_program_runs_the_static_library() {
    require("cc", "a C compiler");
    let lib = library();
    let dir = work_dir("c");
    let exe = dir.join("mlp_c");
    let include = lib.header.parent().unwrap();
    // Only the libraries the header names: the archive holds OpenBLAS and
    // the Rust runtime; the C driver adds libgcc_s, Rust's unwinder.
    run(Command::new("cc")
        .args(["-std=c99", "-Wall", "-Wextra", "-Werror", "-o"])
        .arg(&exe)
        .arg("-I")
        .arg(include)
        .arg(root().join("tests/c/mlp.c"))
        .arg(&lib.archive)
        .args(["-lpthread", "-ldl", "-lm"]));
    let needed = run(Command::new("readelf").arg("-d").arg(&exe));
    for line in needed.lines().filter(|l| l.contains("(NEEDED)")) {
        let allowed = ["libc.so", "libm.so", "libpthread.so", "libdl.so", "libgcc_s.so", "ld-linux"];
        assert!(allowed.iter().any(|a| line.contains(a)), "unexpected dynamic dependency: {line}");
    }
    let (samples, count) = write_samples(&dir);
    let out = dir.join("probs.f32");
    run(Command::new(&exe).arg(&samples).arg(&out).arg(count.to_string()));
    check_outputs(&out, count);
}

#[test]
fn python_runs_the_library_through_ctypes() {
    require("cc", "a C compiler (to link the archive into a shared object)");
    require("python3", "python3");
    let lib = library();
    let dir = work_dir("python");
    // ctypes loads shared objects only: link the archive into one, keeping
    // every function the header declares (-u) and nothing else, so none
    // of OpenBLAS's LAPACK objects (which need libgfortran) come along.
    let header = std::fs::read_to_string(&lib.header).unwrap();
    let so = dir.join("libmlp.so");
    let mut cc = Command::new("cc");
    cc.arg("-shared").arg("-o").arg(&so);
    for f in declared_functions(&header) {
        cc.arg(format!("-Wl,-u,{f}"));
    }
    run(cc.arg(&lib.archive).args(["-lpthread", "-ldl", "-lm"]));
    let (samples, count) = write_samples(&dir);
    let out = dir.join("probs.f32");
    run(Command::new("python3")
        .arg(root().join("tests/c/mlp.py"))
        .arg(&so)
        .arg(&lib.header)
        .arg(&samples)
        .arg(&out)
        .arg(count.to_string()));
    check_outputs(&out, count);
}

/// `bert_tiny`'s library from C, two handles on two threads: every
/// sample's hidden states within the model test's bound
/// (models/bert_tiny/tests/model.rs: 1e-4 absolute).
#[test]
fn two_threads_run_bert_tinys_library_in_c() {
    require("cc", "a C compiler");
    let lib = build(&root(), "bert_tiny").unwrap_or_else(|e| panic!("building libbert_tiny.a: {e:#}"));
    let dir = work_dir("bert_tiny_c");
    let exe = dir.join("bert_tiny_c");
    run(Command::new("cc")
        .args(["-std=c99", "-Wall", "-Wextra", "-Werror", "-o"])
        .arg(&exe)
        .arg("-I")
        .arg(lib.header.parent().unwrap())
        .arg(root().join("tests/c/bert_tiny.c"))
        .arg(&lib.archive)
        .args(["-lpthread", "-ldl", "-lm"]));
    let read = |name: &str| rlx_runtime::npy::read_npy(&root().join("models/bert_tiny/samples").join(name)).unwrap();
    let (ids, mask) = (read("input_ids.npy"), read("attention_mask.npy"));
    assert_eq!((ids.dtype, mask.dtype), (rlx_runtime::DType::I64, rlx_runtime::DType::F32));
    let count = ids.shape[0];
    let (ids_path, mask_path, out) = (dir.join("ids.i64"), dir.join("mask.f32"), dir.join("hidden.f32"));
    std::fs::write(&ids_path, &ids.bytes).unwrap();
    std::fs::write(&mask_path, &mask.bytes).unwrap();
    run(Command::new(&exe).arg(&ids_path).arg(&mask_path).arg(&out).arg(count.to_string()));
    check_against(&out, count, "models/bert_tiny/expected/hidden.npy", 1e-4);
}

/// The `mlp_...(` names of a header's declarations.
fn declared_functions(header: &str) -> Vec<String> {
    let names: Vec<String> = header
        .lines()
        .filter(|l| !l.starts_with(['#', '/', ' ']) && l.ends_with(");"))
        .filter_map(|l| {
            let open = l.find('(')?;
            let start = l[..open].rfind([' ', '*']).map_or(0, |i| i + 1);
            Some(l[start..open].to_string())
        })
        .collect();
    assert!(names.iter().any(|n| n == "mlp_run"), "{names:?}");
    names
}
