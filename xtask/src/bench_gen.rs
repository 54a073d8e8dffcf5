//! `cargo xtask bench-gen`: the generator's own cost on a large schedule —
//! generation time, the release build time of the generated crate, and the
//! size of the largest generated function.

use std::fmt::Write as _;
use std::path::Path;
use std::process::Command;
use std::time::Instant;

use anyhow::{bail, Context, Result};

use crate::blas_setup;

/// A valid schedule of `n` thunks cycling through GEMM, activation,
/// broadcast add, LayerNorm and softmax over four 16x16 scratch buffers.
pub fn synthetic_schedule(n: usize) -> String {
    let mut s = String::from(
        "rlx-sched 1\nmodel synthetic\narena 6208 align 64\nmask_threshold 0.5\nmask_neg_inf -1000000000.0\nscore_skip 0.0\n\n",
    );
    s.push_str("input   x: f32[16, 16] @ arena+0\n");
    s.push_str("input   g: f32[16] @ arena+1024\n");
    for i in 0..4 {
        let _ = writeln!(s, "scratch b{i}: f32[16, 16] @ arena+{}", 1088 + i * 1024);
    }
    s.push_str("output  y: f32[16, 16] @ arena+5184\n\n");
    let mut cur = 0;
    for i in 0..n.saturating_sub(1) {
        let b = |k: usize| format!("b{}", k % 4);
        let line = match i % 5 {
            0 => format!("Sgemm {{ a: x, b: x, c: {}, m: 16, k: 16, n: 16 }}", b(cur)),
            1 => format!("Activation {{ src: {0}, dst: {0}, len: 256, act: relu }}", b(cur)),
            2 => {
                let l = format!(
                    "BinaryFull {{ lhs: {}, rhs: g, dst: {}, len: 256, lhs_len: 256, rhs_len: 16, op: add, out_dims_bcast: [], bcast_lhs_strides: [], bcast_rhs_strides: [], elem_bytes: 4 }}",
                    b(cur),
                    b(cur + 1)
                );
                cur += 1;
                l
            }
            3 => {
                let l = format!(
                    "LayerNorm {{ x: {}, g: g, b: none, out: {}, rows: 16, h: 16, eps: 1e-5 }}",
                    b(cur),
                    b(cur + 1)
                );
                cur += 1;
                l
            }
            _ => format!("Softmax {{ src: {0}, dst: {0}, rows: 16, cols: 16 }}", b(cur)),
        };
        s.push_str(&line);
        s.push('\n');
    }
    let _ = writeln!(s, "Copy {{ src: b{}, dst: y, len: 256 }}", cur % 4);
    s
}

/// Lines of the longest `fn` in generated text.
fn largest_fn_lines(code: &str) -> usize {
    let lines: Vec<&str> = code.lines().collect();
    let mut best = 0;
    for (i, l) in lines.iter().enumerate() {
        if l.starts_with("unsafe fn ") || l.starts_with("fn ") || l.starts_with("pub fn ") {
            if let Some(end) = lines[i..].iter().position(|x| *x == "}") {
                best = best.max(end + 1);
            }
        }
    }
    best
}

pub fn bench_gen(root: &Path, thunks: usize) -> Result<()> {
    let dir = root.join("target").join("bench-gen");
    std::fs::create_dir_all(dir.join("src"))?;
    let sched_path = dir.join("model.sched");
    std::fs::write(&sched_path, synthetic_schedule(thunks))?;

    let t = Instant::now();
    let schedule = rlx_codegen::load_checked(&sched_path, root).map_err(|e| anyhow::anyhow!("{e}"))?;
    let checked = t.elapsed();
    let out = dir.join("src").join("generated.rs");
    let t = Instant::now();
    let code = rlx_codegen::generate(&schedule, &rlx_codegen::options_for_file(&schedule, &sched_path, root, &out));
    let generated = t.elapsed();
    rlx_codegen::write_if_changed(&out, &code)?;

    let runtime = root.join("crates/rlx-runtime");
    let openblas = blas_setup::ensure_openblas();
    let features = if openblas { "\"openblas\"" } else { "\"pure-rust\"" };
    std::fs::write(
        dir.join("Cargo.toml"),
        format!(
            "[package]\nname = \"bench-gen-model\"\nversion = \"0.0.0\"\nedition = \"2021\"\npublish = false\n\n[workspace]\n\n\
             [dependencies]\nrlx-runtime = {{ path = {:?}, default-features = false, features = [{features}] }}\n\n\
             [features]\nprofile = []\n",
            runtime.display().to_string()
        ),
    )?;
    std::fs::write(
        dir.join("src").join("main.rs"),
        "#[allow(clippy::all, unused)]\nmod generated;\nuse rlx_runtime::model::GeneratedModel;\nfn main() { let mut m = generated::Model::new(); m.run(); }\n",
    )?;
    let target = root.join("target").join("bench-gen-target");
    // Build the dependencies first, so the timed build is the generated
    // crate alone.
    let build = |touch: bool| -> Result<std::time::Duration> {
        if touch {
            let main = dir.join("src").join("main.rs");
            let text = std::fs::read_to_string(&main)?;
            std::fs::write(&main, text)?;
        }
        let t = Instant::now();
        let status = Command::new(env!("CARGO"))
            .current_dir(&dir)
            .env("CARGO_TARGET_DIR", &target)
            .args(["build", "--release", "--quiet"])
            .status()
            .context("running cargo build")?;
        if !status.success() {
            bail!("building the generated crate failed");
        }
        Ok(t.elapsed())
    };
    build(false)?;
    let built = build(true)?;

    println!("synthetic schedule: {thunks} thunks");
    println!("parse + validate:   {:.1} ms", checked.as_secs_f64() * 1e3);
    println!("generate + format:  {:.1} ms ({} lines)", generated.as_secs_f64() * 1e3, code.lines().count());
    println!("release build of the generated crate: {:.1} s", built.as_secs_f64());
    println!("largest generated function: {} lines", largest_fn_lines(&code));
    Ok(())
}
