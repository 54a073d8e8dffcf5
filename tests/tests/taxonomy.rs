//! One taxonomy of kinds: every kind's family (the `family` column of
//! `thunk_table!`) is a folder of `rlx_runtime::kernels`, the module that
//! holds its lowering and the one that holds its extent rules, and the
//! family of every kernel entry it lowers to, over every run case and
//! every valid example schedule.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use rlx_sched::ThunkKind;

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("..")
}

fn read(path: &Path) -> String {
    std::fs::read_to_string(path).unwrap_or_else(|e| panic!("cannot read {}: {e}", path.display()))
}

/// Whether `src` implements `tr` for `kind` (its struct, generic or not).
fn implements(src: &str, tr: &str, kind: &str) -> bool {
    src.lines().any(|l| {
        let l = l.trim_start();
        l.starts_with("impl") && l.contains(&format!("{tr} for {kind}<")) || l.contains(&format!("{tr} for {kind} {{"))
    })
}

#[test]
fn each_kind_is_lowered_and_checked_in_its_familys_module() {
    let root = root();
    let mut failures = Vec::new();
    for &kind in ThunkKind::ALL {
        let (name, family) = (kind.name(), kind.family());
        let kernels = root.join("crates/rlx-runtime/src/kernels").join(family);
        if !kernels.is_dir() {
            failures.push(format!("{name}: family `{family}` has no folder {}", kernels.display()));
        }
        let lower = root.join(format!("crates/rlx-core/src/lower/{family}.rs"));
        if !implements(&read(&lower), "Lower", name) {
            failures.push(format!("{name}: no `impl Lower for {name}` in {}", lower.display()));
        }
        let extents = root.join(format!("crates/rlx-sched/src/validate/extents/{family}.rs"));
        if !implements(&read(&extents), "Extents<O>", name) {
            failures.push(format!("{name}: no `impl Extents<O> for {name}` in {}", extents.display()));
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

#[test]
fn each_kind_lowers_to_entries_of_its_family() {
    let root = root();
    let mut seen: BTreeMap<ThunkKind, usize> = BTreeMap::new();
    let mut failures = Vec::new();
    for dir in ["tests/sched/run", "tests/sched/ok"] {
        let mut paths: Vec<_> = std::fs::read_dir(root.join(dir))
            .expect("schedule folder")
            .map(|e| e.expect("entry").path())
            .filter(|p| p.extension().is_some_and(|e| e == "sched"))
            .collect();
        paths.sort();
        for path in paths {
            let checked = rlx_sched::load(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
            let schedule = checked.schedule;
            for node in schedule.nodes() {
                let kind = node.thunk.kind();
                let Some(call) = rlx_sched::lower(&node.thunk, &schedule.params()) else { continue };
                *seen.entry(kind).or_default() += 1;
                let entry = call.entry().replace(' ', "");
                if entry.split("::").next() != Some(kind.family()) {
                    failures.push(format!(
                        "{}:{}: {} (family {}) lowers to kernels::{entry}",
                        path.display(),
                        node.line,
                        kind.name(),
                        kind.family()
                    ));
                }
            }
        }
    }
    // Every kind that calls a kernel was seen at least once.
    for &kind in ThunkKind::ALL {
        if kind != ThunkKind::Nop && !seen.contains_key(&kind) {
            failures.push(format!("{} never lowered to a call in the example schedules", kind.name()));
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

/// The validator's scratch figure and the lowering's come from the same
/// `rlx_core` size functions: over every example schedule they agree,
/// except that a GEMM whose output does not overlap an input skips its
/// output temporary (the validator sizes the case where it does).
#[test]
fn validator_and_lowering_agree_on_every_scratch_size() {
    let root = root();
    let mut failures = Vec::new();
    let mut checked = 0;
    for dir in ["tests/sched/run", "tests/sched/ok"] {
        let mut paths: Vec<_> = std::fs::read_dir(root.join(dir))
            .expect("schedule folder")
            .map(|e| e.expect("entry").path())
            .filter(|p| p.extension().is_some_and(|e| e == "sched"))
            .collect();
        paths.sort();
        for path in paths {
            let schedule = rlx_sched::load(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display())).schedule;
            for node in schedule.nodes() {
                let lowered = rlx_sched::lower(&node.thunk, &schedule.params()).map_or(0, |c| c.scratch_bytes());
                let bound = rlx_sched::scratch_bound(&node.thunk);
                let via = rlx_sched::lower(&node.thunk, &schedule.params()).is_some_and(|c| c.name().ends_with("Via"));
                let temp = match &node.thunk {
                    rlx_sched::Thunk::Sgemm(t) if !via => t.m * t.n * 4,
                    rlx_sched::Thunk::SgemmT(t) if !via => t.m * t.n * 4,
                    rlx_sched::Thunk::SgemmF16(t) if !via => t.m * t.n * 4,
                    rlx_sched::Thunk::SgemmBf16(t) if !via => t.m * t.n * 4,
                    rlx_sched::Thunk::BatchedSgemm(t) if !via => t.batch * t.m * t.n * 4,
                    rlx_sched::Thunk::FusedMmBiasAct(t) if !via => t.m * t.n * 4,
                    rlx_sched::Thunk::PackedGemm(t) if !via => t.m * t.n * 4,
                    rlx_sched::Thunk::PackedGemmHalf(t) if !via => t.m * t.n * 4,
                    rlx_sched::Thunk::PackedGemmQ8(t) if !via => t.m * t.n * 4,
                    _ => 0,
                };
                checked += 1;
                if lowered + temp != bound {
                    failures.push(format!(
                        "{}:{}: {}: the lowering uses {lowered} bytes (+{temp} unused temporary), the validator sized {bound}",
                        path.display(),
                        node.line,
                        node.thunk.kind().name()
                    ));
                }
            }
        }
    }
    assert!(checked > 1000, "only {checked} thunks checked");
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}
