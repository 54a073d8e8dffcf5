//! The fuzz targets and their seed inputs, taken from the repository's own
//! files. Used (through `#[path]`) by `cargo xtask fuzz`, which copies the
//! seeds into `fuzz/corpus/TARGET/`, and by the CI mutation test
//! (`tests/tests/mutation.rs`), which mutates them. Standard library only.

use std::path::{Path, PathBuf};

/// Every fuzz target: one AFL binary in `fuzz/src/bin/` each, and one
/// stream of the mutation test.
pub const TARGETS: &[&str] = &["sched", "npy", "weights", "onnx", "gguf"];

/// Seed files larger than this are skipped (AFL refuses inputs over 1 MB,
/// and large seeds only slow every execution down).
pub const MAX_SEED_BYTES: u64 = 1 << 20;

/// The seed files of `target`, sorted, below the workspace `root`; `None`
/// for an unknown target.
///
/// - `sched`: `tests/sched/**/*.sched`
/// - `npy`: `models/*/samples/*.npy`
/// - `weights`: `models/*/weights.safetensors`, `tests/sched/ok/*.safetensors`
/// - `onnx`: `crates/rlx-onnx/tests/data/*.onnx`
/// - `gguf`: `crates/rlx-gguf/tests/data/*.gguf` (a micro Llama and the
///   dequantization fixture: every execution imports the Llama, so the
///   seeds stay a few kilobytes)
pub fn seed_files(root: &Path, target: &str) -> Option<Vec<PathBuf>> {
    let mut files = Vec::new();
    match target {
        "sched" => walk(&root.join("tests/sched"), &mut |p| has_ext(p, "sched"), &mut files),
        "npy" => {
            for model in subdirs(&root.join("models")) {
                files.extend(in_dir(&model.join("samples"), |p| has_ext(p, "npy")));
            }
        }
        "weights" => {
            for model in subdirs(&root.join("models")) {
                let w = model.join("weights.safetensors");
                if w.is_file() {
                    files.push(w);
                }
            }
            files.extend(in_dir(&root.join("tests/sched/ok"), |p| has_ext(p, "safetensors")));
        }
        "onnx" => files.extend(in_dir(&root.join("crates/rlx-onnx/tests/data"), |p| has_ext(p, "onnx"))),
        "gguf" => files.extend(in_dir(&root.join("crates/rlx-gguf/tests/data"), |p| has_ext(p, "gguf"))),
        _ => return None,
    }
    files.retain(|p| std::fs::metadata(p).is_ok_and(|m| m.len() <= MAX_SEED_BYTES));
    files.sort();
    Some(files)
}

fn has_ext(p: &Path, ext: &str) -> bool {
    p.extension().is_some_and(|x| x == ext)
}

fn entries(dir: &Path) -> Vec<PathBuf> {
    let Ok(read) = std::fs::read_dir(dir) else { return Vec::new() };
    let mut out: Vec<PathBuf> = read.flatten().map(|e| e.path()).collect();
    out.sort();
    out
}

fn subdirs(dir: &Path) -> Vec<PathBuf> {
    entries(dir).into_iter().filter(|p| p.is_dir()).collect()
}

fn in_dir(dir: &Path, keep: impl Fn(&Path) -> bool) -> Vec<PathBuf> {
    entries(dir).into_iter().filter(|p| p.is_file() && keep(p)).collect()
}

fn walk(dir: &Path, keep: &mut dyn FnMut(&Path) -> bool, out: &mut Vec<PathBuf>) {
    for p in entries(dir) {
        if p.is_dir() {
            walk(&p, keep, out);
        } else if p.is_file() && keep(&p) {
            out.push(p);
        }
    }
}
