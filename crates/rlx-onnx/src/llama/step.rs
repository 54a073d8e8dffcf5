//! The decoder step's thunks over the checkpoint's tensors: one layer
//! loop that every family shares, with the family's differences
//! (biases, gate activation, norm offset, embedding scale, windowed
//! attention) read from [`LlamaConfig`].

use rlx_sched::{BinaryOp, DType, Role, Step, StepArg, Thunk};
use safetensors::SafeTensors;

use super::config::LlamaConfig;
use super::family::{GateUp, ProductSizes, Projections};
use super::fields::config_err;
use super::tensors::{f32_bytes, Builder};
use crate::error::ImportError;
use crate::lower::{Lowered, LoweredEntry};
use rlx_sched::thunk::{
    CachedAttention, ElementwiseRegion, FusedMmBiasAct, Gather, KvWrite, RmsNorm, RopeAt, Sgemm, SgemmT,
    SlidingCachedAttention,
};

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

    fn products(&self) -> ProductSizes {
        ProductSizes { h: self.h, q_w: self.q_w, kv_w: self.kv_w, inter: self.inter }
    }
}

/// The weights and state every entry reads, created once.
struct Shared {
    embed: usize,
    /// What the looked-up embeddings are multiplied by (Gemma), if anything.
    embed_scale: Option<f32>,
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
    qkv: Projections,
    /// The query, key and value biases, when the family has them.
    qkv_bias: Option<[usize; 3]>,
    wo: usize,
    mlp_norm: usize,
    gate_up: GateUp,
    w_down: usize,
    k_cache: usize,
    v_cache: usize,
}

/// The decode step (and, with `prefill` above 1, the prefill chunk as a
/// second entry) over the checkpoint's tensors.
pub(super) fn build_steps(c: &LlamaConfig, tensors: &SafeTensors<'_>, prefill: usize) -> Result<Lowered, ImportError> {
    let mut b = Builder::new(tensors);
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

/// transformers' embedding normalizer: `sqrt(hidden)` made an f32 tensor,
/// then cast to the embedding's dtype (so a bf16 checkpoint scales by
/// the bf16 value).
fn embedding_scale(hidden: usize, stored: Option<safetensors::Dtype>) -> f32 {
    let scale = (hidden as f64).sqrt() as f32;
    match stored {
        Some(safetensors::Dtype::F16) => half::f16::from_f32(scale).to_f32(),
        Some(safetensors::Dtype::BF16) => half::bf16::from_f32(scale).to_f32(),
        _ => scale,
    }
}

/// The weights, the rotary tables, the position input and the caches.
fn shared_params(b: &mut Builder<'_>, c: &LlamaConfig) -> Result<Shared, ImportError> {
    let d = Dims::of(c);
    let Dims { h, hd, vocab, max_len, q_w, kv_w, .. } = d;
    let embed_name = "model.embed_tokens.weight";
    let embed = b.vector("embed", embed_name, &[vocab, h], 0.0)?;
    let embed_scale = c.family.scales_embeddings().then(|| embedding_scale(h, b.dtype_of(embed_name)));
    // The rotary tables are sized by `head_dim`, which only the attention
    // tensors bound: a config of a few bytes could otherwise make a
    // kilobyte checkpoint build a gigabyte of tables before it is refused.
    let first_rows = if c.family.fused_projections() { q_w + 2 * kv_w } else { q_w };
    b.shaped(c.family.first_product(), &[first_rows, h])?;
    let (cos, sin) = rope_tables(c)?;
    let cos = b.storage("rope.cos", vec![max_len, hd / 2], Role::Param, DType::F32, Some(f32_bytes(&cos)));
    let sin = b.storage("rope.sin", vec![max_len, hd / 2], Role::Param, DType::F32, Some(f32_bytes(&sin)));
    let pos = b.storage("pos", vec![1], Role::Input, DType::I64, None);
    let norm_offset = c.family.norm_offset();
    let mut layers = Vec::with_capacity(c.num_hidden_layers);
    for l in 0..c.num_hidden_layers {
        let p = format!("model.layers.{l}.");
        let n = |s: &str| format!("layer{l}.{s}");
        let attn_norm = b.vector(&n("attn_norm"), &format!("{p}input_layernorm.weight"), &[h], norm_offset)?;
        let qkv = c.family.attention_projections(b, l, d.products())?;
        let qkv_bias = match c.qkv_bias {
            false => None,
            true => {
                let mut ids = [0; 3];
                for (id, (name, proj, width)) in
                    ids.iter_mut().zip([("bq", "q", q_w), ("bk", "k", kv_w), ("bv", "v", kv_w)])
                {
                    *id = b.vector(&n(name), &format!("{p}self_attn.{proj}_proj.bias"), &[width], 0.0)?;
                }
                Some(ids)
            }
        };
        let wo = b.linear(&n("wo"), &format!("{p}self_attn.o_proj.weight"), [h, q_w])?;
        let mlp_norm = b.vector(&n("mlp_norm"), &format!("{p}post_attention_layernorm.weight"), &[h], norm_offset)?;
        let gate_up = c.family.gate_up(b, l, d.products())?;
        layers.push(LayerParams {
            attn_norm,
            qkv,
            qkv_bias,
            wo,
            mlp_norm,
            gate_up,
            w_down: b.linear(&n("w_down"), &format!("{p}mlp.down_proj.weight"), [h, d.inter])?,
            k_cache: b.arena(&n("k_cache"), vec![max_len, kv_w], Role::State),
            v_cache: b.arena(&n("v_cache"), vec![max_len, kv_w], Role::State),
        });
    }
    let final_norm = b.vector("final_norm", "model.norm.weight", &[h], norm_offset)?;
    let lm_head = match c.tie_word_embeddings {
        true => None,
        false => Some(b.linear("lm_head", "lm_head.weight", [vocab, h])?),
    };
    Ok(Shared { embed, embed_scale, cos, sin, pos, layers, final_norm, lm_head })
}

/// The step's attention: over every cached position, or, when a window of
/// `sliding_window` positions (the query's own included) is shorter than
/// the cache, over the window only (`SlidingCachedAttention`, whose
/// `window` counts the keys before the query). A window at least as long
/// as the cache never hides a key: the plain kind is the same function.
fn windowed(a: CachedAttention<usize>, sliding_window: Option<usize>) -> Thunk<usize> {
    match sliding_window.filter(|&w| w < a.max_len) {
        None => Thunk::CachedAttention(a),
        Some(w) => {
            let CachedAttention { q, k, v, pos, out, seq, max_len, heads, kv_heads, head_dim, scale, q_row_stride } = a;
            Thunk::SlidingCachedAttention(SlidingCachedAttention {
                q,
                k,
                v,
                pos,
                out,
                seq,
                max_len,
                heads,
                kv_heads,
                head_dim,
                scale,
                q_row_stride,
                window: w - 1,
            })
        }
    }
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
    if let Some(scale) = w.embed_scale {
        let steps = vec![Step::Binary { op: BinaryOp::Mul, arg: StepArg::Const(scale), reversed: false }];
        let region = ElementwiseRegion { inputs: vec![hidden], dst: hidden, len: seq * h, steps };
        b.thunk("embeddings times sqrt(hidden)", Thunk::ElementwiseRegion(region));
    }
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
        let Projections { wq, wk, wv } = lp.qkv;
        for (i, (wt, out, width)) in [(wq, q, q_w), (wk, k, kv_w), (wv, v, kv_w)].into_iter().enumerate() {
            let product = match lp.qkv_bias {
                None => Thunk::Sgemm(Sgemm { a: x, b: wt, c: out, m: seq, k: h, n: width }),
                Some(bias) => Thunk::FusedMmBiasAct(FusedMmBiasAct {
                    a: x,
                    w: wt,
                    bias: bias[i],
                    c: out,
                    m: seq,
                    k: h,
                    n: width,
                    act: rlx_sched::ActKind::Identity,
                }),
            };
            b.thunk("", product);
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
        let attention = CachedAttention {
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
        };
        b.thunk("", windowed(attention, c.sliding_window));
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
        let gated = match c.activation {
            rlx_sched::ActKind::Silu => "SwiGLU",
            _ => "GeGLU",
        };
        b.thunk(
            format!("layer {l}: feed-forward ({gated})"),
            Thunk::RmsNorm(RmsNorm { x: hidden, g: lp.mlp_norm, out: x, rows: seq, h, eps }),
        );
        let GateUp { w_gate, w_up } = lp.gate_up;
        b.thunk("", Thunk::Sgemm(Sgemm { a: x, b: w_gate, c: gate, m: seq, k: h, n: inter }));
        b.thunk("", Thunk::Sgemm(Sgemm { a: x, b: w_up, c: up, m: seq, k: h, n: inter }));
        let glu =
            vec![Step::Act(c.activation), Step::Binary { op: BinaryOp::Mul, arg: StepArg::Input(1), reversed: false }];
        b.thunk(
            "",
            Thunk::ElementwiseRegion(ElementwiseRegion {
                inputs: vec![gate, up],
                dst: act,
                len: seq * inter,
                steps: glu,
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
