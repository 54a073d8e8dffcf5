//! `cargo xtask`: the project's developer commands. Thin: every verb parses
//! its arguments here and calls library code; errors print as one line and
//! exit with status 1 (2 for `run`'s arguments that do not fit the
//! schedule, as the model CLI).

mod bench;
mod bench_decode;
mod bench_gen;
mod bench_llamacpp;
mod bench_zoo;
mod blas_setup;
mod build_lib;
mod build_static;
mod check_sched;
mod conformance;
mod cross;
mod demo;
mod e2e;
mod fuzz;
mod gen;
mod import;
mod run;
mod scaffold;
mod test_aarch64;
mod verify;

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use clap::{Parser, Subcommand};

#[derive(Debug, Parser)]
#[command(name = "cargo xtask", about = "Developer commands of the rlx workspace")]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

/// One variant per verb; each arm of `main` calls the verb's module.
#[derive(Debug, Subcommand)]
enum Command {
    /// Parse and validate a .sched file, printing every diagnostic.
    CheckSched {
        /// The .sched file.
        path: PathBuf,
        /// Warn when the arena is larger than this many bytes (default 4 GiB).
        #[arg(long, value_name = "BYTES", default_value_t = rlx_sched::Policy::DEFAULT_MAX_ARENA)]
        max_arena: usize,
        #[command(flatten)]
        weights: WeightsArgs,
    },
    /// Rewrite .sched files in canonical form (kind aliases in their
    /// general spelling); written only when the bytes change.
    FmtSched {
        /// The .sched files.
        #[arg(required = true)]
        paths: Vec<PathBuf>,
        /// Only report the files that are not canonical (exit code 1).
        #[arg(long)]
        check: bool,
    },
    /// Generate Rust from .sched files (written only when the bytes change).
    Gen {
        /// .sched files (default output: `src/generated.rs` of the crate each sits in).
        paths: Vec<PathBuf>,
        /// Every bundled model: models/*/model.sched.
        #[arg(long)]
        all: bool,
        /// Output file (one .sched only).
        #[arg(short, long)]
        out: Option<PathBuf>,
        #[command(flatten)]
        weights: WeightsArgs,
    },
    /// Fail when a checked-in generated file is stale.
    Check,
    /// Run a .sched through the reference interpreter.
    Run {
        path: PathBuf,
        /// The entry point to run (default: the first; a schedule without
        /// `entry` lines runs whole).
        #[arg(long, value_name = "NAME")]
        entry: Option<String>,
        /// An input as NAME=PATH.npy (repeatable).
        #[arg(long = "input", value_name = "NAME=PATH")]
        inputs: Vec<String>,
        /// Write an output as NAME=PATH.npy (repeatable).
        #[arg(long = "output", value_name = "NAME=PATH")]
        outputs: Vec<String>,
        /// Worker threads, 1 to 1024 (default: RLX_NUM_THREADS, else all cores).
        #[arg(long, value_name = "N")]
        threads: Option<String>,
        #[command(flatten)]
        weights: WeightsArgs,
    },
    /// Generate, build and run the mlp model on the bundled digits.
    Demo,
    /// Run the kernel library's tests for aarch64 under QEMU (NEON with and
    /// without the dot-product extension); installs the cross tools with
    /// apt when root.
    TestAarch64,
    /// Import a Hugging Face decoder checkpoint (DIR/config.json,
    /// DIR/model.safetensors) of the Llama, Qwen2, Mistral, Gemma or Phi-3
    /// family, or a Llama GGUF file, as a decoder step: writes model.sched
    /// and weights.safetensors (docs/decoding.md).
    ImportLlama {
        checkpoint: PathBuf,
        /// Directory for the outputs (or --new-model).
        #[arg(long, required_unless_present = "new_model")]
        out_dir: Option<PathBuf>,
        /// The schedule's model name (default: the --new-model name).
        #[arg(long, required_unless_present = "new_model")]
        name: Option<String>,
        /// Tokens of the `prefill` entry point (1: a decode step only).
        #[arg(long, default_value_t = 16)]
        prefill: usize,
        /// How the products' weights are stored: as the checkpoint has them
        /// (f16 / bf16 stay 2 bytes, else f32), or converted: f32, f16, bf16,
        /// or q8_0 (ggml's Q8_0, kept 8-bit, for products whose input size is
        /// a multiple of 32).
        #[arg(long, value_enum, default_value_t = import::LlamaWeights::Stored)]
        weights: import::LlamaWeights,
        /// Positions the KV cache holds, prompt and generated tokens
        /// together (default: the model's context, at most 4096).
        #[arg(long, value_name = "N")]
        max_len: Option<usize>,
        /// Scaffold a decoder crate models/NAME (schedule, weights, the
        /// checkpoint's tokenizer.json and generation.json, generated code,
        /// a binary over rlx-decode) and add it to the workspace.
        #[arg(long, value_name = "NAME", conflicts_with = "out_dir")]
        new_model: Option<String>,
        /// The workspace to scaffold into (tests use a temporary one).
        #[arg(long, hide = true)]
        root: Option<PathBuf>,
    },
    /// Import an ONNX model: writes model.sched and weights.safetensors.
    Import {
        path: PathBuf,
        /// Directory for the outputs (default: the model's directory).
        #[arg(long)]
        out_dir: Option<PathBuf>,
        /// The schedule's model name (default: the file stem).
        #[arg(long)]
        name: Option<String>,
        /// A static input shape, NAME=D1,D2,... (repeatable).
        #[arg(long = "shape", value_name = "NAME=DIMS")]
        shapes: Vec<String>,
        /// Bind a graph input to a value known at import time, NAME=PATH.npy
        /// (repeatable; f32, i64, i32 or bool): it stops being an input.
        #[arg(long = "const", value_name = "NAME=PATH")]
        consts: Vec<String>,
        /// Keep matrix products on the BLAS backend (`Sgemm`,
        /// `FusedMmBiasAct`) instead of prepacking their weights for the
        /// project's GEMM kernels (`PackedGemm`, the default), and 8-bit
        /// convolutions as `IntConv2D` + `Requantize` instead of
        /// `QLinearConv2D` with a packed filter.
        #[arg(long)]
        no_prepack: bool,
        /// Keep every convolution in NCHW (`Conv2D`) instead of running
        /// convolution chains in the blocked channel layout
        /// (`BlockedConv2D`, the default).
        #[arg(long)]
        no_blocked: bool,
        /// Keep the stride-1 3x3 convolutions on the direct blocked kernel
        /// (`BlockedConv2D`, the bits of the NCHW kernels) instead of
        /// Winograd F(4x4, 3x3) where it pays (`WinogradConv2D`, the
        /// default).
        #[arg(long)]
        no_winograd: bool,
        /// The import budget, `nodes=N,bytes=N` (either may be left out):
        /// the most nodes the import lowers, every unrolled step of
        /// `Scan`/`Loop`/`If` included (default 1,000,000), and bytes of
        /// constants and tables it makes (default 4,294,967,296). A model
        /// past them is refused, naming the node and the figure.
        #[arg(long, value_name = "nodes=N,bytes=N")]
        import_limit: Option<String>,
        /// Scaffold a model crate models/NAME (model.sched, weights,
        /// generated code) and add it to the workspace.
        #[arg(long, value_name = "NAME", conflicts_with = "out_dir")]
        new_model: Option<String>,
        /// The workspace to scaffold into (tests use a temporary one).
        #[arg(long, hide = true)]
        root: Option<PathBuf>,
    },
    /// Generated code vs the interpreter on every bundled model.
    // `requires` names groups: a bool flag's default counts as present to
    // `requires` of the flag itself, a group only when given.
    #[command(group(clap::ArgGroup::new("suite").args(["vs_ort", "zoo"])))]
    #[command(group(clap::ArgGroup::new("vs_ort_suite").args(["vs_ort"])))]
    #[command(group(clap::ArgGroup::new("zoo_suite").args(["zoo"])))]
    Bench {
        /// Timed runs per measurement.
        #[arg(long, default_value_t = 300)]
        rounds: usize,
        /// Instead: the ONNX models of `models/onnx/` (exported when
        /// missing) as static and default binaries against onnxruntime,
        /// interleaved, at 1 and 2 threads (needs models/onnx/requirements.txt).
        #[arg(long)]
        vs_ort: bool,
        /// Instead: the zoo of `models/onnx/export_zoo.py` (exported when
        /// missing) as static binaries against onnxruntime and OpenVINO,
        /// f32, interleaved, at 1 and 2 threads.
        #[arg(long, conflicts_with = "vs_ort")]
        zoo: bool,
        /// With --vs-ort: only these models (lenet, minilm, minilm_int8, resnet, resnet_int8, resnet_f16, dwsep, dwsep_int8, unet, lstm);
        /// with --zoo: only these zoo models (`python3 models/onnx/export_zoo.py --list`).
        #[arg(long = "model", requires = "suite")]
        models: Vec<String>,
        /// With --zoo: cap rlx's kernels to this instruction set (avx2:
        /// RLX_ISA=avx2 and OPENBLAS_CORETYPE=Haswell for the binary).
        #[arg(long, requires = "zoo_suite", value_name = "ISA")]
        isa: Option<String>,
        /// With --vs-ort: also time static binaries built with this CPU's
        /// target features (as `build --static --target-cpu`), a third column.
        #[arg(long, requires = "vs_ort_suite", value_name = "CPU")]
        target_cpu: Option<String>,
        /// Instead: decode tokens/s of a memory-bound Llama (written to
        /// target/bench-decode/ when missing), rlx's decoder against
        /// onnxruntime's generate loop at 1 and 2 threads, with the weights'
        /// GB/s and the copy bandwidth (needs models/onnx/requirements.txt).
        #[arg(long, conflicts_with_all = ["vs_ort", "zoo"])]
        decode_vs_ort: bool,
        /// Instead: the same Llama as GGUF files (f32, f16, Q8_0, Q4_0,
        /// Q4_K), rlx's static decoder against llama.cpp on each, prefill and
        /// decode tokens/s at 1 and 2 threads (needs gguf and llama-cpp-python).
        #[arg(long, conflicts_with_all = ["vs_ort", "zoo", "decode_vs_ort"])]
        decode_vs_llamacpp: bool,
    },
    /// Kernel throughput per family against memcpy and sgemm.
    BenchKernels,
    /// Generator cost on a synthetic schedule: gen time, build time, largest function.
    BenchGen {
        #[arg(long, default_value_t = 2000)]
        thunks: usize,
    },
    /// Build a model binary (release), statically linked with --static, or a C library with --lib.
    Build {
        /// The model crate under models/.
        name: String,
        #[arg(long = "static")]
        static_link: bool,
        /// With --static: compile with this CPU's target features (`native`,
        /// `znver4`, `x86-64-v3`...): the SIMD kernels are then chosen at
        /// compile time, and the binary needs a CPU with those features.
        #[arg(long, requires = "static_link", value_name = "CPU")]
        target_cpu: Option<String>,
        /// With --static: build for this target triple
        /// (aarch64-unknown-linux-gnu, aarch64-unknown-linux-musl,
        /// wasm32-wasip1); installs the Rust target and cross linker it
        /// needs (docs/shipping.md).
        #[arg(long, requires = "static_link", conflicts_with = "target_cpu", value_name = "TRIPLE")]
        target: Option<String>,
        /// Instead: the model as a static C library, libNAME.a with its
        /// generated header NAME.h, in target/capi/NAME/ (docs/shipping.md).
        #[arg(long, conflicts_with = "static_link")]
        lib: bool,
    },
    /// Run the ONNX backend node tests of the supported ops: interpreter and a generated sample.
    Conformance {
        /// Only these ops, comma-separated (default: every op the importer supports).
        #[arg(long, value_delimiter = ',', value_name = "OP,...")]
        ops: Vec<String>,
        /// How many passing tests also run as generated code (0 disables).
        #[arg(long, value_name = "N", default_value_t = 16)]
        generated: usize,
        /// The node-test directory (default: .cache/onnx-node-tests/..., fetched when missing).
        #[arg(long, value_name = "DIR")]
        data: Option<PathBuf>,
        /// List passing tests too, with unshortened reasons.
        #[arg(short, long)]
        verbose: bool,
        /// Every test of the tree (multi-node and `_expanded` ones too,
        /// every op and element type), with the failures grouped by reason.
        #[arg(long, conflicts_with = "ops")]
        all: bool,
    },
    /// LeNet-5, MiniLM, ResNet-18, a depthwise CNN, a U-Net and an LSTM classifier from torch end to
    /// end: verify, static binary vs onnxruntime, arena ratios (opt-in: models/onnx/requirements.txt).
    OnnxE2e {
        /// Only these models (lenet, lenet_b4, minilm, resnet, dwsep, unet, lstm; repeatable); default: all.
        #[arg(long = "model", value_name = "NAME")]
        models: Vec<String>,
    },
    /// Fuzz one target of fuzz/ with AFL++ (cargo-afl) for a while (docs/fuzzing.md).
    Fuzz {
        /// sched, npy, weights, onnx, llama, tokenizer or sched_run.
        target: String,
        /// How long to fuzz, in seconds.
        #[arg(long, value_name = "SECONDS", default_value_t = 60)]
        time: u64,
    },
    /// Compare an ONNX model's outputs: interpreter, generated code and onnxruntime.
    Verify {
        path: PathBuf,
        /// An input as NAME=PATH.npy (repeatable; default: seeded random data).
        #[arg(long = "input", value_name = "NAME=PATH")]
        inputs: Vec<String>,
        /// A static input shape, NAME=D1,D2,... (repeatable).
        #[arg(long = "shape", value_name = "NAME=DIMS")]
        shapes: Vec<String>,
        /// Tolerance against onnxruntime: |got - want| <= tol * (1 + |want|).
        #[arg(long, default_value_t = 1e-4)]
        tol: f64,
    },
}

/// Where a schedule's weights file may be.
#[derive(Debug, clap::Args)]
struct WeightsArgs {
    /// Let the weights path leave the .sched file's directory through `..`
    /// (refused by default).
    #[arg(long)]
    allow_outside_weights: bool,
}

impl WeightsArgs {
    fn policy(&self) -> rlx_sched::Policy {
        rlx_sched::Policy::default().with_allow_parent_weights(self.allow_outside_weights)
    }
}

/// The workspace root (xtask lives one level below it).
fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).parent().expect("xtask sits in the workspace").to_path_buf()
}

/// Where cargo puts the workspace's build outputs: `CARGO_TARGET_DIR`
/// (relative to the workspace) when set, else `target/`.
pub(crate) fn target_dir(root: &Path) -> PathBuf {
    match std::env::var_os("CARGO_TARGET_DIR") {
        Some(dir) if !dir.is_empty() => root.join(dir),
        _ => root.join("target"),
    }
}

fn done(r: anyhow::Result<()>) -> anyhow::Result<ExitCode> {
    r.map(|()| ExitCode::SUCCESS)
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    let result = match &cli.command {
        Command::CheckSched { path, max_arena, weights } => {
            check_sched::check_sched(path, weights.policy().with_max_arena(*max_arena))
        }
        Command::FmtSched { paths, check } => check_sched::fmt_sched(paths, *check),
        Command::Gen { paths, all, out, weights } => {
            done(gen::gen(&root(), paths, *all, out.as_deref(), weights.policy()).and_then(|()| {
                if out.is_none() {
                    build_lib::gen_c_api(&root(), paths, *all)
                } else {
                    Ok(())
                }
            }))
        }
        Command::Check => done(gen::check(&root())),
        Command::Run { path, entry, inputs, outputs, threads, weights } => {
            let args = run::RunArgs {
                entry: entry.as_deref(),
                inputs,
                outputs,
                threads: threads.as_deref(),
                policy: weights.policy(),
            };
            done(run::run(&root(), path, &args))
        }
        Command::Demo => done(demo::demo(&root())),
        Command::TestAarch64 => done(test_aarch64::test_aarch64(&root())),
        Command::Import {
            path,
            out_dir,
            name,
            shapes,
            consts,
            no_prepack,
            no_blocked,
            no_winograd,
            import_limit,
            new_model,
            root: root_dir,
        } => {
            let args = import::ImportArgs {
                onnx: path,
                out_dir: out_dir.as_deref(),
                name: name.as_deref(),
                shapes,
                consts,
                prepack: !*no_prepack,
                blocked: !*no_blocked,
                winograd: !*no_winograd,
                import_limit: import_limit.as_deref(),
                new_model: new_model.as_deref(),
            };
            done(import::import(&root_dir.clone().unwrap_or_else(root), &args))
        }
        Command::ImportLlama { checkpoint, out_dir, name, prefill, weights, max_len, new_model, root: root_dir } => {
            let args = import::LlamaArgs {
                checkpoint,
                out_dir: out_dir.as_deref(),
                name: name.as_deref(),
                prefill: *prefill,
                weights: *weights,
                max_len: *max_len,
                new_model: new_model.as_deref(),
            };
            done(import::import_llama(&root_dir.clone().unwrap_or_else(root), &args))
        }
        Command::Bench { decode_vs_ort: true, .. } => done(bench_decode::decode_vs_ort(&root())),
        Command::Bench { decode_vs_llamacpp: true, .. } => done(bench_llamacpp::decode_vs_llamacpp(&root())),
        Command::Bench { rounds, vs_ort: true, models, target_cpu, .. } => {
            done(bench::vs_ort(&root(), *rounds, models, target_cpu.as_deref()))
        }
        Command::Bench { rounds, zoo: true, models, isa, .. } => {
            done(bench_zoo::zoo(&root(), *rounds, models, isa.as_deref()))
        }
        Command::Bench { rounds, vs_ort: false, .. } => done(bench::bench(&root(), *rounds)),
        Command::BenchKernels => done(bench::bench_kernels(&root())),
        Command::BenchGen { thunks } => done(bench_gen::bench_gen(&root(), *thunks)),
        Command::Build { name, lib: true, .. } => {
            done(build_lib::build(&root(), name).and_then(|lib| build_lib::report(&lib)))
        }
        Command::Build { name, static_link, target_cpu, target, .. } => {
            let req = build_static::Request {
                name,
                static_link: *static_link,
                target_cpu: target_cpu.as_deref(),
                target: target.as_deref(),
            };
            done(build_static::build(&root(), &req).map(|_| ()))
        }
        Command::OnnxE2e { models } => e2e::onnx_e2e(&root(), models),
        Command::Fuzz { target, time } => fuzz::fuzz(&root(), target, *time),
        Command::Verify { path, inputs, shapes, tol } => verify::verify(&root(), path, inputs, shapes, *tol),
        Command::Conformance { ops, generated, data, verbose, all } => {
            let opts = conformance::Options {
                ops: ops.clone(),
                generated: *generated,
                data: data.clone(),
                verbose: *verbose,
                all: *all,
            };
            conformance::conformance(&root(), &opts)
        }
    };
    match result {
        Ok(code) => code,
        Err(e) => {
            let _ = writeln!(std::io::stderr(), "error: {}", error_chain(&e));
            // Arguments that do not fit the schedule exit 2, as the model CLI.
            if e.downcast_ref::<run::BadArg>().is_some() {
                ExitCode::from(2)
            } else {
                ExitCode::FAILURE
            }
        }
    }
}

/// An error and its causes on one line, `outer: inner: ...`, leaving out
/// a cause whose text the line already holds: library errors often show
/// their source in their own message (`cannot read x.npy: No such file or
/// directory (os error 2)`), and `{:#}` would repeat it.
fn error_chain(e: &anyhow::Error) -> String {
    let mut line = String::new();
    for cause in e.chain() {
        // Rendered diagnostics end in a blank line; the line ends here.
        let text = cause.to_string().trim_end().to_string();
        if line.is_empty() {
            line = text;
        } else if !line.contains(&text) {
            line.push_str(": ");
            line.push_str(&text);
        }
    }
    line
}

#[cfg(test)]
mod tests {
    use super::{error_chain, Cli};
    use clap::Parser;

    #[test]
    fn bench_options_need_their_suite() {
        let parses = |args: &[&str]| Cli::try_parse_from([&["cargo xtask", "bench"], args].concat()).is_ok();
        assert!(parses(&["--zoo", "--model", "resnet18", "--isa", "avx2"]));
        assert!(parses(&["--vs-ort", "--model", "resnet"]));
        assert!(!parses(&["--model", "resnet"]));
        assert!(!parses(&["--vs-ort", "--isa", "avx2"]));
        assert!(!parses(&["--isa", "avx2"]));
        assert!(parses(&["--vs-ort", "--target-cpu", "native"]));
        assert!(!parses(&["--zoo", "--target-cpu", "native"]));
        assert!(!parses(&["--zoo", "--vs-ort"]));
        assert!(!parses(&["--zoo", "--decode-vs-ort"]));
        assert!(parses(&["--decode-vs-llamacpp"]));
        assert!(!parses(&["--decode-vs-ort", "--decode-vs-llamacpp"]));
    }

    #[test]
    fn error_chains_do_not_repeat_causes() {
        let io = std::io::Error::new(std::io::ErrorKind::NotFound, "no such file");
        let npy = rlx_runtime::npy::NpyError::Read { path: "x.npy".into(), source: io };
        assert_eq!(error_chain(&anyhow::Error::new(npy)), "cannot read x.npy: no such file");
        let wrapped = anyhow::Error::new(std::io::Error::other("disk on fire")).context("writing y.npy");
        assert_eq!(error_chain(&wrapped), "writing y.npy: disk on fire");
    }
}
