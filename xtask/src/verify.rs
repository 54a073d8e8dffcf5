//! `cargo xtask verify model.onnx`: imports an ONNX model, runs it in the
//! reference interpreter and as generated code, runs onnxruntime (through
//! `xtask/verify_ort.py`) on the same inputs, and compares every output.
//!
//! Everything is written under `target/verify/<stem>/`: the schedule and
//! weights, the inputs (`inputs/`), each engine's outputs (`generated/`,
//! `ort/`) and the generated crate (`crate/`, built into the shared
//! `target/verify-target` so a second run only rebuilds the model code).

use std::path::{Path, PathBuf};
use std::process::{Command, ExitCode};

use anyhow::{anyhow, bail, Context, Result};
use rlx_interp::Interpreter;
use rlx_runtime::npy;
use rlx_sched::{Buffer, DType};

use crate::blas_setup;

/// The seed of the random inputs: fixed, so two runs see the same data.
const SEED: u64 = 0x7e57_5eed;

/// What `verify_ort.py` exits with when onnxruntime or numpy is missing.
const ORT_MISSING: i32 = 3;

/// The message printed when onnxruntime cannot be used.
pub const ORT_SKIPPED: &str = "skipped: onnxruntime is not installed (pip install onnxruntime numpy)";

/// One output's values as produced by one engine.
struct Outputs {
    engine: &'static str,
    /// Per schedule output, in schedule order: the `.npy` read back.
    arrays: Vec<npy::NpyArray>,
}

pub fn verify(root: &Path, onnx: &Path, inputs: &[String], shapes: &[String], tol: f64) -> Result<ExitCode> {
    if !(tol.is_finite() && tol >= 0.0) {
        bail!("--tol must be a finite non-negative number, found {tol}");
    }
    let stem = onnx
        .file_stem()
        .map(|s| s.to_string_lossy().into_owned())
        .ok_or_else(|| anyhow!("{}: no file name", onnx.display()))?;
    let work = root.join("target").join("verify").join(&stem);
    let sched = import_into(onnx, &work, shapes)?;
    let (schedule, weights) = crate::run::load_with_weights(&sched, root)?;

    let inputs_dir = work.join("inputs");
    std::fs::create_dir_all(&inputs_dir).with_context(|| format!("creating {}", inputs_dir.display()))?;
    let input_files = prepare_inputs(&schedule.inputs().cloned().collect::<Vec<_>>(), inputs, &inputs_dir)?;

    let outputs: Vec<Buffer> = schedule.outputs().cloned().collect();
    let interp = run_interpreter(&schedule, &weights, &input_files, &outputs)?;
    let generated = run_generated(root, &schedule, &sched, &work, &input_files, &outputs)?;
    let ort = run_onnxruntime(root, onnx, &work, &input_files, &outputs)?;

    let mut ok = true;
    if let Some(ort) = &ort {
        ok &= report_close(&interp, ort, &outputs, tol);
        ok &= report_close(&generated, ort, &outputs, tol);
    } else {
        println!("{ORT_SKIPPED}");
    }
    ok &= report_identical(&generated, &interp, &outputs);
    Ok(if ok { ExitCode::SUCCESS } else { ExitCode::FAILURE })
}

/// Imports `onnx` into `work` (model.sched + weights.safetensors); returns
/// the `.sched` path. Files are rewritten only when their bytes change, so
/// the generated crate is not rebuilt for nothing.
fn import_into(onnx: &Path, work: &Path, shapes: &[String]) -> Result<PathBuf> {
    let mut opts = rlx_onnx::ImportOptions::new("weights.safetensors");
    for s in shapes {
        opts.shapes.push(rlx_onnx::parse_shape_override(s).map_err(|e| anyhow!("--shape {s}: {e}"))?);
    }
    let imported = rlx_onnx::import(onnx, &opts).map_err(|e| anyhow!("{}: {e}", onnx.display()))?;
    crate::import::print_warnings(&imported);
    std::fs::create_dir_all(work).with_context(|| format!("creating {}", work.display()))?;
    let sched = work.join("model.sched");
    write_bytes_if_changed(&work.join(&opts.weights_file), &imported.weights)?;
    write_bytes_if_changed(&sched, imported.sched_text.as_bytes())?;
    println!("imported {}: {}", onnx.display(), imported.report);
    Ok(sched)
}

pub(crate) fn write_bytes_if_changed(path: &Path, bytes: &[u8]) -> Result<()> {
    if std::fs::read(path).is_ok_and(|old| old == bytes) {
        return Ok(());
    }
    std::fs::write(path, bytes).with_context(|| format!("writing {}", path.display()))
}

/// `name` as the importer makes it a `.sched` identifier (the rule of
/// `rlx_onnx`'s name table, without the `_2` suffixes of clashes), so
/// `--input` accepts the ONNX name as well as the schedule's.
pub(crate) fn sanitize(name: &str) -> String {
    let mut s: String =
        name.chars().map(|c| if c.is_ascii_alphanumeric() || c == '_' || c == '.' { c } else { '_' }).collect();
    let reserved = matches!(s.as_str(), "none" | "true" | "false" | "inf" | "nan")
        || (s.len() > 2 && s.starts_with("in") && s[2..].bytes().all(|b| b.is_ascii_digit()));
    if !s.starts_with(|c: char| c.is_ascii_alphabetic() || c == '_') || reserved {
        s.insert(0, '_');
    }
    s
}

/// Every schedule input as a `.npy` file in `dir`: the `--input` file
/// (checked against the input's dtype and shape) or deterministic random
/// data. Returns `(schedule input name, path)` in schedule order.
fn prepare_inputs(wanted: &[Buffer], specs: &[String], dir: &Path) -> Result<Vec<(String, PathBuf)>> {
    let mut given: Vec<(String, npy::NpyArray)> = Vec::new();
    for spec in specs {
        let (name, path) = match spec.split_once('=') {
            Some((n, p)) if !n.is_empty() && !p.is_empty() => (n, Path::new(p)),
            _ => bail!("--input: expected NAME=PATH, found `{spec}`"),
        };
        let b = wanted.iter().find(|b| b.name == name || b.name == sanitize(name)).ok_or_else(|| {
            let names: Vec<&str> = wanted.iter().map(|b| b.name.as_str()).collect();
            anyhow!("--input: no input named `{name}`; the model's inputs are: {}", names.join(", "))
        })?;
        if given.iter().any(|(n, _)| *n == b.name) {
            bail!("--input: input `{name}` is given twice");
        }
        let arr = npy::read_npy(path)?;
        if arr.dtype != b.dtype || arr.shape != b.shape {
            bail!(
                "{}: input `{name}` expects {}, found {}",
                path.display(),
                npy::describe(b.dtype, &b.shape),
                arr.describe()
            );
        }
        given.push((b.name.clone(), arr));
    }
    let mut files = Vec::new();
    for (index, b) in wanted.iter().enumerate() {
        let path = dir.join(format!("{}.npy", b.name));
        match given.iter().find(|(n, _)| *n == b.name) {
            Some((_, arr)) => npy::write_npy(&path, b.dtype, &b.shape, &arr.bytes)?,
            None => {
                let bytes = random_bytes(b.dtype, b.elems(), SEED ^ (index as u64).wrapping_mul(0x9e37_79b9_7f4a_7c15))
                    .ok_or_else(|| {
                        anyhow!("input `{}`: no random {} data; pass --input {}=PATH.npy", b.name, b.dtype, b.name)
                    })?;
                npy::write_npy(&path, b.dtype, &b.shape, &bytes)?;
                println!("input {}: random {} (seed {SEED:#x})", b.name, npy::describe(b.dtype, &b.shape));
            }
        }
        files.push((b.name.clone(), path));
    }
    Ok(files)
}

/// splitmix64: a tiny, well-mixed generator; enough for test inputs and
/// stable across platforms and crate versions.
struct SplitMix(u64);

impl SplitMix {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }

    /// Uniform in (0, 1]: never 0, so `ln` is finite.
    fn unit(&mut self) -> f64 {
        ((self.next() >> 11) + 1) as f64 / (1u64 << 53) as f64
    }

    /// Standard normal (Box-Muller).
    fn normal(&mut self) -> f64 {
        let (u, v) = (self.unit(), self.unit());
        (-2.0 * u.ln()).sqrt() * (std::f64::consts::TAU * v).cos()
    }

    /// Uniform integer in `[0, n)`.
    fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }
}

/// `elems` random values of `dtype` as little-endian bytes: normal(0, 1)
/// floats, integers in `[0, 10)` (small, so index-like inputs stay in
/// range), booleans 0/1. `None` for dtypes without a `.npy` form here.
fn random_bytes(dtype: DType, elems: usize, seed: u64) -> Option<Vec<u8>> {
    let mut rng = SplitMix(seed);
    let mut out = Vec::with_capacity(elems * dtype.size());
    for _ in 0..elems {
        match dtype {
            DType::F32 => out.extend_from_slice(&(rng.normal() as f32).to_le_bytes()),
            DType::F64 => out.extend_from_slice(&rng.normal().to_le_bytes()),
            DType::I8 => out.extend_from_slice(&(rng.below(10) as i8).to_le_bytes()),
            DType::U8 => out.push(rng.below(10) as u8),
            DType::I16 => out.extend_from_slice(&(rng.below(10) as i16).to_le_bytes()),
            DType::U16 => out.extend_from_slice(&(rng.below(10) as u16).to_le_bytes()),
            DType::U32 => out.extend_from_slice(&(rng.below(10) as u32).to_le_bytes()),
            DType::U64 => out.extend_from_slice(&rng.below(10).to_le_bytes()),
            DType::I32 => out.extend_from_slice(&(rng.below(10) as i32).to_le_bytes()),
            DType::I64 => out.extend_from_slice(&(rng.below(10) as i64).to_le_bytes()),
            DType::Bool => out.push(rng.below(2) as u8),
            DType::F16 | DType::Bf16 => return None,
        }
    }
    Some(out)
}

fn run_interpreter(
    schedule: &rlx_sched::Schedule,
    weights: &[u8],
    input_files: &[(String, PathBuf)],
    outputs: &[Buffer],
) -> Result<Outputs> {
    let mut interp = Interpreter::new(schedule.clone(), weights)?;
    for (name, path) in input_files {
        interp.set_bytes(name, &npy::read_npy(path)?.bytes)?;
    }
    interp.run();
    let mut arrays = Vec::new();
    for b in outputs {
        arrays.push(npy::NpyArray { dtype: b.dtype, shape: b.shape.clone(), bytes: interp.bytes(&b.name)?.to_vec() });
    }
    Ok(Outputs { engine: "interpreter", arrays })
}

/// Generates the model crate under `work/crate`, builds it (release) into
/// `target/verify-target` and runs it with the model CLI.
fn run_generated(
    root: &Path,
    schedule: &rlx_sched::Schedule,
    sched: &Path,
    work: &Path,
    input_files: &[(String, PathBuf)],
    outputs: &[Buffer],
) -> Result<Outputs> {
    let dir = work.join("crate");
    let src = dir.join("src");
    std::fs::create_dir_all(&src).with_context(|| format!("creating {}", src.display()))?;
    let out = src.join("generated.rs");
    let opts = rlx_codegen::options_for_file(schedule, sched, root, &out);
    rlx_codegen::write_if_changed(&out, &rlx_codegen::generate(schedule, &opts))?;
    let main_rs = "#[rustfmt::skip]\n#[allow(clippy::all, unused, missing_docs)]\nmod generated;\n\n\
         fn main() -> std::process::ExitCode {\n    rlx_runtime::cli::main::<generated::Model>()\n}\n";
    // One package (and binary) per model: crates that shared a name in the
    // shared target dir would pass cargo's freshness check for each other.
    let exe = build_crate(root, &dir, &package_name(work), main_rs)?;
    if let Some(rlx_codegen::WeightsSource::Mmap { file_name }) = &opts.weights {
        // Mapped weights are read from a side file next to the binary.
        let bin_dir = exe.parent().unwrap_or(Path::new("."));
        std::fs::copy(work.join("weights.safetensors"), bin_dir.join(file_name))
            .context("copying the weights next to the generated binary")?;
    }
    let out_dir = work.join("generated");
    std::fs::create_dir_all(&out_dir).with_context(|| format!("creating {}", out_dir.display()))?;
    let mut cmd = Command::new(&exe);
    for (name, path) in input_files {
        cmd.arg("--input").arg(format!("{name}={}", path.display()));
    }
    let files: Vec<PathBuf> = outputs.iter().map(|b| out_dir.join(format!("{}.npy", b.name))).collect();
    for (b, path) in outputs.iter().zip(&files) {
        cmd.arg("--output").arg(format!("{}={}", b.name, path.display()));
    }
    let result = cmd.output().with_context(|| format!("running {}", exe.display()))?;
    if !result.status.success() {
        bail!("the generated model failed: {}", String::from_utf8_lossy(&result.stderr).trim());
    }
    let arrays = files.iter().map(|p| npy::read_npy(p)).collect::<Result<Vec<_>, _>>()?;
    Ok(Outputs { engine: "generated", arrays })
}

/// Writes a generated crate's manifest (package `package`, rlx-runtime with
/// `features`, the dependency lines `extra_deps`, a `profile` feature),
/// `src/main.rs` and the workspace's lock file into `dir`, rewriting only
/// what changed. The lock pins the same
/// dependency versions and saves a registry resolution on the first build.
pub(crate) fn write_crate(
    root: &Path,
    dir: &Path,
    package: &str,
    features: &str,
    extra_deps: &str,
    main_rs: &str,
) -> Result<()> {
    let manifest = format!(
        "[package]\nname = \"{package}\"\nversion = \"0.0.0\"\nedition = \"2021\"\npublish = false\n\n[workspace]\n\n\
         [dependencies]\nrlx-runtime = {{ path = {:?}, default-features = false, features = [{features}] }}\n{extra_deps}\n\
         [features]\nprofile = []\n# Named by the scaffold's `lib.rs`; these crates build no C library.\ncapi = []\n",
        root.join("crates/rlx-runtime").display().to_string()
    );
    let src = dir.join("src");
    std::fs::create_dir_all(&src).with_context(|| format!("creating {}", src.display()))?;
    rlx_codegen::write_if_changed(&dir.join("Cargo.toml"), &manifest)?;
    rlx_codegen::write_if_changed(&src.join("main.rs"), main_rs)?;
    let lock = dir.join("Cargo.lock");
    if !lock.exists() {
        std::fs::copy(root.join("Cargo.lock"), &lock).context("copying Cargo.lock into the generated crate")?;
    }
    Ok(())
}

/// Writes a generated crate (see [`write_crate`]; rlx-runtime with the `cli`
/// feature and this xtask's GEMM backend) into `dir`, whose `src/` already
/// holds the generated modules; builds it (release) into the shared
/// `target/verify-target`, so the runtime is compiled once for every such
/// crate; returns the binary's path.
pub(crate) fn build_crate(root: &Path, dir: &Path, package: &str, main_rs: &str) -> Result<PathBuf> {
    // The generated crate uses the GEMM backend this xtask's interpreter
    // was built with, so the two can be compared bit for bit.
    let features = if rlx_runtime::blas::backend_name() == "openblas" && blas_setup::ensure_openblas() {
        "\"cli\", \"openblas\""
    } else {
        "\"cli\", \"pure-rust\""
    };
    write_crate(root, dir, package, features, "", main_rs)?;
    let target = root.join("target").join("verify-target");
    let status = Command::new(env!("CARGO"))
        .current_dir(dir)
        .env("CARGO_TARGET_DIR", &target)
        .args(["build", "--release", "--quiet"])
        .status()
        .context("running cargo build for the generated crate")?;
    if !status.success() {
        bail!("building the generated crate {} failed", dir.display());
    }
    Ok(target.join("release").join(format!("{package}{}", std::env::consts::EXE_SUFFIX)))
}

/// `verify-<model dir name>` with characters a package name cannot hold
/// replaced by `_`.
fn package_name(work: &Path) -> String {
    let stem = work.file_name().map(|s| s.to_string_lossy().into_owned()).unwrap_or_default();
    let clean: String =
        stem.chars().map(|c| if c.is_ascii_alphanumeric() || c == '_' || c == '-' { c } else { '_' }).collect();
    format!("verify-{clean}")
}

/// Runs `xtask/verify_ort.py`; `None` when onnxruntime is not installed.
fn run_onnxruntime(
    root: &Path,
    onnx: &Path,
    work: &Path,
    input_files: &[(String, PathBuf)],
    outputs: &[Buffer],
) -> Result<Option<Outputs>> {
    let out_dir = work.join("ort");
    if out_dir.exists() {
        // Stale outputs of an earlier model must not be read back.
        std::fs::remove_dir_all(&out_dir).with_context(|| format!("removing {}", out_dir.display()))?;
    }
    std::fs::create_dir_all(&out_dir).with_context(|| format!("creating {}", out_dir.display()))?;
    let mut cmd = Command::new("python3");
    cmd.arg(root.join("xtask").join("verify_ort.py")).arg(onnx).arg(&out_dir);
    for (name, path) in input_files {
        cmd.arg(format!("{name}={}", path.display()));
    }
    let result = match cmd.output() {
        Ok(r) => r,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(e) => return Err(e).context("running python3 xtask/verify_ort.py"),
    };
    if result.status.code() == Some(ORT_MISSING) {
        return Ok(None);
    }
    if !result.status.success() {
        bail!("onnxruntime failed: {}", String::from_utf8_lossy(&result.stderr).trim());
    }
    let mut arrays = Vec::new();
    for b in outputs {
        let path = out_dir.join(format!("{}.npy", b.name));
        if !path.exists() {
            bail!("onnxruntime gave no output matching `{}` (looked for {})", b.name, path.display());
        }
        arrays.push(npy::read_npy(&path)?);
    }
    Ok(Some(Outputs { engine: "onnxruntime", arrays }))
}

/// Element values as f64, for comparing across engines (a trailing
/// partial element, which `read_npy` never yields, is ignored).
fn values(a: &npy::NpyArray) -> Vec<f64> {
    let chunks = a.bytes.chunks_exact(a.dtype.size());
    let b2 = |c: &[u8]| [c[0], c[1]];
    let b4 = |c: &[u8]| [c[0], c[1], c[2], c[3]];
    let b8 = |c: &[u8]| [c[0], c[1], c[2], c[3], c[4], c[5], c[6], c[7]];
    match a.dtype {
        DType::F32 => chunks.map(|c| f64::from(f32::from_le_bytes(b4(c)))).collect(),
        DType::F64 => chunks.map(|c| f64::from_le_bytes(b8(c))).collect(),
        DType::Bf16 => chunks.map(|c| f64::from(f32::from_bits(u32::from(u16::from_le_bytes(b2(c))) << 16))).collect(),
        DType::F16 => chunks.map(|c| f16_to_f64(u16::from_le_bytes(b2(c)))).collect(),
        DType::I8 => chunks.map(|c| f64::from(c[0] as i8)).collect(),
        DType::U8 | DType::Bool => chunks.map(|c| f64::from(c[0])).collect(),
        DType::I16 => chunks.map(|c| f64::from(i16::from_le_bytes(b2(c)))).collect(),
        DType::U16 => chunks.map(|c| f64::from(u16::from_le_bytes(b2(c)))).collect(),
        DType::U32 => chunks.map(|c| f64::from(u32::from_le_bytes(b4(c)))).collect(),
        DType::U64 => chunks.map(|c| u64::from_le_bytes(b8(c)) as f64).collect(),
        DType::I32 => chunks.map(|c| f64::from(i32::from_le_bytes(b4(c)))).collect(),
        DType::I64 => chunks.map(|c| i64::from_le_bytes(b8(c)) as f64).collect(),
    }
}

fn f16_to_f64(h: u16) -> f64 {
    let sign = if h >> 15 == 1 { -1.0 } else { 1.0 };
    let exp = i32::from((h >> 10) & 0x1f);
    let frac = f64::from(h & 0x3ff);
    sign * match exp {
        0 => frac * 2f64.powi(-24),
        31 if frac == 0.0 => f64::INFINITY,
        31 => f64::NAN,
        e => (1.0 + frac / 1024.0) * 2f64.powi(e - 15),
    }
}

/// The largest errors of `got` against `want` and whether every element is
/// within `tol * (1 + |want|)` (numpy `allclose` with atol = rtol = tol).
/// NaN matches NaN, equal infinities match, any other non-finite pair fails; the relative error counts only
/// elements whose reference is not zero.
#[derive(Debug, PartialEq)]
struct Diff {
    max_abs: f64,
    max_rel: f64,
    pass: bool,
}

fn diff(got: &[f64], want: &[f64], tol: f64) -> Diff {
    let mut d = Diff { max_abs: 0.0, max_rel: 0.0, pass: got.len() == want.len() };
    for (&g, &w) in got.iter().zip(want) {
        if (g.is_nan() && w.is_nan()) || g == w {
            continue;
        }
        // Unequal values of which one is NaN or infinite are never close.
        let finite = g.is_finite() && w.is_finite();
        let abs = if finite { (g - w).abs() } else { f64::INFINITY };
        d.max_abs = d.max_abs.max(abs);
        if w != 0.0 {
            d.max_rel = d.max_rel.max(abs / w.abs());
        }
        if !finite || abs > tol * (1.0 + w.abs()) {
            d.pass = false;
        }
    }
    d
}

fn verdict(pass: bool) -> &'static str {
    if pass {
        "PASS"
    } else {
        "FAIL"
    }
}

/// Prints `engine vs reference` and one line per output; false on any FAIL.
fn report_close(got: &Outputs, want: &Outputs, outputs: &[Buffer], tol: f64) -> bool {
    println!("{} vs {}", got.engine, want.engine);
    let mut ok = true;
    for ((b, g), w) in outputs.iter().zip(&got.arrays).zip(&want.arrays) {
        if g.shape != w.shape {
            println!("  {}: shape {:?} vs {:?}  FAIL", b.name, g.shape, w.shape);
            ok = false;
            continue;
        }
        let d = diff(&values(g), &values(w), tol);
        println!(
            "  {}: max abs err {:.3e}, max rel err {:.3e}  {} (tol {tol:e})",
            b.name,
            d.max_abs,
            d.max_rel,
            verdict(d.pass)
        );
        ok &= d.pass;
    }
    ok
}

/// Generated code and interpreter share every kernel call and plan
/// decision, so their outputs must match bit for bit.
fn report_identical(got: &Outputs, want: &Outputs, outputs: &[Buffer]) -> bool {
    println!("{} vs {} (bit-identical)", got.engine, want.engine);
    let mut ok = true;
    for ((b, g), w) in outputs.iter().zip(&got.arrays).zip(&want.arrays) {
        let size = b.dtype.size().max(1);
        let differing = g.bytes.chunks(size).zip(w.bytes.chunks(size)).filter(|(x, y)| x != y).count();
        let same = g.dtype == w.dtype && g.shape == w.shape && differing == 0;
        if same {
            println!("  {}: bit-identical  PASS", b.name);
        } else {
            println!("  {}: {differing} of {} elements differ  FAIL", b.name, b.elems());
        }
        ok &= same;
    }
    ok
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn diff_measures_abs_and_rel_and_applies_tol() {
        let d = diff(&[1.0, 2.0005, 0.0], &[1.0, 2.0, 0.0], 1e-4);
        assert!((d.max_abs - 5e-4).abs() < 1e-12 && (d.max_rel - 2.5e-4).abs() < 1e-12);
        // 5e-4 > 1e-4 * (1 + 2) = 3e-4.
        assert!(!d.pass);
        assert!(diff(&[2.0002], &[2.0], 1e-4).pass);
        assert!(diff(&[f64::NAN, f64::INFINITY], &[f64::NAN, f64::INFINITY], 0.0).pass);
        assert!(!diff(&[f64::NAN], &[1.0], 1.0).pass);
        assert!(!diff(&[1.0], &[f64::INFINITY], 1.0).pass);
        assert!(!diff(&[f64::NEG_INFINITY], &[f64::INFINITY], 1.0).pass);
        assert!(!diff(&[1.0], &[1.0, 2.0], 1.0).pass);
    }

    #[test]
    fn random_inputs_are_deterministic_and_normal() {
        let a = random_bytes(DType::F32, 20_000, 7).unwrap();
        assert_eq!(a, random_bytes(DType::F32, 20_000, 7).unwrap());
        assert_ne!(a, random_bytes(DType::F32, 20_000, 8).unwrap());
        let v: Vec<f64> = a.chunks_exact(4).map(|c| f64::from(f32::from_le_bytes(c.try_into().unwrap()))).collect();
        let mean = v.iter().sum::<f64>() / v.len() as f64;
        let var = v.iter().map(|x| (x - mean).powi(2)).sum::<f64>() / v.len() as f64;
        // 20000 samples: the standard error of the mean is 0.007, of the
        // variance about 0.01; 0.05 is several sigmas.
        assert!(mean.abs() < 0.05 && (var - 1.0).abs() < 0.05, "mean {mean}, var {var}");
        let ints = random_bytes(DType::I64, 100, 1).unwrap();
        assert!(ints.chunks_exact(8).all(|c| (0..10).contains(&i64::from_le_bytes(c.try_into().unwrap()))));
        assert!(random_bytes(DType::F16, 1, 1).is_none());
    }

    #[test]
    fn sanitize_follows_the_importer() {
        assert_eq!(sanitize("/layer/MatMul:0"), "_layer_MatMul_0");
        assert_eq!(sanitize("0"), "_0");
        assert_eq!(sanitize("in3"), "_in3");
        assert_eq!(sanitize("input"), "input");
    }

    #[test]
    fn package_names_are_per_model_and_valid() {
        assert_eq!(package_name(Path::new("target/verify/mlp_external")), "verify-mlp_external");
        assert_eq!(package_name(Path::new("target/verify/my model.v2")), "verify-my_model_v2");
    }

    #[test]
    fn f16_decodes() {
        assert_eq!(f16_to_f64(0x3c00), 1.0);
        assert_eq!(f16_to_f64(0xc000), -2.0);
        assert_eq!(f16_to_f64(0x0001), 2f64.powi(-24));
        assert!(f16_to_f64(0x7e00).is_nan());
    }
}
