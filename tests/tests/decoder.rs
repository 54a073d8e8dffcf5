//! The bundled decoder (`llama_tiny`) step by step: its generated code and
//! the interpreter on the same schedule, over a whole greedy generation
//! (prompt, then 64 generated tokens, one run per token with the KV cache
//! persisting in `state`), must leave identical arenas after every run.

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
        model.input_tokens()[0] = token;
        model.input_pos()[0] = pos as i64;
        model.run();
        interp.set_bytes("tokens", &token.to_le_bytes()).unwrap();
        interp.set_bytes("pos", &(pos as i64).to_le_bytes()).unwrap();
        interp.run();
        assert!(interp.arena() == model.arena(), "arenas differ after the run at position {pos}");
        token = argmax(interp.bytes("logits").unwrap());
    }
    model.reset_state();
    interp.reset_state();
    assert!(interp.arena() == model.arena(), "arenas differ after reset_state");
}
