//! `cargo xtask onnx-e2e` without onnxruntime: one `skipped:` line and
//! exit 0, so machines without the Python stack (CI) pass. The full run is
//! opt-in (README, "ONNX models end to end"): it builds release binaries
//! for minutes.

use std::process::Command;

#[test]
fn without_onnxruntime_it_says_skipped_and_succeeds() {
    let dir = std::env::temp_dir().join(format!("rlx-xtask-e2e-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("create temp dir");
    // Shadows a real onnxruntime with one that fails to import.
    std::fs::write(dir.join("onnxruntime.py"), "raise ImportError('hidden by the onnx-e2e test')\n")
        .expect("write fake module");
    let out =
        Command::new(env!("CARGO_BIN_EXE_xtask")).arg("onnx-e2e").env("PYTHONPATH", &dir).output().expect("run xtask");
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert_eq!(out.status.code(), Some(0), "{stdout}\n{}", String::from_utf8_lossy(&out.stderr));
    let lines: Vec<&str> = stdout.lines().collect();
    assert_eq!(lines.len(), 1, "{stdout}");
    assert!(lines[0].starts_with("skipped: python modules missing: "), "{stdout}");
    assert!(
        lines[0].contains("onnxruntime")
            && lines[0].ends_with("(python3 -m pip install -r models/onnx/requirements.txt)"),
        "{stdout}"
    );
    std::fs::remove_dir_all(&dir).expect("remove temp dir");
}

#[test]
fn an_unknown_model_name_is_an_error_listing_the_known_ones() {
    let out = Command::new(env!("CARGO_BIN_EXE_xtask"))
        .args(["onnx-e2e", "--model", "lstm", "--model", "nope"])
        .output()
        .expect("run xtask");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{stderr}");
    assert!(
        stderr.contains(
            "unknown model(s) [\"nope\"]; known: lenet, lenet_b4, minilm, minilm_int8, resnet, resnet_int8, resnet_f16, dwsep, dwsep_int8, unet, lstm"
        ),
        "{stderr}"
    );
}
