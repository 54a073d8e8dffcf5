//! `cargo xtask bench`: generated code vs the interpreter on every bundled
//! model at 1 and 2 threads, plus GEMM efficiency. Each thread count runs
//! in its own process (the pool is built once per process).

use std::path::Path;
use std::process::Command;

use anyhow::{bail, Result};

use crate::blas_setup;

pub fn bench(root: &Path, rounds: usize) -> Result<()> {
    let openblas = blas_setup::ensure_openblas();
    let build = Command::new(env!("CARGO"))
        .current_dir(root)
        .args(["build", "--release", "--quiet", "-p", "rlx-tests", "--bin", "rlx-bench"])
        .args(blas_setup::backend_args(openblas))
        .status()?;
    if !build.success() {
        bail!("building rlx-bench failed");
    }
    let bin = root.join("target").join("release").join("rlx-bench");
    println!("machine: {} cores; backend: {}", std::thread::available_parallelism().map_or(1, |n| n.get()), if openblas { "openblas" } else { "pure-rust" });
    for (i, threads) in ["1", "2"].iter().enumerate() {
        let mut cmd = Command::new(&bin);
        cmd.env("RLX_NUM_THREADS", threads).arg(rounds.to_string()).arg("--gemm");
        if i > 0 {
            cmd.arg("--no-header");
        }
        if !cmd.status()?.success() {
            bail!("rlx-bench failed at {threads} thread(s)");
        }
    }
    Ok(())
}

/// `cargo xtask bench-kernels`: per-family throughput against this
/// machine's memcpy and sgemm, measured in the same run.
pub fn bench_kernels(root: &Path) -> Result<()> {
    let openblas = blas_setup::ensure_openblas();
    let status = Command::new(env!("CARGO"))
        .current_dir(root)
        .args(["run", "--release", "--quiet", "-p", "rlx-tests", "--bin", "rlx-bench-kernels"])
        .args(blas_setup::backend_args(openblas))
        .status()?;
    if !status.success() {
        bail!("rlx-bench-kernels failed");
    }
    Ok(())
}
