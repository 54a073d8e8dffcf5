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
