//! `cargo xtask build NAME --static`: one statically linked executable
//! with the weights embedded.

use std::path::{Path, PathBuf};
use std::process::Command;

use anyhow::{bail, Context, Result};

use crate::blas_setup;
use crate::cross::{self, CrossTarget};

/// The host's target triple, from `rustc -vV`.
pub(crate) fn host_triple() -> Result<String> {
    let out = Command::new("rustc").arg("-vV").output().context("running rustc -vV")?;
    let text = String::from_utf8_lossy(&out.stdout);
    text.lines().find_map(|l| l.strip_prefix("host: ")).map(str::to_string).context("rustc -vV printed no host line")
}

/// RUSTFLAGS of a static model binary: the caller's flags, `crt-static`
/// and, given a CPU, that CPU's target features (so every kernel-selection
/// test is a compile-time constant).
///
/// Only the features, not `-C target-cpu`: the CPU's scheduling model
/// changes how LLVM compiles the GEMM microkernel (for znver4 it unrolls
/// the k loop and spills the accumulators; MiniLM ran 1.33x slower,
/// docs/decisions.md).
pub(crate) fn static_rustflags(root: &Path, target_cpu: Option<&str>) -> Result<String> {
    let mut flags = std::env::var("RUSTFLAGS").unwrap_or_default();
    flags.push_str(" -C target-feature=+crt-static");
    if let Some(cpu) = target_cpu {
        flags.push_str(&format!(" -C target-feature={}", cpu_features(root, cpu)?));
    }
    Ok(flags.trim().to_string())
}

/// `+a,+b,...`: the target features rustc enables for `cpu` on the host
/// target (`rustc --print cfg -C target-cpu=CPU`).
pub(crate) fn cpu_features(root: &Path, cpu: &str) -> Result<String> {
    let out = Command::new("rustc")
        .current_dir(root)
        .args(["--print", "cfg", "-C", &format!("target-cpu={cpu}")])
        .output()
        .context("running rustc --print cfg")?;
    let stderr = String::from_utf8_lossy(&out.stderr);
    if !out.status.success() || stderr.contains("not a recognized processor") {
        let first = stderr.lines().next().unwrap_or("rustc failed");
        bail!("--target-cpu {cpu}: {first} (list them with `rustc --print target-cpus`)");
    }
    let features: Vec<String> = String::from_utf8_lossy(&out.stdout)
        .lines()
        .filter_map(|l| l.strip_prefix("target_feature=\"")?.strip_suffix('"').map(|f| format!("+{f}")))
        .collect();
    Ok(features.join(","))
}

/// What `cargo xtask build` was asked for.
pub struct Request<'a> {
    pub name: &'a str,
    pub static_link: bool,
    pub target_cpu: Option<&'a str>,
    /// A target triple other than the host's (`--target`, with `--static`).
    pub target: Option<&'a str>,
}

pub fn build(root: &Path, req: &Request<'_>) -> Result<PathBuf> {
    let name = req.name;
    if !root.join("models").join(name).join("Cargo.toml").is_file() {
        bail!("no model crate models/{name}");
    }
    let host = host_triple()?;
    let cross = match req.target {
        Some(triple) if triple != host => Some(CrossTarget::parse(triple)?),
        _ => None,
    };
    if let Some(target) = cross {
        return build_cross(root, name, target);
    }
    let (static_link, target_cpu) = (req.static_link, req.target_cpu);
    // A fully static executable (static glibc too) cannot carry Debian's
    // libopenblas.a: its thread-local-storage relocations make glibc's
    // static start-up abort ("Unexpected reloc type in static binary").
    // Static builds therefore use the pure-Rust GEMM backend; the default
    // build links OpenBLAS statically and only libc dynamically.
    let openblas = !static_link && blas_setup::ensure_openblas();
    if static_link {
        println!("static build: using the pure-Rust GEMM backend (see docs/blas.md)");
    }
    if let Some(cpu) = target_cpu {
        println!("target cpu {cpu}: kernels chosen at compile time; the binary needs that CPU (docs/decisions.md)");
    }
    let mut cmd = Command::new(env!("CARGO"));
    cmd.current_dir(root).args(["build", "--release", "-p", name]).args(blas_setup::backend_args(openblas));
    let bin = if static_link {
        // An explicit --target keeps crt-static (and the CPU) off build
        // scripts and proc-macros, which must stay dynamic and portable.
        cmd.args(["--target", &host]);
        cmd.env("RUSTFLAGS", static_rustflags(root, target_cpu)?);
        // A CPU-specific build has its own target dir (`target/cpu-CPU`):
        // sharing the generic one would rebuild everything at each switch.
        let dir = match target_cpu {
            Some(cpu) => {
                let dir = crate::target_dir(root).join(format!("cpu-{cpu}"));
                cmd.env("CARGO_TARGET_DIR", &dir);
                dir
            }
            None => crate::target_dir(root),
        };
        dir.join(&host).join("release").join(name)
    } else {
        crate::target_dir(root).join("release").join(name)
    };
    if !cmd.status()?.success() {
        bail!("cargo build failed");
    }
    report(&bin)?;
    if static_link {
        if let Ok(out) = Command::new("ldd").arg(&bin).output() {
            let text = format!("{}{}", String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr));
            println!("ldd: {}", text.trim());
        }
    }
    Ok(bin)
}

/// A static executable for another target (docs/shipping.md).
///
/// Always the pure-Rust GEMM backend: there is no static OpenBLAS that
/// goes into a static aarch64 glibc binary (the host's fails the same
/// way, docs/blas.md), none for musl, and none for wasm; products with
/// weights and convolutions run on the own tiled GEMM either way.
fn build_cross(root: &Path, name: &str, target: CrossTarget) -> Result<PathBuf> {
    let triple = target.triple();
    target.ensure_tools()?;
    println!("static build for {triple}: using the pure-Rust GEMM backend (see docs/shipping.md)");
    let mut cmd = Command::new(env!("CARGO"));
    cmd.current_dir(root)
        .args(["build", "--release", "-p", name, "--target", triple])
        .args(blas_setup::backend_args(false));
    let caller = std::env::var("RUSTFLAGS").unwrap_or_default();
    let flags = format!("{} {caller}", target.target_flags().unwrap_or_default());
    cmd.env("RUSTFLAGS", flags.trim());
    if let Some(linker) = target.linker() {
        cmd.env(cross::cargo_target_env(triple, "LINKER"), linker);
    }
    if !cmd.status()?.success() {
        bail!("cargo build --target {triple} failed");
    }
    let bin = crate::target_dir(root).join(triple).join("release").join(target.exe_name(name));
    report(&bin)?;
    Ok(bin)
}

/// Prints the `built PATH (SIZE)` line the tests read.
fn report(bin: &Path) -> Result<()> {
    let size = std::fs::metadata(bin).with_context(|| format!("no executable at {}", bin.display()))?.len();
    println!("built {} ({:.1} MiB, {size} bytes)", bin.display(), size as f64 / (1024.0 * 1024.0));
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn static_flags_add_crt_static_and_the_cpus_features_not_the_cpu() {
        let root = Path::new(env!("CARGO_MANIFEST_DIR"));
        let base = std::env::var("RUSTFLAGS").unwrap_or_default();
        let generic = static_rustflags(root, None).unwrap();
        assert_eq!(generic, format!("{base} -C target-feature=+crt-static").trim());
        let tuned = static_rustflags(root, Some("x86-64-v3")).unwrap();
        assert!(!tuned.contains("target-cpu"), "{tuned}");
        if cfg!(target_arch = "x86_64") {
            let features = cpu_features(root, "x86-64-v3").unwrap();
            assert!(
                features.split(',').any(|f| f == "+avx2") && features.split(',').any(|f| f == "+fma"),
                "{features}"
            );
            assert!(!features.contains("avx512"), "{features}");
            assert!(tuned.ends_with(&format!("-C target-feature={features}")), "{tuned}");
        }
    }

    #[test]
    fn an_unknown_cpu_is_an_error_naming_it() {
        let e = cpu_features(Path::new(env!("CARGO_MANIFEST_DIR")), "no-such-cpu").unwrap_err().to_string();
        assert!(e.starts_with("--target-cpu no-such-cpu: "), "{e}");
        assert!(e.contains("rustc --print target-cpus"), "{e}");
    }
}
