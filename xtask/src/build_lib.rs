//! `cargo xtask build NAME --lib`: the model as a static C library,
//! `libNAME.a` with the weights embedded and OpenBLAS inside, next to its
//! generated header `NAME.h` (docs/shipping.md).

use std::path::{Path, PathBuf};
use std::process::Command;

use anyhow::{bail, Context, Result};
use rlx_codegen::project;

use crate::blas_setup;

/// What `build` wrote.
#[derive(Debug)]
pub struct Library {
    pub archive: PathBuf,
    pub header: PathBuf,
}

/// Writes the C library files (`include/NAME.h`, `src/capi.rs`) of each
/// schedule's model crate, or of every bundled model with `all`, when
/// their bytes change; models without a C API (`project::c_api_files`)
/// are passed over.
pub fn gen_c_api(root: &Path, scheds: &[PathBuf], all: bool) -> Result<()> {
    let mut targets: Vec<PathBuf> = scheds.iter().map(|p| std::path::absolute(p).unwrap_or(p.clone())).collect();
    if all {
        targets.extend(project::model_schedules(root));
    }
    for sched in &targets {
        write_c_api(root, sched)?;
    }
    Ok(())
}

/// Writes one model's C files; `None` when it has no C API.
fn write_c_api(root: &Path, sched: &Path) -> Result<Option<project::CApiFiles>> {
    let Some(files) = project::c_api_files(sched, root).map_err(|e| anyhow::anyhow!("{e}"))? else {
        return Ok(None);
    };
    for (path, text) in [&files.header, &files.bindings] {
        let shown = rlx_codegen::display_path(path, root);
        if rlx_codegen::write_if_changed(path, text)? {
            println!("wrote {shown}");
        } else {
            println!("{shown} is up to date");
        }
    }
    Ok(Some(files))
}

/// Where `build` puts its cargo output and the library: one directory of
/// its own, since the `staticlib` crate type and the `capi` feature would
/// otherwise rebuild the model crate of every other build at each switch.
pub fn lib_target_dir(root: &Path) -> PathBuf {
    crate::target_dir(root).join("capi")
}

/// Builds `libNAME.a` (release, the `capi` feature, crate type
/// `staticlib`) and copies it with `NAME.h` into `target/capi/NAME/`.
pub fn build(root: &Path, name: &str) -> Result<Library> {
    let krate = root.join("models").join(name);
    if !krate.join("Cargo.toml").is_file() {
        bail!("no model crate models/{name}");
    }
    let sched = krate.join("model.sched");
    let files = write_c_api(root, &sched)?.with_context(|| {
        format!(
            "models/{name} has no C API: its Cargo.toml declares no `capi` feature, or its schedule has entry \
             points (docs/shipping.md)"
        )
    })?;
    let openblas = blas_setup::ensure_openblas();
    let target = lib_target_dir(root);
    let mut cmd = Command::new(env!("CARGO"));
    cmd.current_dir(root)
        .env("CARGO_TARGET_DIR", &target)
        .args(["rustc", "--release", "-p", name, "--lib", "--crate-type", "staticlib", "--features", "capi"])
        .args(blas_setup::backend_args(openblas))
        .args(["--", "--print", "native-static-libs"]);
    if !cmd.status().context("running cargo rustc")?.success() {
        bail!("cargo rustc failed");
    }
    let lib_name = format!("lib{}.a", name.replace('-', "_"));
    let out_dir = target.join(name);
    std::fs::create_dir_all(&out_dir)?;
    let archive = out_dir.join(&lib_name);
    std::fs::copy(target.join("release").join(&lib_name), &archive).context("copying the archive")?;
    let header = out_dir.join(files.header.0.file_name().context("header file name")?);
    std::fs::write(&header, &files.header.1)?;
    Ok(Library { archive, header })
}

/// Says what `build` wrote and how to link it.
pub fn report(lib: &Library) -> Result<()> {
    let size = std::fs::metadata(&lib.archive)?.len() as f64 / (1024.0 * 1024.0);
    println!("built {} ({size:.1} MiB) and {}", lib.archive.display(), lib.header.display());
    let include = lib.header.parent().context("header directory")?;
    println!("link with: cc ... -I{} {} -lpthread -ldl -lm", include.display(), lib.archive.display());
    Ok(())
}

#[cfg(test)]
mod tests;
