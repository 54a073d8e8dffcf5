//! A Llama-architecture decoder from a Hugging Face checkpoint
//! (`config.json` + `model.safetensors`) to a decoder-step schedule: the
//! second front end of this crate, for the architecture whose exported
//! ONNX graphs carry a dynamic KV cache (`docs/decoding.md`). The families
//! that differ from Llama in a few places (Qwen2, Mistral, Gemma, Phi-3)
//! share its step: `config.rs` reads the shared fields, `family.rs` each
//! family's own fields and tensor names, `step.rs` builds the thunks,
//! `tensors.rs` reads the checkpoint's tensors.
//!
//! A step runs its tokens at the run-time position `pos` over a KV cache
//! of `max_position_embeddings` rows per layer, kept in `state` buffers:
//! the convention `rlx_decode::GeneratedStep` drives. The schedule has a
//! `decode` entry (one token) and, with a prefill chunk above one, a
//! `prefill` entry (the chunk), both over the same weights and cache. Products are
//! prepacked like an ONNX model's (`optimize::prepack`).

mod config;
mod family;
mod fields;
mod step;
mod tensors;

use rlx_sched::DType;
use safetensors::SafeTensors;

use crate::emit;
use crate::error::ImportError;
use crate::optimize;
use crate::pipeline::{self, Pass};
use crate::Imported;
pub use config::LlamaConfig;
pub use family::{Family, MODEL_TYPES};
use fields::{config_err, tensor_err};

/// How the products' weights are stored in the imported weights file.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum WeightFormat {
    /// As the checkpoint stores them: f16 or bf16 stay 2 bytes
    /// (`PackedGemmHalf`), anything else f32.
    #[default]
    AsStored,
    F32,
    F16,
    Bf16,
    /// ggml's Q8_0 (`PackedGemmQ8`) for every product whose input size is
    /// a multiple of 32; the others f32, or f16 / bf16 where that holds
    /// every value exactly.
    Q8_0,
}

/// The KV cache length a step gets when none is asked for and the model's
/// context is longer: a 131k-context model would otherwise need gigabytes
/// of cache before its first token.
pub const DEFAULT_CACHE_LEN: usize = 4096;

/// What [`import_llama_with`] makes of a checkpoint.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct LlamaOptions {
    /// Tokens of the `prefill` entry; 1 imports a decode step alone.
    pub prefill: usize,
    pub weights: WeightFormat,
    /// Positions the KV cache holds (`--max-len`): prompt and generated
    /// tokens together. `None`: the model's context, at most
    /// [`DEFAULT_CACHE_LEN`].
    pub max_len: Option<usize>,
}

/// [`import_llama_with`] with the weights as the checkpoint stores them.
pub fn import_llama(
    config_json: &str,
    safetensors_bytes: &[u8],
    prefill: usize,
    model_name: &str,
    weights_file: &str,
) -> Result<Imported, ImportError> {
    let opts = LlamaOptions { prefill, weights: WeightFormat::AsStored, max_len: None };
    import_llama_with(config_json, safetensors_bytes, &opts, model_name, weights_file)
}

/// Imports a checkpoint of a supported family ([`MODEL_TYPES`]) as a
/// decoder-step schedule. With `prefill`
/// 1 it has one entry, a decode step of one token; with `prefill` S > 1
/// two entry points (`docs/decoding.md`): `decode` (one token, what `run`
/// runs) and `prefill` (a chunk of S), sharing the weights and the KV
/// cache. The products' weights are prepacked, in f32 or, per
/// `opts.weights`, in f16 / bf16 (`PackedGemmHalf`) or Q8_0
/// (`PackedGemmQ8`); norms, rotary tables
/// and the embedding table stay f32.
pub fn import_llama_with(
    config_json: &str,
    safetensors_bytes: &[u8],
    opts: &LlamaOptions,
    model_name: &str,
    weights_file: &str,
) -> Result<Imported, ImportError> {
    let prefill = opts.prefill;
    crate::check_weights_path(weights_file)?;
    let parsed = LlamaConfig::from_json(config_json)?;
    let context = parsed.max_position_embeddings;
    let cache_len = match opts.max_len {
        None => context.min(DEFAULT_CACHE_LEN),
        Some(n) if (1..=context).contains(&n) => n,
        Some(n) => {
            return Err(ImportError::BadOption {
                option: "--max-len",
                message: format!(
                    "{n} positions: give 1 to the model's context of {context} (`max_position_embeddings`)"
                ),
            })
        }
    };
    // The step sees the cache's positions: its rotary tables and KV caches
    // are sized by them, not by the context the model was trained for.
    let c = LlamaConfig { max_position_embeddings: cache_len, ..parsed };
    if prefill == 0 || prefill > c.max_position_embeddings {
        return Err(config_err(format!(
            "a prefill chunk of {prefill} tokens does not fit {} positions",
            c.max_position_embeddings
        )));
    }
    let tensors = SafeTensors::deserialize(safetensors_bytes).map_err(|e| tensor_err(e.to_string()))?;
    c.check_layers(&tensors)?;
    let model_name = crate::names::sanitize(if model_name.is_empty() { "model" } else { model_name });
    let model_name = model_name.as_str();
    let lower = || step::build_steps(&c, &tensors, prefill);
    let narrow = match opts.weights {
        WeightFormat::F32 | WeightFormat::Q8_0 => None,
        WeightFormat::F16 => Some(DType::F16),
        WeightFormat::Bf16 => Some(DType::Bf16),
        WeightFormat::AsStored => match tensors.tensor(c.family.first_product()).map(|t| t.dtype()) {
            Ok(safetensors::Dtype::F16) => Some(DType::F16),
            Ok(safetensors::Dtype::BF16) => Some(DType::Bf16),
            _ => None,
        },
    };
    let mut passes = vec![Pass::new("prepack", optimize::prepack)];
    if let Some(dtype) = narrow {
        passes.push(Pass::new("2-byte weights", move |l| optimize::narrow_packed_weights(l, dtype)));
    }
    if opts.weights == WeightFormat::Q8_0 {
        passes.push(Pass::new("8-bit weights", optimize::quantize_packed_weights_q8));
        // The products left (no whole blocks) keep their values, in 2
        // bytes where every value is exact there (a GGUF's f16 tensors).
        passes.push(Pass::new("exact 2-byte weights", optimize::narrow_exact_packed_weights));
    }
    let origin = format!("imported from a {} checkpoint by rlx-onnx", c.family.name());
    let emit::Emitted { sched_text, weights, report } =
        pipeline::run(lower, &passes, |l| emit::emit_with(l, model_name, weights_file, &origin))?;
    Ok(Imported { sched_text, weights, report, warnings: Vec::new() })
}
