//! `cargo xtask test-aarch64`: the kernel library's tests built for
//! aarch64 and run under user-mode QEMU, so the NEON bodies this x86
//! machine never runs natively are tested too (docs/testing.md).
//!
//! Two emulated CPUs: QEMU's `max` (NEON with the dot-product extension,
//! so the `sdot` bodies run) and a Cortex-A72 (Armv8.0 NEON without it,
//! so the detection falls back to the portable bodies). The tests compare
//! every body the CPU runs with the scalar references bit for bit, as on
//! x86.

use std::path::Path;
use std::process::Command;

use anyhow::{bail, Context, Result};

use crate::cross::{self, CrossTarget, AARCH64_LINKER, AARCH64_SYSROOT};

/// The emulated CPUs, each with what it exercises.
const CPUS: &[(&str, &str)] = &[("max", "NEON + dot product"), ("cortex-a72", "NEON without dot product")];

pub fn test_aarch64(root: &Path) -> Result<()> {
    let target = CrossTarget::Aarch64Gnu;
    target.ensure_tools()?;
    let triple = target.triple();
    let env_key = |what: &str| cross::cargo_target_env(triple, what);
    for (cpu, what) in CPUS {
        eprintln!("rlx-runtime's tests on aarch64 under qemu -cpu {cpu} ({what})");
        let status = Command::new(env!("CARGO"))
            .current_dir(root)
            .args(["test", "--locked", "--target", triple, "-p", "rlx-runtime", "--lib"])
            // The shipped static build's backend: no foreign OpenBLAS.
            .args(["--no-default-features", "--features", "pure-rust"])
            .env(env_key("LINKER"), AARCH64_LINKER)
            .env(env_key("RUNNER"), format!("qemu-aarch64 -L {AARCH64_SYSROOT} -cpu {cpu}"))
            .status()
            .context("running cargo test")?;
        if !status.success() {
            bail!("rlx-runtime's tests failed on aarch64 (qemu -cpu {cpu})");
        }
    }
    Ok(())
}
