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

const TARGET: &str = "aarch64-unknown-linux-gnu";
/// Debian's cross linker and the C library QEMU loads the binary with.
const LINKER: &str = "aarch64-linux-gnu-gcc";
const SYSROOT: &str = "/usr/aarch64-linux-gnu";
/// Debian packages with the linker, the sysroot and `qemu-aarch64`.
const PACKAGES: &[&str] = &["qemu-user", "gcc-aarch64-linux-gnu", "libc6-dev-arm64-cross"];
/// The emulated CPUs, each with what it exercises.
const CPUS: &[(&str, &str)] = &[("max", "NEON + dot product"), ("cortex-a72", "NEON without dot product")];

fn on_path(program: &str) -> bool {
    Command::new("sh").args(["-c", &format!("command -v {program}")]).output().is_ok_and(|o| o.status.success())
}

fn tools_present() -> bool {
    on_path("qemu-aarch64") && on_path(LINKER) && Path::new(SYSROOT).join("lib").is_dir()
}

/// Installs the cross tools with apt when running as root, else says
/// what to install.
fn ensure_tools() -> Result<()> {
    if tools_present() {
        return Ok(());
    }
    let root = Command::new("id").arg("-u").output().is_ok_and(|o| String::from_utf8_lossy(&o.stdout).trim() == "0");
    if root && Path::new("/usr/bin/apt-get").exists() {
        eprintln!("installing {} with apt-get", PACKAGES.join(" "));
        let apt = |args: &[&str]| {
            Command::new("apt-get")
                .args(args)
                .env("DEBIAN_FRONTEND", "noninteractive")
                .status()
                .is_ok_and(|s| s.success())
        };
        let install: Vec<&str> = ["install", "-y", "-qq"].iter().chain(PACKAGES).copied().collect();
        // A fresh machine's package lists may be stale: update and retry.
        let installed = apt(&install) || (apt(&["update", "-qq"]) && apt(&install));
        if installed && tools_present() {
            return Ok(());
        }
    }
    bail!("the aarch64 cross tools are missing; install them with\n    sudo apt-get install {}", PACKAGES.join(" "))
}

/// Adds the Rust standard library for aarch64 (a no-op when present).
fn ensure_target() -> Result<()> {
    let status = Command::new("rustup").args(["target", "add", TARGET]).status();
    match status {
        Ok(s) if s.success() => Ok(()),
        _ => bail!("the Rust target {TARGET} is missing and `rustup target add {TARGET}` failed"),
    }
}

pub fn test_aarch64(root: &Path) -> Result<()> {
    ensure_tools()?;
    ensure_target()?;
    let env_key = |what: &str| format!("CARGO_TARGET_{}_{what}", TARGET.to_uppercase().replace('-', "_"));
    for (cpu, what) in CPUS {
        eprintln!("rlx-runtime's tests on aarch64 under qemu -cpu {cpu} ({what})");
        let status = Command::new(env!("CARGO"))
            .current_dir(root)
            .args(["test", "--locked", "--target", TARGET, "-p", "rlx-runtime", "--lib"])
            // The shipped static build's backend: no foreign OpenBLAS.
            .args(["--no-default-features", "--features", "pure-rust"])
            .env(env_key("LINKER"), LINKER)
            .env(env_key("RUNNER"), format!("qemu-aarch64 -L {SYSROOT} -cpu {cpu}"))
            .status()
            .context("running cargo test")?;
        if !status.success() {
            bail!("rlx-runtime's tests failed on aarch64 (qemu -cpu {cpu})");
        }
    }
    Ok(())
}
