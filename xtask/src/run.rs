//! `cargo xtask run`: runs a schedule through the reference interpreter.

use std::path::{Path, PathBuf};

use anyhow::{anyhow, bail, Context, Result};
use rlx_interp::Interpreter;
use rlx_runtime::{npy, threads};
use rlx_sched::{Buffer, Entry, Role, Schedule};

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

/// An argument that does not fit the schedule: an `--entry`, `--input` or
/// `--output` name it does not have, or one of another entry. `main` exits
/// with status 2 for it, as the model CLI does for bad arguments.
#[derive(Debug)]
pub struct BadArg(String);

impl std::fmt::Display for BadArg {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for BadArg {}

fn bad_arg(msg: String) -> anyhow::Error {
    BadArg(msg).into()
}

/// What `cargo xtask run` was asked to do besides the schedule.
#[derive(Debug)]
pub struct RunArgs<'a> {
    /// `--entry NAME`: the entry point to run (default: the first).
    pub entry: Option<&'a str>,
    /// `--input NAME=PATH.npy` flags.
    pub inputs: &'a [String],
    /// `--output NAME=PATH.npy` flags.
    pub outputs: &'a [String],
    /// `--threads N`.
    pub threads: Option<&'a str>,
    pub policy: rlx_sched::Policy,
}

/// The index of the entry point `--entry` names: the first without it (the
/// whole schedule when it has no `entry` lines).
fn pick_entry(schedule: &Schedule, name: Option<&str>) -> Result<usize> {
    let Some(name) = name else { return Ok(0) };
    let names: Vec<&str> = schedule.entries().iter().filter_map(|e| e.name.as_deref()).collect();
    if names.is_empty() {
        return Err(bad_arg(format!("no entry named `{name}`: the schedule has no `entry` lines")));
    }
    names
        .iter()
        .position(|&n| n == name)
        .ok_or_else(|| bad_arg(format!("no entry named `{name}`; the schedule's entries are: {}", names.join(", "))))
}

/// The inputs (`role` input) or the outputs of `entry`.
fn listed(entry: &Entry, role: Role) -> &[usize] {
    if role == Role::Input {
        &entry.inputs
    } else {
        &entry.outputs
    }
}

/// The buffer an `--input` or `--output` (`role`) flag names, when `entry`
/// reads or writes it: the name of another entry's is an error that names
/// the entry to pass.
fn find_buffer<'s>(schedule: &'s Schedule, entry: &Entry, role: Role, name: &str) -> Result<(usize, &'s Buffer)> {
    let found = schedule.buffers().iter().enumerate().find(|(_, b)| b.name == name && b.role == role);
    let what = role.name();
    match found {
        Some((i, b)) if listed(entry, role).contains(&i) => Ok((i, b)),
        Some((i, _)) => {
            let other = schedule.entries().iter().find(|e| listed(e, role).contains(&i));
            let other = other.and_then(|e| e.name.as_deref()).unwrap_or_default();
            let this = entry.name.as_deref().unwrap_or_default();
            let verb = if role == Role::Input { "read" } else { "written" };
            Err(bad_arg(format!(
                "{what} `{name}` is {verb} by entry `{other}`, not by entry `{this}` (pass --entry {other})"
            )))
        }
        None => {
            let names: Vec<&str> = listed(entry, role).iter().map(|&i| schedule.buffers()[i].name.as_str()).collect();
            let whose = match &entry.name {
                Some(e) => format!("entry `{e}`"),
                None => "the schedule".to_string(),
            };
            let have = if names.is_empty() {
                format!("{whose} has no {what}s")
            } else {
                format!("the {what}s of {whose} are: {}", names.join(", "))
            };
            Err(bad_arg(format!("no {what} named `{name}`; {have}")))
        }
    }
}

pub fn run(root: &Path, sched: &Path, args: &RunArgs<'_>) -> Result<()> {
    // As the model CLI: a bad RLX_NUM_THREADS is an error, --threads wins.
    let from_env = threads::threads_from_env()?;
    let n = args.threads.map(|t| threads::parse_threads("--threads", t)).transpose()?.or(from_env);
    if let Some(n) = n {
        threads::set_num_threads(n)?;
    }
    let (schedule, weights) = load_with_weights_under(sched, root, args.policy)?;
    let index = pick_entry(&schedule, args.entry)?;
    let entry = &schedule.entries()[index];
    // Every argument is checked before the arena is allocated.
    let mut inputs: Vec<(usize, Vec<u8>)> = Vec::new();
    for spec in args.inputs {
        let (name, path) = split(spec)?;
        let (i, b) = find_buffer(&schedule, entry, Role::Input, name)?;
        if inputs.iter().any(|(g, _)| *g == i) {
            return Err(bad_arg(format!("input `{name}` is given twice")));
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
        inputs.push((i, arr.bytes));
    }
    if let Some(&missing) = entry.inputs.iter().find(|&&i| !inputs.iter().any(|(g, _)| *g == i)) {
        let b = &schedule.buffers()[missing];
        return Err(bad_arg(format!(
            "missing input `{}`: expected {}{:?} (pass --input {}=PATH.npy)",
            b.name, b.dtype, b.shape, b.name
        )));
    }
    let outputs = args
        .outputs
        .iter()
        .map(|spec| {
            let (name, path) = split(spec)?;
            Ok((find_buffer(&schedule, entry, Role::Output, name)?.1, path))
        })
        .collect::<Result<Vec<_>>>()?;
    let mut interp = Interpreter::new(schedule.clone(), &weights)?;
    for (i, bytes) in &inputs {
        interp.set_bytes(&schedule.buffers()[*i].name, bytes)?;
    }
    interp.run_entry(index);
    for (b, path) in &outputs {
        npy::write_npy(path, b.dtype, &b.shape, interp.bytes(&b.name)?)?;
        println!("wrote {}", path.display());
    }
    if outputs.is_empty() {
        for &i in &entry.outputs {
            let b = &schedule.buffers()[i];
            println!("{}: {}{:?} ({} bytes)", b.name, b.dtype, b.shape, b.bytes());
        }
    }
    Ok(())
}
