//! `cargo xtask demo`: the README's first command. Generates and builds the
//! `mlp` model, runs the binary on the bundled digits samples, and compares
//! its speed with the interpreter's.

use std::path::Path;
use std::process::Command;

use anyhow::{bail, Context, Result};
use rlx_runtime::npy;

use crate::blas_setup;

pub fn demo(root: &Path) -> Result<()> {
    let openblas = blas_setup::ensure_openblas();
    let model_dir = root.join("models").join("mlp");
    crate::gen::gen(root, &[model_dir.join("model.sched")], false, None, rlx_sched::Policy::default())?;

    println!("building the mlp model (release)...");
    let status = Command::new(env!("CARGO"))
        .current_dir(root)
        .args(["build", "--release", "--quiet", "-p", "mlp"])
        .args(blas_setup::backend_args(openblas))
        .status()?;
    if !status.success() {
        bail!("building the mlp model failed");
    }
    let bin = crate::target_dir(root).join("release").join("mlp");

    let xs = npy::read_npy(&model_dir.join("samples").join("x.npy"))?;
    let labels = npy::read_npy(&model_dir.join("samples").join("labels.npy"))?;
    let labels: Vec<i64> = labels.bytes.chunks_exact(8).map(|c| i64::from_le_bytes(c.try_into().unwrap())).collect();
    let n = xs.shape[0];
    let per = xs.bytes.len() / n;
    let tmp = std::env::temp_dir().join(format!("rlx-demo-{}", std::process::id()));
    std::fs::create_dir_all(&tmp)?;
    let (x_path, y_path) = (tmp.join("x.npy"), tmp.join("probs.npy"));

    println!("running target/release/mlp on {n} bundled digits:");
    let mut correct = 0;
    let mut line = String::new();
    for (i, label) in labels.iter().enumerate().take(n) {
        npy::write_npy(&x_path, xs.dtype, &xs.shape[1..], &xs.bytes[i * per..(i + 1) * per])?;
        let out = Command::new(&bin)
            .arg("--input")
            .arg(format!("x={}", x_path.display()))
            .arg("--output")
            .arg(format!("probs={}", y_path.display()))
            .output()
            .context("running the mlp binary")?;
        if !out.status.success() {
            bail!("mlp failed: {}", String::from_utf8_lossy(&out.stderr));
        }
        let probs = npy::read_npy(&y_path)?;
        let probs: Vec<f32> = probs.bytes.chunks_exact(4).map(|c| f32::from_le_bytes(c.try_into().unwrap())).collect();
        let pred = probs.iter().enumerate().max_by(|a, b| a.1.total_cmp(b.1)).map_or(0, |(j, _)| j) as i64;
        correct += usize::from(pred == *label);
        line.push_str(&format!("{pred}{} ", if pred == *label { ' ' } else { '!' }));
        if (i + 1) % 16 == 0 {
            println!("  predicted {line}");
            line.clear();
        }
    }
    if !line.is_empty() {
        println!("  predicted {line}");
    }
    let reference = std::fs::read_to_string(model_dir.join("expected").join("accuracy.txt"))?;
    println!(
        "accuracy {correct}/{n} = {:.4} (python reference: {}; `!` marks a miss)",
        correct as f64 / n as f64,
        reference.trim()
    );

    let bench =
        Command::new(&bin).arg("--input").arg(format!("x={}", x_path.display())).args(["--bench", "2000"]).output()?;
    print!("latency: {}", String::from_utf8_lossy(&bench.stdout));

    println!("generated code vs the interpreter (same process, interleaved medians):");
    let status = Command::new(env!("CARGO"))
        .current_dir(root)
        .args(["run", "--release", "--quiet", "-p", "rlx-tests", "--bin", "rlx-bench"])
        .args(blas_setup::backend_args(openblas))
        .args(["--", "500"])
        .env("RLX_NUM_THREADS", "1")
        .status()?;
    if !status.success() {
        bail!("rlx-bench failed");
    }
    let _ = std::fs::remove_dir_all(&tmp);
    Ok(())
}
