//! `cargo xtask build cnn --static --target-cpu native`: the binary starts,
//! says its kernels were chosen at compile time, and computes the bits of
//! the generic static build (the same kernels, chosen at load time).
//!
//! Not the interpreter's bits: `xtask run` links glibc's libm dynamically
//! and a static binary statically, and their scalar `expf` differ in the
//! last place on some inputs (measured: 1.9e-9 on one of `cnn`'s
//! probabilities, the same for the generic and the native build).

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use rlx_runtime::npy;

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).parent().expect("workspace root").to_path_buf()
}

fn text(out: &Output) -> String {
    format!("{}{}", String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr))
}

fn xtask(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_xtask")).current_dir(root()).args(args).output().expect("run xtask")
}

#[test]
fn a_binary_for_the_native_cpu_chooses_its_kernels_at_compile_time_and_matches_the_generic_one() {
    let root = root();
    let scratch = root.join("target").join("build-tests");
    std::fs::create_dir_all(&scratch).unwrap();

    let built_path = |args: &[&str]| {
        let built = xtask(args);
        let log = text(&built);
        assert!(built.status.success(), "{log}");
        log.lines()
            .find_map(|l| l.strip_prefix("built ").and_then(|rest| rest.split(" (").next()))
            .map(PathBuf::from)
            .unwrap_or_else(|| panic!("no `built PATH` line in:\n{log}"))
    };
    // Where `xtask build` puts its outputs: `CARGO_TARGET_DIR` when set.
    let target = match std::env::var_os("CARGO_TARGET_DIR") {
        Some(dir) if !dir.is_empty() => root.join(dir),
        _ => root.join("target"),
    };
    let exe = built_path(&["build", "cnn", "--static", "--target-cpu", "native"]);
    assert!(exe.starts_with(target.join("cpu-native")), "{}", exe.display());
    let generic = built_path(&["build", "cnn", "--static"]);
    assert!(!generic.starts_with(target.join("cpu-native")), "{}", generic.display());

    let info = Command::new(&exe).arg("--info").output().expect("run the binary");
    let info_text = text(&info);
    assert!(info.status.success(), "{info_text}");
    let kernels = info_text.lines().find(|l| l.starts_with("kernels")).unwrap_or_else(|| panic!("{info_text}"));
    // A CPU without AVX2/FMA or NEON leaves only the scalar kernels, which
    // are never "chosen"; every other CPU's level is a constant here.
    if !kernels.contains("scalar") {
        assert!(kernels.contains("chosen at compile time"), "{kernels}");
    }

    // The first sample, through both binaries.
    let samples = npy::read_npy(&root.join("models/cnn/samples/x.npy")).unwrap();
    let one = samples.bytes.len() / samples.shape[0];
    let x = scratch.join("x.npy");
    npy::write_npy(&x, samples.dtype, &[1, 1, 8, 8], &samples.bytes[..one]).unwrap();
    let input = format!("x={}", x.display());
    let probs = |exe: &Path, name: &str| {
        let path = scratch.join(name);
        let run = Command::new(exe)
            .args(["--input", &input, "--output", &format!("probs={}", path.display())])
            .output()
            .expect("run the binary");
        assert!(run.status.success(), "{}", text(&run));
        npy::read_npy(&path).unwrap()
    };
    let (a, b) = (probs(&exe, "native.npy"), probs(&generic, "generic.npy"));
    assert_eq!((a.dtype, &a.shape), (b.dtype, &b.shape));
    assert!(a.bytes == b.bytes, "the native-CPU binary's probs differ from the generic static binary's");
}
