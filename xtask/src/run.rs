//! `cargo xtask run`: runs a schedule through the reference interpreter.

use std::path::{Path, PathBuf};

use anyhow::{anyhow, bail, Context, Result};
use rlx_interp::Interpreter;
use rlx_runtime::{npy, threads};
use rlx_sched::Role;

fn split(spec: &str) -> Result<(&str, PathBuf)> {
    match spec.split_once('=') {
        Some((n, p)) if !n.is_empty() && !p.is_empty() => Ok((n, PathBuf::from(p))),
        _ => bail!("expected NAME=PATH, found `{spec}`"),
    }
}

/// Loads a schedule and its weights' data section.
pub fn load_with_weights(sched: &Path, root: &Path) -> Result<(rlx_sched::Schedule, Vec<u8>)> {
    load_with_weights_under(sched, root, rlx_sched::Policy::default())
}

/// [`load_with_weights`] under a validation policy.
pub fn load_with_weights_under(
    sched: &Path,
    root: &Path,
    policy: rlx_sched::Policy,
) -> Result<(rlx_sched::Schedule, Vec<u8>)> {
    let schedule = rlx_codegen::load_checked_with(sched, root, policy).map_err(|e| anyhow!("{e}"))?;
    let weights = match schedule.weights() {
        None => Vec::new(),
        Some(w) => {
            let path = sched.parent().unwrap_or(Path::new(".")).join(&w.path);
            let bytes = std::fs::read(&path).with_context(|| format!("cannot read {}", path.display()))?;
            bytes[w.data_offset..].to_vec()
        }
    };
    Ok((schedule, weights))
}

/// What `cargo xtask run` was asked to do besides the schedule.
#[derive(Debug)]
pub struct RunArgs<'a> {
    /// `--input NAME=PATH.npy` flags.
    pub inputs: &'a [String],
    /// `--output NAME=PATH.npy` flags.
    pub outputs: &'a [String],
    /// `--threads N`.
    pub threads: Option<&'a str>,
    pub policy: rlx_sched::Policy,
}

pub fn run(root: &Path, sched: &Path, args: &RunArgs<'_>) -> Result<()> {
    // As the model CLI: a bad RLX_NUM_THREADS is an error, --threads wins.
    let from_env = threads::threads_from_env()?;
    let n = args.threads.map(|t| threads::parse_threads("--threads", t)).transpose()?.or(from_env);
    if let Some(n) = n {
        threads::set_num_threads(n)?;
    }
    let (schedule, weights) = load_with_weights_under(sched, root, args.policy)?;
    let mut interp = Interpreter::new(schedule.clone(), &weights)?;
    let mut given: Vec<String> = Vec::new();
    for spec in args.inputs {
        let (name, path) = split(spec)?;
        let b = schedule
            .buffers()
            .iter()
            .find(|b| b.name == name && b.role == Role::Input)
            .ok_or_else(|| anyhow!("no input named `{name}`"))?;
        if given.iter().any(|g| g == name) {
            bail!("input `{name}` is given twice");
        }
        let arr = npy::read_npy(&path)?;
        if arr.dtype != b.dtype || arr.shape != b.shape {
            bail!(
                "{}: input `{name}` expects {}{:?}, found {}{:?}",
                path.display(),
                b.dtype,
                b.shape,
                arr.dtype,
                arr.shape
            );
        }
        interp.set_bytes(name, &arr.bytes)?;
        given.push(name.to_string());
    }
    if let Some(missing) = schedule.inputs().find(|b| !given.contains(&b.name)) {
        bail!("missing input `{}`: expected {}{:?}", missing.name, missing.dtype, missing.shape);
    }
    interp.run();
    for spec in args.outputs {
        let (name, path) = split(spec)?;
        let b = schedule.outputs().find(|b| b.name == name).ok_or_else(|| anyhow!("no output named `{name}`"))?;
        npy::write_npy(&path, b.dtype, &b.shape, interp.bytes(name)?)?;
        println!("wrote {}", path.display());
    }
    if args.outputs.is_empty() {
        for b in schedule.outputs() {
            println!("{}: {}{:?} ({} bytes)", b.name, b.dtype, b.shape, b.bytes());
        }
    }
    Ok(())
}
