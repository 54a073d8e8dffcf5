//! `cargo xtask bench`: generated code vs the interpreter on every bundled
//! model at 1 and 2 threads, plus GEMM efficiency; then, when the exported
//! MiniLM and onnxruntime are there, the generated MiniLM binary against
//! onnxruntime, and the decode benchmark of `bench_decode`. Each thread count runs in its own process (the pool is
//! built once per process).

use std::path::{Path, PathBuf};
use std::process::Command;

use anyhow::{anyhow, bail, Context, Result};

use crate::blas_setup;
use crate::e2e::{self, MINILM};

pub fn bench(root: &Path, rounds: usize) -> Result<()> {
    let openblas = blas_setup::ensure_openblas();
    let build = Command::new(env!("CARGO"))
        .current_dir(root)
        .args(["build", "--release", "--quiet", "-p", "rlx-tests", "--bin", "rlx-bench"])
        .args(blas_setup::backend_args(openblas))
        .status()?;
    if !build.success() {
        bail!("building rlx-bench failed");
    }
    let bin = crate::target_dir(root).join("release").join("rlx-bench");
    println!(
        "machine: {} cores; backend: {}",
        std::thread::available_parallelism().map_or(1, |n| n.get()),
        if openblas { "openblas" } else { "pure-rust" }
    );
    for (i, threads) in ["1", "2"].iter().enumerate() {
        let mut cmd = Command::new(&bin);
        cmd.env("RLX_NUM_THREADS", threads).arg(rounds.to_string()).args(["--gemm", "--decode"]);
        if i > 0 {
            cmd.arg("--no-header");
        }
        if !cmd.status()?.success() {
            bail!("rlx-bench failed at {threads} thread(s)");
        }
    }
    println!();
    minilm_row(root, rounds)?;
    println!();
    crate::bench_decode::decode_vs_ort(root)
}

/// Thread counts of the MiniLM row (the target machine has 2 cores).
pub(crate) const THREADS: [usize; 2] = [1, 2];

/// The MiniLM row: the generated binary (release, the default backend) and
/// onnxruntime on the saved sentence, in the same run, median latency at
/// 1 and 2 threads. One `skipped:` line when the model or onnxruntime is
/// missing.
fn minilm_row(root: &Path, rounds: usize) -> Result<()> {
    let dir = root.join(MINILM.dir);
    let onnx = dir.join(MINILM.onnx);
    if !onnx.is_file() {
        println!("skipped: minilm: {} is missing (python3 {})", onnx.display(), MINILM.script);
        return Ok(());
    }
    let missing = e2e::missing_python_modules(&["numpy", "onnxruntime"]);
    if !missing.is_empty() {
        println!("skipped: minilm: python modules missing: {} ({})", missing.join(", "), e2e::INSTALL);
        return Ok(());
    }
    let work = root.join("target").join("onnx-e2e").join("minilm");
    let built = e2e::build_binary(root, &onnx, &work, MINILM.name, e2e::Backend::Native)?;
    let inputs: Vec<(String, PathBuf)> = MINILM.inputs.iter().map(|(n, f)| (n.to_string(), dir.join(f))).collect();
    // A MiniLM run takes tens of milliseconds, not microseconds: the
    // bundled models' round count would take minutes; 50 runs give a
    // stable median.
    let runs = rounds.clamp(5, 50);
    println!("| model | threads | rlx ms | onnxruntime ms | ratio (rlx / onnxruntime) |");
    println!("|---|---|---|---|---|");
    for threads in THREADS {
        // Back to back per thread count, so both see the same machine load.
        let rlx = rlx_median_ms(&built.exe, &inputs, runs, threads)?;
        let ort = ort_median_ms(root, &onnx, &inputs, runs, threads)?;
        println!("| minilm | {threads} | {rlx:.2} | {ort:.2} | {:.2} |", rlx / ort);
    }
    println!("(median of {runs} runs after warm-up; arena {:.2}x the peak-live bound)", e2e::ratio(&built.report));
    Ok(())
}

/// The models `bench --vs-ort` knows: the export scripts in `models/onnx/`.
const VS_ORT: [&e2e::Spec; 10] = [
    &e2e::LENET,
    &e2e::MINILM,
    &e2e::MINILM_INT8,
    &e2e::RESNET,
    &e2e::RESNET_INT8,
    &e2e::RESNET_F16,
    &e2e::DWSEP,
    &e2e::DWSEP_INT8,
    &e2e::UNET,
    &e2e::LSTM,
];

/// Rounds per thread count: each times the static binary, the default
/// build and onnxruntime once, in that order, so all three see the same
/// machine load; the reported figure is the median of the round medians.
pub(crate) const VS_ORT_ROUNDS: usize = 4;

/// `cargo xtask bench --vs-ort`: every model of [`VS_ORT`] (or those named
/// in `only`) imported, built as the static binary users ship and as the
/// default release build, and timed against onnxruntime (sequential, intra-op
/// threads = T, graph optimisations on) on the same input at 1 and 2
/// threads, `runs` runs each (split over the rounds).
pub fn vs_ort(root: &Path, runs: usize, only: &[String], target_cpu: Option<&str>) -> Result<()> {
    let missing = e2e::missing_python_modules(&["numpy", "onnxruntime"]);
    if !missing.is_empty() {
        bail!("python modules missing: {} ({})", missing.join(", "), e2e::INSTALL);
    }
    let unknown: Vec<&String> = only.iter().filter(|n| !VS_ORT.iter().any(|s| s.name == n.as_str())).collect();
    if !unknown.is_empty() {
        let known: Vec<&str> = VS_ORT.iter().map(|s| s.name).collect();
        bail!("unknown model(s) {unknown:?}; known: {}", known.join(", "));
    }
    let per_round = runs.div_ceil(VS_ORT_ROUNDS).max(5);
    match target_cpu {
        Some(cpu) => {
            println!("| model | threads | onnxruntime ms | static ms | static / ort | default ms | default / ort | {cpu} ms | {cpu} / ort |");
            println!("|---|---|---|---|---|---|---|---|---|");
        }
        None => {
            println!("| model | threads | onnxruntime ms | static ms | static / ort | default ms | default / ort |");
            println!("|---|---|---|---|---|---|---|");
        }
    }
    for spec in VS_ORT.iter().filter(|s| only.is_empty() || only.iter().any(|n| n == s.name)) {
        if let Some(reason) = e2e::ensure_exported(root, spec)? {
            println!("skipped: {}: {reason}", spec.name);
            continue;
        }
        let dir = root.join(spec.dir);
        let onnx = dir.join(spec.onnx);
        let work = root.join("target").join("bench-vs-ort").join(spec.name);
        let stat = e2e::build_binary(root, &onnx, &work, spec.name, e2e::Backend::Static { target_cpu: None })?;
        let native = e2e::build_binary(root, &onnx, &work, spec.name, e2e::Backend::Native)?;
        let tuned = match target_cpu {
            Some(cpu) => {
                Some(e2e::build_binary(root, &onnx, &work, spec.name, e2e::Backend::Static { target_cpu: Some(cpu) })?)
            }
            None => None,
        };
        let inputs: Vec<(String, PathBuf)> = spec.inputs.iter().map(|(n, f)| (n.to_string(), dir.join(f))).collect();
        for threads in THREADS {
            let (mut ort, mut st, mut nat, mut tun) = (Vec::new(), Vec::new(), Vec::new(), Vec::new());
            for _ in 0..VS_ORT_ROUNDS {
                st.push(rlx_median_ms(&stat.exe, &inputs, per_round, threads)?);
                nat.push(rlx_median_ms(&native.exe, &inputs, per_round, threads)?);
                if let Some(t) = &tuned {
                    tun.push(rlx_median_ms(&t.exe, &inputs, per_round, threads)?);
                }
                ort.push(ort_median_ms(root, &onnx, &inputs, per_round, threads)?);
            }
            let (ort, st, nat) = (median(&mut ort), median(&mut st), median(&mut nat));
            let mut row = format!(
                "| {} | {threads} | {ort:.3} | {st:.3} | {:.2} | {nat:.3} | {:.2} |",
                spec.name,
                st / ort,
                nat / ort
            );
            if tuned.is_some() {
                let t = median(&mut tun);
                row.push_str(&format!(" {t:.3} | {:.2} |", t / ort));
            }
            println!("{row}");
        }
    }
    println!("({VS_ORT_ROUNDS} interleaved rounds of {per_round} runs per binary and thread count; median of the round medians)");
    Ok(())
}

pub(crate) fn median(v: &mut [f64]) -> f64 {
    v.sort_by(f64::total_cmp);
    let n = v.len();
    if n % 2 == 1 {
        v[n / 2]
    } else {
        (v[n / 2 - 1] + v[n / 2]) / 2.0
    }
}

/// The model CLI's `--bench` median at `threads`, in milliseconds.
pub(crate) fn rlx_median_ms(exe: &Path, inputs: &[(String, PathBuf)], runs: usize, threads: usize) -> Result<f64> {
    rlx_median_ms_env(exe, inputs, runs, threads, &[])
}

/// [`rlx_median_ms`] with `env` set for the binary.
pub(crate) fn rlx_median_ms_env(
    exe: &Path,
    inputs: &[(String, PathBuf)],
    runs: usize,
    threads: usize,
    env: &[(&str, &str)],
) -> Result<f64> {
    let mut cmd = Command::new(exe);
    cmd.envs(env.iter().copied());
    for (name, path) in inputs {
        cmd.arg("--input").arg(format!("{name}={}", path.display()));
    }
    cmd.args(["--bench", &runs.to_string(), "--threads", &threads.to_string()]);
    let out = cmd.output().with_context(|| format!("running {}", exe.display()))?;
    let text = String::from_utf8_lossy(&out.stdout);
    if !out.status.success() {
        bail!("{} --bench failed: {}", exe.display(), String::from_utf8_lossy(&out.stderr).trim());
    }
    parse_cli_median_us(&text)
        .map(|us| us / 1e3)
        .ok_or_else(|| anyhow!("no median in the --bench output `{}`", text.trim()))
}

/// The median of `N runs on T thread(s): median X us, p90 Y us`.
fn parse_cli_median_us(text: &str) -> Option<f64> {
    let rest = text.split("median ").nth(1)?;
    rest.split_whitespace().next()?.parse().ok()
}

/// `xtask/bench_ort.py`'s median at `threads`, in milliseconds.
fn ort_median_ms(root: &Path, onnx: &Path, inputs: &[(String, PathBuf)], runs: usize, threads: usize) -> Result<f64> {
    let text = run_bench_script(root, "bench_ort.py", onnx, inputs, runs, threads, &[])?;
    parse_ort_median_ms(&text, threads).ok_or_else(|| anyhow!("bench_ort.py printed no median for {threads} thread(s)"))
}

/// Runs `xtask/<script>` (`bench_ort.py` or a script of its command line)
/// at `threads` with `extra` arguments; its standard output.
pub(crate) fn run_bench_script(
    root: &Path,
    script: &str,
    onnx: &Path,
    inputs: &[(String, PathBuf)],
    runs: usize,
    threads: usize,
    extra: &[&str],
) -> Result<String> {
    let mut cmd = Command::new("python3");
    cmd.arg(root.join("xtask").join(script)).arg(onnx).arg(runs.to_string()).arg(threads.to_string());
    for (name, path) in inputs {
        cmd.arg(format!("{name}={}", path.display()));
    }
    cmd.args(extra);
    let out = cmd.output().with_context(|| format!("running python3 xtask/{script}"))?;
    if !out.status.success() {
        bail!("{script} failed: {}", String::from_utf8_lossy(&out.stderr).trim());
    }
    Ok(String::from_utf8_lossy(&out.stdout).into_owned())
}

/// The median of the line `threads T median_ms X`.
pub(crate) fn parse_ort_median_ms(text: &str, threads: usize) -> Option<f64> {
    text.lines().find_map(|l| {
        let w: Vec<&str> = l.split_whitespace().collect();
        match w.as_slice() {
            ["threads", t, "median_ms", ms] if t.parse() == Ok(threads) => ms.parse().ok(),
            _ => None,
        }
    })
}

/// `cargo xtask bench-kernels`: per-family throughput against this
/// machine's memcpy and sgemm, measured in the same run.
pub fn bench_kernels(root: &Path) -> Result<()> {
    let openblas = blas_setup::ensure_openblas();
    let status = Command::new(env!("CARGO"))
        .current_dir(root)
        .args(["run", "--release", "--quiet", "-p", "rlx-tests", "--bin", "rlx-bench-kernels"])
        .args(blas_setup::backend_args(openblas))
        .status()?;
    if !status.success() {
        bail!("rlx-bench-kernels failed");
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_median_of_round_medians() {
        assert_eq!(median(&mut [3.0, 1.0, 2.0]), 2.0);
        assert_eq!(median(&mut [4.0, 1.0, 3.0, 2.0]), 2.5);
    }

    #[test]
    fn medians_are_read_from_both_tools() {
        assert_eq!(parse_cli_median_us("50 runs on 2 thread(s): median 21034.5 us, p90 22000.0 us\n"), Some(21034.5));
        assert_eq!(parse_cli_median_us("nothing"), None);
        let ort = "threads 1 median_ms 41.2500\nthreads 2 median_ms 21.5000\n";
        assert_eq!(parse_ort_median_ms(ort, 1), Some(41.25));
        assert_eq!(parse_ort_median_ms(ort, 2), Some(21.5));
        assert_eq!(parse_ort_median_ms(ort, 4), None);
    }
}
