//! `cargo xtask import model.onnx`: ONNX to `model.sched` + weights, with
//! graph inputs bound to `.npy` values (`--const`) and, with `--new-model
//! NAME`, a model crate `models/NAME` ready to build (`scaffold.rs`).

use std::path::{Path, PathBuf};

use anyhow::{anyhow, bail, Context, Result};
use rlx_onnx::tensor::{ConstData, ConstTensor};
use rlx_runtime::npy::{self, NpyArray};

use crate::scaffold;

/// What `cargo xtask import` was asked to do.
#[derive(Debug)]
pub struct ImportArgs<'a> {
    /// The ONNX model.
    pub onnx: &'a Path,
    /// Where model.sched and the weights go (default: the model's directory).
    pub out_dir: Option<&'a Path>,
    /// The schedule's model name.
    pub name: Option<&'a str>,
    /// `--shape NAME=D1,D2,...` flags.
    pub shapes: &'a [String],
    /// `--const NAME=PATH.npy` flags.
    pub consts: &'a [String],
    /// Prepack product weights (not `--no-prepack`).
    pub prepack: bool,
    /// Blocked convolution chains (not `--no-blocked`).
    pub blocked: bool,
    /// Winograd where it pays (not `--no-winograd`).
    pub winograd: bool,
    /// `--import-limit nodes=N,bytes=N`.
    pub import_limit: Option<&'a str>,
    /// `--new-model NAME`: scaffold `models/NAME` instead of writing to `out_dir`.
    pub new_model: Option<&'a str>,
}

/// The options every import (`import`, `verify`, `onnx-e2e`) builds from
/// `--shape` and `--const` flags.
pub fn options(shapes: &[String], consts: &[String]) -> Result<rlx_onnx::ImportOptions> {
    let mut opts = rlx_onnx::ImportOptions::new("weights.safetensors");
    for s in shapes {
        opts.shapes.push(rlx_onnx::parse_shape_override(s).map_err(|e| anyhow!("--shape {s}: {e}"))?);
    }
    for spec in consts {
        let (name, value) = parse_const(spec)?;
        if opts.consts.iter().any(|(n, _)| *n == name) {
            bail!("--const: input `{name}` is given twice");
        }
        opts.consts.push((name, value));
    }
    Ok(opts)
}

/// `NAME=PATH.npy` as the graph input's name and the array's value.
fn parse_const(spec: &str) -> Result<(String, ConstTensor)> {
    let (name, path) = match spec.split_once('=') {
        Some((n, p)) if !n.is_empty() && !p.is_empty() => (n, Path::new(p)),
        _ => bail!("--const: expected NAME=PATH.npy, found `{spec}`"),
    };
    let arr = npy::read_npy(path)?;
    let value = const_tensor(&arr).map_err(|e| anyhow!("--const {name}: {}: {e}", path.display()))?;
    Ok((name.to_string(), value))
}

/// A `.npy` array as an importer constant (every element type a buffer
/// can have; f16, bf16 and f64 read as f32, as the importer computes them).
pub fn const_tensor(arr: &NpyArray) -> Result<ConstTensor, String> {
    let data = ConstData::from_le_bytes(arr.dtype, &arr.bytes)
        .ok_or_else(|| format!("{} bytes are not a whole number of {} values", arr.bytes.len(), arr.dtype))?;
    Ok(ConstTensor { shape: arr.shape.clone(), data })
}

pub fn import(root: &Path, args: &ImportArgs<'_>) -> Result<()> {
    let mut opts = options(args.shapes, args.consts)?;
    // The scaffold's checks run before the import, which can take seconds
    // on a large model, so a taken name fails at once.
    let target = args.new_model.map(|name| scaffold::Target::check(root, name)).transpose()?;
    opts.model_name = args.name.or(args.new_model).map(str::to_string);
    opts.prepack = args.prepack;
    opts.blocked = args.blocked;
    opts.winograd = args.winograd;
    if let Some(spec) = args.import_limit {
        opts.limits = spec.parse().map_err(|e| anyhow!("--import-limit `{spec}`: {e}"))?;
    }
    let imported = rlx_onnx::import(args.onnx, &opts).map_err(|e| anyhow!("{e}"))?;
    print_warnings(&imported);
    if let Some(target) = target {
        return target.create(args.onnx, &imported, &opts.weights_file);
    }
    let dir: PathBuf = match args.out_dir {
        Some(d) => d.to_path_buf(),
        None => args.onnx.parent().unwrap_or(Path::new(".")).to_path_buf(),
    };
    std::fs::create_dir_all(&dir).with_context(|| format!("creating {}", dir.display()))?;
    let sched = dir.join("model.sched");
    let weights = dir.join(&opts.weights_file);
    std::fs::write(&weights, &imported.weights).with_context(|| format!("writing {}", weights.display()))?;
    std::fs::write(&sched, &imported.sched_text).with_context(|| format!("writing {}", sched.display()))?;
    println!("wrote {} and {}", sched.display(), weights.display());
    println!("{}", imported.report);
    Ok(())
}

/// The importer's warnings, one `warning: ...` line each on stderr.
pub fn print_warnings(imported: &rlx_onnx::Imported) {
    for w in &imported.warnings {
        eprintln!("warning: {w}");
    }
}

/// `--weights` of `cargo xtask import-llama`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum LlamaWeights {
    /// As the checkpoint stores them (f16 / bf16 stay 2 bytes, else f32).
    Stored,
    F32,
    F16,
    Bf16,
    /// ggml's Q8_0, kept 8-bit (`PackedGemmQ8`), for products whose input
    /// size is a multiple of 32; f32 for the others.
    #[value(name = "q8_0")]
    Q8_0,
}

impl LlamaWeights {
    fn format(self) -> rlx_onnx::llama::WeightFormat {
        use rlx_onnx::llama::WeightFormat;
        match self {
            LlamaWeights::Stored => WeightFormat::AsStored,
            LlamaWeights::F32 => WeightFormat::F32,
            LlamaWeights::F16 => WeightFormat::F16,
            LlamaWeights::Bf16 => WeightFormat::Bf16,
            LlamaWeights::Q8_0 => WeightFormat::Q8_0,
        }
    }
}

/// `cargo xtask import-llama` flags.
#[derive(Debug)]
pub struct LlamaArgs<'a> {
    pub checkpoint: &'a Path,
    pub out_dir: Option<&'a Path>,
    /// The schedule's model name (default: `new_model`).
    pub name: Option<&'a str>,
    pub prefill: usize,
    pub weights: LlamaWeights,
    pub max_len: Option<usize>,
    /// `--new-model NAME`: scaffold a decoder crate `models/NAME`.
    pub new_model: Option<&'a str>,
}

/// Where `import-llama` reads a model: a Hugging Face checkpoint
/// directory, or a GGUF file mapped to one in memory (`rlx_gguf`).
pub(crate) enum Checkpoint<'a> {
    Dir(&'a Path),
    Gguf {
        path: &'a Path,
        hf: rlx_gguf::HfCheckpoint,
        tokenizer: Result<Vec<u8>, String>,
        tokenizer_config: String,
        /// The file's products are Q8_0 (`blk.0.attn_q.weight` is): `--weights
        /// stored` keeps them 8-bit.
        q8_0: bool,
    },
}

impl<'a> Checkpoint<'a> {
    /// A directory as it is; a file is read as a GGUF.
    pub(crate) fn open(path: &'a Path) -> Result<Self> {
        if path.is_dir() {
            return Ok(Checkpoint::Dir(path));
        }
        let bytes = rlx_sched::read_regular_file(path)
            .with_context(|| format!("cannot read {} (a checkpoint directory or a .gguf file)", path.display()))?;
        let gguf = rlx_gguf::Gguf::parse(&bytes).map_err(|e| anyhow!("{}: {e}", path.display()))?;
        let hf = rlx_gguf::llama_checkpoint(&gguf).map_err(|e| anyhow!("{}: {e}", path.display()))?;
        let tokenizer = rlx_gguf::tokenizer::tokenizer_json(&gguf).map_err(|e| e.to_string());
        let tokenizer_config =
            rlx_gguf::tokenizer::tokenizer_config_json(&gguf).map_err(|e| anyhow!("{}: {e}", path.display()))?;
        let q8_0 = gguf.tensor("blk.0.attn_q.weight").is_some_and(|t| t.ty == rlx_gguf::GgmlType::Q8_0);
        Ok(Checkpoint::Gguf { path, hf, tokenizer, tokenizer_config, q8_0 })
    }

    fn path(&self) -> &Path {
        match self {
            Checkpoint::Dir(p) | Checkpoint::Gguf { path: p, .. } => p,
        }
    }

    /// The tokenizer, checked to load as the decoder binary will load it
    /// (a byte-level BPE), so a crate is never made around a tokenizer
    /// its binary refuses.
    fn tokenizer(&self) -> Result<Vec<u8>> {
        let (bytes, shown) = match self {
            Checkpoint::Dir(dir) => {
                let path = dir.join("tokenizer.json");
                let bytes = rlx_sched::read_regular_file(&path).with_context(|| {
                    format!("cannot read {} (a decoder crate embeds its tokenizer)", path.display())
                })?;
                (bytes, path.display().to_string())
            }
            Checkpoint::Gguf { path, tokenizer, .. } => {
                let bytes = tokenizer.clone().map_err(|e| anyhow!("{}: {e}", path.display()))?;
                (bytes, format!("{} (its tokenizer)", path.display()))
            }
        };
        rlx_decode::Tokenizer::from_bytes(&bytes).map_err(|e| anyhow!("{shown}: {e}"))?;
        Ok(bytes)
    }

    fn generation(&self) -> Result<rlx_decode::GenerationConfig> {
        match self {
            Checkpoint::Dir(dir) => read_generation(dir),
            Checkpoint::Gguf { path, hf, tokenizer_config, .. } => {
                rlx_decode::GenerationConfig::from_checkpoint(&hf.config_json, None, Some(tokenizer_config))
                    .map_err(|e| anyhow!("{}: {e}", path.display()))
            }
        }
    }

    pub(crate) fn import(&self, name: &str, opts: &rlx_onnx::llama::LlamaOptions) -> Result<rlx_onnx::Imported> {
        match self {
            Checkpoint::Dir(dir) => read_llama(dir, name, opts),
            Checkpoint::Gguf { path, hf, q8_0, .. } => {
                use rlx_onnx::llama::{LlamaOptions, WeightFormat};
                // The mapping holds a Q8_0 tensor's values `d * q` in f32;
                // quantizing them again gives back the file's blocks
                // (`crates/rlx-gguf/tests/llama_tiny.rs`), so "as stored"
                // is Q8_0 for such a file.
                let stored_q8 = *q8_0 && opts.weights == WeightFormat::AsStored;
                let opts = if stored_q8 { LlamaOptions { weights: WeightFormat::Q8_0, ..*opts } } else { *opts };
                rlx_onnx::llama::import_llama_with(&hf.config_json, &hf.safetensors, &opts, name, "weights.safetensors")
                    .map_err(|e| anyhow!("{}: {e}", path.display()))
            }
        }
    }
}

/// `cargo xtask import-llama DIR|FILE.gguf`: a Hugging Face checkpoint of
/// a supported decoder family (`rlx_onnx::llama::MODEL_TYPES`;
/// `DIR/config.json`, `DIR/model.safetensors`) or a Llama GGUF to a
/// decoder-step `model.sched` + `weights.safetensors` +
/// `generation.json` in `out_dir` (`docs/decoding.md`), with a `prefill`
/// entry of that many tokens when it is above 1; with `--new-model NAME`,
/// to a decoder crate `models/NAME` that also embeds the tokenizer
/// (`DIR/tokenizer.json`, or the GGUF's as a `tokenizer.json`).
pub fn import_llama(root: &Path, args: &LlamaArgs<'_>) -> Result<()> {
    // Everything a crate needs is checked before the import runs.
    let target = args.new_model.map(|name| scaffold::Target::check(root, name)).transpose()?;
    let checkpoint = Checkpoint::open(args.checkpoint)?;
    let tokenizer = match target {
        Some(_) => Some(checkpoint.tokenizer()?),
        None => None,
    };
    let name = args.name.or(args.new_model).context("--name or --new-model is required")?;
    let opts =
        rlx_onnx::llama::LlamaOptions { prefill: args.prefill, weights: args.weights.format(), max_len: args.max_len };
    let imported = checkpoint.import(name, &opts)?;
    let generation = checkpoint.generation()?;
    report_generation(&generation);
    if let (Some(target), Some(tokenizer)) = (target, tokenizer) {
        return target.create_decoder(checkpoint.path(), &imported, &tokenizer, &generation.to_json());
    }
    let out_dir = args.out_dir.context("--out-dir or --new-model is required")?;
    std::fs::create_dir_all(out_dir).with_context(|| format!("creating {}", out_dir.display()))?;
    let sched = out_dir.join("model.sched");
    let weights = out_dir.join("weights.safetensors");
    let generation_file = out_dir.join(rlx_decode::generation::FILE_NAME);
    std::fs::write(&weights, &imported.weights).with_context(|| format!("writing {}", weights.display()))?;
    std::fs::write(&sched, &imported.sched_text).with_context(|| format!("writing {}", sched.display()))?;
    std::fs::write(&generation_file, generation.to_json())
        .with_context(|| format!("writing {}", generation_file.display()))?;
    println!("wrote {}, {} and {}", sched.display(), weights.display(), generation_file.display());
    // A GGUF holds its tokenizer: written beside, as a checkpoint
    // directory would hold it.
    if let Checkpoint::Gguf { tokenizer, .. } = &checkpoint {
        match tokenizer {
            Ok(json) => {
                let file = out_dir.join("tokenizer.json");
                std::fs::write(&file, json).with_context(|| format!("writing {}", file.display()))?;
                println!("wrote {}", file.display());
            }
            Err(e) => println!("no tokenizer.json: {e}"),
        }
    }
    println!("{}", imported.report);
    Ok(())
}

/// What the import found about stopping and chat.
fn report_generation(generation: &rlx_decode::GenerationConfig) {
    match generation.eos_token_ids.as_slice() {
        [] => {
            println!("the checkpoint names no end-of-reply id: generation stops at the tokenizer's end-of-text token")
        }
        ids => println!("generation stops at token ids {ids:?}"),
    }
    if generation.chat_template.is_none() {
        println!("no chat template (tokenizer_config.json): --chat and --interactive are not available");
    }
}

/// The checkpoint's generation config: end-of-reply ids from
/// `generation_config.json` or `config.json`, the chat template and its
/// special tokens from `tokenizer_config.json` (both optional files).
pub fn read_generation(checkpoint: &Path) -> Result<rlx_decode::GenerationConfig> {
    let text = |file: &str| -> Result<Option<String>> {
        let path = checkpoint.join(file);
        if !path.exists() {
            return Ok(None);
        }
        let bytes = rlx_sched::read_regular_file(&path).with_context(|| format!("cannot read {}", path.display()))?;
        String::from_utf8(bytes).map(Some).map_err(|_| anyhow!("cannot read {}: it is not UTF-8 text", path.display()))
    };
    let config = text("config.json")?.ok_or_else(|| anyhow!("{}: no config.json", checkpoint.display()))?;
    rlx_decode::GenerationConfig::from_checkpoint(
        &config,
        text("generation_config.json")?.as_deref(),
        text("tokenizer_config.json")?.as_deref(),
    )
    .map_err(|e| anyhow!("{}: {e}", checkpoint.display()))
}

/// A decoder checkpoint directory imported as a decoder step of `seq` tokens
/// (weights file `weights.safetensors`).
pub fn read_llama(checkpoint: &Path, name: &str, opts: &rlx_onnx::llama::LlamaOptions) -> Result<rlx_onnx::Imported> {
    let config_path = checkpoint.join("config.json");
    let weights_path = checkpoint.join("model.safetensors");
    let read =
        |path: &Path| rlx_sched::read_regular_file(path).with_context(|| format!("cannot read {}", path.display()));
    let config = String::from_utf8(read(&config_path)?)
        .map_err(|_| anyhow!("cannot read {}: it is not UTF-8 text", config_path.display()))?;
    let weights = read(&weights_path)?;
    rlx_onnx::llama::import_llama_with(&config, &weights, opts, name, "weights.safetensors")
        .map_err(|e| anyhow!("{}: {e}", checkpoint.display()))
}

#[cfg(test)]
mod tests {
    use super::*;
    use rlx_sched::DType;

    fn array(dtype: DType, shape: &[usize], bytes: Vec<u8>) -> NpyArray {
        NpyArray { dtype, shape: shape.to_vec(), bytes }
    }

    /// The bundled decoder's `generation.json` is what `import-llama`
    /// writes for its checkpoint (end id 0, the chat template of its
    /// `tokenizer_config.json`).
    #[test]
    fn the_bundled_decoders_generation_config_is_fresh() {
        let model = Path::new(env!("CARGO_MANIFEST_DIR")).join("../models/llama_tiny");
        let generation = read_generation(&model.join("hf")).unwrap();
        assert_eq!(generation.eos_token_ids, [0]);
        assert!(generation.chat_template.is_some());
        let checked_in = std::fs::read_to_string(model.join(rlx_decode::generation::FILE_NAME)).unwrap();
        assert_eq!(
            checked_in,
            generation.to_json(),
            "rerun cargo xtask import-llama models/llama_tiny/hf --out-dir models/llama_tiny --name llama_tiny"
        );
    }

    #[test]
    fn npy_arrays_become_constants_of_their_type() {
        let f = array(DType::F32, &[2], [1.5f32, -2.0].iter().flat_map(|v| v.to_le_bytes()).collect());
        assert_eq!(const_tensor(&f).unwrap(), ConstTensor { shape: vec![2], data: ConstData::F32(vec![1.5, -2.0]) });
        let i = array(DType::I64, &[1, 2], [3i64, -1].iter().flat_map(|v| v.to_le_bytes()).collect());
        assert_eq!(const_tensor(&i).unwrap().data, ConstData::I64(vec![3, -1]));
        let j = array(DType::I32, &[], 7i32.to_le_bytes().to_vec());
        assert_eq!(const_tensor(&j).unwrap(), ConstTensor { shape: vec![], data: ConstData::I32(vec![7]) });
        let b = array(DType::Bool, &[3], vec![0, 1, 0]);
        assert_eq!(const_tensor(&b).unwrap().data, ConstData::Bool(vec![false, true, false]));
        let d = array(DType::F64, &[1], 1.5f64.to_le_bytes().to_vec());
        assert_eq!(const_tensor(&d).unwrap().data, ConstData::F32(vec![1.5]), "computed in f32");
        let u = array(DType::U8, &[2], vec![7, 255]);
        assert_eq!(const_tensor(&u).unwrap().data, ConstData::Int(DType::U8, vec![7, 255]));
        let w = array(DType::U64, &[1], u64::MAX.to_le_bytes().to_vec());
        assert_eq!(const_tensor(&w).unwrap().data, ConstData::Int(DType::U64, vec![-1]), "held as its bits");
    }

    #[test]
    fn const_specs_need_a_name_and_a_path() {
        for bad in ["shape", "=a.npy", "shape="] {
            let e = parse_const(bad).unwrap_err().to_string();
            assert_eq!(e, format!("--const: expected NAME=PATH.npy, found `{bad}`"));
        }
    }
}
