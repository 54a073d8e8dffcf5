//! The decoder families by `model_type`: what each reads from
//! `config.json` besides the shared Llama fields, and how its checkpoint
//! names the tensors the step reads (`docs/decoding.md`, "Families").

use rlx_sched::ActKind;

use super::fields::{config_err, Fields};
use super::tensors::Builder;
use crate::error::ImportError;

/// A decoder family: the Llama step with the differences its
/// `model_type` makes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Family {
    Llama,
    /// Q/K/V projection biases.
    Qwen2,
    /// A sliding attention window.
    Mistral,
    /// GeLU-tanh gates, embeddings scaled by `sqrt(hidden)`, norms by `1 + w`.
    Gemma,
    /// Fused `qkv_proj` and `gate_up_proj`, an optional sliding window.
    Phi3,
}

/// The `model_type`s whose step the importer builds.
pub const MODEL_TYPES: &[&str] = &["llama", "qwen2", "mistral", "gemma", "phi3"];

/// What a family's own `config.json` fields decide.
pub(super) struct FamilySettings {
    pub qkv_bias: bool,
    pub activation: ActKind,
    pub sliding_window: Option<usize>,
}

impl Family {
    /// The family of `config.json`'s `model_type`; a known architecture
    /// the step does not compute gets a reason.
    pub(super) fn of(f: &Fields<'_>) -> Result<Family, ImportError> {
        if f.0.get("model_type").and_then(serde_json::Value::as_str) == Some("gemma2") {
            return Err(config_err(format!(
                "`model_type` `gemma2` is not supported: its attention and final-logit soft-capping, \
                 extra feed-forward norms and alternating sliding windows are not computed; supported: {}",
                MODEL_TYPES.join(", ")
            )));
        }
        let name = f.one_of("model_type", MODEL_TYPES, true)?.unwrap_or_default();
        Ok(match name.as_str() {
            "qwen2" => Family::Qwen2,
            "mistral" => Family::Mistral,
            "gemma" => Family::Gemma,
            "phi3" => Family::Phi3,
            // `one_of` admitted nothing but `MODEL_TYPES`: this is `llama`.
            _ => Family::Llama,
        })
    }

    /// The family as its checkpoints' authors write it.
    pub fn name(self) -> &'static str {
        match self {
            Family::Llama => "Llama",
            Family::Qwen2 => "Qwen2",
            Family::Mistral => "Mistral",
            Family::Gemma => "Gemma",
            Family::Phi3 => "Phi-3",
        }
    }

    /// Reads and checks the fields this family uses beyond the shared ones.
    pub(super) fn settings(self, f: &Fields<'_>) -> Result<FamilySettings, ImportError> {
        let window = |f: &Fields<'_>| f.optional_positive("sliding_window");
        let settings = match self {
            Family::Llama => {
                if f.flag("attention_bias", false)? || f.flag("mlp_bias", false)? {
                    return Err(config_err("biases in attention or MLP products are not supported"));
                }
                FamilySettings { qkv_bias: false, activation: silu(f)?, sliding_window: None }
            }
            Family::Qwen2 => {
                // Qwen2's windows apply to the layers from
                // `max_window_layers` on only.
                if f.flag("use_sliding_window", false)? {
                    return Err(config_err("`use_sliding_window` true is not supported for qwen2"));
                }
                FamilySettings { qkv_bias: true, activation: silu(f)?, sliding_window: None }
            }
            Family::Mistral => FamilySettings { qkv_bias: false, activation: silu(f)?, sliding_window: window(f)? },
            Family::Phi3 => FamilySettings { qkv_bias: false, activation: silu(f)?, sliding_window: window(f)? },
            Family::Gemma => {
                if f.flag("attention_bias", false)? {
                    return Err(config_err("biases in attention products are not supported"));
                }
                if f.flag("use_bidirectional_attention", false)? {
                    return Err(config_err("`use_bidirectional_attention` true is not supported: the step is causal"));
                }
                FamilySettings { qkv_bias: false, activation: gelu_tanh(f)?, sliding_window: None }
            }
        };
        Ok(settings)
    }

    /// What the RMSNorm gains are multiplied by, less the stored weight:
    /// Gemma scales by `1 + w`, folded into the stored gain at import.
    pub(super) fn norm_offset(self) -> f32 {
        if self == Family::Gemma {
            1.0
        } else {
            0.0
        }
    }

    /// Whether the token embeddings are multiplied by `sqrt(hidden_size)`.
    pub(super) fn scales_embeddings(self) -> bool {
        self == Family::Gemma
    }

    /// Whether Q/K/V are one `qkv_proj` and gate/up one `gate_up_proj`.
    pub(super) fn fused_projections(self) -> bool {
        self == Family::Phi3
    }

    /// Layer 0's first attention product: its dtype is the checkpoint's.
    pub(super) fn first_product(self) -> &'static str {
        if self.fused_projections() {
            "model.layers.0.self_attn.qkv_proj.weight"
        } else {
            "model.layers.0.self_attn.q_proj.weight"
        }
    }
}

/// `hidden_act` of a SwiGLU family: `silu` (the default).
fn silu(f: &Fields<'_>) -> Result<ActKind, ImportError> {
    f.one_of("hidden_act", &["silu"], false)
        .map_err(|_| config_err(format!("`hidden_act` {}: only `silu` (SwiGLU) is supported", f.0["hidden_act"])))?;
    Ok(ActKind::Silu)
}

/// Gemma's gate activation: transformers reads `hidden_act` and takes its
/// legacy `gelu` for the tanh approximation; 4.x checkpoints also name it
/// in `hidden_activation`, which must then agree.
fn gelu_tanh(f: &Fields<'_>) -> Result<ActKind, ImportError> {
    let tanh = "gelu_pytorch_tanh";
    f.one_of("hidden_act", &[tanh, "gelu"], false)
        .map_err(|_| config_err(format!("`hidden_act` {}: only `{tanh}` (GeGLU) is supported", f.0["hidden_act"])))?;
    f.one_of("hidden_activation", &[tanh], false).map_err(|_| {
        config_err(format!("`hidden_activation` {}: only `{tanh}` (GeGLU) is supported", f.0["hidden_activation"]))
    })?;
    Ok(ActKind::GeluTanh)
}

/// One layer's products that a family may store fused.
pub(super) struct Projections {
    pub wq: usize,
    pub wk: usize,
    pub wv: usize,
}

/// The feed-forward's gate and up products.
pub(super) struct GateUp {
    pub w_gate: usize,
    pub w_up: usize,
}

/// Sizes of one layer's products: hidden, query width, key/value width,
/// feed-forward width.
#[derive(Clone, Copy)]
pub(super) struct ProductSizes {
    pub h: usize,
    pub q_w: usize,
    pub kv_w: usize,
    pub inter: usize,
}

impl Family {
    /// Layer `l`'s query, key and value weights, `[h, width]` each: three
    /// tensors, or Phi-3's `qkv_proj` split by rows (query, key, value).
    pub(super) fn attention_projections(
        self,
        b: &mut Builder<'_>,
        l: usize,
        s: ProductSizes,
    ) -> Result<Projections, ImportError> {
        let (p, n) = (format!("model.layers.{l}.self_attn."), |s: &str| format!("layer{l}.{s}"));
        let ProductSizes { h, q_w, kv_w, .. } = s;
        if self.fused_projections() {
            let (k_end, v_end) = (q_w + kv_w, q_w + 2 * kv_w);
            let parts = [(n("wq"), 0..q_w), (n("wk"), q_w..k_end), (n("wv"), k_end..v_end)];
            let parts: Vec<(&str, _)> = parts.iter().map(|(name, rows)| (name.as_str(), rows.clone())).collect();
            let ids = b.linear_parts(&parts, &format!("{p}qkv_proj.weight"), [v_end, h])?;
            return Ok(Projections { wq: ids[0], wk: ids[1], wv: ids[2] });
        }
        Ok(Projections {
            wq: b.linear(&n("wq"), &format!("{p}q_proj.weight"), [q_w, h])?,
            wk: b.linear(&n("wk"), &format!("{p}k_proj.weight"), [kv_w, h])?,
            wv: b.linear(&n("wv"), &format!("{p}v_proj.weight"), [kv_w, h])?,
        })
    }

    /// Layer `l`'s gate and up weights, `[h, inter]` each: two tensors, or
    /// Phi-3's `gate_up_proj` split by rows (gate first, as its `chunk`).
    pub(super) fn gate_up(self, b: &mut Builder<'_>, l: usize, s: ProductSizes) -> Result<GateUp, ImportError> {
        let (p, n) = (format!("model.layers.{l}.mlp."), |s: &str| format!("layer{l}.{s}"));
        let ProductSizes { h, inter, .. } = s;
        if self.fused_projections() {
            let (gate, up) = (n("w_gate"), n("w_up"));
            let parts = [(gate.as_str(), 0..inter), (up.as_str(), inter..2 * inter)];
            let ids = b.linear_parts(&parts, &format!("{p}gate_up_proj.weight"), [2 * inter, h])?;
            return Ok(GateUp { w_gate: ids[0], w_up: ids[1] });
        }
        Ok(GateUp {
            w_gate: b.linear(&n("w_gate"), &format!("{p}gate_proj.weight"), [inter, h])?,
            w_up: b.linear(&n("w_up"), &format!("{p}up_proj.weight"), [inter, h])?,
        })
    }
}
