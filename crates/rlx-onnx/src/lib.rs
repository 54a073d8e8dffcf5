//! The ONNX importer: reads an ONNX model and produces a frozen schedule
//! (`.sched` text) plus its weights (a safetensors file).
//!
//! Pipeline: decode the protobuf ([`proto`], with `prost`), read the
//! initializers (inline or external), resolve static input shapes, lower
//! node by node to thunks while inferring shapes and folding constant
//! shape arithmetic, fuse activations and work in place, plan the arena ([`planner`]), write the weights and
//! print the schedule. See `docs/onnx.md`.

#![deny(clippy::undocumented_unsafe_blocks)]

mod budget;
mod emit;
pub mod error;
mod graph;
pub mod llama;
mod lower;
mod names;
mod optimize;
mod pipeline;
pub mod planner;
pub mod proto;
mod qdq;
pub mod quantize;
pub mod tensor;

use std::path::Path;

use prost::Message as _;

pub use budget::ImportLimits;
pub use emit::ImportReport;
pub use error::ImportError;
pub use graph::parse_shape_override;
pub use lower::{const_inputs, op_attributes, SUPPORTED_OPS};

/// How to import. Built by [`ImportOptions::new`] (or `Default`, which
/// names the weights file `weights.safetensors`) and the `with_*` setters;
/// `#[non_exhaustive]`, so a new option is not a breaking change.
#[derive(Clone, Debug, PartialEq)]
#[non_exhaustive]
pub struct ImportOptions {
    /// The schedule's model name; by default the file stem (or the graph
    /// name), made an identifier.
    pub model_name: Option<String>,
    /// The weights file's path as the `.sched` file will name it: relative
    /// to the `.sched` file's directory.
    pub weights_file: String,
    /// Static shapes for graph inputs (`--shape name=1,128`), overriding
    /// the model's.
    pub shapes: Vec<(String, Vec<usize>)>,
    /// Graph inputs bound to values known at import time (`--const
    /// name=file.npy`): they become constants, folded or stored as params,
    /// and are no longer inputs of the schedule.
    pub consts: Vec<(String, tensor::ConstTensor)>,
    /// Run the fusion and in-place passes (default). Off, every ONNX node
    /// keeps its own thunks: the reference the fused schedules are tested
    /// against.
    pub optimize: bool,
    /// Prepack the weights of f32 matrix products into the panel layout
    /// of the project's GEMM microkernels (`PackedGemm`; default). Off,
    /// products stay `Sgemm`/`FusedMmBiasAct` over the BLAS backend.
    pub prepack: bool,
    /// Run convolution chains in the blocked channel layout (NCHW16c,
    /// `BlockedConv2D`; default). Off, every convolution stays NCHW.
    pub blocked: bool,
    /// With `blocked`, run the stride-1 3x3 convolutions where it pays
    /// (`rlx_sched::winograd::winograd_pays`) by Winograd F(4x4, 3x3)
    /// (`WinogradConv2D`; default). Off, they stay `BlockedConv2D`, whose
    /// bits are those of the NCHW kernels.
    pub winograd: bool,
    /// The import budget: the most nodes the import lowers (unrolled
    /// control flow included) and bytes of constants and tables it makes
    /// (`docs/onnx.md`, "The import budget"; `--import-limit`).
    pub limits: ImportLimits,
}

impl ImportOptions {
    /// Options naming the weights file, everything else by default.
    pub fn new(weights_file: impl Into<String>) -> Self {
        ImportOptions {
            model_name: None,
            weights_file: weights_file.into(),
            shapes: Vec::new(),
            consts: Vec::new(),
            optimize: true,
            prepack: true,
            blocked: true,
            winograd: true,
            limits: ImportLimits::default(),
        }
    }

    /// Names the schedule's model.
    pub fn with_model_name(mut self, name: impl Into<String>) -> Self {
        self.model_name = Some(name.into());
        self
    }

    /// Fixes the static shape of graph input `name`.
    pub fn with_shape(mut self, name: impl Into<String>, dims: Vec<usize>) -> Self {
        self.shapes.push((name.into(), dims));
        self
    }

    /// Binds graph input `name` to a value known at import time.
    pub fn with_const(mut self, name: impl Into<String>, value: tensor::ConstTensor) -> Self {
        self.consts.push((name.into(), value));
        self
    }

    /// Runs the fusion and in-place passes or not.
    pub fn with_optimize(mut self, on: bool) -> Self {
        self.optimize = on;
        self
    }

    /// Prepacks product weights for the project's GEMM or not.
    pub fn with_prepack(mut self, on: bool) -> Self {
        self.prepack = on;
        self
    }

    /// Runs convolution chains in the blocked channel layout or not.
    pub fn with_blocked(mut self, on: bool) -> Self {
        self.blocked = on;
        self
    }

    /// Takes Winograd for the 3x3 convolutions where it pays or not.
    pub fn with_winograd(mut self, on: bool) -> Self {
        self.winograd = on;
        self
    }

    /// Sets the import budget.
    pub fn with_limits(mut self, limits: ImportLimits) -> Self {
        self.limits = limits;
        self
    }
}

impl Default for ImportOptions {
    fn default() -> Self {
        ImportOptions::new("weights.safetensors")
    }
}

/// An imported model.
#[derive(Clone, Debug)]
pub struct Imported {
    /// The `.sched` text (canonical form).
    pub sched_text: String,
    /// The weights file (safetensors) the schedule names, to be written at
    /// `ImportOptions::weights_file` relative to the `.sched` file.
    pub weights: Vec<u8>,
    /// Sizes and counts.
    pub report: ImportReport,
    /// What the import accepted but a user should know (lower-case, no
    /// trailing period): a graph without outputs, an opset newer than
    /// [`NEWEST_OPSET`], an arena above 4 GiB. Front ends print them as
    /// `warning: ...`.
    pub warnings: Vec<String>,
}

/// The newest default-domain opset the importer was written against
/// (`docs/onnx.md`). A newer model imports with a warning: its ops are
/// read as of this opset, which is right unless the newer opset changed
/// them.
pub const NEWEST_OPSET: i64 = 21;

/// The weights path a schedule's `weights` line will hold: relative, and
/// printable there.
pub(crate) fn check_weights_path(w: &str) -> Result<(), ImportError> {
    if w.is_empty() || Path::new(w).is_absolute() || w.contains('"') || w.contains('\n') {
        return Err(ImportError::Weights(format!(
            "the weights path `{w}` must be a non-empty relative path without quotes"
        )));
    }
    Ok(())
}

/// Imports the ONNX model at `path`; external data is read relative to
/// its directory.
pub fn import(path: &Path, opts: &ImportOptions) -> Result<Imported, ImportError> {
    let bytes =
        rlx_sched::read_regular_file(path).map_err(|source| ImportError::Io { path: path.to_path_buf(), source })?;
    let base = path.parent().unwrap_or(Path::new("."));
    let mut opts = opts.clone();
    if opts.model_name.is_none() {
        opts.model_name = path.file_stem().map(|s| s.to_string_lossy().into_owned());
    }
    import_bytes(&bytes, base, &opts)
}

/// Imports an encoded ONNX model; `base_dir` resolves external data.
pub fn import_bytes(bytes: &[u8], base_dir: &Path, opts: &ImportOptions) -> Result<Imported, ImportError> {
    let model = proto::ModelProto::decode(bytes)?;
    import_model(&model, base_dir, opts)
}

/// Imports a decoded ONNX model; `base_dir` resolves external data.
pub fn import_model(model: &proto::ModelProto, base_dir: &Path, opts: &ImportOptions) -> Result<Imported, ImportError> {
    let w = &opts.weights_file;
    check_weights_path(w)?;
    let graph = model.graph.as_ref().ok_or(ImportError::NoGraph)?;
    let opset = graph::default_opset(model);
    if opset < 1 {
        return Err(ImportError::BadOpset(opset));
    }
    let mut warnings = Vec::new();
    if opset > NEWEST_OPSET {
        warnings.push(format!(
            "the model imports opset {opset}; the importer knows opsets 1 to {NEWEST_OPSET} and reads its ops \
             as of opset {NEWEST_OPSET}: compare the results with `cargo xtask verify`"
        ));
    }
    if graph.output.is_empty() {
        warnings.push("the graph has no outputs: the schedule computes nothing a caller can read".to_string());
    }
    let lower = || {
        let mut constants = graph::initializers(model, base_dir)?;
        graph::bind_consts(model, &mut constants, &opts.consts)?;
        let names: Vec<&str> = constants.iter().map(|(n, _)| n.as_str()).collect();
        let inputs = graph::graph_inputs(model, &opts.shapes, &names)?;
        let fused = qdq::fuse_conv(graph, &constants);
        lower::lower_graph(fused.as_ref().unwrap_or(graph), &inputs, constants, opset, opts.limits)
    };
    // A model stored in 2-byte floats keeps its product weights and
    // convolution filters in them (f32 compute): lossless, since those
    // values came from the file. Winograd's transformed filters are not
    // exact in 2 bytes and hold 4x the values (16x the bytes in f32): such
    // a model runs Winograd only where that filter is small.
    let half = [proto::data_type::FLOAT16, proto::data_type::BFLOAT16];
    let half_weights = opts.prepack && graph.initializer.iter().any(|t| half.contains(&t.data_type));
    let winograd = match (opts.winograd, half_weights) {
        (false, _) => optimize::Winograd::Off,
        (true, false) => optimize::Winograd::Pays,
        (true, true) => optimize::Winograd::PaysSmall,
    };
    let mut passes = Vec::new();
    if opts.optimize {
        passes.push(pipeline::Pass::new("optimize", optimize::optimize));
    }
    if opts.prepack {
        passes.push(pipeline::Pass::new("prepack", optimize::prepack));
    }
    if opts.blocked {
        passes.push(pipeline::Pass::new("blocked layout", move |l| optimize::block_channels(l, winograd)));
    }
    if opts.optimize {
        passes.push(pipeline::Pass::new("in place", optimize::work_in_place));
    }
    if half_weights {
        passes.push(pipeline::Pass::new("2-byte weights", optimize::narrow_exact_packed_weights));
    }
    let raw_name = opts.model_name.clone().unwrap_or_else(|| graph.name.clone());
    let model_name = names::sanitize(if raw_name.is_empty() { "model" } else { &raw_name });
    let emit::Emitted { sched_text, weights, report } =
        pipeline::run(lower, &passes, |l| emit::emit(l, &model_name, w))?;
    let limit = rlx_sched::Policy::DEFAULT_MAX_ARENA;
    if report.arena_bytes > limit {
        warnings.push(format!(
            "the arena is {} bytes, more than {limit}: running the model needs that much memory at start-up \
             (check the input shapes, or give static ones with --shape)",
            report.arena_bytes
        ));
    }
    Ok(Imported { sched_text, weights, report, warnings })
}
