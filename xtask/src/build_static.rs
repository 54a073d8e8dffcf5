//! `cargo xtask build NAME --static`: one statically linked executable
//! with the weights embedded.

use std::path::{Path, PathBuf};
use std::process::Command;

use anyhow::{bail, Context, Result};

use crate::blas_setup;

/// The host's target triple, from `rustc -vV`.
pub(crate) fn host_triple() -> Result<String> {
    let out = Command::new("rustc").arg("-vV").output().context("running rustc -vV")?;
    let text = String::from_utf8_lossy(&out.stdout);
    text.lines().find_map(|l| l.strip_prefix("host: ")).map(str::to_string).context("rustc -vV printed no host line")
}

pub fn build(root: &Path, name: &str, static_link: bool) -> Result<PathBuf> {
    if !root.join("models").join(name).join("Cargo.toml").is_file() {
        bail!("no model crate models/{name}");
    }
    // A fully static executable (static glibc too) cannot carry Debian's
    // libopenblas.a: its thread-local-storage relocations make glibc's
    // static start-up abort ("Unexpected reloc type in static binary").
    // Static builds therefore use the pure-Rust GEMM backend; the default
    // build links OpenBLAS statically and only libc dynamically.
    let openblas = !static_link && blas_setup::ensure_openblas();
    if static_link {
        println!("static build: using the pure-Rust GEMM backend (see docs/blas.md)");
    }
    let mut cmd = Command::new(env!("CARGO"));
    cmd.current_dir(root).args(["build", "--release", "-p", name]).args(blas_setup::backend_args(openblas));
    let bin = if static_link {
        // An explicit --target keeps crt-static off build scripts and
        // proc-macros, which must stay dynamic.
        let triple = host_triple()?;
        cmd.args(["--target", &triple]);
        let flags = format!("{} -C target-feature=+crt-static", std::env::var("RUSTFLAGS").unwrap_or_default());
        cmd.env("RUSTFLAGS", flags.trim());
        crate::target_dir(root).join(&triple).join("release").join(name)
    } else {
        crate::target_dir(root).join("release").join(name)
    };
    if !cmd.status()?.success() {
        bail!("cargo build failed");
    }
    let size = std::fs::metadata(&bin)?.len();
    println!("built {} ({:.1} MiB)", bin.display(), size as f64 / (1024.0 * 1024.0));
    if static_link {
        if let Ok(out) = Command::new("ldd").arg(&bin).output() {
            let text = format!("{}{}", String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr));
            println!("ldd: {}", text.trim());
        }
    }
    Ok(bin)
}
