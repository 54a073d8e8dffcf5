//! `config.json` to [`LlamaConfig`]: the fields every family shares,
//! then the family's own (`family.rs`), each range-checked before
//! anything is sized by it.

use rlx_sched::ActKind;
use safetensors::SafeTensors;

use super::family::Family;
use super::fields::{config_err, tensor_err, Fields};
use crate::error::ImportError;

/// The `config.json` fields the importer reads (Hugging Face names), and
/// what the family makes of them.
#[derive(Clone, Debug, PartialEq)]
pub struct LlamaConfig {
    pub family: Family,
    pub vocab_size: usize,
    pub hidden_size: usize,
    pub intermediate_size: usize,
    pub num_hidden_layers: usize,
    pub num_attention_heads: usize,
    pub num_key_value_heads: usize,
    pub head_dim: usize,
    pub max_position_embeddings: usize,
    pub rms_norm_eps: f32,
    pub rope_theta: f32,
    pub tie_word_embeddings: bool,
    /// Biases on the query, key and value products.
    pub qkv_bias: bool,
    /// The feed-forward gate's activation (`act(gate) * up`).
    pub activation: ActKind,
    /// Keys a query attends to, itself included (`sliding_window`); `None`:
    /// every earlier position.
    pub sliding_window: Option<usize>,
}

/// Rotary table entries (`max_position_embeddings * head_dim`) accepted:
/// 1 GiB of f32 for cos and sin together, far above real models.
const MAX_ROPE_TABLE: usize = 1 << 28;

impl LlamaConfig {
    /// Reads a Hugging Face decoder config of a supported family; refuses
    /// what the step does not compute (another activation, rope scaling,
    /// partial rotary embeddings, the family's unsupported options) and
    /// every value outside what the architecture allows, before anything
    /// is sized by it.
    pub fn from_json(text: &str) -> Result<Self, ImportError> {
        let v: serde_json::Value = serde_json::from_str(text).map_err(|e| config_err(e.to_string()))?;
        if !v.is_object() {
            return Err(config_err("must be a JSON object"));
        }
        let f = Fields(&v);
        let family = Family::of(&f)?;
        let settings = family.settings(&f)?;
        if f.get("rope_scaling").is_some() {
            return Err(config_err("`rope_scaling` is not supported"));
        }
        // transformers 5 nests the rotary settings in `rope_parameters`;
        // 4.x wrote `rope_theta` at the top level.
        let rope = f.get("rope_parameters");
        if let Some(kind) = rope.and_then(|r| r.get("rope_type")) {
            if kind.as_str() != Some("default") {
                return Err(config_err(format!("`rope_type` {kind}: only `default` rotary embeddings are supported")));
            }
        }
        let partial_field =
            rope.and_then(|r| r.get("partial_rotary_factor")).or_else(|| f.get("partial_rotary_factor"));
        let partial = f.f32_number("partial_rotary_factor", partial_field, 1.0, true)?;
        if partial != 1.0 {
            return Err(config_err(format!(
                "`partial_rotary_factor` {partial}: only rotary embeddings over the whole head (1.0) are supported"
            )));
        }
        let theta_field = rope.and_then(|r| r.get("rope_theta")).or_else(|| v.get("rope_theta"));
        let rope_theta = f.f32_number("rope_theta", theta_field, 10000.0, true)?;
        let rms_norm_eps = f.f32_number("rms_norm_eps", v.get("rms_norm_eps"), 1e-6, false)?;
        let (hidden, heads) = (f.positive("hidden_size")?, f.positive("num_attention_heads")?);
        let head_dim = match v.get("head_dim") {
            Some(_) => f.positive("head_dim")?,
            None if hidden % heads == 0 => hidden / heads,
            None => return Err(config_err("`hidden_size` is not a multiple of `num_attention_heads`")),
        };
        let kv_heads = match v.get("num_key_value_heads") {
            Some(_) => f.positive("num_key_value_heads")?,
            None => heads,
        };
        if heads % kv_heads != 0 || head_dim % 2 != 0 {
            return Err(config_err("the query heads must be a multiple of the key/value heads, head_dim even"));
        }
        // The rotary tables are built here, before any tensor bounds the
        // sizes: a hostile config must get an error, not an allocation
        // failure.
        let max_len = f.positive("max_position_embeddings")?;
        if max_len.checked_mul(head_dim).is_none_or(|n| n > MAX_ROPE_TABLE) {
            return Err(config_err(format!(
                "`max_position_embeddings` {max_len} x `head_dim` {head_dim} is more than {MAX_ROPE_TABLE} table entries"
            )));
        }
        let c = LlamaConfig {
            family,
            vocab_size: f.positive("vocab_size")?,
            hidden_size: hidden,
            intermediate_size: f.positive("intermediate_size")?,
            num_hidden_layers: f.positive("num_hidden_layers")?,
            num_attention_heads: heads,
            num_key_value_heads: kv_heads,
            head_dim,
            max_position_embeddings: max_len,
            rms_norm_eps,
            rope_theta,
            // Gemma's checkpoints tie their embeddings (transformers'
            // default for it); the others default to separate ones.
            tie_word_embeddings: f.flag("tie_word_embeddings", family == Family::Gemma)?,
            qkv_bias: settings.qkv_bias,
            activation: settings.activation,
            sliding_window: settings.sliding_window,
        };
        // Every size a step is built from must be computable: the tensors
        // bound each factor, not their products.
        let sizes = [
            ("num_attention_heads x head_dim", heads.checked_mul(head_dim)),
            ("num_key_value_heads x head_dim", kv_heads.checked_mul(head_dim)),
            ("the KV cache", c.cache_bytes()),
            // Phi-3's fused projections: query, key and value rows in one
            // tensor, gate and up in another.
            ("the fused query, key and value rows", c.fused_qkv_rows()),
            ("the fused gate and up rows", c.intermediate_size.checked_mul(2)),
        ];
        if let Some((what, _)) = sizes.iter().find(|(_, n)| n.is_none_or(|n| n > isize::MAX as usize)) {
            return Err(config_err(format!("{what} overflows the address space")));
        }
        Ok(c)
    }

    /// `(heads + 2 kv_heads) * head_dim`.
    fn fused_qkv_rows(&self) -> Option<usize> {
        let kv = self.num_key_value_heads.checked_mul(2)?;
        self.num_attention_heads.checked_add(kv)?.checked_mul(self.head_dim)
    }

    /// Bytes of the keys and values of every layer over every position.
    fn cache_bytes(&self) -> Option<usize> {
        [self.num_key_value_heads, self.head_dim, self.max_position_embeddings, self.num_hidden_layers, 2]
            .into_iter()
            .try_fold(4usize, usize::checked_mul)
    }

    /// The checkpoint's tensors hold exactly `num_hidden_layers` layers
    /// (`model.layers.{i}.`, `i` from 0): checked before anything is
    /// sized by the count.
    pub(super) fn check_layers(&self, tensors: &SafeTensors<'_>) -> Result<(), ImportError> {
        let mut present = std::collections::BTreeSet::new();
        for name in tensors.names() {
            let index = name.strip_prefix("model.layers.").and_then(|rest| rest.split('.').next());
            if let Some(i) = index {
                let i: usize =
                    i.parse().map_err(|_| tensor_err(format!("tensor `{name}`: `{i}` is not a layer index")))?;
                present.insert(i);
            }
        }
        let expected = self.num_hidden_layers;
        let contiguous = present.len() == expected && present.last().is_none_or(|&last| last + 1 == expected);
        if !contiguous {
            return Err(tensor_err(format!(
                "config.json has `num_hidden_layers` {expected}, the tensors hold layers {}",
                describe_layers(&present)
            )));
        }
        Ok(())
    }
}

/// `0..=29`, `0..=3, 5` or `none`: the layer indices a checkpoint holds.
fn describe_layers(present: &std::collections::BTreeSet<usize>) -> String {
    let mut runs: Vec<(usize, usize)> = Vec::new();
    for &i in present {
        match runs.last_mut() {
            Some((_, end)) if *end + 1 == i => *end = i,
            _ => runs.push((i, i)),
        }
    }
    if runs.is_empty() {
        return "none".to_string();
    }
    let shown: Vec<String> =
        runs.iter().take(4).map(|&(a, b)| if a == b { a.to_string() } else { format!("{a}..={b}") }).collect();
    let more = if runs.len() > 4 { ", ..." } else { "" };
    format!("{}{more}", shown.join(", "))
}
