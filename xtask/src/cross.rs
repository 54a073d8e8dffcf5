//! The targets a model binary can be cross-built for, and the tools each
//! needs: the Rust standard library (`rustup target add`) and, for
//! aarch64, Debian's cross linker and `qemu-aarch64` (docs/shipping.md).
//! `cargo xtask test-aarch64` uses the same tools.

use std::path::Path;
use std::process::Command;

use anyhow::{bail, Result};

/// A target `cargo xtask build NAME --static --target TRIPLE` accepts
/// besides the host's.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum CrossTarget {
    /// Linux on aarch64, glibc linked statically.
    Aarch64Gnu,
    /// Linux on aarch64 with musl (static by default).
    Aarch64Musl,
    /// WebAssembly with WASI preview 1: one thread, no memory mapping.
    Wasm32Wasip1,
}

impl CrossTarget {
    pub(crate) const ALL: [CrossTarget; 3] =
        [CrossTarget::Aarch64Gnu, CrossTarget::Aarch64Musl, CrossTarget::Wasm32Wasip1];

    pub(crate) fn triple(self) -> &'static str {
        match self {
            CrossTarget::Aarch64Gnu => "aarch64-unknown-linux-gnu",
            CrossTarget::Aarch64Musl => "aarch64-unknown-linux-musl",
            CrossTarget::Wasm32Wasip1 => "wasm32-wasip1",
        }
    }

    /// The target of `triple`; an error listing the supported ones.
    pub(crate) fn parse(triple: &str) -> Result<CrossTarget> {
        match CrossTarget::ALL.into_iter().find(|t| t.triple() == triple) {
            Some(t) => Ok(t),
            None => {
                let known: Vec<&str> = CrossTarget::ALL.iter().map(|t| t.triple()).collect();
                bail!("--target {triple} is not supported; give the host's triple or one of: {}", known.join(", "))
            }
        }
    }

    /// The linker cargo is told to use, when rustc's default cannot link
    /// for the target (wasm links with the `rust-lld` rustup ships).
    pub(crate) fn linker(self) -> Option<&'static str> {
        match self {
            CrossTarget::Aarch64Gnu | CrossTarget::Aarch64Musl => Some(AARCH64_LINKER),
            CrossTarget::Wasm32Wasip1 => None,
        }
    }

    /// The executable's file name for crate `name`.
    pub(crate) fn exe_name(self, name: &str) -> String {
        match self {
            CrossTarget::Wasm32Wasip1 => format!("{name}.wasm"),
            _ => name.to_string(),
        }
    }

    /// RUSTFLAGS put before the caller's (so the caller's win): glibc must
    /// be asked to link statically (musl and wasm executables are static
    /// already); wasm gets WebAssembly SIMD, which every current browser
    /// and wasmtime run and with which LLVM vectorises the portable kernel
    /// bodies (`bert_tiny` 1.2x faster, the same bits; docs/shipping.md).
    pub(crate) fn target_flags(self) -> Option<&'static str> {
        match self {
            CrossTarget::Aarch64Gnu => Some("-C target-feature=+crt-static"),
            CrossTarget::Wasm32Wasip1 => Some("-C target-feature=+simd128"),
            CrossTarget::Aarch64Musl => None,
        }
    }

    /// Installs (or names) what building for this target needs.
    pub(crate) fn ensure_tools(self) -> Result<()> {
        ensure_rust_target(self.triple())?;
        if self.linker().is_some() {
            ensure_aarch64_tools()?;
        }
        Ok(())
    }
}

/// `CARGO_TARGET_<TRIPLE>_<WHAT>`: cargo's per-target setting `what`.
pub(crate) fn cargo_target_env(triple: &str, what: &str) -> String {
    format!("CARGO_TARGET_{}_{what}", triple.to_uppercase().replace('-', "_"))
}

/// Debian's cross linker for aarch64.
pub(crate) const AARCH64_LINKER: &str = "aarch64-linux-gnu-gcc";
/// The aarch64 C library QEMU loads a dynamic binary with.
pub(crate) const AARCH64_SYSROOT: &str = "/usr/aarch64-linux-gnu";
/// Debian packages with the linker, the sysroot and `qemu-aarch64`: one
/// set for building and running, so a built binary can be run at once.
const AARCH64_PACKAGES: &[&str] = &["qemu-user", "gcc-aarch64-linux-gnu", "libc6-dev-arm64-cross"];

pub(crate) fn on_path(program: &str) -> bool {
    Command::new("sh").args(["-c", &format!("command -v {program}")]).output().is_ok_and(|o| o.status.success())
}

fn aarch64_tools_present() -> bool {
    on_path("qemu-aarch64") && on_path(AARCH64_LINKER) && Path::new(AARCH64_SYSROOT).join("lib").is_dir()
}

fn is_root() -> bool {
    Command::new("id").arg("-u").output().is_ok_and(|o| String::from_utf8_lossy(&o.stdout).trim() == "0")
}

/// Installs the aarch64 cross tools with apt when running as root, else
/// says what to install.
pub(crate) fn ensure_aarch64_tools() -> Result<()> {
    if aarch64_tools_present() {
        return Ok(());
    }
    if is_root() && Path::new("/usr/bin/apt-get").exists() {
        eprintln!("installing {} with apt-get", AARCH64_PACKAGES.join(" "));
        let apt = |args: &[&str]| {
            Command::new("apt-get")
                .args(args)
                .env("DEBIAN_FRONTEND", "noninteractive")
                .status()
                .is_ok_and(|s| s.success())
        };
        let install: Vec<&str> = ["install", "-y", "-qq"].iter().chain(AARCH64_PACKAGES).copied().collect();
        // A fresh machine's package lists may be stale: update and retry.
        let installed = apt(&install) || (apt(&["update", "-qq"]) && apt(&install));
        if installed && aarch64_tools_present() {
            return Ok(());
        }
    }
    bail!(
        "the aarch64 cross tools are missing; install them with\n    sudo apt-get install {}",
        AARCH64_PACKAGES.join(" ")
    )
}

/// Adds the Rust standard library for `triple` (a no-op when present).
pub(crate) fn ensure_rust_target(triple: &str) -> Result<()> {
    let status = Command::new("rustup").args(["target", "add", triple]).status();
    match status {
        Ok(s) if s.success() => Ok(()),
        _ => bail!("the Rust target {triple} is missing and `rustup target add {triple}` failed"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn targets_are_read_by_triple_and_an_unknown_one_is_named() {
        for t in CrossTarget::ALL {
            assert_eq!(CrossTarget::parse(t.triple()).unwrap(), t);
        }
        let e = CrossTarget::parse("riscv64gc-unknown-linux-gnu").unwrap_err().to_string();
        assert!(e.starts_with("--target riscv64gc-unknown-linux-gnu is not supported"), "{e}");
        assert!(e.contains("wasm32-wasip1") && e.contains("aarch64-unknown-linux-gnu"), "{e}");
    }

    #[test]
    fn cargo_settings_are_named_per_target() {
        assert_eq!(
            cargo_target_env("aarch64-unknown-linux-gnu", "LINKER"),
            "CARGO_TARGET_AARCH64_UNKNOWN_LINUX_GNU_LINKER"
        );
        assert_eq!(CrossTarget::Wasm32Wasip1.exe_name("mlp"), "mlp.wasm");
        assert_eq!(CrossTarget::Aarch64Gnu.exe_name("mlp"), "mlp");
    }
}
