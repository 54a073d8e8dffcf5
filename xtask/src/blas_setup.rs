//! Making sure the static OpenBLAS the default backend links is present.

use std::path::Path;
use std::process::Command;

/// Where Debian's `libopenblas-dev` puts `libopenblas.a`.
const STATIC_LIBS: &[&str] =
    &["/usr/lib/x86_64-linux-gnu/libopenblas.a", "/usr/lib/aarch64-linux-gnu/libopenblas.a", "/usr/lib/libopenblas.a"];

pub fn static_openblas_present() -> bool {
    STATIC_LIBS.iter().any(|p| Path::new(p).exists())
}

fn is_root() -> bool {
    Command::new("id").arg("-u").output().is_ok_and(|o| String::from_utf8_lossy(&o.stdout).trim() == "0")
}

/// Ensures `libopenblas.a` exists, installing Debian's `libopenblas-dev`
/// when running as root with apt. Returns `false` (after saying what to
/// run) when it is still missing, so the caller can use the pure-Rust
/// backend.
pub fn ensure_openblas() -> bool {
    if static_openblas_present() {
        return true;
    }
    let have_apt = Path::new("/usr/bin/apt-get").exists();
    if have_apt && is_root() {
        eprintln!("static OpenBLAS not found: installing libopenblas-dev with apt-get");
        let ok = Command::new("apt-get").args(["update", "-qq"]).status().is_ok_and(|s| s.success())
            && Command::new("apt-get")
                .args(["install", "-y", "-qq", "libopenblas-dev"])
                .env("DEBIAN_FRONTEND", "noninteractive")
                .status()
                .is_ok_and(|s| s.success());
        if ok && static_openblas_present() {
            return true;
        }
        eprintln!("warning: installing libopenblas-dev failed");
    }
    eprintln!(
        "warning: static OpenBLAS (libopenblas.a) is missing; install it with\n    sudo apt-get install libopenblas-dev\n\
         continuing with the pure-Rust GEMM backend"
    );
    false
}

/// Cargo feature arguments selecting the BLAS backend for a model crate.
pub fn backend_args(openblas: bool) -> Vec<&'static str> {
    if openblas {
        vec![]
    } else {
        vec!["--no-default-features", "--features", "pure-rust"]
    }
}
