//! The command line every model binary shares:
//! `NAME --input x=in.npy --output y=out.npy [--threads N] [--bench N] [--profile] [--info]`,
//! or a batch of input sets in one process:
//! `NAME --input-dir DIR --output-dir OUT [--fail-fast]` ([`batch`]).
//!
//! A model's `main.rs` is one line: `rlx_runtime::cli::main::<generated::Model>()`.
//! Every user error (missing or unknown input, wrong dtype or shape,
//! unreadable file) is one line on stderr and exit code 2; never a panic.

mod batch;

use std::fmt::Write as _;
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::time::{Duration, Instant};

use clap::Parser;
use rlx_core::DType;

use crate::model::{GeneratedModel, ModelInfo, TensorInfo};
use crate::npy;

#[derive(Parser, Debug)]
#[command(about = "Runs a model compiled by rlx AOT", disable_version_flag = true)]
struct Args {
    /// An input as NAME=PATH.npy (repeat for each input).
    #[arg(long = "input", value_name = "NAME=PATH")]
    inputs: Vec<String>,
    /// Write an output as NAME=PATH.npy (repeatable); without it, a summary
    /// of every output is printed.
    #[arg(long = "output", value_name = "NAME=PATH")]
    outputs: Vec<String>,
    /// Worker threads, 1 to 1024 (default: RLX_NUM_THREADS, else all cores).
    #[arg(long, value_name = "N")]
    threads: Option<String>,
    /// Time N runs after warm-up and print the median and p90 latency.
    #[arg(long, value_name = "N")]
    bench: Option<usize>,
    /// Print a per-thunk time table over 20 runs, or `--bench N` runs (binaries built with the `profile` feature).
    #[arg(long)]
    profile: bool,
    /// Print the model's inputs, outputs and sizes, then exit.
    #[arg(long)]
    info: bool,
    /// Run once per input set in DIR: `NAME.npy` files (a model of one
    /// input) or `NAME/INPUT.npy` directories; needs --output-dir.
    #[arg(
        long,
        value_name = "DIR",
        requires = "output_dir",
        conflicts_with_all = ["inputs", "outputs", "bench", "profile"]
    )]
    input_dir: Option<PathBuf>,
    /// Where --input-dir writes every output: `OUT/NAME.OUTPUT.npy` for a
    /// file `NAME.npy`, `OUT/NAME/OUTPUT.npy` for a directory `NAME/`.
    #[arg(long, value_name = "DIR", requires = "input_dir")]
    output_dir: Option<PathBuf>,
    /// With --input-dir: stop at the first input set that fails.
    #[arg(long, requires = "input_dir")]
    fail_fast: bool,
}

/// A user-facing error: printed as one line, exit code 2.
#[derive(Debug, thiserror::Error)]
#[error("{0}")]
pub struct CliError(String);

fn err(msg: impl Into<String>) -> CliError {
    CliError(msg.into())
}

/// Runs the CLI for model `M` over the process arguments.
pub fn main<M: GeneratedModel>() -> ExitCode {
    main_from::<M, _, _>(std::env::args_os())
}

/// [`main`] over the given arguments (the first is the program name).
pub fn main_from<M, I, T>(argv: I) -> ExitCode
where
    M: GeneratedModel,
    I: IntoIterator<Item = T>,
    T: Into<std::ffi::OsString> + Clone,
{
    let args = match Args::try_parse_from(argv) {
        Ok(a) => a,
        Err(e) => {
            let code = if e.use_stderr() { 2 } else { 0 };
            let _ = e.print();
            return ExitCode::from(code);
        }
    };
    match run::<M>(&args) {
        Ok(code) => code,
        Err(e) => {
            eprintln!("{}: error: {e}", M::INFO.name);
            ExitCode::from(2)
        }
    }
}

fn describe(t: &TensorInfo) -> String {
    format!("{}{:?}", t.dtype, t.shape)
}

fn split_pair(s: &str) -> Result<(&str, PathBuf), CliError> {
    match s.split_once('=') {
        Some((name, path)) if !name.is_empty() && !path.is_empty() => Ok((name, PathBuf::from(path))),
        _ => Err(err(format!("expected NAME=PATH, found `{s}`"))),
    }
}

fn find<'a>(list: &'a [TensorInfo], name: &str, what: &str) -> Result<&'a TensorInfo, CliError> {
    list.iter().find(|t| t.name == name).ok_or_else(|| {
        let names: Vec<_> = list.iter().map(|t| t.name).collect();
        err(format!("no {what} named `{name}`; the model's {what}s are: {}", names.join(", ")))
    })
}

/// Reads the `.npy` file at `path` into input `t` of the model's arena,
/// after checking its dtype and shape.
fn load_input<M: GeneratedModel>(model: &mut M, t: &TensorInfo, path: &Path) -> Result<(), CliError> {
    let arr = npy::read_npy(path).map_err(|e| err(e.to_string()))?;
    if arr.dtype != t.dtype || arr.shape != t.shape {
        return Err(err(format!(
            "{}: input `{}` expects {}, found {}{:?}",
            path.display(),
            t.name,
            describe(t),
            arr.dtype,
            arr.shape
        )));
    }
    model.arena_mut()[t.offset..t.offset + t.bytes].copy_from_slice(&arr.bytes);
    Ok(())
}

/// Writes output `t` of the model's arena to `path`.
fn write_output<M: GeneratedModel>(model: &M, t: &TensorInfo, path: &Path) -> Result<(), CliError> {
    let bytes = &model.arena()[t.offset..t.offset + t.bytes];
    npy::write_npy(path, t.dtype, t.shape, bytes).map_err(|e| err(e.to_string()))
}

fn run<M: GeneratedModel>(args: &Args) -> Result<ExitCode, CliError> {
    let info = M::INFO;
    if args.info {
        print!("{}", info_text(&info));
        return Ok(ExitCode::SUCCESS);
    }
    crate::threads::configure_threads(args.threads.as_deref()).map_err(|e| err(e.to_string()))?;
    if args.profile && !M::PROFILED {
        return Err(err("this binary was built without the `profile` feature (cargo build --features profile)"));
    }
    // Generated code allocates with `Arena::new`, which aborts when the
    // allocator refuses: allocate fallibly first, for it to take.
    crate::arena::reserve(&[("arena", info.arena_bytes), ("scratch", info.scratch_bytes)])
        .map_err(|e| err(e.to_string()))?;
    let mut model = M::try_new().map_err(|e| err(e.to_string()))?;
    if let (Some(input_dir), Some(output_dir)) = (&args.input_dir, &args.output_dir) {
        let summary = batch::run_batch(&mut model, input_dir, output_dir, args.fail_fast)?;
        return Ok(if summary.failed == 0 { ExitCode::SUCCESS } else { ExitCode::from(2) });
    }
    let mut given = Vec::new();
    for spec in &args.inputs {
        let (name, path) = split_pair(spec)?;
        let t = find(info.inputs, name, "input")?;
        if given.contains(&t.name) {
            return Err(err(format!("input `{name}` is given twice")));
        }
        load_input(&mut model, t, &path)?;
        given.push(t.name);
    }
    if let Some(missing) = info.inputs.iter().find(|t| !given.contains(&t.name)) {
        return Err(err(format!(
            "missing input `{}`: expected {} (pass --input {}=PATH.npy)",
            missing.name,
            describe(missing),
            missing.name
        )));
    }
    let mut outputs = Vec::new();
    for spec in &args.outputs {
        let (name, path) = split_pair(spec)?;
        outputs.push((find(info.outputs, name, "output")?, path));
    }

    if args.profile {
        profile(&mut model, &info, args.bench.unwrap_or(PROFILE_RUNS).max(1));
    } else if let Some(n) = args.bench {
        bench(&mut model, n.max(1));
    } else {
        model.run();
    }

    for (t, path) in &outputs {
        write_output(&model, t, path)?;
    }
    if outputs.is_empty() && args.bench.is_none() {
        for t in info.outputs {
            println!("{}", summary(t, &model.arena()[t.offset..t.offset + t.bytes]));
        }
    }
    Ok(ExitCode::SUCCESS)
}

/// `--info`: inputs, outputs, sizes, schedule hash and kernel backend.
pub fn info_text(info: &ModelInfo) -> String {
    let mut s = String::new();
    let _ = writeln!(s, "model    {}", info.name);
    let _ = writeln!(s, "schedule {} (sha256 {})", info.sched_path, info.sched_sha256);
    for t in info.inputs {
        let _ = writeln!(s, "input    {}: {}", t.name, describe(t));
    }
    for t in info.outputs {
        let _ = writeln!(s, "output   {}: {}", t.name, describe(t));
    }
    let _ = writeln!(s, "thunks   {}", info.thunks.len());
    let _ = writeln!(s, "arena    {} bytes (+ {} scratch)", info.arena_bytes, info.scratch_bytes);
    let _ = writeln!(s, "weights  {} bytes", info.weights_bytes);
    let _ = writeln!(s, "backend  {}", crate::blas::backend_name());
    let _ = writeln!(s, "target   {}", env!("RLX_TARGET_TRIPLE"));
    let _ = writeln!(s, "kernels  {}", crate::isa::describe());
    s
}

fn values_f64(dtype: DType, bytes: &[u8]) -> Vec<f64> {
    let chunks = |n: usize| bytes.chunks_exact(n);
    match dtype {
        DType::F32 => chunks(4).map(|c| f32::from_le_bytes(c.try_into().unwrap()) as f64).collect(),
        DType::F64 => chunks(8).map(|c| f64::from_le_bytes(c.try_into().unwrap())).collect(),
        DType::F16 => chunks(2).map(|c| half::f16::from_le_bytes([c[0], c[1]]).to_f64()).collect(),
        DType::Bf16 => chunks(2).map(|c| half::bf16::from_le_bytes([c[0], c[1]]).to_f64()).collect(),
        DType::I64 => chunks(8).map(|c| i64::from_le_bytes(c.try_into().unwrap()) as f64).collect(),
        DType::I32 => chunks(4).map(|c| i32::from_le_bytes(c.try_into().unwrap()) as f64).collect(),
        DType::I16 => chunks(2).map(|c| i16::from_le_bytes([c[0], c[1]]) as f64).collect(),
        DType::U16 => chunks(2).map(|c| u16::from_le_bytes([c[0], c[1]]) as f64).collect(),
        DType::U32 => chunks(4).map(|c| u32::from_le_bytes(c.try_into().unwrap()) as f64).collect(),
        DType::U64 => chunks(8).map(|c| u64::from_le_bytes(c.try_into().unwrap()) as f64).collect(),
        DType::I8 => bytes.iter().map(|&b| b as i8 as f64).collect(),
        DType::U8 | DType::Bool => bytes.iter().map(|&b| b as f64).collect(),
    }
}

/// One line per output: shape, min/max/mean, argmax and the first values.
fn summary(t: &TensorInfo, bytes: &[u8]) -> String {
    let v = values_f64(t.dtype, bytes);
    let mut s = format!("{}: {}", t.name, describe(t));
    if let Some((imax, _)) = v.iter().enumerate().max_by(|a, b| a.1.total_cmp(b.1)) {
        let min = v.iter().copied().fold(f64::INFINITY, f64::min);
        let max = v.iter().copied().fold(f64::NEG_INFINITY, f64::max);
        let mean = v.iter().sum::<f64>() / v.len() as f64;
        let head: Vec<String> = v.iter().take(8).map(|x| format!("{x:.6}")).collect();
        let more = if v.len() > 8 { ", ..." } else { "" };
        let _ = write!(s, " min {min:.6} max {max:.6} mean {mean:.6} argmax {imax} [{}{more}]", head.join(", "));
    }
    s
}

fn bench<M: GeneratedModel>(model: &mut M, n: usize) {
    for _ in 0..n.div_ceil(10).clamp(1, 10) {
        model.run();
    }
    let mut times: Vec<Duration> = (0..n)
        .map(|_| {
            let t = Instant::now();
            model.run();
            t.elapsed()
        })
        .collect();
    times.sort();
    let median = times[times.len() / 2];
    let p90 = times[((times.len() * 9) / 10).min(times.len() - 1)];
    println!(
        "{} runs on {} thread(s): median {:.1} us, p90 {:.1} us",
        n,
        crate::threads::num_threads(),
        median.as_secs_f64() * 1e6,
        p90.as_secs_f64() * 1e6
    );
}

/// Runs `--profile` times without `--bench N`.
const PROFILE_RUNS: usize = 20;

fn profile<M: GeneratedModel>(model: &mut M, info: &ModelInfo, runs: usize) {
    model.run();
    crate::profile::take();
    for _ in 0..runs {
        model.run();
    }
    let totals = crate::profile::take();
    let all: Duration = totals.iter().sum();
    println!("{:>5}  {:<22} {:>6}  {:>10}  {:>6}", "#", "kind", "line", "us/run", "%");
    for (i, t) in info.thunks.iter().enumerate() {
        let d = totals.get(i).copied().unwrap_or_default();
        let pct = if all.is_zero() { 0.0 } else { 100.0 * d.as_secs_f64() / all.as_secs_f64() };
        println!(
            "{:>5}  {:<22} {:>6}  {:>10.2}  {:>5.1}%",
            i,
            t.kind,
            t.line,
            d.as_secs_f64() * 1e6 / runs as f64,
            pct
        );
    }
    println!("total {:.3} ms/run over {runs} runs", all.as_secs_f64() * 1e3 / runs as f64);
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::arena::Arena;

    /// A model shaped like generated code: its arena comes from `Arena::new`.
    struct Huge {
        arena: Arena,
    }

    const X: TensorInfo = TensorInfo { name: "x", dtype: DType::F32, shape: &[1], offset: 0, bytes: 4 };

    impl GeneratedModel for Huge {
        const INFO: ModelInfo = ModelInfo {
            name: "huge",
            sched_path: "huge.sched",
            sched_sha256: "0",
            arena_bytes: 1 << 62,
            scratch_bytes: 0,
            weights_bytes: 0,
            inputs: &[X],
            outputs: &[],
            entries: &[],
            states: &[],
            thunks: &[],
        };
        fn new() -> Self {
            Huge { arena: Arena::new(Self::INFO.arena_bytes) }
        }
        fn run(&mut self) {}
        fn arena(&self) -> &[u8] {
            self.arena.as_slice()
        }
        fn arena_mut(&mut self) -> &mut [u8] {
            self.arena.as_mut_slice()
        }
    }

    fn args(list: &[&str]) -> Args {
        Args::try_parse_from(std::iter::once("m").chain(list.iter().copied())).expect("parses")
    }

    #[test]
    fn an_arena_the_allocator_refuses_is_one_error_line() {
        let e = run::<Huge>(&args(&[])).expect_err("fails");
        assert_eq!(e.to_string(), "cannot allocate 4611686018427387904 bytes (4.0 EiB) of memory for the arena");
        assert_eq!(main_from::<Huge, _, _>(["huge"]), ExitCode::from(2));
    }

    #[test]
    fn thread_counts_outside_one_to_1024_are_errors() {
        for (given, why) in [
            ("0", "out of range"),
            ("1025", "out of range"),
            ("100000", "out of range"),
            ("18446744073709551615", "out of range"),
            ("abc", "not a number"),
        ] {
            let e = run::<Huge>(&args(&["--threads", given])).expect_err(given);
            assert_eq!(e.to_string(), format!("--threads `{given}` is {why}: give 1 to 1024 threads"));
        }
    }
}
