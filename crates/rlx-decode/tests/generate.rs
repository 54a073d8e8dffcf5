//! The generation loop against the mock bigram decoder: chunking and
//! padding, positions, the greedy sequence, end-of-text and every error.

mod common;

use std::ops::ControlFlow;

use common::mock::{Bigram, Call};
use rlx_decode::{generate, generate_ids, GenerateError, Sampler, SamplerConfig, Tokenizer};

const CHUNK: usize = 4;

fn greedy(vocab: usize) -> Sampler {
    Sampler::new(SamplerConfig::greedy(), vocab).unwrap()
}

/// Runs `generate_ids` greedily, returning the tokens handed over.
fn run(model: &mut Bigram, prompt: &[i64], max_tokens: usize) -> (Vec<u32>, rlx_decode::Stats) {
    let mut got = Vec::new();
    let mut s = greedy(model.vocab);
    let stats = generate_ids(model, &mut s, prompt, 0, max_tokens, &[], |id| {
        got.push(id);
        ControlFlow::Continue(())
    })
    .expect("generates");
    (got, stats)
}

#[test]
fn prompts_are_cut_into_padded_chunks_at_the_right_positions() {
    for len in [1, CHUNK - 1, CHUNK, CHUNK + 1, 2 * CHUNK + 3] {
        let prompt: Vec<i64> = (0..len as i64).map(|i| 10 + i).collect();
        let mut m = Bigram::new(64, CHUNK, 32);
        let (got, stats) = run(&mut m, &prompt, 5);

        let mut expected = vec![Call::Reset];
        for (i, c) in prompt.chunks(CHUNK).enumerate() {
            let mut chunk = c.to_vec();
            chunk.resize(CHUNK, 0);
            expected.push(Call::Prefill { chunk, pos: i * CHUNK });
        }
        // The first token comes from the last real prompt row; each later
        // one from feeding the one before at the next position.
        let want: Vec<i64> = m.greedy_after(*prompt.last().unwrap(), 5);
        for (i, &t) in want[..4].iter().enumerate() {
            expected.push(Call::Decode { token: t, pos: len + i });
        }
        assert_eq!(m.calls, expected, "prompt of {len}");
        assert_eq!(got.iter().map(|&t| t as i64).collect::<Vec<_>>(), want, "prompt of {len}");

        // The cache holds the prompt and every fed token; padded rows past
        // them were overwritten or never read.
        let fed: Vec<i64> = prompt.iter().copied().chain(want[..4].iter().copied()).collect();
        let cached: Vec<i64> = m.cache[..fed.len()].iter().map(|c| c.unwrap()).collect();
        assert_eq!(cached, fed, "prompt of {len}");

        assert_eq!(stats.prefill_tokens, len);
        assert_eq!(stats.prefill_chunks, len.div_ceil(CHUNK));
        assert_eq!(stats.decode_tokens, 4);
        assert_eq!(stats.generated, 5);
        assert!(!stats.stopped_at_end);
    }
}

#[test]
fn one_token_needs_no_decode_step_and_zero_tokens_no_model_call() {
    let mut m = Bigram::new(16, CHUNK, 16);
    let (got, stats) = run(&mut m, &[3], 1);
    assert_eq!(got, [m.table[3] as u32]);
    assert_eq!(m.calls.len(), 2, "{:?}", m.calls);
    assert_eq!(stats.decode_tokens, 0);

    let mut m = Bigram::new(16, CHUNK, 16);
    let (got, stats) = run(&mut m, &[3], 0);
    assert!(got.is_empty() && m.calls.is_empty());
    assert_eq!(stats.generated, 0);
}

#[test]
fn the_context_can_be_filled_exactly() {
    let mut m = Bigram::new(16, CHUNK, 12);
    let (got, _) = run(&mut m, &[1, 2, 3, 4, 5], 7);
    assert_eq!(got.len(), 7);
    assert_eq!(m.calls.last(), Some(&Call::Decode { token: got[5] as i64, pos: 10 }));
}

#[test]
fn a_model_is_reset_before_each_call() {
    let mut m = Bigram::new(16, CHUNK, 16);
    let (a, _) = run(&mut m, &[1, 2], 3);
    let (b, _) = run(&mut m, &[1, 2], 3);
    assert_eq!(a, b);
    assert_eq!(m.calls.iter().filter(|c| **c == Call::Reset).count(), 2);
}

#[test]
fn the_end_of_text_token_stops_generation_and_is_not_handed_over() {
    let mut m = Bigram::new(16, CHUNK, 16);
    m.table[5] = 6;
    m.table[6] = 0; // 0 plays end-of-text
    let mut got = Vec::new();
    let stats = generate_ids(&mut m, &mut greedy(16), &[5], 0, 10, &[0], |id| {
        got.push(id);
        ControlFlow::Continue(())
    })
    .unwrap();
    assert_eq!(got, [6]);
    assert!(stats.stopped_at_end);
    assert_eq!(stats.generated, 1);
    assert_eq!(stats.decode_tokens, 1);
}

#[test]
fn a_break_from_the_callback_stops_generation() {
    let mut m = Bigram::new(16, CHUNK, 16);
    let mut n = 0;
    let stats = generate_ids(&mut m, &mut greedy(16), &[5], 0, 10, &[], |_| {
        n += 1;
        if n == 3 {
            ControlFlow::Break(())
        } else {
            ControlFlow::Continue(())
        }
    })
    .unwrap();
    assert_eq!((n, stats.generated, stats.decode_tokens), (3, 3, 2));
}

fn error(m: &mut Bigram, prompt: &[i64], max_tokens: usize) -> GenerateError {
    let mut s = greedy(m.vocab);
    generate_ids(m, &mut s, prompt, 0, max_tokens, &[], |_| ControlFlow::Continue(())).expect_err("fails")
}

#[test]
fn bad_requests_are_errors_before_the_model_runs() {
    let mut m = Bigram::new(16, CHUNK, 8);
    let cases: [(&[i64], usize, &str); 5] = [
        (&[], 4, "the prompt is empty: give at least one token"),
        (&[1, 2, 3], 6, "prompt of 3 tokens + max-tokens 6 = 9 exceeds the 8 positions of the model's KV cache (`import-llama --max-len` sets them)"),
        (&[1, 16], 1, "prompt token 1 has id 16, outside the model's vocabulary of 16"),
        (&[-1], 1, "prompt token 0 has id -1, outside the model's vocabulary of 16"),
        (&[1], usize::MAX, "prompt of 1 tokens + max-tokens 18446744073709551615 = 18446744073709551615 exceeds the 8 positions of the model's KV cache (`import-llama --max-len` sets them)"),
    ];
    for (prompt, max_tokens, msg) in cases {
        assert_eq!(error(&mut m, prompt, max_tokens).to_string(), msg);
    }
}

/// 9 prompt tokens and 1 more fit a context of 10, but three padded chunks
/// of 4 would write 12 cache rows: the last chunk's one token runs as a
/// decode step.
#[test]
fn a_last_chunk_whose_padding_passes_the_cache_runs_as_decode_steps() {
    let mut m = Bigram::new(16, CHUNK, 10);
    let prompt = [1, 2, 3, 4, 5, 6, 7, 8, 9];
    let (got, stats) = run(&mut m, &prompt, 1);
    let expected = vec![
        Call::Reset,
        Call::Prefill { chunk: vec![1, 2, 3, 4], pos: 0 },
        Call::Prefill { chunk: vec![5, 6, 7, 8], pos: 4 },
        Call::Decode { token: 9, pos: 8 },
    ];
    assert_eq!(m.calls, expected);
    assert_eq!(got, [m.table[9] as u32]);
    assert_eq!(stats.prefill_chunks, 3);
}

#[test]
fn a_sampler_of_another_vocabulary_is_an_error() {
    let mut m = Bigram::new(16, CHUNK, 8);
    let e = generate_ids(&mut m, &mut greedy(15), &[1], 0, 1, &[], |_| ControlFlow::Continue(())).unwrap_err();
    assert_eq!(e.to_string(), "the sampler is sized for a vocabulary of 15, the model's is 16");
}

#[test]
fn text_generation_streams_the_tokenizer_pieces() {
    let tok = Tokenizer::from_bytes(common::TOKENIZER_JSON).unwrap();
    let mut m = Bigram::new(512, CHUNK, 64);
    let mut ids = Vec::new();
    let mut text = String::new();
    let stats = generate(&mut m, &tok, &mut greedy(512), "Hello, world", 20, |t| {
        ids.extend(t.id);
        text.push_str(t.text);
        ControlFlow::Continue(())
    })
    .unwrap();
    let prompt = tok.encode("Hello, world").unwrap();
    assert_eq!(stats.prefill_tokens, prompt.len());
    let want: Vec<u32> = m.greedy_after(*prompt.last().unwrap() as i64, 20).into_iter().map(|t| t as u32).collect();
    // The bigram walk may reach <|endoftext|> (0) and stop there.
    let want: Vec<u32> = want.iter().copied().take_while(|&t| t != 0).collect();
    assert_eq!(ids, want);
    assert_eq!(stats.stopped_at_end, want.len() < 20);
    assert_eq!(text, tok.decode(&want).unwrap());
}

#[test]
fn a_prompt_the_model_vocabulary_cannot_hold_is_an_error() {
    let tok = Tokenizer::from_bytes(common::TOKENIZER_JSON).unwrap();
    let mut m = Bigram::new(64, CHUNK, 64);
    let e = generate(&mut m, &tok, &mut greedy(64), "zzzz qqq", 2, |_| ControlFlow::Continue(())).unwrap_err();
    assert!(e.to_string().contains("outside the model's vocabulary of 64"), "{e}");
}

#[test]
fn a_sampled_id_the_tokenizer_does_not_know_is_an_error() {
    let tok = Tokenizer::from_bytes(common::TOKENIZER_JSON).unwrap();
    let mut m = Bigram::new(600, CHUNK, 64);
    let last = *tok.encode("a").unwrap().last().unwrap() as usize;
    m.table[last] = 599;
    let e = generate(&mut m, &tok, &mut greedy(600), "a", 2, |_| ControlFlow::Continue(())).unwrap_err();
    assert_eq!(e.to_string(), "sampled token id 599 is outside the tokenizer's vocabulary of 512");
}

#[test]
fn a_character_cut_off_by_the_end_is_handed_over_as_one_replacement_piece() {
    let tok = Tokenizer::from_bytes(common::TOKENIZER_JSON).unwrap();
    let lead = (0..512u32).find(|&id| tok.token_bytes(id).unwrap() == [0xF0]).expect("a byte token for 0xF0");
    let mut m = Bigram::new(512, CHUNK, 64);
    let last = *tok.encode("a").unwrap().last().unwrap() as usize;
    m.table[last] = lead as i64;
    let mut got = Vec::new();
    generate(&mut m, &tok, &mut greedy(512), "a", 1, |t| {
        got.push((t.id, t.text.to_owned()));
        ControlFlow::Continue(())
    })
    .unwrap();
    assert_eq!(got, [(Some(lead), String::new()), (None, "\u{FFFD}".to_owned())]);
}

/// A conversation's next turn prefills only what the cache lacks: no
/// reset, the first chunk at the first uncached position, and the cache
/// ends as a fresh run over the whole prompt would leave it.
#[test]
fn a_continued_prompt_prefills_only_the_uncached_tokens() {
    let prompt: Vec<i64> = (1..=11).collect();
    let mut fresh = Bigram::new(16, CHUNK, 32);
    let (want, _) = run(&mut fresh, &prompt, 3);

    let mut m = Bigram::new(16, CHUNK, 32);
    run(&mut m, &prompt[..6], 1);
    m.calls.clear();
    let mut got = Vec::new();
    let stats = generate_ids(&mut m, &mut greedy(16), &prompt, 6, 3, &[], |id| {
        got.push(id);
        ControlFlow::Continue(())
    })
    .unwrap();
    assert_eq!(got, want);
    assert_eq!(stats.prefill_tokens, 5);
    assert!(!m.calls.contains(&Call::Reset), "{:?}", m.calls);
    assert!(matches!(&m.calls[0], Call::Prefill { pos: 6, .. }), "{:?}", m.calls);
    assert_eq!(m.cache[..13], fresh.cache[..13]);

    // Everything cached: the last prompt token is fed again for its logits.
    m.calls.clear();
    let stats = generate_ids(&mut m, &mut greedy(16), &prompt, 11, 1, &[], |_| ControlFlow::Continue(())).unwrap();
    assert_eq!(stats.prefill_tokens, 1);
    assert!(!m.calls.contains(&Call::Reset), "{:?}", m.calls);
    let e = generate_ids(&mut m, &mut greedy(16), &prompt, 12, 1, &[], |_| ControlFlow::Continue(())).unwrap_err();
    assert!(matches!(e, GenerateError::Cached { cached: 12, prompt: 11 }), "{e}");
}

/// Any of several end ids stops generation, the first one sampled wins.
#[test]
fn any_end_id_stops_generation() {
    let mut m = Bigram::new(16, CHUNK, 16);
    let walk = m.greedy_after(5, 4);
    let mut got = Vec::new();
    let ends = [walk[2] as u32, walk[3] as u32];
    let stats = generate_ids(&mut m, &mut greedy(16), &[5], 0, 10, &ends, |id| {
        got.push(id);
        ControlFlow::Continue(())
    })
    .unwrap();
    assert_eq!(got, [walk[0] as u32, walk[1] as u32]);
    assert!(stats.stopped_at_end);
}
