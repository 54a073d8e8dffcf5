//! A Llama-architecture decoder from a Hugging Face checkpoint
//! (`config.json` + `model.safetensors`) to a decoder-step schedule: the
//! second front end of this crate, for the architecture whose exported
//! ONNX graphs carry a dynamic KV cache (`docs/decoding.md`).
//!
//! A step runs its tokens at the run-time position `pos` over a KV cache
//! of `max_position_embeddings` rows per layer, kept in `state` buffers:
//! the convention `rlx_decode::GeneratedStep` drives. The schedule has a
//! `decode` entry (one token) and, with a prefill chunk above one, a
//! `prefill` entry (the chunk), both over the same weights and cache. Products are
//! prepacked like an ONNX model's (`optimize::prepack`).

use std::collections::HashMap;

use rlx_sched::{ActKind, BinaryOp, DType, Role, Step, StepArg, Thunk};
use safetensors::SafeTensors;

use crate::emit;
use crate::error::ImportError;
use crate::lower::{Lowered, LoweredEntry, LoweredThunk, Storage};
use crate::optimize;
use crate::pipeline::{self, Pass};
use crate::Imported;
use rlx_sched::thunk::{CachedAttention, ElementwiseRegion, Gather, KvWrite, RmsNorm, RopeAt, Sgemm, SgemmT};

/// The `config.json` fields the importer reads (Hugging Face names).
#[derive(Clone, Debug, PartialEq)]
pub struct LlamaConfig {
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
}

/// Rotary table entries (`max_position_embeddings * head_dim`) accepted:
/// 1 GiB of f32 for cos and sin together, far above real models.
const MAX_ROPE_TABLE: usize = 1 << 28;

/// The `model_type`s whose step this importer builds.
const MODEL_TYPES: &[&str] = &["llama"];

fn config_err(message: impl Into<String>) -> ImportError {
    ImportError::Checkpoint { file: "config.json", message: message.into() }
}

fn tensor_err(message: impl Into<String>) -> ImportError {
    ImportError::Checkpoint { file: "model.safetensors", message: message.into() }
}

/// A `config.json` field read by name, with errors that name it.
struct Fields<'a>(&'a serde_json::Value);

impl Fields<'_> {
    /// A positive integer field.
    fn positive(&self, k: &str) -> Result<usize, ImportError> {
        self.0
            .get(k)
            .and_then(serde_json::Value::as_u64)
            .and_then(|x| usize::try_from(x).ok())
            .filter(|&x| x > 0)
            .ok_or_else(|| config_err(format!("`{k}` must be a positive integer")))
    }

    /// A number stored as f32: finite there (a value beyond f32's range
    /// would become infinite) and, with `positive`, above zero there too
    /// (a tiny value would become 0).
    fn f32_number(
        &self,
        k: &str,
        value: Option<&serde_json::Value>,
        default: f32,
        positive: bool,
    ) -> Result<f32, ImportError> {
        let Some(v) = value else { return Ok(default) };
        let x = v.as_f64().ok_or_else(|| config_err(format!("`{k}` must be a number")))?;
        let stored = x as f32;
        let ok = stored.is_finite() && if positive { stored > 0.0 } else { stored >= 0.0 };
        if !ok {
            let want = if positive { "a positive" } else { "a non-negative" };
            return Err(config_err(format!(
                "`{k}` must be {want} number that f32 holds; it is {v} (stored as {stored})"
            )));
        }
        Ok(stored)
    }

    /// A string field that must be one of `known` when present.
    fn one_of(&self, k: &str, known: &[&str], required: bool) -> Result<(), ImportError> {
        match self.0.get(k) {
            None | Some(serde_json::Value::Null) if !required => Ok(()),
            Some(serde_json::Value::String(s)) if known.contains(&s.as_str()) => Ok(()),
            Some(serde_json::Value::String(s)) => {
                Err(config_err(format!("`{k}` `{s}` is not supported; supported: {}", known.join(", "))))
            }
            None | Some(serde_json::Value::Null) => Err(config_err(format!("`{k}` is missing"))),
            Some(other) => Err(config_err(format!("`{k}` must be a string, found {other}"))),
        }
    }

    fn flag(&self, k: &str, default: bool) -> Result<bool, ImportError> {
        match self.0.get(k) {
            None | Some(serde_json::Value::Null) => Ok(default),
            Some(v) => v.as_bool().ok_or_else(|| config_err(format!("`{k}` must be true or false"))),
        }
    }
}

impl LlamaConfig {
    /// Reads a Hugging Face `LlamaConfig` JSON; refuses what the step does
    /// not compute (biases, another activation, rope scaling) and every
    /// value outside what the architecture allows, before anything is
    /// sized by it.
    pub fn from_json(text: &str) -> Result<Self, ImportError> {
        let v: serde_json::Value = serde_json::from_str(text).map_err(|e| config_err(e.to_string()))?;
        if !v.is_object() {
            return Err(config_err("must be a JSON object"));
        }
        let f = Fields(&v);
        f.one_of("model_type", MODEL_TYPES, true)?;
        if f.flag("attention_bias", false)? || f.flag("mlp_bias", false)? {
            return Err(config_err("biases in attention or MLP products are not supported"));
        }
        f.one_of("hidden_act", &["silu"], false)
            .map_err(|_| config_err(format!("`hidden_act` {}: only `silu` (SwiGLU) is supported", v["hidden_act"])))?;
        if v.get("rope_scaling").is_some_and(|s| !s.is_null()) {
            return Err(config_err("`rope_scaling` is not supported"));
        }
        // transformers 5 nests the rotary settings in `rope_parameters`;
        // 4.x wrote `rope_theta` at the top level.
        let rope = v.get("rope_parameters").filter(|r| !r.is_null());
        if let Some(kind) = rope.and_then(|r| r.get("rope_type")) {
            if kind.as_str() != Some("default") {
                return Err(config_err(format!("`rope_type` {kind}: only `default` rotary embeddings are supported")));
            }
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
            tie_word_embeddings: f.flag("tie_word_embeddings", false)?,
        };
        // Every size a step is built from must be computable: the tensors
        // bound each factor, not their products.
        let sizes = [
            ("num_attention_heads x head_dim", heads.checked_mul(head_dim)),
            ("num_key_value_heads x head_dim", kv_heads.checked_mul(head_dim)),
            ("the KV cache", c.cache_bytes()),
        ];
        if let Some((what, _)) = sizes.iter().find(|(_, n)| n.is_none_or(|n| n > isize::MAX as usize)) {
            return Err(config_err(format!("{what} overflows the address space")));
        }
        Ok(c)
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
    fn check_layers(&self, tensors: &SafeTensors<'_>) -> Result<(), ImportError> {
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

/// The rotary tables `[max_len, head_dim / 2]` as transformers computes
/// them in f32: `inv_freq[i] = 1 / theta^(2i / head_dim)`, angle `pos *
/// inv_freq[i]`.
fn rope_tables(c: &LlamaConfig) -> Result<(Vec<f32>, Vec<f32>), ImportError> {
    let half = c.head_dim / 2;
    let inv: Vec<f32> = (0..half).map(|i| 1.0 / c.rope_theta.powf((2 * i) as f32 / c.head_dim as f32)).collect();
    let mut cos = Vec::with_capacity(c.max_position_embeddings * half);
    let mut sin = Vec::with_capacity(c.max_position_embeddings * half);
    for p in 0..c.max_position_embeddings {
        for &f in &inv {
            let angle = p as f32 * f;
            cos.push(angle.cos());
            sin.push(angle.sin());
        }
    }
    // A finite theta can still give infinite angles (theta near 0 makes
    // the inverse frequencies huge): the tables would hold NaN.
    if cos.iter().chain(&sin).any(|x| !x.is_finite()) {
        return Err(config_err(format!(
            "`rope_theta` {} makes the rotary angles overflow f32 over {} positions",
            c.rope_theta, c.max_position_embeddings
        )));
    }
    Ok((cos, sin))
}

/// Builds the step's storages and thunks.
struct Builder<'a> {
    lowered: Lowered,
    tensors: &'a SafeTensors<'a>,
    ids: HashMap<String, usize>,
}

fn f32_bytes(values: &[f32]) -> Vec<u8> {
    values.iter().flat_map(|x| x.to_le_bytes()).collect()
}

impl Builder<'_> {
    fn storage(&mut self, name: &str, shape: Vec<usize>, role: Role, dtype: DType, data: Option<Vec<u8>>) -> usize {
        self.lowered.storages.push(Storage {
            name: name.to_string(),
            shape,
            dtype,
            role,
            data,
            view: None,
            viewed: false,
        });
        let id = self.lowered.storages.len() - 1;
        self.ids.insert(name.to_string(), id);
        id
    }

    fn arena(&mut self, name: &str, shape: Vec<usize>, role: Role) -> usize {
        self.storage(name, shape, role, DType::F32, None)
    }

    /// Checkpoint tensor `name` as f32 (f16 and bf16 widened), checked
    /// against `shape`.
    fn tensor(&self, name: &str, shape: &[usize]) -> Result<Vec<f32>, ImportError> {
        let t = self.tensors.tensor(name).map_err(|_| tensor_err(format!("tensor `{name}` is missing")))?;
        if t.shape() != shape {
            return Err(tensor_err(format!("tensor `{name}`: shape {:?}, expected {shape:?}", t.shape())));
        }
        let data = t.data();
        let values = match t.dtype() {
            safetensors::Dtype::F32 => {
                data.chunks_exact(4).map(|b| f32::from_le_bytes([b[0], b[1], b[2], b[3]])).collect()
            }
            safetensors::Dtype::F16 => {
                data.chunks_exact(2).map(|b| half::f16::from_le_bytes([b[0], b[1]]).to_f32()).collect()
            }
            safetensors::Dtype::BF16 => {
                data.chunks_exact(2).map(|b| half::bf16::from_le_bytes([b[0], b[1]]).to_f32()).collect()
            }
            other => return Err(tensor_err(format!("tensor `{name}`: dtype {other:?} is not a float"))),
        };
        Ok(values)
    }

    /// A param from checkpoint tensor `src` (`[rows, cols]`), transposed to
    /// `[cols, rows]` when `transpose` (torch's `Linear` is `[out, in]`).
    fn param(&mut self, name: &str, src: &str, shape: &[usize], transpose: bool) -> Result<usize, ImportError> {
        let v = self.tensor(src, shape)?;
        let (data, out_shape) = match (transpose, shape) {
            (true, &[rows, cols]) => {
                let mut t = vec![0.0f32; v.len()];
                for r in 0..rows {
                    for c in 0..cols {
                        t[c * rows + r] = v[r * cols + c];
                    }
                }
                (t, vec![cols, rows])
            }
            _ => (v, shape.to_vec()),
        };
        Ok(self.storage(name, out_shape, Role::Param, DType::F32, Some(f32_bytes(&data))))
    }

    fn thunk(&mut self, comment: impl Into<String>, thunk: Thunk<usize>) {
        self.lowered.thunks.push(LoweredThunk { thunk, comment: comment.into() });
    }
}

/// The sizes a step is built from, by short names.
#[derive(Clone, Copy)]
struct Dims {
    h: usize,
    hd: usize,
    heads: usize,
    kvh: usize,
    inter: usize,
    vocab: usize,
    max_len: usize,
    /// Widths of the query and of the key/value projections.
    q_w: usize,
    kv_w: usize,
}

impl Dims {
    fn of(c: &LlamaConfig) -> Self {
        let (hd, heads, kvh) = (c.head_dim, c.num_attention_heads, c.num_key_value_heads);
        Dims {
            h: c.hidden_size,
            hd,
            heads,
            kvh,
            inter: c.intermediate_size,
            vocab: c.vocab_size,
            max_len: c.max_position_embeddings,
            q_w: heads * hd,
            kv_w: kvh * hd,
        }
    }
}

/// The weights and state every entry reads, created once.
struct Shared {
    embed: usize,
    cos: usize,
    sin: usize,
    pos: usize,
    layers: Vec<LayerParams>,
    final_norm: usize,
    /// `None` with tied embeddings (the logits are `x @ embed^T`).
    lm_head: Option<usize>,
}

/// One layer's weights and KV cache.
struct LayerParams {
    attn_norm: usize,
    wq: usize,
    wk: usize,
    wv: usize,
    wo: usize,
    mlp_norm: usize,
    w_gate: usize,
    w_up: usize,
    w_down: usize,
    k_cache: usize,
    v_cache: usize,
}

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

/// Imports a Llama checkpoint as a decoder-step schedule. With `prefill`
/// 1 it has one entry, a decode step of one token; with `prefill` S > 1
/// two entry points (`docs/decoding.md`): `decode` (one token, what `run`
/// runs) and `prefill` (a chunk of S), sharing the weights and the KV
/// cache. The products' weights are prepacked, in f32 or, per
/// `opts.weights`, in f16 / bf16 (`PackedGemmHalf`); norms, rotary tables
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
    let lower = || build_steps(&c, &tensors, prefill);
    let narrow = match opts.weights {
        WeightFormat::F32 => None,
        WeightFormat::F16 => Some(DType::F16),
        WeightFormat::Bf16 => Some(DType::Bf16),
        WeightFormat::AsStored => match tensors.tensor("model.layers.0.self_attn.q_proj.weight").map(|t| t.dtype()) {
            Ok(safetensors::Dtype::F16) => Some(DType::F16),
            Ok(safetensors::Dtype::BF16) => Some(DType::Bf16),
            _ => None,
        },
    };
    let mut passes = vec![Pass::new("prepack", optimize::prepack)];
    if let Some(dtype) = narrow {
        passes.push(Pass::new("2-byte weights", move |l| optimize::narrow_packed_weights(l, dtype)));
    }
    let origin = "imported from a Llama checkpoint by rlx-onnx";
    let emit::Emitted { sched_text, weights, report } =
        pipeline::run(lower, &passes, |l| emit::emit_with(l, model_name, weights_file, origin))?;
    Ok(Imported { sched_text, weights, report, warnings: Vec::new() })
}

/// The decode step (and, with `prefill` above 1, the prefill chunk as a
/// second entry) over the checkpoint's tensors.
fn build_steps(c: &LlamaConfig, tensors: &SafeTensors<'_>, prefill: usize) -> Result<Lowered, ImportError> {
    let mut b = Builder {
        lowered: Lowered { storages: Vec::new(), thunks: Vec::new(), entries: Vec::new() },
        tensors,
        ids: HashMap::new(),
    };
    let shared = shared_params(&mut b, c)?;
    if prefill == 1 {
        step(&mut b, c, &shared, 1, "");
    } else {
        for (name, seq, prefix) in [("decode", 1, ""), ("prefill", prefill, "prefill.")] {
            let first_thunk = b.lowered.thunks.len();
            let (tokens, logits) = step(&mut b, c, &shared, seq, prefix);
            let names = |ids: &[usize]| ids.iter().map(|&i| b.lowered.storages[i].name.clone()).collect();
            let entry = LoweredEntry {
                name: name.to_string(),
                inputs: names(&[tokens, shared.pos]),
                outputs: names(&[logits]),
                first_thunk,
            };
            b.lowered.entries.push(entry);
        }
    }
    Ok(b.lowered)
}

/// The weights, the rotary tables, the position input and the caches.
fn shared_params(b: &mut Builder<'_>, c: &LlamaConfig) -> Result<Shared, ImportError> {
    let Dims { h, hd, inter, vocab, max_len, q_w, kv_w, .. } = Dims::of(c);
    let embed = b.param("embed", "model.embed_tokens.weight", &[vocab, h], false)?;
    let (cos, sin) = rope_tables(c)?;
    let cos = b.storage("rope.cos", vec![max_len, hd / 2], Role::Param, DType::F32, Some(f32_bytes(&cos)));
    let sin = b.storage("rope.sin", vec![max_len, hd / 2], Role::Param, DType::F32, Some(f32_bytes(&sin)));
    let pos = b.storage("pos", vec![1], Role::Input, DType::I64, None);
    let mut layers = Vec::with_capacity(c.num_hidden_layers);
    for l in 0..c.num_hidden_layers {
        let p = format!("model.layers.{l}.");
        let n = |s: &str| format!("layer{l}.{s}");
        layers.push(LayerParams {
            attn_norm: b.param(&n("attn_norm"), &format!("{p}input_layernorm.weight"), &[h], false)?,
            wq: b.param(&n("wq"), &format!("{p}self_attn.q_proj.weight"), &[q_w, h], true)?,
            wk: b.param(&n("wk"), &format!("{p}self_attn.k_proj.weight"), &[kv_w, h], true)?,
            wv: b.param(&n("wv"), &format!("{p}self_attn.v_proj.weight"), &[kv_w, h], true)?,
            wo: b.param(&n("wo"), &format!("{p}self_attn.o_proj.weight"), &[h, q_w], true)?,
            mlp_norm: b.param(&n("mlp_norm"), &format!("{p}post_attention_layernorm.weight"), &[h], false)?,
            w_gate: b.param(&n("w_gate"), &format!("{p}mlp.gate_proj.weight"), &[inter, h], true)?,
            w_up: b.param(&n("w_up"), &format!("{p}mlp.up_proj.weight"), &[inter, h], true)?,
            w_down: b.param(&n("w_down"), &format!("{p}mlp.down_proj.weight"), &[h, inter], true)?,
            k_cache: b.arena(&n("k_cache"), vec![max_len, kv_w], Role::State),
            v_cache: b.arena(&n("v_cache"), vec![max_len, kv_w], Role::State),
        });
    }
    let final_norm = b.param("final_norm", "model.norm.weight", &[h], false)?;
    let lm_head = match c.tie_word_embeddings {
        true => None,
        false => Some(b.param("lm_head", "lm_head.weight", &[vocab, h], true)?),
    };
    Ok(Shared { embed, cos, sin, pos, layers, final_norm, lm_head })
}

/// The thunks of one step of `seq` tokens, its buffers named with
/// `prefix`; returns its `tokens` input and `logits` output.
fn step(b: &mut Builder<'_>, c: &LlamaConfig, w: &Shared, seq: usize, prefix: &str) -> (usize, usize) {
    let Dims { h, hd, heads, kvh, inter, vocab, max_len, q_w, kv_w } = Dims::of(c);
    let (eps, pos) = (c.rms_norm_eps, w.pos);
    let tokens = b.storage(&format!("{prefix}tokens"), vec![seq], Role::Input, DType::I64, None);
    let logits = b.arena(&format!("{prefix}logits"), vec![seq, vocab], Role::Output);
    let hidden = b.arena(&format!("{prefix}h"), vec![seq, h], Role::Scratch);
    b.thunk(
        "token embeddings",
        Thunk::Gather(Gather {
            table: w.embed,
            indices: tokens,
            dst: hidden,
            num_indices: seq,
            row_len: h,
            vocab,
            index_dtype: DType::I64,
        }),
    );
    let add = |x| vec![Step::Binary { op: BinaryOp::Add, arg: StepArg::Input(x), reversed: false }];
    for (l, lp) in w.layers.iter().enumerate() {
        let n = |s: &str| format!("{prefix}layer{l}.{s}");
        let x = b.arena(&n("x"), vec![seq, h], Role::Scratch);
        let (q, k, v) = (
            b.arena(&n("q"), vec![seq, q_w], Role::Scratch),
            b.arena(&n("k"), vec![seq, kv_w], Role::Scratch),
            b.arena(&n("v"), vec![seq, kv_w], Role::Scratch),
        );
        let ctx = b.arena(&n("ctx"), vec![seq, q_w], Role::Scratch);
        let proj = b.arena(&n("attn_out"), vec![seq, h], Role::Scratch);
        b.thunk(
            format!("layer {l}: attention"),
            Thunk::RmsNorm(RmsNorm { x: hidden, g: lp.attn_norm, out: x, rows: seq, h, eps }),
        );
        for (wt, out, width) in [(lp.wq, q, q_w), (lp.wk, k, kv_w), (lp.wv, v, kv_w)] {
            b.thunk("", Thunk::Sgemm(Sgemm { a: x, b: wt, c: out, m: seq, k: h, n: width }));
        }
        for (t, nh) in [(q, heads), (k, kvh)] {
            let interleaved = false;
            let (cos, sin) = (w.cos, w.sin);
            b.thunk(
                "",
                Thunk::RopeAt(RopeAt {
                    x: t,
                    cos,
                    sin,
                    pos,
                    out: t,
                    seq,
                    heads: nh,
                    head_dim: hd,
                    max_len,
                    interleaved,
                }),
            );
        }
        for (src, cache) in [(k, lp.k_cache), (v, lp.v_cache)] {
            b.thunk("", Thunk::KvWrite(KvWrite { src, cache, pos, new_len: seq, max_len, row: kv_w, elem_bytes: 4 }));
        }
        let scale = 1.0 / (hd as f32).sqrt();
        b.thunk(
            "",
            Thunk::CachedAttention(CachedAttention {
                q,
                k: lp.k_cache,
                v: lp.v_cache,
                pos,
                out: ctx,
                seq,
                max_len,
                heads,
                kv_heads: kvh,
                head_dim: hd,
                scale,
                q_row_stride: q_w,
            }),
        );
        b.thunk("", Thunk::Sgemm(Sgemm { a: ctx, b: lp.wo, c: proj, m: seq, k: q_w, n: h }));
        b.thunk(
            "residual",
            Thunk::ElementwiseRegion(ElementwiseRegion {
                inputs: vec![hidden, proj],
                dst: hidden,
                len: seq * h,
                steps: add(1),
            }),
        );
        let gate = b.arena(&n("gate"), vec![seq, inter], Role::Scratch);
        let up = b.arena(&n("up"), vec![seq, inter], Role::Scratch);
        let act = b.arena(&n("act"), vec![seq, inter], Role::Scratch);
        let down = b.arena(&n("mlp_out"), vec![seq, h], Role::Scratch);
        b.thunk(
            format!("layer {l}: feed-forward (SwiGLU)"),
            Thunk::RmsNorm(RmsNorm { x: hidden, g: lp.mlp_norm, out: x, rows: seq, h, eps }),
        );
        b.thunk("", Thunk::Sgemm(Sgemm { a: x, b: lp.w_gate, c: gate, m: seq, k: h, n: inter }));
        b.thunk("", Thunk::Sgemm(Sgemm { a: x, b: lp.w_up, c: up, m: seq, k: h, n: inter }));
        let swiglu =
            vec![Step::Act(ActKind::Silu), Step::Binary { op: BinaryOp::Mul, arg: StepArg::Input(1), reversed: false }];
        b.thunk(
            "",
            Thunk::ElementwiseRegion(ElementwiseRegion {
                inputs: vec![gate, up],
                dst: act,
                len: seq * inter,
                steps: swiglu,
            }),
        );
        b.thunk("", Thunk::Sgemm(Sgemm { a: act, b: lp.w_down, c: down, m: seq, k: inter, n: h }));
        b.thunk(
            "residual",
            Thunk::ElementwiseRegion(ElementwiseRegion {
                inputs: vec![hidden, down],
                dst: hidden,
                len: seq * h,
                steps: add(1),
            }),
        );
    }
    let x = b.arena(&format!("{prefix}final.x"), vec![seq, h], Role::Scratch);
    b.thunk("final norm", Thunk::RmsNorm(RmsNorm { x: hidden, g: w.final_norm, out: x, rows: seq, h, eps }));
    let head = match w.lm_head {
        None => Thunk::SgemmT(SgemmT { a: x, b: w.embed, c: logits, m: seq, k: h, n: vocab, ta: false, tb: true }),
        Some(lm_head) => Thunk::Sgemm(Sgemm { a: x, b: lm_head, c: logits, m: seq, k: h, n: vocab }),
    };
    b.thunk("logits", head);
    (tokens, logits)
}
