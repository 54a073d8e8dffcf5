//! The bundled decoder (`llama_tiny`) step by step: its generated code and
//! the interpreter on the same schedule, over a whole greedy generation
//! (the prompt, then 64 generated tokens, one run per token with the KV
//! cache persisting in `state`), must leave identical arenas after every
//! run; and so must the `prefill` entry point, a chunk of the prompt
//! followed by decode steps.

use std::path::Path;

use llama_tiny::{GeneratedModel, Model};
use rlx_interp::Interpreter;

fn argmax(row: &[u8]) -> i64 {
    let logits: Vec<f32> = row.chunks_exact(4).map(|c| f32::from_le_bytes(c.try_into().unwrap())).collect();
    let mut best = 0;
    for (i, &x) in logits.iter().enumerate() {
        if x > logits[best] {
            best = i;
        }
    }
    best as i64
}

/// One decode step of `token` at `pos` on both sides; the arenas must be
/// equal after it. Returns the greedy next token.
fn decode_step(model: &mut Model, interp: &mut Interpreter<'_>, token: i64, pos: usize) -> i64 {
    model.input_tokens()[0] = token;
    model.input_pos()[0] = pos as i64;
    model.run();
    interp.set_bytes("tokens", &token.to_le_bytes()).unwrap();
    interp.set_bytes("pos", &(pos as i64).to_le_bytes()).unwrap();
    interp.run();
    assert!(interp.arena() == model.arena(), "arenas differ after the decode step at position {pos}");
    argmax(interp.bytes("logits").unwrap())
}

#[test]
fn generated_decoder_matches_the_interpreter_over_a_generation() {
    let sched = Path::new(env!("CARGO_MANIFEST_DIR")).join("../models/llama_tiny/model.sched");
    let (s, weights) = rlx_tests::load_with_weights(&sched);
    let mut interp = Interpreter::new(s, &weights).unwrap();
    let mut model = Model::new();
    let prompt = [1i64, 17, 93, 211, 5, 400, 64];
    let mut token = prompt[0];
    for pos in 0..prompt.len() + 64 {
        if pos < prompt.len() {
            token = prompt[pos];
        }
        token = decode_step(&mut model, &mut interp, token, pos);
    }
    model.reset_state();
    interp.reset_state();
    assert!(interp.arena() == model.arena(), "arenas differ after reset_state");
}

#[test]
fn generated_prefill_entry_matches_the_interpreter() {
    let sched = Path::new(env!("CARGO_MANIFEST_DIR")).join("../models/llama_tiny/model.sched");
    let (s, weights) = rlx_tests::load_with_weights(&sched);
    let mut interp = Interpreter::new(s, &weights).unwrap();
    let mut model = Model::new();
    let prefill = Model::INFO.entry("prefill").expect("a prefill entry");
    assert_eq!(interp.entry("prefill"), Some(prefill));
    // Two chunks (the second partly padding), then decode steps.
    let prompt: Vec<i64> = (0..20).map(|i| (i * 37 + 5) % 512).collect();
    let chunk = model.input_prefill_tokens().len();
    for (c, part) in prompt.chunks(chunk).enumerate() {
        let mut tokens = vec![0i64; chunk];
        tokens[..part.len()].copy_from_slice(part);
        let pos = (c * chunk) as i64;
        model.input_prefill_tokens().copy_from_slice(&tokens);
        model.input_pos()[0] = pos;
        model.run_entry(prefill);
        let bytes: Vec<u8> = tokens.iter().flat_map(|t| t.to_le_bytes()).collect();
        interp.set_bytes("prefill.tokens", &bytes).unwrap();
        interp.set_bytes("pos", &pos.to_le_bytes()).unwrap();
        interp.run_entry(prefill);
        assert!(interp.arena() == model.arena(), "arenas differ after prefill chunk {c}");
    }
    let mut token = 7i64;
    for pos in prompt.len()..prompt.len() + 8 {
        token = decode_step(&mut model, &mut interp, token, pos);
    }
}
