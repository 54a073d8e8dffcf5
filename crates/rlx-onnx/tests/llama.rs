//! The Llama front end: the bundled checkpoint imports to exactly the
//! checked-in `models/llama_tiny` schedule and weights (so they are never
//! stale), and what the step cannot compute is refused with a clear error.

use std::path::PathBuf;

use rlx_onnx::llama::{import_llama, LlamaConfig};

fn model_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../models/llama_tiny")
}

fn checkpoint() -> (String, Vec<u8>) {
    let hf = model_dir().join("hf");
    (std::fs::read_to_string(hf.join("config.json")).unwrap(), std::fs::read(hf.join("model.safetensors")).unwrap())
}

#[test]
fn the_bundled_checkpoint_imports_to_the_checked_in_schedule() {
    let (config, weights) = checkpoint();
    // `cargo xtask import-llama`'s default prefill chunk.
    let imported = import_llama(&config, &weights, 16, "llama_tiny", "weights.safetensors").unwrap();
    let sched = std::fs::read_to_string(model_dir().join("model.sched")).unwrap();
    assert!(
        imported.sched_text == sched,
        "models/llama_tiny/model.sched is stale: run python3 models/make/make_llama_tiny.py"
    );
    assert!(imported.weights == std::fs::read(model_dir().join("weights.safetensors")).unwrap(), "weights are stale");
    let entries: Vec<&str> = imported.sched_text.lines().filter(|l| l.starts_with("entry ")).collect();
    assert_eq!(
        entries,
        [
            "entry decode { inputs: [tokens, pos], outputs: [logits] }",
            "entry prefill { inputs: [prefill.tokens, pos], outputs: [prefill.logits] }"
        ]
    );
    // A chunk of 1 is a decode step alone: no entry lines. Both validate.
    let decode_only = import_llama(&config, &weights, 1, "llama_tiny_step", "weights.safetensors").unwrap();
    assert!(!decode_only.sched_text.contains("\nentry "));
    for text in [&imported.sched_text, &decode_only.sched_text] {
        rlx_sched::check_source(text, &model_dir()).unwrap();
    }
}

#[test]
fn what_the_step_cannot_compute_is_refused() {
    let (config, weights) = checkpoint();
    let edit = |from: &str, to: &str| {
        assert!(config.contains(from), "fixture lacks {from}");
        config.replacen(from, to, 1)
    };
    let cases = [
        (edit("\"hidden_act\": \"silu\"", "\"hidden_act\": \"gelu\""), "only `silu`"),
        (edit("\"attention_bias\": false", "\"attention_bias\": true"), "biases"),
        (edit("\"vocab_size\": 512", "\"vocab_size\": 0"), "`vocab_size` must be a positive integer"),
        (
            edit("\"vocab_size\": 512", "\"vocab_size\": 500"),
            "tensor `model.embed_tokens.weight`: shape [512, 64], expected [500, 64]",
        ),
        (edit("\"rope_type\": \"default\"", "\"rope_type\": \"llama3\""), "only `default` rotary"),
        (edit("\"rope_theta\": 10000.0", "\"rope_theta\": -1.0"), "`rope_theta` must be a positive number"),
        (
            edit("\"max_position_embeddings\": 128", "\"max_position_embeddings\": 18446744073709551615"),
            "table entries",
        ),
        ("{".to_string(), "config.json"),
    ];
    for (text, want) in cases {
        let e = import_llama(&text, &weights, 1, "m", "w.safetensors").unwrap_err().to_string();
        assert!(e.contains(want), "{e}");
    }
    let e = import_llama(&config, &weights, 129, "m", "w.safetensors").unwrap_err().to_string();
    assert!(e.contains("a prefill chunk of 129 tokens does not fit 128 positions"), "{e}");
    let e = import_llama(&config, &weights, 0, "m", "w.safetensors").unwrap_err().to_string();
    assert!(e.contains("a prefill chunk of 0 tokens"), "{e}");
    let e = import_llama(&config, &weights[..100], 1, "m", "w.safetensors").unwrap_err().to_string();
    assert!(!e.is_empty());
    let c = LlamaConfig::from_json(&config).unwrap();
    assert_eq!((c.num_attention_heads, c.num_key_value_heads, c.head_dim, c.tie_word_embeddings), (4, 2, 16, true));
    assert_eq!(c.rope_theta, 10000.0);
    // transformers 4.x: `rope_theta` at the top level.
    let old = config.replace(
        "\"rope_parameters\": {\n    \"rope_theta\": 10000.0,\n    \"rope_type\": \"default\"\n  }",
        "\"rope_theta\": 500000.0",
    );
    assert_eq!(LlamaConfig::from_json(&old).unwrap().rope_theta, 500000.0);
}

/// Every `config.json` value is checked against what the architecture
/// allows and against the tensors present before anything is sized by
/// it: hostile sizes get an error, not an allocation failure, and values
/// that f32 cannot hold are refused rather than written as inf or 0.
#[test]
fn a_hostile_config_is_refused_before_anything_is_sized_by_it() {
    let (config, weights) = checkpoint();
    let edit = |from: &str, to: &str| {
        assert!(config.contains(from), "fixture lacks {from}");
        config.replacen(from, to, 1)
    };
    let layers = |n: &str| edit("\"num_hidden_layers\": 2", &format!("\"num_hidden_layers\": {n}"));
    let cases = [
        (
            layers("1000000000"),
            "model.safetensors: config.json has `num_hidden_layers` 1000000000, the tensors hold layers 0..=1",
        ),
        (layers("1152921504606846976"), "config.json: the KV cache overflows the address space"),
        (layers("3"), "the tensors hold layers 0..=1"),
        (
            edit("\"rms_norm_eps\": 1e-05", "\"rms_norm_eps\": -1e-05"),
            "`rms_norm_eps` must be a non-negative number that f32 holds; it is -0.00001",
        ),
        (edit("\"rms_norm_eps\": 1e-05", "\"rms_norm_eps\": 1e39"), "(stored as inf)"),
        (
            edit("\"rope_theta\": 10000.0", "\"rope_theta\": 1e-50"),
            "`rope_theta` must be a positive number that f32 holds; it is 9.999999999999999e-51 (stored as 0)",
        ),
        (edit("\"rope_theta\": 10000.0", "\"rope_theta\": 1e-45"), "rotary angles overflow f32"),
        // The rotary tables (128 x 2^19 entries each here) are built only
        // once the attention tensors have bounded `head_dim`.
        (
            edit("\"head_dim\": 16", "\"head_dim\": 1048576"),
            "tensor `model.layers.0.self_attn.q_proj.weight`: shape [64, 64], expected [4194304, 64]",
        ),
        (edit("\"hidden_act\": \"silu\"", "\"hidden_act\": 5"), "only `silu`"),
        (
            edit("\"model_type\": \"llama\"", "\"model_type\": \"falcon\""),
            "`model_type` `falcon` is not supported; supported: llama, qwen2, mistral, gemma, phi3",
        ),
        (edit("\"model_type\": \"llama\",", ""), "`model_type` is missing"),
        (
            edit("\"tie_word_embeddings\": true", "\"tie_word_embeddings\": \"yes\""),
            "`tie_word_embeddings` must be true or false",
        ),
        ("[1, 2]".to_string(), "config.json: must be a JSON object"),
    ];
    for (text, want) in cases {
        let e = import_llama(&text, &weights, 1, "m", "w.safetensors").unwrap_err().to_string();
        assert!(e.contains(want), "want `{want}` in: {e}");
    }
    let e = import_llama(&config, &weights, 1, "m", "/abs/w.safetensors").unwrap_err().to_string();
    assert!(e.contains("must be a non-empty relative path"), "{e}");
    let e = import_llama(&config, b"not a safetensors file", 1, "m", "w.safetensors").unwrap_err().to_string();
    assert!(e.starts_with("model.safetensors: "), "{e}");
}

/// A model name is made a `.sched` identifier exactly as the ONNX
/// importer makes one, so every name gives a schedule that validates.
#[test]
fn any_model_name_gives_a_valid_schedule() {
    let (config, weights) = checkpoint();
    for (name, want) in
        [("my model", "my_model"), ("", "model"), ("a\nmodel x: 1", "a_model_x__1"), ("modèle", "mod_le")]
    {
        let imported = import_llama(&config, &weights, 1, name, "weights.safetensors").unwrap();
        assert!(
            imported.sched_text.contains(&format!("\nmodel {want}\n")),
            "{name:?}: {}",
            &imported.sched_text[..200]
        );
    }
}

/// The bundled checkpoint imported with f16 and with bf16 product weights
/// (`PackedGemmHalf`), run by the interpreter through a whole greedy
/// generation (the prompt through the `prefill` entry, then decode
/// steps): every logit within 1e-4 of transformers running the same
/// rounded weights (`expected/logits_{f16,bf16}.npy`), and the same 64
/// tokens as the f32 model. The distance to the f32 model's logits is the
/// price of the format (`docs/decoding.md`, "Narrow weights").
#[test]
fn narrow_weights_match_transformers_with_the_same_rounding() {
    use rlx_onnx::llama::{import_llama_with, LlamaOptions, WeightFormat};
    let (config, weights) = checkpoint();
    let expected = |name: &str| rlx_runtime::npy::read_npy(&model_dir().join("expected").join(name)).unwrap();
    let i64s = |b: &[u8]| b.chunks_exact(8).map(|c| i64::from_le_bytes(c.try_into().unwrap())).collect::<Vec<_>>();
    let f32s = |b: &[u8]| b.chunks_exact(4).map(|c| f32::from_le_bytes(c.try_into().unwrap())).collect::<Vec<_>>();
    let prompt = i64s(&expected("prompt_ids.npy").bytes);
    let tokens = i64s(&expected("tokens.npy").bytes);
    let f32_logits = f32s(&expected("logits.npy").bytes);
    let vocab = expected("logits.npy").shape[1];
    let argmax = |row: &[f32]| (0..row.len()).fold(0, |best, i| if row[i] > row[best] { i } else { best }) as i64;
    for (format, reference) in [(WeightFormat::F16, "logits_f16.npy"), (WeightFormat::Bf16, "logits_bf16.npy")] {
        let want = f32s(&expected(reference).bytes);
        let opts = LlamaOptions { prefill: 16, weights: format, max_len: None };
        let imported = import_llama_with(&config, &weights, &opts, "llama_tiny", "weights.safetensors").unwrap();
        assert!(imported.sched_text.contains("PackedGemmHalf"));
        assert!(!imported.sched_text.contains("PackedGemm {"), "every product narrowed");
        let mut interp = crate::common::interpreter(&format!("llama-{format:?}"), &imported);
        let mut row = crate::common::prefill_last_row(&mut interp, &prompt, 16, vocab);
        let (mut worst, mut from_f32) = (0.0f32, 0.0f32);
        for (i, &want_token) in tokens.iter().enumerate() {
            let range = i * vocab..(i + 1) * vocab;
            for ((&g, &w), &f) in row.iter().zip(&want[range.clone()]).zip(&f32_logits[range]) {
                worst = worst.max((g - w).abs());
                from_f32 = from_f32.max((g - f).abs());
            }
            let got = argmax(&row);
            assert_eq!(got, want_token, "{format:?}: token {i}");
            interp.set_bytes("tokens", &got.to_le_bytes()).unwrap();
            interp.set_bytes("pos", &((prompt.len() + i) as i64).to_le_bytes()).unwrap();
            interp.run();
            row = f32s(interp.bytes("logits").unwrap());
        }
        eprintln!("{format:?} weights: worst logit error {worst:e} vs the same rounding, {from_f32:e} vs f32 weights");
        assert!(worst <= 1e-4, "{format:?}: worst logit error {worst} against transformers with the same weights");
    }
}

/// `--max-len` sizes the KV cache and the rotary tables (default: the
/// context, at most `DEFAULT_CACHE_LEN`); it must lie within the context.
#[test]
fn the_cache_length_is_chosen_at_import() {
    use rlx_onnx::llama::{import_llama_with, LlamaOptions, WeightFormat};
    let (config, weights) = checkpoint();
    let import = |max_len, prefill| {
        let opts = LlamaOptions { prefill, weights: WeightFormat::F32, max_len };
        import_llama_with(&config, &weights, &opts, "m", "w.safetensors").map_err(|e| e.to_string())
    };
    let short = import(Some(32), 16).unwrap();
    // kv_heads 2 x head_dim 16 = 32 columns per cache row.
    assert!(short.sched_text.contains("layer0.k_cache: f32[32, 32]"), "{}", short.sched_text);
    assert!(short.sched_text.contains("rope.cos: f32[32, 8]"));
    let full = import(None, 16).unwrap();
    assert!(full.sched_text.contains("layer0.k_cache: f32[128, 32]"));
    assert!(short.report.arena_bytes < full.report.arena_bytes);
    assert_eq!(
        import(Some(129), 16).unwrap_err(),
        "--max-len: 129 positions: give 1 to the model's context of 128 (`max_position_embeddings`)"
    );
    assert_eq!(
        import(Some(0), 1).unwrap_err(),
        "--max-len: 0 positions: give 1 to the model's context of 128 (`max_position_embeddings`)"
    );
    assert!(import(Some(8), 16).unwrap_err().contains("a prefill chunk of 16 tokens does not fit 8 positions"));
}

/// The logits of an imported step run by the interpreter through the
/// prompt (`prefill`) and then fed the f32 model's 64 greedy tokens
/// (`expected/tokens.npy`), so every row has the f32 model's context:
/// 64 rows of the vocabulary, concatenated.
fn teacher_forced_logits(imported: &rlx_onnx::Imported, tag: &str) -> Vec<f32> {
    let expected = |name: &str| rlx_runtime::npy::read_npy(&model_dir().join("expected").join(name)).unwrap();
    let i64s = |b: &[u8]| b.chunks_exact(8).map(|c| i64::from_le_bytes(c.try_into().unwrap())).collect::<Vec<_>>();
    let f32s = |b: &[u8]| b.chunks_exact(4).map(|c| f32::from_le_bytes(c.try_into().unwrap())).collect::<Vec<_>>();
    let prompt = i64s(&expected("prompt_ids.npy").bytes);
    let tokens = i64s(&expected("tokens.npy").bytes);
    let vocab = expected("logits.npy").shape[1];
    let mut interp = crate::common::interpreter(&format!("llama-{tag}"), imported);
    let mut out = crate::common::prefill_last_row(&mut interp, &prompt, 16, vocab);
    for (i, &token) in tokens.iter().enumerate().take(tokens.len() - 1) {
        interp.set_bytes("tokens", &token.to_le_bytes()).unwrap();
        interp.set_bytes("pos", &((prompt.len() + i) as i64).to_le_bytes()).unwrap();
        interp.run();
        out.extend(f32s(interp.bytes("logits").unwrap()));
    }
    out
}

/// The bundled checkpoint with every Linear weight whose input size is a
/// multiple of 32 replaced by its Q8_0 values (`d * q`, blocks of 32
/// along the input), and the tied logits weight untied into such a copy
/// (the embedding lookup stays f32): the f32 model that computes what the
/// `--weights q8_0` import computes.
fn dequantized_q8_checkpoint() -> (String, Vec<u8>) {
    use safetensors::tensor::{Dtype, TensorView};
    let (config, weights) = checkpoint();
    let config = config.replace("\"tie_word_embeddings\": true", "\"tie_word_embeddings\": false");
    let st = safetensors::SafeTensors::deserialize(&weights).unwrap();
    let round_trip = |name: &str| -> (Vec<usize>, Vec<u8>) {
        let t = st.tensor(name).unwrap();
        let (out, inp) = (t.shape()[0], t.shape()[1]);
        let w: Vec<f32> = t.data().chunks_exact(4).map(|c| f32::from_le_bytes(c.try_into().unwrap())).collect();
        let kn = rlx_sched::q8::dequantize_q8(&rlx_onnx::quantize::quantize_q8(&w, inp, out, true), inp, out);
        let back: Vec<u8> = (0..out * inp).flat_map(|i| kn[(i % inp) * out + i / inp].to_le_bytes()).collect();
        (vec![out, inp], back)
    };
    let mut tensors: Vec<(String, Vec<usize>, Vec<u8>)> = Vec::new();
    for (name, t) in st.tensors() {
        let linear = name.ends_with("_proj.weight") && t.shape()[1] % 32 == 0;
        let (shape, data) = if linear { round_trip(&name) } else { (t.shape().to_vec(), t.data().to_vec()) };
        tensors.push((name, shape, data));
    }
    let (shape, data) = round_trip("model.embed_tokens.weight");
    tensors.push(("lm_head.weight".to_string(), shape, data));
    let views: Vec<(String, TensorView<'_>)> = tensors
        .iter()
        .map(|(name, shape, data)| (name.clone(), TensorView::new(Dtype::F32, shape.clone(), data).unwrap()))
        .collect();
    (config, safetensors::serialize(views, &None).unwrap())
}

/// The bundled checkpoint imported with `--weights q8_0`
/// (`PackedGemmQ8` for every product whose `k` is a multiple of 32: all
/// but the down projection, `k` 172), its logits over the prompt and 64
/// decode steps on the f32 model's greedy context: within 1e-4 of the f32
/// import of the same weights dequantized (the implementation's error:
/// only the order of the sums differs), and within the format's bound of
/// the f32 model (`expected/logits.npy`, the price of 8 bits:
/// `docs/decoding.md`, "Narrow weights"). Where the 8-bit model's greedy
/// pick differs from the f32 model's, the f32 model's own margin between
/// the two tokens is within twice that bound.
#[test]
fn q8_0_weights_compute_the_dequantized_model() {
    use rlx_onnx::llama::{import_llama_with, LlamaOptions, WeightFormat};
    const FORMAT_BOUND: f32 = 0.5;
    let expected = |name: &str| rlx_runtime::npy::read_npy(&model_dir().join("expected").join(name)).unwrap();
    let f32_logits: Vec<f32> =
        expected("logits.npy").bytes.chunks_exact(4).map(|c| f32::from_le_bytes(c.try_into().unwrap())).collect();
    let tokens: Vec<i64> =
        expected("tokens.npy").bytes.chunks_exact(8).map(|c| i64::from_le_bytes(c.try_into().unwrap())).collect();
    let vocab = expected("logits.npy").shape[1];
    let (config, weights) = checkpoint();
    let opts = LlamaOptions { prefill: 16, weights: WeightFormat::Q8_0, max_len: None };
    let imported = import_llama_with(&config, &weights, &opts, "llama_tiny", "weights.safetensors").unwrap();
    assert_eq!(imported.sched_text.matches("PackedGemmQ8 {").count(), 2 * 2 * 6 + 2, "6 products a layer, logits");
    assert_eq!(imported.sched_text.matches("PackedGemm {").count(), 2 * 2, "the down projections");
    eprintln!("q8_0 weights file: {} bytes", imported.weights.len());
    let got = teacher_forced_logits(&imported, "q8");

    let (ref_config, ref_weights) = dequantized_q8_checkpoint();
    let opts = LlamaOptions { prefill: 16, weights: WeightFormat::F32, max_len: None };
    let reference = import_llama_with(&ref_config, &ref_weights, &opts, "llama_tiny", "weights.safetensors").unwrap();
    let want = teacher_forced_logits(&reference, "q8-ref");
    let implementation = got.iter().zip(&want).fold(0.0f32, |m, (g, w)| m.max((g - w).abs()));

    let format = got.iter().zip(&f32_logits).fold(0.0f32, |m, (g, f)| m.max((g - f).abs()));
    let argmax = |row: &[f32]| (0..row.len()).fold(0, |best, i| if row[i] > row[best] { i } else { best });
    let mut differ = 0;
    for (i, &want_token) in tokens.iter().enumerate() {
        let (row, f32_row) = (&got[i * vocab..(i + 1) * vocab], &f32_logits[i * vocab..(i + 1) * vocab]);
        let pick = argmax(row);
        if pick as i64 != want_token {
            differ += 1;
            let margin = f32_row[want_token as usize] - f32_row[pick];
            assert!(margin <= 2.0 * FORMAT_BOUND, "step {i}: picked {pick} where the f32 model's margin is {margin}");
        }
    }
    eprintln!(
        "q8_0 weights: {implementation:e} vs the dequantized f32 model, {format:e} vs the f32 model, \
         {differ} of 64 greedy picks differ"
    );
    assert!(implementation <= 1e-4, "{implementation} against the f32 model with the same weights");
    assert!(format <= FORMAT_BOUND, "{format} against the f32 model");
}
