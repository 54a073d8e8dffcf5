//! `cargo xtask verify` end to end on the ONNX fixture `mlp_external.onnx`:
//! interpreter, generated code and onnxruntime (real, missing, or a fake
//! that answers wrongly), and a wrong-shaped `--input`.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::sync::{Mutex, MutexGuard};

use rlx_runtime::npy;
use rlx_sched::DType;

/// Every run imports into the same `target/verify/mlp_external/` and builds
/// the same generated crate: one at a time.
static SHARED_WORK_DIR: Mutex<()> = Mutex::new(());

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).parent().expect("workspace root").to_path_buf()
}

fn model() -> PathBuf {
    root().join("crates/rlx-onnx/tests/data/mlp_external.onnx")
}

/// A scratch directory of this test file, emptied first.
fn scratch(name: &str) -> PathBuf {
    let dir = root().join("target").join("verify-tests").join(name);
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).expect("create scratch dir");
    dir
}

/// Held for a whole test, so what it reads back under `target/verify/` is
/// its own run's.
fn exclusive() -> MutexGuard<'static, ()> {
    SHARED_WORK_DIR.lock().unwrap_or_else(|e| e.into_inner())
}

fn verify(args: &[&str], pythonpath: Option<&Path>) -> Output {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_xtask"));
    cmd.arg("verify").arg(model()).args(args);
    if let Some(p) = pythonpath {
        cmd.env("PYTHONPATH", p);
    }
    cmd.output().expect("run xtask")
}

fn text(bytes: &[u8]) -> String {
    String::from_utf8(bytes.to_vec()).expect("utf-8 output")
}

fn python_imports(module: &str) -> bool {
    Command::new("python3").args(["-c", &format!("import {module}")]).output().is_ok_and(|o| o.status.success())
}

/// A `probs` line of a section, e.g. `  probs: max abs err ...  PASS (tol 1e-4)`.
fn section_line<'a>(stdout: &'a str, header: &str) -> &'a str {
    let mut lines = stdout.lines().skip_while(|l| *l != header);
    assert_eq!(lines.next(), Some(header), "no `{header}` section in:\n{stdout}");
    lines.next().unwrap_or_else(|| panic!("nothing after `{header}` in:\n{stdout}"))
}

const SKIPPED: &str = "skipped: onnxruntime is not installed (pip install onnxruntime numpy)";

fn assert_bit_identical(stdout: &str) {
    assert_eq!(
        section_line(stdout, "generated vs interpreter (bit-identical)"),
        "  probs: bit-identical  PASS",
        "{stdout}"
    );
}

#[test]
fn the_mlp_fixture_agrees_with_onnxruntime() {
    let _shared = exclusive();
    // The default tolerance 1e-4 (see `a_given_input_is_used_as_is` for the
    // size of the real differences).
    let out = verify(&["--shape", "x=2,8"], None);
    let stdout = text(&out.stdout);
    assert_eq!(out.status.code(), Some(0), "{stdout}\n{}", text(&out.stderr));
    assert!(stdout.contains("input x: random f32[2, 8] (seed 0x7e575eed)"), "{stdout}");
    if python_imports("onnxruntime") {
        for header in ["interpreter vs onnxruntime", "generated vs onnxruntime"] {
            let line = section_line(&stdout, header);
            assert!(line.starts_with("  probs: max abs err ") && line.ends_with("  PASS (tol 1e-4)"), "{line}");
        }
    } else {
        assert!(stdout.contains(SKIPPED), "{stdout}");
    }
    assert_bit_identical(&stdout);
}

#[test]
fn a_given_input_is_used_as_is() {
    let _shared = exclusive();
    let dir = scratch("given");
    let values: Vec<f32> = (0..16).map(|i| i as f32 * 0.25 - 2.0).collect();
    let bytes: Vec<u8> = values.iter().flat_map(|v| v.to_le_bytes()).collect();
    let x = dir.join("x.npy");
    npy::write_npy(&x, DType::F32, &[2, 8], &bytes).expect("write x.npy");
    // 1e-5: probabilities below 1 from two f32 GEMMs of depth 8 and 16 and a
    // softmax differ from onnxruntime by a few ulps (about 1e-7) when the
    // summation order differs; 1e-5 still catches any real error.
    let out = verify(&["--shape", "x=2,8", "--input", &format!("x={}", x.display()), "--tol", "1e-5"], None);
    let stdout = text(&out.stdout);
    assert_eq!(out.status.code(), Some(0), "{stdout}\n{}", text(&out.stderr));
    assert!(!stdout.contains("random"), "{stdout}");
    let used = npy::read_npy(&root().join("target/verify/mlp_external/inputs/x.npy")).expect("read the input used");
    assert_eq!(used.bytes, bytes);
    if python_imports("onnxruntime") {
        assert!(section_line(&stdout, "interpreter vs onnxruntime").ends_with("  PASS (tol 1e-5)"), "{stdout}");
    }
    assert_bit_identical(&stdout);
}

#[test]
fn without_onnxruntime_it_says_so_and_still_compares_generated_code() {
    let _shared = exclusive();
    let dir = scratch("no_ort");
    std::fs::write(dir.join("onnxruntime.py"), "raise ImportError('hidden by the verify test')\n")
        .expect("write fake module");
    let out = verify(&["--shape", "x=2,8"], Some(&dir));
    let stdout = text(&out.stdout);
    assert_eq!(out.status.code(), Some(0), "{stdout}\n{}", text(&out.stderr));
    assert!(stdout.lines().any(|l| l == SKIPPED), "{stdout}");
    assert!(!stdout.contains("vs onnxruntime"), "{stdout}");
    assert_bit_identical(&stdout);
}

#[test]
fn a_wrong_reference_fails_with_exit_code_1() {
    let _shared = exclusive();
    if !python_imports("numpy") {
        // The fake below needs numpy; without it the script reports onnxruntime missing.
        let out = verify(&["--shape", "x=2,8"], None);
        assert!(text(&out.stdout).contains(SKIPPED));
        return;
    }
    // An onnxruntime that answers 0.5 everywhere: softmax rows of 4 sum to
    // 1, so at least one probability is far from 0.5.
    let dir = scratch("wrong_ort");
    std::fs::write(
        dir.join("onnxruntime.py"),
        "import numpy as np\n\
         class _Meta:\n    def __init__(self, name): self.name = name\n\
         class SessionOptions:\n    intra_op_num_threads = 0\n\
         class InferenceSession:\n\
         \x20   def __init__(self, *a, **k): pass\n\
         \x20   def get_inputs(self): return [_Meta('x')]\n\
         \x20   def get_outputs(self): return [_Meta('probs')]\n\
         \x20   def run(self, names, feeds): return [np.full((feeds['x'].shape[0], 4), 0.5, np.float32)]\n",
    )
    .expect("write fake module");
    let out = verify(&["--shape", "x=2,8"], Some(&dir));
    let stdout = text(&out.stdout);
    assert_eq!(out.status.code(), Some(1), "{stdout}\n{}", text(&out.stderr));
    for header in ["interpreter vs onnxruntime", "generated vs onnxruntime"] {
        assert!(section_line(&stdout, header).ends_with("  FAIL (tol 1e-4)"), "{stdout}");
    }
    assert_bit_identical(&stdout);
}

#[test]
fn a_wrong_shaped_input_is_a_one_line_error() {
    let _shared = exclusive();
    let dir = scratch("wrong_shape");
    let x = dir.join("x.npy");
    npy::write_npy(&x, DType::F32, &[3, 8], &[0u8; 3 * 8 * 4]).expect("write x.npy");
    let out = verify(&["--shape", "x=2,8", "--input", &format!("x={}", x.display())], None);
    let stderr = text(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{stderr}");
    assert_eq!(stderr, format!("error: {}: input `x` expects f32[2, 8], found f32[3, 8]\n", x.display()));
    assert!(!text(&out.stdout).contains("vs"), "nothing may run after a bad input");
}
