//! `cargo xtask bench --zoo`: architectures rlx was not tuned on
//! (`models/onnx/export_zoo.py`: torchvision CNNs, a segmentation model,
//! transformers encoders and GPT-2 with seeded random weights), each built
//! as the static binary and timed against onnxruntime and OpenVINO (f32
//! forced, the same thread count) at 1 and 2 threads.
//!
//! Three phases, so no compilation runs while anything is timed: export
//! what is missing, then import, build and check every model against
//! onnxruntime's saved output, then time the models that built. A model
//! that fails prints one `failed: NAME: reason` line and stays in the
//! summary.

use std::path::{Path, PathBuf};
use std::process::Command;

use anyhow::{anyhow, bail, Context, Result};
use rlx_runtime::npy;

use crate::bench::{self, THREADS, VS_ORT_ROUNDS};
use crate::e2e;

/// The export script and where it writes, relative to the root.
const SCRIPT: &str = "models/onnx/export_zoo.py";
const DIR: &str = ".cache/onnx-models/zoo";

/// The modules the export script imports, with the pip package of each.
const EXPORT_MODULES: [(&str, &str); 5] = [
    ("torch", "torch"),
    ("torchvision", "torchvision"),
    ("transformers", "transformers"),
    ("onnx", "onnx"),
    ("onnxruntime", "onnxruntime"),
];

/// `cargo xtask bench --zoo [--model NAME ...] [--isa avx2]`.
pub fn zoo(root: &Path, runs: usize, only: &[String], isa: Option<&str>) -> Result<()> {
    let missing = e2e::missing_python_modules(&["numpy", "onnxruntime", "openvino"]);
    if !missing.is_empty() {
        bail!("python modules missing: {} (python3 -m pip install {})", missing.join(", "), missing.join(" "));
    }
    let names = zoo_names(root)?;
    let unknown: Vec<&String> = only.iter().filter(|n| !names.contains(n)).collect();
    if !unknown.is_empty() {
        bail!("unknown model(s) {unknown:?}; known: {}", names.join(", "));
    }
    let names: Vec<String> = names.into_iter().filter(|n| only.is_empty() || only.contains(n)).collect();
    let dir = root.join(DIR);
    export_missing(root, &dir, &names)?;
    let env = isa_env(isa)?;

    let mut outcomes = Vec::new();
    let mut ready = Vec::new();
    for name in &names {
        println!("-- {name}: import, build, check");
        match prepare(root, &dir.join(name), name, &env) {
            Ok(model) => {
                println!("{name}: max abs diff vs onnxruntime {:.3e}", model.diff);
                ready.push(model);
            }
            Err(e) => {
                let reason = format!("{e:#}").lines().next().unwrap_or("").to_string();
                println!("failed: {name}: {reason}");
                outcomes.push(Outcome { name: name.clone(), result: Err(reason) });
            }
        }
    }

    let per_round = runs.div_ceil(VS_ORT_ROUNDS).max(5);
    for model in ready {
        println!("-- {}: timing", model.name);
        match time(root, &model, per_round, &env) {
            Ok(row) => outcomes.push(Outcome { name: model.name.clone(), result: Ok(row) }),
            Err(e) => {
                let reason = format!("{e:#}").lines().next().unwrap_or("").to_string();
                println!("failed: {}: {reason}", model.name);
                outcomes.push(Outcome { name: model.name.clone(), result: Err(reason) });
            }
        }
    }
    outcomes.sort_by_key(|o| names.iter().position(|n| *n == o.name));

    println!();
    print!("{}", table(&outcomes));
    println!(
        "({VS_ORT_ROUNDS} interleaved rounds of {per_round} runs per engine and thread count; median of the round medians{})",
        if env.is_empty() { String::new() } else { format!("; rlx with {}", describe_env(&env)) }
    );
    for o in &outcomes {
        if let Err(reason) = &o.result {
            println!("failed: {}: {reason}", o.name);
        }
    }
    Ok(())
}

/// The names `export_zoo.py --list` prints (it imports neither torch nor
/// transformers), so the script stays the one list of models.
fn zoo_names(root: &Path) -> Result<Vec<String>> {
    let out = Command::new("python3")
        .current_dir(root)
        .arg(SCRIPT)
        .arg("--list")
        .output()
        .with_context(|| format!("running python3 {SCRIPT} --list"))?;
    if !out.status.success() {
        bail!("{SCRIPT} --list failed: {}", String::from_utf8_lossy(&out.stderr).trim());
    }
    Ok(parse_names(&String::from_utf8_lossy(&out.stdout)))
}

fn parse_names(text: &str) -> Vec<String> {
    text.lines().map(str::trim).filter(|l| !l.is_empty()).map(str::to_string).collect()
}

/// Runs the export script for the models whose stamp is missing; a model
/// it cannot export fails later, at its import.
fn export_missing(root: &Path, dir: &Path, names: &[String]) -> Result<()> {
    let todo: Vec<&String> = names.iter().filter(|n| !dir.join(n).join("done").is_file()).collect();
    if todo.is_empty() {
        return Ok(());
    }
    let modules: Vec<&str> = EXPORT_MODULES.iter().map(|(m, _)| *m).collect();
    let missing = e2e::missing_python_modules(&modules);
    if !missing.is_empty() {
        let packages: Vec<&str> =
            EXPORT_MODULES.iter().filter(|(m, _)| missing.iter().any(|x| x == m)).map(|(_, p)| *p).collect();
        bail!(
            "{} model(s) to export, and python packages missing for {SCRIPT}: python3 -m pip install {}",
            todo.len(),
            packages.join(" ")
        );
    }
    println!(
        "exporting: python3 {SCRIPT} {DIR} --only {}",
        todo.iter().map(|s| s.as_str()).collect::<Vec<_>>().join(" ")
    );
    // Its own failures are per model (`failed: NAME: ...` on stderr, shown
    // as it runs); the models without a stamp fail at their import.
    Command::new("python3")
        .current_dir(root)
        .env("HF_HUB_OFFLINE", "1")
        .arg(SCRIPT)
        .arg(dir)
        .arg("--only")
        .args(todo)
        .status()
        .with_context(|| format!("running python3 {SCRIPT}"))?;
    Ok(())
}

/// The environment of the rlx binary for `--isa`.
fn isa_env(isa: Option<&str>) -> Result<Vec<(&'static str, &'static str)>> {
    match isa {
        None => Ok(Vec::new()),
        // OpenBLAS picks its kernels by CPU, apart from RLX_ISA.
        Some("avx2") => Ok(vec![("RLX_ISA", "avx2"), ("OPENBLAS_CORETYPE", "Haswell")]),
        Some(other) => bail!("unknown --isa `{other}`; known: avx2"),
    }
}

fn describe_env(env: &[(&str, &str)]) -> String {
    env.iter().map(|(k, v)| format!("{k}={v}")).collect::<Vec<_>>().join(" ")
}

/// A model that built and ran.
struct Ready {
    name: String,
    onnx: PathBuf,
    expected: PathBuf,
    exe: PathBuf,
    /// `(ONNX input name, .npy)`, the names onnxruntime and OpenVINO take.
    onnx_inputs: Vec<(String, PathBuf)>,
    /// The same files under the schedule's input names.
    sched_inputs: Vec<(String, PathBuf)>,
    /// Copied beside the binary before it runs (`e2e::mapped_weights`).
    mapped_weights: Option<(PathBuf, PathBuf)>,
    diff: f64,
}

impl Ready {
    /// Puts this model's side weights beside its binary: a model built
    /// later may have written its own there.
    fn place_weights(&self) -> Result<()> {
        if let Some((from, to)) = &self.mapped_weights {
            std::fs::copy(from, to).with_context(|| format!("copying {} to {}", from.display(), to.display()))?;
        }
        Ok(())
    }
}

/// Imports and builds the static binary, runs it once on the saved inputs
/// and compares every output with onnxruntime's saved one.
fn prepare(root: &Path, dir: &Path, name: &str, env: &[(&str, &str)]) -> Result<Ready> {
    if !dir.join("done").is_file() {
        bail!("not exported (python3 {SCRIPT} --only {name})");
    }
    let onnx = dir.join("model.onnx");
    let work = root.join("target").join("bench-zoo").join(name);
    let built = e2e::build_binary(root, &onnx, &work, name, e2e::Backend::Static { target_cpu: None })?;
    let input_file = |n: &str| {
        let f = dir.join("inputs").join(format!("{n}.npy"));
        if f.is_file() {
            Ok(f)
        } else {
            Err(anyhow!("no saved input {} for the schedule input `{n}`", f.display()))
        }
    };
    let sched_inputs =
        built.inputs.iter().map(|b| Ok((b.name.clone(), input_file(&b.name)?))).collect::<Result<Vec<_>>>()?;
    let onnx_inputs = saved_onnx_inputs(&dir.join("inputs"))?;

    let ours = work.join("out");
    std::fs::create_dir_all(&ours).with_context(|| format!("creating {}", ours.display()))?;
    let mut cmd = Command::new(&built.exe);
    cmd.envs(env.iter().copied());
    for (n, path) in &sched_inputs {
        cmd.arg("--input").arg(format!("{n}={}", path.display()));
    }
    for b in &built.outputs {
        cmd.arg("--output").arg(format!("{}={}", b.name, ours.join(format!("{}.npy", b.name)).display()));
    }
    let out = cmd.output().with_context(|| format!("running {}", built.exe.display()))?;
    if !out.status.success() {
        bail!("the binary failed: {}", String::from_utf8_lossy(&out.stderr).trim());
    }
    let expected = dir.join("expected");
    let mut diff = 0.0f64;
    for b in &built.outputs {
        let got = npy::read_npy(&ours.join(format!("{}.npy", b.name)))?;
        let want = npy::read_npy(&expected.join(format!("{}.npy", b.name)))
            .with_context(|| format!("onnxruntime's output `{}`", b.name))?;
        diff = diff.max(e2e::max_abs(&got, &want)?);
    }
    Ok(Ready {
        name: name.to_string(),
        onnx,
        expected,
        exe: built.exe,
        onnx_inputs,
        sched_inputs,
        mapped_weights: built.mapped_weights,
        diff,
    })
}

/// Every `inputs/NAME.npy`, by name.
fn saved_onnx_inputs(dir: &Path) -> Result<Vec<(String, PathBuf)>> {
    let mut v = Vec::new();
    for entry in std::fs::read_dir(dir).with_context(|| format!("reading {}", dir.display()))? {
        let path = entry?.path();
        if let (Some(stem), Some("npy")) =
            (path.file_stem().and_then(|s| s.to_str()), path.extension().and_then(|e| e.to_str()))
        {
            v.push((stem.to_string(), path.clone()));
        }
    }
    v.sort();
    Ok(v)
}

/// One model's medians, in milliseconds, per entry of [`THREADS`].
#[derive(Clone, Debug, PartialEq)]
struct Row {
    rlx: [f64; 2],
    ort: [f64; 2],
    ov: [f64; 2],
    diff: f64,
}

struct Outcome {
    name: String,
    result: std::result::Result<Row, String>,
}

/// Interleaved rounds: each times rlx, onnxruntime and OpenVINO once, so
/// all three see the same machine load.
fn time(root: &Path, m: &Ready, per_round: usize, env: &[(&str, &str)]) -> Result<Row> {
    m.place_weights()?;
    let mut row = Row { rlx: [0.0; 2], ort: [0.0; 2], ov: [0.0; 2], diff: m.diff };
    for (i, threads) in THREADS.into_iter().enumerate() {
        let (mut rlx, mut ort, mut ov) = (Vec::new(), Vec::new(), Vec::new());
        for round in 0..VS_ORT_ROUNDS {
            rlx.push(bench::rlx_median_ms_env(&m.exe, &m.sched_inputs, per_round, threads, env)?);
            let text = bench::run_bench_script(root, "bench_ort.py", &m.onnx, &m.onnx_inputs, per_round, threads, &[])?;
            ort.push(median_of(&text, threads, "bench_ort.py")?);
            // OpenVINO's outputs are checked once, beside the first timing.
            let expected = m.expected.display().to_string();
            let extra: &[&str] = if i == 0 && round == 0 { &["--expected", &expected] } else { &[] };
            let text =
                bench::run_bench_script(root, "bench_ov.py", &m.onnx, &m.onnx_inputs, per_round, threads, extra)?;
            for (name, d) in parse_max_abs_diff(&text) {
                println!("{}: openvino vs onnxruntime: {name} max abs diff {d:.3e}", m.name);
            }
            ov.push(median_of(&text, threads, "bench_ov.py")?);
        }
        row.rlx[i] = bench::median(&mut rlx);
        row.ort[i] = bench::median(&mut ort);
        row.ov[i] = bench::median(&mut ov);
    }
    Ok(row)
}

fn median_of(text: &str, threads: usize, script: &str) -> Result<f64> {
    bench::parse_ort_median_ms(text, threads)
        .ok_or_else(|| anyhow!("{script} printed no median for {threads} thread(s)"))
}

/// The `max_abs_diff NAME X` lines of `bench_ov.py --expected`.
fn parse_max_abs_diff(text: &str) -> Vec<(String, f64)> {
    text.lines()
        .filter_map(|l| match l.split_whitespace().collect::<Vec<_>>().as_slice() {
            ["max_abs_diff", name, x] => Some((name.to_string(), x.parse().ok()?)),
            _ => None,
        })
        .collect()
}

/// The geometric mean; `None` for no values or a value that is not a
/// positive finite number (a ratio of two medians always is).
fn geomean(v: &[f64]) -> Option<f64> {
    if v.is_empty() || v.iter().any(|x| !x.is_finite() || *x <= 0.0) {
        return None;
    }
    Some((v.iter().map(|x| x.ln()).sum::<f64>() / v.len() as f64).exp())
}

impl Row {
    /// rlx/ort 1T, rlx/ov 1T, rlx/ort 2T, rlx/ov 2T, rlx 2T/1T: the
    /// table's ratio columns, in order.
    fn ratios(&self) -> [f64; 5] {
        [
            self.rlx[0] / self.ort[0],
            self.rlx[0] / self.ov[0],
            self.rlx[1] / self.ort[1],
            self.rlx[1] / self.ov[1],
            self.rlx[1] / self.rlx[0],
        ]
    }
}

const HEADER: &str = "| model | rlx 1T ms | ort 1T ms | ov 1T ms | rlx/ort 1T | rlx/ov 1T | rlx 2T ms | ort 2T ms | ov 2T ms | rlx/ort 2T | rlx/ov 2T | rlx 2T/1T | max abs diff |\n|---|---|---|---|---|---|---|---|---|---|---|---|---|\n";

fn format_row(name: &str, r: &Row) -> String {
    let q = r.ratios();
    format!(
        "| {name} | {:.3} | {:.3} | {:.3} | {:.2} | {:.2} | {:.3} | {:.3} | {:.3} | {:.2} | {:.2} | {:.2} | {:.1e} |\n",
        r.rlx[0], r.ort[0], r.ov[0], q[0], q[1], r.rlx[1], r.ort[1], r.ov[1], q[2], q[3], q[4], r.diff
    )
}

/// The markdown table: a row per model that ran, a `failed` row per model
/// that did not, and the geometric mean of each ratio over the models that
/// ran.
fn table(outcomes: &[Outcome]) -> String {
    let mut s = HEADER.to_string();
    let mut ratios: Vec<[f64; 5]> = Vec::new();
    for o in outcomes {
        match &o.result {
            Ok(r) => {
                s.push_str(&format_row(&o.name, r));
                ratios.push(r.ratios());
            }
            Err(_) => s.push_str(&format!("| {} | failed | | | | | | | | | | | |\n", o.name)),
        }
    }
    let g = |i: usize| {
        let col: Vec<f64> = ratios.iter().map(|r| r[i]).collect();
        geomean(&col).map_or("-".to_string(), |x| format!("{x:.2}"))
    };
    s.push_str(&format!(
        "| geomean ({} models) | | | | {} | {} | | | | {} | {} | {} | |\n",
        ratios.len(),
        g(0),
        g(1),
        g(2),
        g(3),
        g(4)
    ));
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_geometric_mean() {
        assert_eq!(geomean(&[]), None);
        assert!((geomean(&[2.0, 8.0]).unwrap() - 4.0).abs() < 1e-12);
        assert!((geomean(&[0.5, 2.0, 1.0]).unwrap() - 1.0).abs() < 1e-12);
        assert_eq!(geomean(&[1.0, 0.0]), None);
        assert_eq!(geomean(&[1.0, f64::INFINITY]), None);
    }

    fn row() -> Row {
        Row { rlx: [10.0, 6.0], ort: [20.0, 12.0], ov: [5.0, 3.0], diff: 2.5e-6 }
    }

    #[test]
    fn ratios_are_rlx_over_the_other_engine() {
        assert_eq!(row().ratios(), [0.5, 2.0, 0.5, 2.0, 0.6]);
    }

    #[test]
    fn a_row_and_the_geomean_row() {
        assert_eq!(
            format_row("m", &row()),
            "| m | 10.000 | 20.000 | 5.000 | 0.50 | 2.00 | 6.000 | 12.000 | 3.000 | 0.50 | 2.00 | 0.60 | 2.5e-6 |\n"
        );
        let other = Row { rlx: [40.0, 24.0], ort: [20.0, 12.0], ov: [20.0, 12.0], diff: 0.0 };
        let outcomes = [
            Outcome { name: "a".into(), result: Ok(row()) },
            Outcome { name: "b".into(), result: Err("unsupported op".into()) },
            Outcome { name: "c".into(), result: Ok(other) },
        ];
        let t = table(&outcomes);
        let lines: Vec<&str> = t.lines().collect();
        assert_eq!(lines.len(), 6, "{t}");
        assert!(lines[0].starts_with("| model | rlx 1T ms |"));
        assert_eq!(lines[0].matches('|').count(), lines[2].matches('|').count());
        assert_eq!(lines[3], "| b | failed | | | | | | | | | | | |");
        // rlx/ort 1T: 0.5 and 2.0; rlx/ov 1T: 2.0 and 2.0; 2T/1T: 0.6 and 0.6.
        assert_eq!(lines[5], "| geomean (2 models) | | | | 1.00 | 2.00 | | | | 1.00 | 2.00 | 0.60 | |");
        assert_eq!(lines[5].matches('|').count(), lines[0].matches('|').count());
    }

    #[test]
    fn no_model_ran() {
        let t = table(&[Outcome { name: "a".into(), result: Err("x".into()) }]);
        assert!(t.ends_with("| geomean (0 models) | | | | - | - | | | | - | - | - | |\n"), "{t}");
    }

    #[test]
    fn script_output_is_parsed() {
        let text = "threads 1 median_ms 12.5000\nmax_abs_diff last_hidden_state 2.384186e-06\nmax_abs_diff bad x\n";
        assert_eq!(parse_max_abs_diff(text), vec![("last_hidden_state".to_string(), 2.384186e-06)]);
        assert_eq!(bench::parse_ort_median_ms(text, 1), Some(12.5));
        assert_eq!(parse_names("resnet18\n\nbert_6l_384\n"), vec!["resnet18", "bert_6l_384"]);
    }

    #[test]
    fn isa_sets_the_environment() {
        assert!(isa_env(None).unwrap().is_empty());
        assert_eq!(isa_env(Some("avx2")).unwrap(), vec![("RLX_ISA", "avx2"), ("OPENBLAS_CORETYPE", "Haswell")]);
        assert!(isa_env(Some("sse2")).is_err());
    }
}
