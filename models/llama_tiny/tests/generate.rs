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
    let stats = rlx_decode::generate_ids(&mut step, &mut sampler, &prompt, 0, want.len(), &[], |t| {
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

/// `--chat` renders the checkpoint's template (embedded from
/// `generation.json`) and continues it: the same ids as `--prompt` with
/// the rendered text, which ends in `assistant:`.
#[test]
fn chat_continues_the_rendered_template() {
    let bin = env!("CARGO_BIN_EXE_llama_tiny");
    let args = ["--max-tokens", "6", "--ids", "--ignore-eos"];
    let chat: Vec<&str> = ["--chat", "hi", "--system", "be kind"].into_iter().chain(args).collect();
    let (code, by_chat, err) = rlx_testkit::models::run_binary(bin, &chat);
    assert_eq!(code, 0, "stderr: {err}");
    let rendered = "system: be kind<|endoftext|>\nuser: hi<|endoftext|>\nassistant:";
    let prompt: Vec<&str> = ["--prompt", rendered].into_iter().chain(args).collect();
    let (code, by_prompt, err) = rlx_testkit::models::run_binary(bin, &prompt);
    assert_eq!(code, 0, "stderr: {err}");
    assert_eq!(by_chat, by_prompt);
    assert_eq!(by_chat.split_whitespace().count(), 6, "{by_chat}");
}

/// The binary's `--prompts FILE`: a batch of prompts in one process gives
/// what one process per prompt gives, and a bad prompt fails alone.
mod prompts_batch {
    use std::path::PathBuf;

    use rlx_testkit::models::run_binary;

    const BIN: &str = env!("CARGO_BIN_EXE_llama_tiny");
    const PROMPTS: [&str; 2] = ["def main", "import numpy as np"];

    fn tmp_dir(what: &str) -> PathBuf {
        let dir = std::env::temp_dir().join(format!("rlx-llama-batch-{what}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        dir
    }

    /// A single greedy run of `prompt`: stdout without its final newline, and
    /// stderr.
    fn single(prompt: &str, extra: &[&str]) -> (String, String) {
        let mut args = vec!["--prompt", prompt, "--max-tokens", "8"];
        args.extend_from_slice(extra);
        let (code, out, err) = run_binary(BIN, &args);
        assert_eq!(code, 0, "stderr: {err}");
        (out.strip_suffix('\n').expect("a final newline").to_owned(), err)
    }

    /// `s` as a JSON string, escaped as serde_json escapes it.
    fn quote(s: &str) -> String {
        let mut q = String::from('"');
        for c in s.chars() {
            match c {
                '"' => q.push_str("\\\""),
                '\\' => q.push_str("\\\\"),
                '\n' => q.push_str("\\n"),
                '\r' => q.push_str("\\r"),
                '\t' => q.push_str("\\t"),
                '\u{8}' => q.push_str("\\b"),
                '\u{c}' => q.push_str("\\f"),
                c if (c as u32) < 0x20 => q.push_str(&format!("\\u{:04x}", c as u32)),
                c => q.push(c),
            }
        }
        q.push('"');
        q
    }

    /// The JSON line a batch writes for `prompt` on line `line`: every field
    /// taken from single runs of the binary (text, ids, and the prompt length
    /// and end-of-text from their stderr).
    fn expected_record(line: usize, prompt: &str, with_text: bool) -> String {
        let (ids, err) = single(prompt, &["--ids"]);
        let prefill = err.lines().next().unwrap_or_default();
        let prompt_tokens = prefill.strip_prefix("prefill: ").and_then(|r| r.split(' ').next()).expect("prefill line");
        let stopped = err.contains(", stopped at end-of-text");
        let ids: Vec<&str> = ids.split_whitespace().collect();
        let completion =
            if with_text { format!(", \"completion\": {}", quote(&single(prompt, &[]).0)) } else { String::new() };
        format!(
            "{{\"line\": {line}, \"prompt\": {}{completion}, \"ids\": [{}], \"tokens\": {}, \"prompt_tokens\": {prompt_tokens}, \"stopped_at_end\": {stopped}}}",
            quote(prompt),
            ids.join(", "),
            ids.len()
        )
    }

    fn check_summary(err: &str, prompts: usize, failed: usize) {
        let last = err.lines().last().unwrap_or_default();
        assert!(last.starts_with(&format!("llama_tiny: {prompts} prompts, {failed} failed, ")), "stderr: {err}");
        assert!(last.ends_with(" tok/s"), "stderr: {err}");
    }

    #[test]
    fn two_prompts_in_one_process_equal_two_single_runs() {
        let dir = tmp_dir("two");
        let file = dir.join("prompts.txt");
        std::fs::write(&file, format!("{}\n\n{}\n", PROMPTS[0], PROMPTS[1])).unwrap();
        let path = file.to_str().unwrap();

        let (code, out, err) = run_binary(BIN, &["--prompts", path, "--max-tokens", "8"]);
        assert_eq!(code, 0, "stderr: {err}");
        assert_eq!(err.lines().count(), 1, "stderr: {err}");
        check_summary(&err, 2, 0);
        let want = [expected_record(1, PROMPTS[0], true), expected_record(3, PROMPTS[1], true)];
        assert_eq!(out.lines().collect::<Vec<_>>(), want);

        // The same prompts as JSON lines, written to a file, with --ids.
        let jsonl = dir.join("prompts.jsonl");
        let lines: Vec<String> = PROMPTS.iter().map(|p| format!("{{\"id\": 7, \"prompt\": {}}}", quote(p))).collect();
        std::fs::write(&jsonl, lines.join("\n")).unwrap();
        let results = dir.join("results.jsonl");
        let (code, out, err) = run_binary(
            BIN,
            &[
                "--prompts",
                jsonl.to_str().unwrap(),
                "--max-tokens",
                "8",
                "--ids",
                "--output",
                results.to_str().unwrap(),
            ],
        );
        assert_eq!(code, 0, "stderr: {err}");
        assert!(out.is_empty(), "stdout: {out}");
        let want = [expected_record(1, PROMPTS[0], false), expected_record(2, PROMPTS[1], false)];
        assert_eq!(std::fs::read_to_string(&results).unwrap().lines().collect::<Vec<_>>(), want);
        let _ = std::fs::remove_dir_all(&dir);
    }

    #[test]
    fn a_bad_prompt_fails_alone_unless_fail_fast() {
        let dir = tmp_dir("bad");
        let file = dir.join("prompts.jsonl");
        let lines = [
            format!("{{\"prompt\": {}}}", quote(PROMPTS[0])),
            "{\"text\": \"no prompt field\"}".to_owned(),
            format!("{{\"prompt\": {}}}", quote(PROMPTS[1])),
        ];
        std::fs::write(&file, lines.join("\n")).unwrap();
        let path = file.to_str().unwrap();

        let (code, out, err) = run_binary(BIN, &["--prompts", path, "--max-tokens", "8"]);
        assert_eq!(code, 2, "stderr: {err}");
        let err_lines: Vec<&str> = err.lines().collect();
        assert_eq!(err_lines.len(), 2, "stderr: {err}");
        assert_eq!(err_lines[0], format!("llama_tiny: error: {path}:2: the object has no \"prompt\" field"));
        check_summary(&err, 3, 1);
        let want = [expected_record(1, PROMPTS[0], true), expected_record(3, PROMPTS[1], true)];
        assert_eq!(out.lines().collect::<Vec<_>>(), want);

        let (code, out, err) = run_binary(BIN, &["--prompts", path, "--max-tokens", "8", "--fail-fast"]);
        assert_eq!(code, 2, "stderr: {err}");
        assert_eq!(out.lines().collect::<Vec<_>>(), [expected_record(1, PROMPTS[0], true)]);
        assert!(err.contains(&format!("{path}:2: ")), "stderr: {err}");
        assert!(err.trim_end().ends_with("stopped at the first failure (1 not run)"), "stderr: {err}");

        // A prompt too long for the cache is the user's error, exit code 2.
        let long = dir.join("long.txt");
        std::fs::write(&long, format!("{}\n{}\n", PROMPTS[0], "x ".repeat(200))).unwrap();
        let (code, out, err) = run_binary(BIN, &["--prompts", long.to_str().unwrap(), "--max-tokens", "8"]);
        assert_eq!(code, 2, "stderr: {err}");
        assert_eq!(out.lines().collect::<Vec<_>>(), [expected_record(1, PROMPTS[0], true)]);
        assert!(err.contains("long.txt:2: prompt of "), "stderr: {err}");

        // --prompts and --prompt are one or the other.
        let (code, _, err) = run_binary(BIN, &["--prompts", path, "--prompt", "x"]);
        assert_eq!(code, 2, "stderr: {err}");
        assert!(err.contains("cannot be used with"), "stderr: {err}");
        let _ = std::fs::remove_dir_all(&dir);
    }
}
