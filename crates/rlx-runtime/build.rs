//! Links OpenBLAS statically when the `openblas` feature is on, and
//! records the target triple for `--info` (`RLX_TARGET_TRIPLE`).
//!
//! We link the system's `libopenblas.a` (Debian: `libopenblas-dev`) rather
//! than going through `openblas-src`, whose `system` mode still builds its
//! source-download helper crate: this script needs no network and no
//! extra dependencies. Only `cblas_sgemm` and the thread-count functions are
//! used, and a static archive contributes just the objects that resolve
//! them, so the LAPACK objects that need libgfortran are never pulled in.
//! See docs/blas.md.

use std::env;
use std::path::{Path, PathBuf};

const ARCHIVE: &str = "libopenblas.a";

fn main() {
    println!("cargo:rerun-if-changed=build.rs");
    println!("cargo:rerun-if-env-changed=RLX_OPENBLAS_LIB_DIR");
    // Cargo always sets TARGET for build scripts; a binary names its own.
    println!("cargo:rustc-env=RLX_TARGET_TRIPLE={}", env::var("TARGET").unwrap_or_default());
    if env::var_os("CARGO_FEATURE_OPENBLAS").is_none() {
        return;
    }
    let target_os = env::var("CARGO_CFG_TARGET_OS").unwrap_or_default();
    let dir = match find_archive() {
        Some(dir) => dir,
        None => {
            // Cargo shows a failed build script's stderr; exit rather than
            // panic so the message is not buried in a backtrace note.
            eprintln!("error: {}", missing_message());
            std::process::exit(1);
        }
    };
    println!("cargo:rerun-if-changed={}", dir.join(ARCHIVE).display());
    println!("cargo:rustc-link-search=native={}", dir.display());
    println!("cargo:rustc-link-lib=static=openblas");
    // The pthread build of OpenBLAS starts its own worker threads and calls
    // libm; both come from the C library on glibc targets.
    if target_os == "linux" {
        println!("cargo:rustc-link-lib=dylib=pthread");
        println!("cargo:rustc-link-lib=dylib=m");
    }
}

fn missing_message() -> String {
    format!(
        "rlx-runtime: cannot find the static OpenBLAS library `{ARCHIVE}` (searched {}); \
         install it with `apt-get install libopenblas-dev`, point RLX_OPENBLAS_LIB_DIR at the \
         directory holding it, or build with `--no-default-features --features pure-rust`",
        candidate_dirs().iter().map(|d| d.display().to_string()).collect::<Vec<_>>().join(", ")
    )
}

/// The first candidate directory that holds the archive.
fn find_archive() -> Option<PathBuf> {
    candidate_dirs().into_iter().find(|d| d.join(ARCHIVE).is_file())
}

/// Where to look, most specific first. The pthread variant comes before the
/// generic name because Debian's generic `libopenblas.a` is an alternatives
/// link that may point at the OpenMP build, which would also need libgomp.
fn candidate_dirs() -> Vec<PathBuf> {
    if let Some(dir) = env::var_os("RLX_OPENBLAS_LIB_DIR") {
        return vec![PathBuf::from(dir)];
    }
    let arch = env::var("CARGO_CFG_TARGET_ARCH").unwrap_or_default();
    let multiarch = format!("/usr/lib/{arch}-linux-gnu");
    let mut dirs = vec![
        Path::new(&multiarch).join("openblas-pthread"),
        PathBuf::from(&multiarch),
        PathBuf::from("/usr/lib64"),
        PathBuf::from("/usr/lib"),
        PathBuf::from("/usr/local/lib"),
    ];
    dirs.dedup();
    dirs
}
