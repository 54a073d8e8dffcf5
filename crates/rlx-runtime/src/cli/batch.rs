//! `--input-dir DIR --output-dir OUT`: one run per input set in DIR, in
//! one process, over one model instance.
//!
//! The layout, in file-name order (byte order, so runs are deterministic):
//! - `DIR/NAME.npy`, for a model of one input: that input; the outputs go
//!   to `OUT/NAME.OUTPUT.npy`.
//! - `DIR/NAME/`, for any model: a directory holding `INPUT.npy` for every
//!   input and nothing else; the outputs go to `OUT/NAME/OUTPUT.npy`.
//! - Names starting with `.` are skipped; any other entry is a failed
//!   input set.
//!
//! A failed input set (unreadable, not `.npy`, wrong dtype or shape, an
//! output that cannot be written) is one line on stderr naming its file,
//! and the batch goes on unless `--fail-fast`; the caller exits 2 when any
//! failed. Inputs are copied into the arena and outputs written from it,
//! so the model and its buffers serve every input set.

use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use indicatif::{ProgressBar, ProgressStyle};

use super::{err, load_input, write_output, CliError};
use crate::model::GeneratedModel;

/// One entry of the input directory.
enum InputSet {
    /// `DIR/NAME.npy`: the one input of a single-input model.
    File { stem: OsString, path: PathBuf },
    /// `DIR/NAME/`: one `INPUT.npy` per input.
    Dir { name: OsString, path: PathBuf },
    /// An entry that is neither: reported when its turn comes.
    Bad { path: PathBuf, reason: String },
}

/// What a batch did, for the summary line and the exit code.
#[derive(Debug)]
pub(super) struct Summary {
    pub run: usize,
    pub failed: usize,
    /// Input sets left out after the first failure under `--fail-fast`.
    pub not_run: usize,
    pub elapsed: Duration,
}

impl Summary {
    /// The line printed on stderr after the batch, e.g.
    /// `1000 inputs, 0 failed, 0.215 s, 4651.2 inputs/s`.
    pub fn line(&self) -> String {
        let secs = self.elapsed.as_secs_f64();
        let rate = if secs > 0.0 { self.run as f64 / secs } else { 0.0 };
        let mut line = format!("{} inputs, {} failed, {secs:.3} s, {rate:.1} inputs/s", self.run, self.failed);
        if self.not_run > 0 {
            line.push_str(&format!(", stopped at the first failure ({} not run)", self.not_run));
        }
        line
    }
}

/// Runs `model` once per input set of `input_dir`, writing every output
/// under `output_dir`; prints a progress bar (when stderr is a terminal),
/// one line per failed input set and the summary line on stderr. An error
/// is returned only for what stops the whole batch (an unreadable input
/// directory, an output directory that cannot be made, no input sets).
pub(super) fn run_batch<M: GeneratedModel>(
    model: &mut M,
    input_dir: &Path,
    output_dir: &Path,
    fail_fast: bool,
) -> Result<Summary, CliError> {
    let sets = list_input_sets::<M>(input_dir)?;
    if sets.is_empty() {
        return Err(err(format!(
            "{}: no input sets (expected NAME.npy files or NAME/ directories of INPUT.npy files)",
            input_dir.display()
        )));
    }
    if same_dir(input_dir, output_dir) {
        // Outputs written there would be read as input sets by the next batch.
        return Err(err(format!("--output-dir {} is the input directory: give another one", output_dir.display())));
    }
    std::fs::create_dir_all(output_dir)
        .map_err(|e| err(format!("cannot create output directory {}: {e}", output_dir.display())))?;

    let bar = ProgressBar::new(sets.len() as u64);
    bar.set_style(
        ProgressStyle::with_template("{bar:40} {pos}/{len} [{elapsed}] eta {eta}")
            .unwrap_or_else(|_| ProgressStyle::default_bar()),
    );
    let start = Instant::now();
    let mut summary = Summary { run: 0, failed: 0, not_run: 0, elapsed: Duration::ZERO };
    for (i, set) in sets.iter().enumerate() {
        summary.run += 1;
        if let Err(e) = run_one(model, set, output_dir) {
            summary.failed += 1;
            bar.suspend(|| eprintln!("{}: error: {e}", M::INFO.name));
            if fail_fast {
                summary.not_run = sets.len() - i - 1;
                break;
            }
        }
        bar.inc(1);
    }
    summary.elapsed = start.elapsed();
    bar.finish_and_clear();
    eprintln!("{}: {}", M::INFO.name, summary.line());
    Ok(summary)
}

/// The input sets of `dir`, sorted by file name.
fn list_input_sets<M: GeneratedModel>(dir: &Path) -> Result<Vec<InputSet>, CliError> {
    let unreadable = |e: std::io::Error| err(format!("cannot read input directory {}: {e}", dir.display()));
    let mut entries: Vec<(OsString, PathBuf)> = Vec::new();
    for entry in std::fs::read_dir(dir).map_err(unreadable)? {
        let entry = entry.map_err(unreadable)?;
        let name = entry.file_name();
        if !name.as_encoded_bytes().starts_with(b".") {
            entries.push((name, entry.path()));
        }
    }
    entries.sort();
    let inputs = M::INFO.inputs.len();
    Ok(entries
        .into_iter()
        .map(|(name, path)| {
            if path.is_dir() {
                InputSet::Dir { name, path }
            } else if path.extension().is_some_and(|e| e == "npy") {
                if inputs == 1 {
                    let stem = path.file_stem().map(OsString::from).unwrap_or(name);
                    InputSet::File { stem, path }
                } else {
                    let reason = format!(
                        "the model has {inputs} inputs: give each input set as a directory NAME/ of INPUT.npy files"
                    );
                    InputSet::Bad { path, reason }
                }
            } else {
                InputSet::Bad { path, reason: "not a .npy file or a directory of them".into() }
            }
        })
        .collect())
}

/// Loads one input set, runs the model and writes its outputs.
fn run_one<M: GeneratedModel>(model: &mut M, set: &InputSet, output_dir: &Path) -> Result<(), CliError> {
    let info = M::INFO;
    match set {
        InputSet::Bad { path, reason } => Err(err(format!("{}: {reason}", path.display()))),
        InputSet::File { stem, path } => {
            load_input(model, &info.inputs[0], path)?;
            model.run();
            for t in info.outputs {
                let mut file = stem.clone();
                file.push(format!(".{}.npy", t.name));
                write_output(model, t, &output_dir.join(file))?;
            }
            Ok(())
        }
        InputSet::Dir { name, path } => {
            check_set_dir::<M>(path)?;
            for t in info.inputs {
                load_input(model, t, &path.join(format!("{}.npy", t.name)))?;
            }
            model.run();
            let out = output_dir.join(name);
            std::fs::create_dir_all(&out)
                .map_err(|e| err(format!("cannot create output directory {}: {e}", out.display())))?;
            for t in info.outputs {
                write_output(model, t, &out.join(format!("{}.npy", t.name)))?;
            }
            Ok(())
        }
    }
}

/// An input-set directory holds `INPUT.npy` for inputs of the model only:
/// a misspelt name would otherwise surface as a missing input.
fn check_set_dir<M: GeneratedModel>(path: &Path) -> Result<(), CliError> {
    let unreadable = |e: std::io::Error| err(format!("cannot read {}: {e}", path.display()));
    for entry in std::fs::read_dir(path).map_err(unreadable)? {
        let name = entry.map_err(unreadable)?.file_name();
        if name.as_encoded_bytes().starts_with(b".") {
            continue;
        }
        if !M::INFO.inputs.iter().any(|t| name == OsString::from(format!("{}.npy", t.name)).as_os_str()) {
            let names: Vec<String> = M::INFO.inputs.iter().map(|t| format!("{}.npy", t.name)).collect();
            return Err(err(format!(
                "{}: not an input of the model (an input set holds {})",
                path.join(&name).display(),
                names.join(", ")
            )));
        }
    }
    Ok(())
}

/// Whether both paths name the same existing directory.
fn same_dir(a: &Path, b: &Path) -> bool {
    match (a.canonicalize(), b.canonicalize()) {
        (Ok(a), Ok(b)) => a == b,
        _ => false,
    }
}
