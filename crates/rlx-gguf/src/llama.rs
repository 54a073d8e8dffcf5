//! A Llama GGUF as the Hugging Face checkpoint the Llama importer reads
//! (`rlx_onnx::llama`): the metadata as a `config.json`, the tensors
//! under their transformers names in one in-memory `model.safetensors`.
//! The importer then runs unchanged, so a GGUF and the checkpoint it was
//! converted from import to the same schedule.
//!
//! F32, F16 and BF16 tensors keep their bytes (an f16 GGUF imports as an
//! f16 checkpoint does); quantized ones are dequantized to f32. llama.cpp's
//! converter permutes the rows of the query and key projections for its
//! rotary layout (each head's halves interleaved); [`unpermute_rows`]
//! restores transformers' order.

use std::collections::BTreeMap;

use crate::error::GgufError;
use crate::reader::{Gguf, TensorInfo, Value};
use crate::types::GgmlType;

/// What the Llama importer reads, made from a GGUF.
#[derive(Debug)]
pub struct HfCheckpoint {
    pub config_json: String,
    pub safetensors: Vec<u8>,
}

fn model_err(message: impl Into<String>) -> GgufError {
    GgufError::Model(message.into())
}

/// The architectures whose GGUF layout this module maps.
const ARCHITECTURES: &[&str] = &["llama"];

/// Reads `{arch}.NAME` metadata with errors that name the key.
struct Meta<'g, 'a> {
    gguf: &'g Gguf<'a>,
    arch: &'g str,
}

impl Meta<'_, '_> {
    fn key(&self, name: &str) -> String {
        format!("{}.{name}", self.arch)
    }

    fn get(&self, name: &str) -> Option<&Value> {
        self.gguf.get(&self.key(name))
    }

    fn positive(&self, name: &str) -> Result<Option<u64>, GgufError> {
        match self.get(name) {
            None => Ok(None),
            Some(v) => match v.as_u64().filter(|&x| x > 0) {
                Some(x) => Ok(Some(x)),
                None => Err(crate::error::metadata(
                    &self.key(name),
                    format!("must be a positive integer, found {} {}", v.type_name(), v.describe()),
                )),
            },
        }
    }

    fn required(&self, name: &str) -> Result<u64, GgufError> {
        self.positive(name)?.ok_or_else(|| crate::error::metadata(&self.key(name), "is missing"))
    }

    fn float(&self, name: &str) -> Result<Option<f64>, GgufError> {
        match self.get(name) {
            None => Ok(None),
            Some(v) => v.as_f64().map(Some).ok_or_else(|| {
                crate::error::metadata(&self.key(name), format!("must be a number, found {}", v.type_name()))
            }),
        }
    }
}

/// The transformers name of GGUF tensor `name`, and for the query and
/// key projections the heads whose rows the converter permuted.
fn hf_name(name: &str, layers: usize, heads: usize, kv_heads: usize) -> Result<(String, Option<usize>), GgufError> {
    let global = match name {
        "token_embd.weight" => Some("model.embed_tokens.weight"),
        "output_norm.weight" => Some("model.norm.weight"),
        "output.weight" => Some("lm_head.weight"),
        _ => None,
    };
    if let Some(hf) = global {
        return Ok((hf.to_string(), None));
    }
    let unknown = || {
        model_err(format!(
            "tensor `{name}` is not one of a Llama model's (`token_embd`, `output_norm`, `output`, `blk.N.{{attn_norm, attn_q, attn_k, attn_v, attn_output, ffn_norm, ffn_gate, ffn_up, ffn_down}}.weight`)"
        ))
    };
    let rest = name.strip_prefix("blk.").ok_or_else(unknown)?;
    let (index, part) = rest.split_once('.').ok_or_else(unknown)?;
    let layer: usize = index.parse().map_err(|_| unknown())?;
    if layer >= layers {
        return Err(model_err(format!("tensor `{name}`: layer {layer} is beyond `llama.block_count` {layers}")));
    }
    let (hf, permuted) = match part {
        "attn_norm.weight" => ("input_layernorm.weight", None),
        "attn_q.weight" => ("self_attn.q_proj.weight", Some(heads)),
        "attn_k.weight" => ("self_attn.k_proj.weight", Some(kv_heads)),
        "attn_v.weight" => ("self_attn.v_proj.weight", None),
        "attn_output.weight" => ("self_attn.o_proj.weight", None),
        "ffn_norm.weight" => ("post_attention_layernorm.weight", None),
        "ffn_gate.weight" => ("mlp.gate_proj.weight", None),
        "ffn_up.weight" => ("mlp.up_proj.weight", None),
        "ffn_down.weight" => ("mlp.down_proj.weight", None),
        _ => return Err(unknown()),
    };
    Ok((format!("model.layers.{layer}.{hf}"), permuted))
}

/// Undoes llama.cpp's rotary permutation of a projection's rows: the
/// converter's row `h * d + 2 * i + j` (head `h` of `d` rows, `i <
/// d / 2`, `j` in 0..2) is transformers' row `h * d + j * d / 2 + i`.
/// `rows` is `heads * d` rows of `row_bytes` bytes each.
pub fn unpermute_rows(data: &[u8], heads: usize, row_bytes: usize) -> Vec<u8> {
    // Rows of no bytes (a tensor of no columns) have no order to undo.
    if row_bytes == 0 || heads == 0 {
        return data.to_vec();
    }
    let rows = data.len() / row_bytes;
    let (d, half) = (rows / heads, rows / heads / 2);
    let mut out = vec![0u8; data.len()];
    for h in 0..heads {
        for i in 0..half {
            for j in 0..2 {
                let from = h * d + 2 * i + j;
                let to = h * d + j * half + i;
                out[to * row_bytes..][..row_bytes].copy_from_slice(&data[from * row_bytes..][..row_bytes]);
            }
        }
    }
    out
}

/// A tensor of the checkpoint: its safetensors dtype and its bytes.
fn hf_bytes(gguf: &Gguf<'_>, t: &TensorInfo) -> (&'static str, Vec<u8>) {
    match t.ty {
        GgmlType::F32 => ("F32", gguf.raw(t).to_vec()),
        GgmlType::F16 => ("F16", gguf.raw(t).to_vec()),
        GgmlType::Bf16 => ("BF16", gguf.raw(t).to_vec()),
        _ => ("F32", gguf.dequantize(t).iter().flat_map(|x| x.to_le_bytes()).collect()),
    }
}

/// Maps a Llama GGUF to a Hugging Face checkpoint; refuses other
/// architectures and what the Llama importer does not compute (rope
/// scaling, partial rotary, experts), naming the key.
pub fn llama_checkpoint(gguf: &Gguf<'_>) -> Result<HfCheckpoint, GgufError> {
    let arch =
        gguf.get("general.architecture").ok_or_else(|| crate::error::metadata("general.architecture", "is missing"))?;
    let arch = arch.as_str().ok_or_else(|| crate::error::metadata("general.architecture", "must be a string"))?;
    if !ARCHITECTURES.contains(&arch) {
        return Err(crate::error::metadata(
            "general.architecture",
            format!("`{arch}` is not supported; supported: {}", ARCHITECTURES.join(", ")),
        ));
    }
    let m = Meta { gguf, arch };
    if m.positive("expert_count")?.is_some() {
        return Err(crate::error::metadata(&m.key("expert_count"), "mixture-of-experts models are not supported"));
    }
    if let Some(kind) = m.get("rope.scaling.type") {
        if kind.as_str() != Some("none") {
            return Err(crate::error::metadata(
                &m.key("rope.scaling.type"),
                format!("{}: rope scaling is not supported", kind.describe()),
            ));
        }
    }
    if gguf.tensor("rope_freqs.weight").is_some() {
        return Err(model_err(
            "tensor `rope_freqs.weight`: rotary frequency factors (Llama 3.1 rope scaling) are not supported",
        ));
    }
    let hidden = m.required("embedding_length")?;
    let heads = m.required("attention.head_count")?;
    let kv_heads = m.positive("attention.head_count_kv")?.unwrap_or(heads);
    let head_dim = match m.positive("attention.key_length")? {
        Some(k) => k,
        None if hidden % heads == 0 => hidden / heads,
        None => return Err(crate::error::metadata(&m.key("embedding_length"), "is not a multiple of the head count")),
    };
    if m.positive("attention.value_length")?.is_some_and(|v| v != head_dim) {
        return Err(crate::error::metadata(&m.key("attention.value_length"), "differs from the key length"));
    }
    if m.positive("rope.dimension_count")?.is_some_and(|r| r != head_dim) {
        return Err(crate::error::metadata(
            &m.key("rope.dimension_count"),
            format!("rotary embeddings over part of a head are not supported (head size {head_dim})"),
        ));
    }
    let layers = m.required("block_count")?;
    let vocab = match gguf.get("tokenizer.ggml.tokens").and_then(Value::as_array) {
        Some(tokens) => tokens.len() as u64,
        None => match m.positive("vocab_size")? {
            Some(v) => v,
            None => return Err(crate::error::metadata("tokenizer.ggml.tokens", "is missing (the vocabulary size)")),
        },
    };
    let mut config = serde_json::Map::new();
    let mut set = |k: &str, v: serde_json::Value| config.insert(k.to_string(), v);
    set("model_type", "llama".into());
    set("hidden_act", "silu".into());
    set("vocab_size", vocab.into());
    set("hidden_size", hidden.into());
    set("intermediate_size", m.required("feed_forward_length")?.into());
    set("num_hidden_layers", layers.into());
    set("num_attention_heads", heads.into());
    set("num_key_value_heads", kv_heads.into());
    set("head_dim", head_dim.into());
    set("max_position_embeddings", m.required("context_length")?.into());
    let eps = m.float("attention.layer_norm_rms_epsilon")?;
    let eps = eps.ok_or_else(|| crate::error::metadata(&m.key("attention.layer_norm_rms_epsilon"), "is missing"))?;
    set("rms_norm_eps", finite(&m.key("attention.layer_norm_rms_epsilon"), eps)?);
    if let Some(theta) = m.float("rope.freq_base")? {
        set("rope_theta", finite(&m.key("rope.freq_base"), theta)?);
    }
    set("tie_word_embeddings", gguf.tensor("output.weight").is_none().into());
    let ids = crate::tokenizer::eos_token_ids(gguf)?;
    if !ids.is_empty() {
        set("eos_token_id", ids.into());
    }
    let config_json = serde_json::to_string_pretty(&serde_json::Value::Object(config)).expect("JSON serialises");
    let safetensors = safetensors_of(gguf, layers as usize, heads as usize, kv_heads as usize)?;
    Ok(HfCheckpoint { config_json, safetensors })
}

/// A GGUF float as a JSON number (JSON has no NaN or infinity).
fn finite(key: &str, x: f64) -> Result<serde_json::Value, GgufError> {
    serde_json::Number::from_f64(x)
        .map(serde_json::Value::Number)
        .ok_or_else(|| crate::error::metadata(key, format!("{x} is not a finite number")))
}

/// The checkpoint's `model.safetensors` bytes, written directly (header,
/// then each tensor into its place) so that the only copy of the weights
/// besides the GGUF is this buffer.
fn safetensors_of(gguf: &Gguf<'_>, layers: usize, heads: usize, kv_heads: usize) -> Result<Vec<u8>, GgufError> {
    struct Entry<'t> {
        info: &'t TensorInfo,
        hf: String,
        permuted: Option<usize>,
        dtype: &'static str,
        len: usize,
    }
    let mut entries = Vec::new();
    for t in gguf.tensors() {
        let (hf, permuted) = hf_name(&t.name, layers, heads, kv_heads)?;
        let (dtype, elem) = match t.ty {
            GgmlType::F16 => ("F16", 2),
            GgmlType::Bf16 => ("BF16", 2),
            _ => ("F32", 4),
        };
        if let Some(h) = permuted {
            let rows = t.dims.get(1).copied().unwrap_or(1);
            if t.dims.len() != 2 || rows == 0 || h.checked_mul(2).is_none_or(|n| rows % n != 0) {
                return Err(model_err(format!(
                    "tensor `{}`: dims {:?} are not {h} heads of rows of a positive even size",
                    t.name, t.dims
                )));
            }
        }
        // Bounded by the tensor's bytes in the file, at most 8x them (a
        // 4-bit value widened to f32).
        let len = t.elements().checked_mul(elem).ok_or_else(|| model_err(format!("tensor `{}` overflows", t.name)))?;
        entries.push(Entry { info: t, hf, permuted, dtype, len });
    }
    let mut header = BTreeMap::new();
    let mut offset = 0usize;
    for e in &entries {
        let end = offset.checked_add(e.len).ok_or_else(|| model_err("the weights overflow the address space"))?;
        header.insert(
            e.hf.clone(),
            serde_json::json!({ "dtype": e.dtype, "shape": e.info.shape(), "data_offsets": [offset, end] }),
        );
        offset = end;
    }
    if header.len() != entries.len() {
        return Err(model_err("two tensors map to the same transformers name"));
    }
    let mut head = serde_json::to_string(&header).expect("JSON serialises").into_bytes();
    // safetensors pads the header with spaces to a multiple of 8.
    while head.len() % 8 != 0 {
        head.push(b' ');
    }
    let mut out = Vec::with_capacity(8 + head.len() + offset);
    out.extend((head.len() as u64).to_le_bytes());
    out.extend(&head);
    for e in &entries {
        let (_, bytes) = hf_bytes(gguf, e.info);
        match e.permuted {
            // `dims[1]` is positive: checked above.
            Some(h) => out.extend(unpermute_rows(&bytes, h, bytes.len() / e.info.dims[1])),
            None => out.extend(bytes),
        }
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The converter's permutation (`LlamaModel.permute`: reshape to
    /// `[heads, 2, d / 2, cols]`, swap the middle axes) followed by
    /// `unpermute_rows` is the identity.
    #[test]
    fn unpermuting_inverts_the_converters_permutation() {
        let (heads, d, cols) = (3, 8, 2);
        let rows = heads * d;
        let hf: Vec<u8> = (0..rows * cols).map(|x| x as u8).collect();
        let mut gguf = vec![0u8; hf.len()];
        for h in 0..heads {
            for j in 0..2 {
                for i in 0..d / 2 {
                    let src = h * d + j * d / 2 + i;
                    let dst = h * d + 2 * i + j;
                    gguf[dst * cols..][..cols].copy_from_slice(&hf[src * cols..][..cols]);
                }
            }
        }
        assert_ne!(gguf, hf);
        assert_eq!(unpermute_rows(&gguf, heads, cols), hf);
    }
}
