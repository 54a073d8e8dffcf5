//! The decoder families besides Llama (`docs/decoding.md`, "Families"):
//! each family's tiny fixed-seed checkpoint
//! (`data/families/FAMILY`, made by
//! `models/make/make_decoder_families.py` with transformers' own model
//! classes) imported and run by the interpreter through a 64-token greedy
//! generation, the prompt through the `prefill` entry and then decode
//! steps: every logit within 1e-4 of transformers' and the same tokens.
//! And what a family's step cannot compute is refused naming the field.

use std::path::PathBuf;

use rlx_onnx::llama::{import_llama, import_llama_with, LlamaOptions, WeightFormat};

fn family_dir(family: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/data/families").join(family)
}

fn checkpoint(family: &str) -> (String, Vec<u8>) {
    let dir = family_dir(family);
    (std::fs::read_to_string(dir.join("config.json")).unwrap(), std::fs::read(dir.join("model.safetensors")).unwrap())
}

fn i64s(b: &[u8]) -> Vec<i64> {
    b.chunks_exact(8).map(|c| i64::from_le_bytes(c.try_into().unwrap())).collect()
}

fn f32s(b: &[u8]) -> Vec<f32> {
    b.chunks_exact(4).map(|c| f32::from_le_bytes(c.try_into().unwrap())).collect()
}

fn argmax(row: &[f32]) -> i64 {
    (0..row.len()).fold(0, |best, i| if row[i] > row[best] { i } else { best }) as i64
}

/// The prefill chunk the runs use: the 7-token prompt in one chunk.
const PREFILL: usize = 16;

/// Imports `family`'s checkpoint with `max_len` cache positions, runs the
/// reference's greedy generation through the interpreter and returns the
/// worst logit difference and the tokens that agreed with transformers'
/// (the run follows the reference's tokens, so one miss does not hide the
/// rest). Also returns the schedule text.
fn greedy_against_transformers(family: &str, config: &str, max_len: Option<usize>) -> (f32, usize, usize, String) {
    let (_, weights) = checkpoint(family);
    let expected = |name: &str| rlx_runtime::npy::read_npy(&family_dir(family).join(name)).unwrap();
    let prompt = i64s(&expected("prompt_ids.npy").bytes);
    let tokens = i64s(&expected("tokens.npy").bytes);
    let want = f32s(&expected("logits.npy").bytes);
    let vocab = expected("logits.npy").shape[1];
    let opts = LlamaOptions { prefill: PREFILL, weights: WeightFormat::AsStored, max_len };
    let imported = import_llama_with(config, &weights, &opts, family, "weights.safetensors").unwrap();
    let mut interp = crate::common::interpreter(&format!("family-{family}"), &imported);
    let mut row = crate::common::prefill_last_row(&mut interp, &prompt, PREFILL, vocab);
    let (mut worst, mut agreed) = (0.0f32, 0);
    for (i, &want_token) in tokens.iter().enumerate() {
        for (&g, &w) in row.iter().zip(&want[i * vocab..(i + 1) * vocab]) {
            worst = worst.max((g - w).abs());
        }
        agreed += usize::from(argmax(&row) == want_token);
        interp.set_bytes("tokens", &want_token.to_le_bytes()).unwrap();
        interp.set_bytes("pos", &((prompt.len() + i) as i64).to_le_bytes()).unwrap();
        interp.run();
        row = f32s(interp.bytes("logits").unwrap());
    }
    eprintln!("{family}: worst logit difference {worst:e}, {agreed} of {} greedy tokens agree", tokens.len());
    (worst, agreed, tokens.len(), imported.sched_text)
}

fn assert_matches_transformers(family: &str, max_len: Option<usize>) -> String {
    let (worst, agreed, steps, sched) = greedy_against_transformers(family, &checkpoint(family).0, max_len);
    assert_eq!(steps, 64);
    assert!(worst <= 1e-4, "{family}: worst logit difference {worst} against transformers");
    assert_eq!(agreed, steps, "{family}: greedy tokens differ from transformers'");
    sched
}

/// Qwen2: the query, key and value products add their biases in the
/// product's epilogue (`PackedGemm` with a `bias`); tied embeddings.
#[test]
fn qwen2_matches_transformers() {
    let sched = assert_matches_transformers("qwen2", None);
    for b in ["bq", "bk", "bv"] {
        assert!(sched.contains(&format!("bias: layer0.{b},")), "{b} is not a product's bias:\n{sched}");
    }
    assert!(sched.contains("imported from a Qwen2 checkpoint"));
}

/// Phi-3: `qkv_proj` and `gate_up_proj` split by rows at import into the
/// products the step runs; untied embeddings.
#[test]
fn phi3_matches_transformers() {
    let sched = assert_matches_transformers("phi3", None);
    assert!(sched.contains("lm_head.packed"), "untied logits product");
}

/// Gemma: GeLU-tanh gates, embeddings times sqrt(hidden), norms by
/// `1 + w` (folded into the stored gains), head_dim 16 with hidden 32,
/// one key/value head.
#[test]
fn gemma_matches_transformers() {
    let sched = assert_matches_transformers("gemma", None);
    assert!(sched.contains("gelu_tanh"), "the gate's activation");
    // sqrt(32) as transformers' f32 normalizer.
    assert!(sched.contains(&format!("mul({:?})", 32f64.sqrt() as f32)), "{sched}");
}

/// Mistral: a sliding window of 8 positions over a cache of 128, so the
/// 71 positions of the run cross it: every attention is
/// `SlidingCachedAttention` with `window: 7` (the keys before the query).
/// A cache no longer than the window needs no window: plain
/// `CachedAttention`, the same function there.
#[test]
fn mistral_matches_transformers_across_its_sliding_window() {
    let sched = assert_matches_transformers("mistral", None);
    assert!(!sched.contains("\nCachedAttention {"), "every attention is windowed");
    assert_eq!(sched.matches("SlidingCachedAttention {").count(), 4, "2 layers x 2 entries");
    assert!(sched.contains("q_row_stride: 32, window: 7 }"), "{sched}");
    let (config, weights) = checkpoint("mistral");
    let opts = LlamaOptions { prefill: 8, weights: WeightFormat::AsStored, max_len: Some(8) };
    let short = import_llama_with(&config, &weights, &opts, "m", "w.safetensors").unwrap().sched_text;
    assert!(!short.contains("SlidingCachedAttention") && short.contains("\nCachedAttention {"), "{short}");
    // The window matters to this run: without it the logits are far off.
    let unwindowed = config.replacen("\"sliding_window\": 8", "\"sliding_window\": null", 1);
    let (worst, ..) = greedy_against_transformers("mistral", &unwindowed, None);
    assert!(worst > 1e-2, "the run does not depend on the window: {worst}");
}

/// What a family's step does not compute is refused, naming the field.
#[test]
fn what_a_family_step_cannot_compute_is_refused() {
    let edit = |family: &str, from: &str, to: &str| {
        let (config, _) = checkpoint(family);
        assert!(config.contains(from), "{family} fixture lacks {from}");
        config.replacen(from, to, 1)
    };
    let cases = [
        (
            "gemma",
            edit("gemma", "\"model_type\": \"gemma\"", "\"model_type\": \"gemma2\""),
            "`model_type` `gemma2` is not supported: its attention and final-logit soft-capping",
        ),
        (
            "gemma",
            edit("gemma", "\"model_type\": \"gemma\"", "\"model_type\": \"gpt2\""),
            "`model_type` `gpt2` is not supported; supported: llama, qwen2, mistral, gemma, phi3",
        ),
        (
            "gemma",
            edit("gemma", "\"hidden_act\": \"gelu_pytorch_tanh\"", "\"hidden_act\": \"relu\""),
            "`hidden_act` \"relu\": only `gelu_pytorch_tanh` (GeGLU) is supported",
        ),
        (
            "gemma",
            edit("gemma", "\"hidden_act\": \"gelu_pytorch_tanh\"", "\"hidden_activation\": \"gelu\""),
            "`hidden_activation` \"gelu\": only `gelu_pytorch_tanh`",
        ),
        (
            "gemma",
            edit("gemma", "\"use_bidirectional_attention\": null", "\"use_bidirectional_attention\": true"),
            "`use_bidirectional_attention` true is not supported",
        ),
        (
            "phi3",
            edit("phi3", "\"rope_type\": \"default\"", "\"rope_type\": \"longrope\""),
            "`rope_type` \"longrope\": only `default` rotary embeddings are supported",
        ),
        (
            "phi3",
            edit("phi3", "\"partial_rotary_factor\": 1.0", "\"partial_rotary_factor\": 0.75"),
            "`partial_rotary_factor` 0.75: only rotary embeddings over the whole head",
        ),
        (
            "phi3",
            edit("phi3", "\"partial_rotary_factor\": 1.0", "\"partial_rotary_factor\": -1"),
            "`partial_rotary_factor` must be a positive number",
        ),
        (
            "phi3",
            edit("phi3", "\"sliding_window\": null", "\"sliding_window\": 0"),
            "`sliding_window` must be a positive integer",
        ),
        (
            "qwen2",
            edit("qwen2", "\"use_sliding_window\": false", "\"use_sliding_window\": true"),
            "`use_sliding_window` true is not supported for qwen2",
        ),
        (
            "qwen2",
            edit("qwen2", "\"hidden_act\": \"silu\"", "\"hidden_act\": \"gelu\""),
            "`hidden_act` \"gelu\": only `silu` (SwiGLU) is supported",
        ),
        (
            "mistral",
            edit("mistral", "\"sliding_window\": 8", "\"sliding_window\": -8"),
            "`sliding_window` must be a positive integer",
        ),
        (
            "phi3",
            edit("phi3", "\"num_key_value_heads\": 2", "\"num_key_value_heads\": 3"),
            "config.json: the query heads must be a multiple of the key/value heads",
        ),
    ];
    for (family, text, want) in cases {
        let (_, weights) = checkpoint(family);
        let e = import_llama(&text, &weights, 1, "m", "w.safetensors").unwrap_err().to_string();
        assert!(e.contains(want), "{family}: want `{want}` in: {e}");
    }
    // A fused tensor of the wrong size names it and both shapes.
    let (config, weights) = checkpoint("phi3");
    let wider = config.replacen("\"intermediate_size\": 64", "\"intermediate_size\": 65", 1);
    let e = import_llama(&wider, &weights, 1, "m", "w.safetensors").unwrap_err().to_string();
    assert!(e.contains("tensor `model.layers.0.mlp.gate_up_proj.weight`: shape [128, 32], expected [130, 32]"), "{e}");
}

/// transformers makes Gemma's embedding normalizer an f32 tensor and casts
/// it to the embedding's dtype: a bf16 checkpoint scales by sqrt(32) in
/// bf16 (5.65625), not the f32 value.
#[test]
fn gemma_scales_embeddings_by_the_normalizer_in_the_checkpoint_dtype() {
    use safetensors::tensor::TensorView;
    let (config, weights) = checkpoint("gemma");
    let f32_file = safetensors::SafeTensors::deserialize(&weights).unwrap();
    let narrowed: Vec<(String, Vec<usize>, Vec<u8>)> = f32_file
        .tensors()
        .into_iter()
        .map(|(name, t)| {
            let bytes = f32s(t.data()).into_iter().flat_map(|x| half::bf16::from_f32(x).to_le_bytes()).collect();
            (name, t.shape().to_vec(), bytes)
        })
        .collect();
    let views: Vec<(String, TensorView<'_>)> = narrowed
        .iter()
        .map(|(name, shape, bytes)| {
            (name.clone(), TensorView::new(safetensors::Dtype::BF16, shape.clone(), bytes).unwrap())
        })
        .collect();
    let bf16_file = safetensors::serialize(views, &None).unwrap();
    let opts = LlamaOptions { prefill: 1, weights: WeightFormat::F32, max_len: None };
    let sched = import_llama_with(&config, &bf16_file, &opts, "m", "w.safetensors").unwrap().sched_text;
    assert!(sched.contains("mul(5.65625)"), "{sched}");
}
