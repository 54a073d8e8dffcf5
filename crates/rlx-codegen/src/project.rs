//! Where generated files live in this workspace, and whether they are
//! fresh. Shared by `cargo xtask gen|check` and the staleness test.

use std::path::{Path, PathBuf};

use crate::{generate, load_checked_with, options_for_file, GenError};

/// Every bundled model's schedule: `models/*/model.sched`, sorted.
pub fn model_schedules(root: &Path) -> Vec<PathBuf> {
    let mut out: Vec<PathBuf> = std::fs::read_dir(root.join("models"))
        .into_iter()
        .flatten()
        .flatten()
        .map(|e| e.path().join("model.sched"))
        .filter(|p| p.is_file())
        .collect();
    out.sort();
    out
}

/// Where `cargo xtask gen` writes by default: `src/generated.rs` of the
/// crate the `.sched` file sits in.
pub fn default_output(sched: &Path) -> Option<PathBuf> {
    let dir = sched.parent()?;
    dir.join("Cargo.toml").is_file().then(|| dir.join("src").join("generated.rs"))
}

/// The text `cargo xtask gen` writes to `out` for `sched`.
pub fn generate_file(sched: &Path, root: &Path, out: &Path) -> Result<String, GenError> {
    generate_file_with(sched, root, out, rlx_sched::Policy::default())
}

/// [`generate_file`] under a validation policy.
pub fn generate_file_with(
    sched: &Path,
    root: &Path,
    out: &Path,
    policy: rlx_sched::Policy,
) -> Result<String, GenError> {
    let schedule = load_checked_with(sched, root, policy)?;
    Ok(generate(&schedule, &options_for_file(&schedule, sched, root, out)))
}

/// The C library files of a model crate: `include/NAME.h` and
/// `src/capi.rs` (`crate::c_api`), each with its text.
#[derive(Debug)]
pub struct CApiFiles {
    pub header: (PathBuf, String),
    pub bindings: (PathBuf, String),
}

/// The C library files of the model crate `sched` sits in, or `None` when
/// it sits in no crate, the crate does not opt in (a `capi = ...` feature
/// line in its `Cargo.toml`, as the bundled and imported models have), or
/// its schedule has no C API (named entry points).
pub fn c_api_files(sched: &Path, root: &Path) -> Result<Option<CApiFiles>, GenError> {
    let Some(dir) = default_output(sched).and_then(|_| sched.parent().map(Path::to_path_buf)) else {
        return Ok(None);
    };
    let manifest = std::fs::read_to_string(dir.join("Cargo.toml")).unwrap_or_default();
    if !manifest.lines().any(|l| l.trim_start().starts_with("capi = ")) {
        return Ok(None);
    }
    let schedule = load_checked_with(sched, root, rlx_sched::Policy::default())?;
    if !crate::c_api::has_c_api(&schedule) {
        return Ok(None);
    }
    let sched_path = crate::sched_path_for(sched, root, &dir);
    let prefix = crate::names::snake_name(schedule.model());
    Ok(Some(CApiFiles {
        header: (
            dir.join("include").join(format!("{prefix}.h")),
            crate::c_api::generate_header(&schedule, &sched_path),
        ),
        bindings: (dir.join("src").join("capi.rs"), crate::c_api::generate_bindings(&schedule, &sched_path)),
    }))
}

/// A checked-in generated file that does not match its schedule.
#[derive(Debug)]
pub struct Stale {
    pub sched: PathBuf,
    pub generated: PathBuf,
}

/// Regenerates every bundled model in memory (its `generated.rs` and, with
/// a C API, its header and `capi.rs`) and lists the files whose checked-in
/// text differs (or is missing).
pub fn stale_models(root: &Path) -> Result<Vec<Stale>, GenError> {
    let mut stale = Vec::new();
    for sched in model_schedules(root) {
        let Some(out) = default_output(&sched) else { continue };
        let fresh = generate_file(&sched, root, &out)?;
        if std::fs::read_to_string(&out).ok().as_deref() != Some(fresh.as_str()) {
            stale.push(Stale { sched: sched.clone(), generated: out });
        }
        let c_files = c_api_files(&sched, root)?;
        for (path, text) in c_files.into_iter().flat_map(|f| [f.header, f.bindings]) {
            if std::fs::read_to_string(&path).ok().as_deref() != Some(text.as_str()) {
                stale.push(Stale { sched: sched.clone(), generated: path });
            }
        }
    }
    Ok(stale)
}
