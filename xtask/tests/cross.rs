//! `cargo xtask build mlp --static --target TRIPLE`: the aarch64 binary
//! under `qemu-aarch64` and the wasm32-wasip1 one under wasmtime (its
//! Python package, `xtask/wasm_run.py`) compute every sample's expected
//! output of `models/mlp`, and `--info` names their target and kernels.
//!
//! A missing tool fails the test with what to install, never skips it:
//! the aarch64 build installs its cross tools itself (as root, with apt),
//! and the wasm test installs `wasmtime` with pip when it is missing.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use rlx_runtime::npy;

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).parent().expect("workspace root").to_path_buf()
}

fn text(out: &Output) -> String {
    format!("{}{}", String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr))
}

/// Builds `mlp` for `triple` and returns the executable's path.
fn build(triple: &str) -> PathBuf {
    let built = Command::new(env!("CARGO_BIN_EXE_xtask"))
        .current_dir(root())
        .args(["build", "mlp", "--static", "--target", triple])
        .output()
        .expect("run xtask");
    let log = text(&built);
    assert!(built.status.success(), "cargo xtask build mlp --static --target {triple} failed:\n{log}");
    log.lines()
        .find_map(|l| l.strip_prefix("built ").and_then(|rest| rest.split(" (").next()))
        .map(PathBuf::from)
        .unwrap_or_else(|| panic!("no `built PATH` line in:\n{log}"))
}

/// A fresh directory for one test's files.
fn scratch(name: &str) -> PathBuf {
    let target = match std::env::var_os("CARGO_TARGET_DIR") {
        Some(dir) if !dir.is_empty() => root().join(dir),
        _ => root().join("target"),
    };
    let dir = target.join("cross-tests").join(name);
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

/// Runs the binary on every sample of `models/mlp` and compares `probs`
/// with `expected/probs.npy`. `run(args)` runs it with `args`; the files
/// it names are `data_dir`'s, spelled through `guest` (the path the
/// program sees them at).
fn check_samples(data_dir: &Path, guest: &str, run: &dyn Fn(&[String]) -> Output) {
    let mlp = root().join("models/mlp");
    let samples = npy::read_npy(&mlp.join("samples/x.npy")).unwrap();
    let expected = npy::read_npy(&mlp.join("expected/probs.npy")).unwrap();
    let count = samples.shape[0];
    assert!(count > 0 && expected.shape[0] == count, "{:?} {:?}", samples.shape, expected.shape);
    let (x_len, p_len) = (samples.bytes.len() / count, expected.bytes.len() / count);
    let f32s = |b: &[u8]| b.chunks_exact(4).map(|c| f32::from_le_bytes(c.try_into().unwrap())).collect::<Vec<_>>();
    for i in 0..count {
        npy::write_npy(
            &data_dir.join("x.npy"),
            samples.dtype,
            &samples.shape[1..],
            &samples.bytes[i * x_len..][..x_len],
        )
        .unwrap();
        let args =
            ["--input".to_string(), format!("x={guest}/x.npy"), "--output".into(), format!("probs={guest}/p.npy")];
        let out = run(&args);
        assert!(out.status.success(), "sample {i}: {}", text(&out));
        let got = npy::read_npy(&data_dir.join("p.npy")).unwrap();
        assert_eq!(got.shape, expected.shape[1..], "sample {i}");
        // The bound of models/mlp's own test: f32 kernels against numpy's
        // float64, dot products of length <= 128 and a softmax.
        for (j, (g, e)) in f32s(&got.bytes).iter().zip(f32s(&expected.bytes[i * p_len..][..p_len])).enumerate() {
            assert!((g - e).abs() <= 1e-5, "sample {i}, probs[{j}]: got {g}, expected {e}");
        }
    }
}

fn info(run: &dyn Fn(&[String]) -> Output) -> String {
    let out = run(&["--info".to_string()]);
    let info = text(&out);
    assert!(out.status.success(), "{info}");
    info
}

#[test]
fn the_static_aarch64_binary_computes_the_expected_outputs_under_qemu() {
    let exe = build("aarch64-unknown-linux-gnu");
    // The build installs qemu-user with its cross linker; a machine
    // where that could not happen failed the build with what to install.
    assert!(
        Command::new("qemu-aarch64").arg("--version").output().is_ok_and(|o| o.status.success()),
        "qemu-aarch64 is missing: install it with `apt-get install qemu-user`"
    );
    let dir = scratch("aarch64");
    // Static: no `-L` sysroot, so a dynamic dependency would fail to load.
    let run = |args: &[String]| Command::new("qemu-aarch64").arg(&exe).args(args).output().expect("run qemu-aarch64");
    let info = info(&run);
    assert!(info.lines().any(|l| l == "target   aarch64-unknown-linux-gnu"), "{info}");
    assert!(info.lines().any(|l| l.starts_with("kernels  neon (chosen at compile time")), "{info}");
    assert!(info.lines().any(|l| l == "backend  pure-rust"), "{info}");
    check_samples(&dir, dir.to_str().unwrap(), &run);
}

/// Makes sure `python3` can import `wasmtime`, installing it with pip
/// when it cannot; a failure says what to install.
fn ensure_wasmtime() {
    let importable =
        || Command::new("python3").args(["-c", "import wasmtime"]).output().is_ok_and(|o| o.status.success());
    if importable() {
        return;
    }
    eprintln!("the wasmtime Python package is missing: installing it with pip");
    let pip = Command::new("python3").args(["-m", "pip", "install", "--quiet", "wasmtime"]).output();
    let log = pip.as_ref().map(text).unwrap_or_else(|e| e.to_string());
    assert!(
        importable(),
        "the wasm32 test runs the binary with the wasmtime Python package, which is missing and \
         `python3 -m pip install wasmtime` did not install:\n{log}"
    );
}

#[test]
fn the_wasm32_wasip1_binary_computes_the_expected_outputs_under_wasmtime() {
    ensure_wasmtime();
    let exe = build("wasm32-wasip1");
    assert_eq!(exe.extension().and_then(|e| e.to_str()), Some("wasm"), "{}", exe.display());
    let dir = scratch("wasm32");
    let preopen = format!("{}::/data", dir.display());
    let script = root().join("xtask/wasm_run.py");
    let run_env = |args: &[String], env: &[&str]| {
        let mut cmd = Command::new("python3");
        cmd.arg(&script).arg(&exe).args(["--dir", &preopen]);
        for kv in env {
            cmd.args(["--env", kv]);
        }
        cmd.arg("--").args(args).output().expect("run python3 xtask/wasm_run.py")
    };
    let run = |args: &[String]| run_env(args, &[]);
    let info = info(&run);
    assert!(info.lines().any(|l| l == "target   wasm32-wasip1"), "{info}");
    assert!(info.lines().any(|l| l == "kernels  scalar (the only kernels built for wasm32)"), "{info}");
    check_samples(&dir, "/data", &run);

    // No threads on this target: asking for two is the CLI's one-line
    // error, not a panic of the pool that cannot start.
    let mut args = vec!["--input".to_string(), "x=/data/x.npy".into(), "--threads".into(), "2".into()];
    let out = run(&args);
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{}", text(&out));
    assert_eq!(err.trim_end().lines().count(), 1, "{err}");
    assert!(err.contains("--threads `2`: this build cannot start threads"), "{err}");
    args.truncate(2);
    let out = run_env(&args, &["RLX_NUM_THREADS=2"]);
    assert_eq!(out.status.code(), Some(2), "{}", text(&out));
    assert!(String::from_utf8_lossy(&out.stderr).contains("RLX_NUM_THREADS `2`: this build cannot"), "{}", text(&out));
    let out = run_env(&args, &["RLX_NUM_THREADS=1"]);
    assert!(out.status.success(), "{}", text(&out));
}
