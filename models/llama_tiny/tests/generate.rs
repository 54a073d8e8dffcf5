//! The `llama_tiny` decoder step against `transformers`' LlamaForCausalLM
//! (the reference written by `models/make/make_llama_tiny.py`): a 64-token
//! greedy generation, one `run` per token over the persistent KV cache,
//! with every step's logits within 1e-4 of the reference and the same
//! tokens.

use std::path::{Path, PathBuf};

use llama_tiny::{GeneratedModel, Model};
use rlx_runtime::npy::read_npy;

fn expected(name: &str) -> rlx_runtime::npy::NpyArray {
    read_npy(&PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("expected").join(name)).unwrap()
}

fn i64s(bytes: &[u8]) -> Vec<i64> {
    bytes.chunks_exact(8).map(|c| i64::from_le_bytes(c.try_into().unwrap())).collect()
}

fn f32s(bytes: &[u8]) -> Vec<f32> {
    bytes.chunks_exact(4).map(|c| f32::from_le_bytes(c.try_into().unwrap())).collect()
}

/// Runs one token at `pos`; returns the logits.
fn step(m: &mut Model, token: i64, pos: usize) -> Vec<f32> {
    m.input_tokens()[0] = token;
    m.input_pos()[0] = pos as i64;
    m.run();
    m.output_logits().to_vec()
}

fn argmax(row: &[f32]) -> i64 {
    let mut best = 0;
    for (i, &x) in row.iter().enumerate() {
        if x > row[best] {
            best = i;
        }
    }
    best as i64
}

/// The whole greedy generation; returns the worst logit error.
fn generate_and_compare(m: &mut Model) -> f32 {
    let prompt = i64s(&expected("prompt_ids.npy").bytes);
    let tokens = i64s(&expected("tokens.npy").bytes);
    let logits = expected("logits.npy");
    let vocab = logits.shape[1];
    let want = f32s(&logits.bytes);
    let mut row = Vec::new();
    for (pos, &t) in prompt.iter().enumerate() {
        row = step(m, t, pos);
    }
    let mut worst = 0.0f32;
    for (i, &want_token) in tokens.iter().enumerate() {
        let want_row = &want[i * vocab..(i + 1) * vocab];
        for (j, (&g, &w)) in row.iter().zip(want_row).enumerate() {
            let err = (g - w).abs();
            worst = worst.max(err);
            // f32 against transformers' f32 (different summation orders):
            // one bound for every step of the generation.
            assert!(err <= 1e-4, "step {i}, logit {j}: {g} vs {w}");
        }
        let got = argmax(&row);
        assert_eq!(got, want_token, "step {i}: greedy token");
        row = step(m, got, prompt.len() + i);
    }
    worst
}

#[test]
fn greedy_generation_matches_transformers() {
    let mut m = Model::new();
    let worst = generate_and_compare(&mut m);
    eprintln!("llama_tiny: 64 greedy steps, worst logit error {worst:e}");
    // A second generation after `reset_state` starts from an empty cache
    // and gives the same logits.
    m.reset_state();
    assert_eq!(generate_and_compare(&mut m), worst);
}

/// The `prefill` entry point: the whole prompt in one chunk (padded), its
/// last real row within 1e-4 of the reference's first logits, every row
/// within 1e-4 of the one-token steps' logits; decode steps then continue
/// from its cache to the reference tokens.
#[test]
fn the_prefill_entry_matches_the_reference_and_the_decode_steps() {
    let prompt = i64s(&expected("prompt_ids.npy").bytes);
    let tokens = i64s(&expected("tokens.npy").bytes);
    let logits = expected("logits.npy");
    let vocab = logits.shape[1];
    let want = f32s(&logits.bytes);
    let mut stepwise = Model::new();
    let rows: Vec<Vec<f32>> = prompt.iter().enumerate().map(|(pos, &t)| step(&mut stepwise, t, pos)).collect();

    let mut m = Model::new();
    let chunk = m.input_prefill_tokens().len();
    assert!(prompt.len() <= chunk);
    m.input_prefill_tokens().fill(0);
    m.input_prefill_tokens()[..prompt.len()].copy_from_slice(&prompt);
    m.input_pos()[0] = 0;
    m.run_prefill();
    let out = m.output_prefill_logits();
    for (r, row) in rows.iter().enumerate() {
        for (j, (&g, &w)) in out[r * vocab..(r + 1) * vocab].iter().zip(row).enumerate() {
            assert!((g - w).abs() <= 1e-4, "prompt row {r}, logit {j}: prefill {g} vs step {w}");
        }
    }
    let last = &out[(prompt.len() - 1) * vocab..prompt.len() * vocab];
    for (j, (&g, &w)) in last.iter().zip(&want[..vocab]).enumerate() {
        assert!((g - w).abs() <= 1e-4, "logit {j}: prefill {g} vs transformers {w}");
    }
    let mut next = argmax(last);
    for (i, &want_token) in tokens.iter().enumerate() {
        assert_eq!(next, want_token, "token {i}");
        next = argmax(&step(&mut m, next, prompt.len() + i));
    }
}

#[test]
fn the_cache_is_state() {
    let names: Vec<&str> = Model::INFO.states.iter().map(|s| s.name).collect();
    assert_eq!(names, ["layer0.k_cache", "layer0.v_cache", "layer1.k_cache", "layer1.v_cache"]);
    assert!(Path::new(Model::INFO.sched_path).ends_with("model.sched"));
}

/// The binary's path: `GeneratedStep` and rlx-decode's greedy loop over the
/// same model give the reference's 64 tokens.
#[test]
fn the_generation_loop_gives_the_reference_tokens() {
    let prompt = i64s(&expected("prompt_ids.npy").bytes);
    let want: Vec<u32> = i64s(&expected("tokens.npy").bytes).iter().map(|&t| t as u32).collect();
    let mut step = rlx_decode::GeneratedStep::new(Model::new()).unwrap();
    let mut sampler = rlx_decode::Sampler::new(rlx_decode::SamplerConfig::default(), 512).unwrap();
    let mut got = Vec::new();
    let stats = rlx_decode::generate_ids(&mut step, &mut sampler, &prompt, want.len(), None, |t| {
        got.push(t);
        std::ops::ControlFlow::Continue(())
    })
    .unwrap();
    assert_eq!(got, want);
    assert_eq!(stats.prefill_tokens, prompt.len());
}

/// The binary prints text and reports both phases; a request past the
/// cache is one line on stderr and exit code 2.
#[test]
fn cli_generates_and_refuses_too_long_requests() {
    let bin = env!("CARGO_BIN_EXE_llama_tiny");
    let (code, out, err) = rlx_testkit::models::run_binary(bin, &["--prompt", "def main", "--max-tokens", "8"]);
    assert_eq!(code, 0, "stderr: {err}");
    assert!(!out.is_empty() || err.contains("end-of-text"), "no text: {err}");
    assert!(err.contains("prefill:") && err.contains("tok/s"), "stderr: {err}");
    let (code, _, err) = rlx_testkit::models::run_binary(bin, &["--prompt", "hi", "--max-tokens", "500"]);
    assert_eq!(code, 2);
    assert_eq!(err.trim().lines().count(), 1, "stderr: {err}");
    assert!(err.contains("128"), "stderr: {err}");
}
