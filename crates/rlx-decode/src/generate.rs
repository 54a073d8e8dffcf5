//! The generation loop: prefill the prompt in chunks, then one decode step
//! per token, sampling each next token from the last logits row.

use std::ops::ControlFlow;
use std::time::{Duration, Instant};

use crate::sampler::{SampleError, Sampler};
use crate::tokenizer::{TextStream, Tokenizer, TokenizerError};
use crate::StepModel;

/// Why generation could not start or go on.
#[derive(Debug, thiserror::Error)]
pub enum GenerateError {
    #[error("the prompt is empty: give at least one token")]
    EmptyPrompt,
    #[error(
        "prompt of {prompt} tokens + max-tokens {max_tokens} = {} exceeds the {max_len} positions of the model's KV cache (`import-llama --max-len` sets them)",
        prompt.saturating_add(*max_tokens)
    )]
    TooLong { prompt: usize, max_tokens: usize, max_len: usize },
    #[error("prompt token {index} has id {id}, outside the model's vocabulary of {vocab}")]
    PromptToken { index: usize, id: i64, vocab: usize },
    #[error("sampled token id {id} is outside the tokenizer's vocabulary of {vocab}")]
    SampledToken { id: u32, vocab: usize },
    #[error("the model's {what} is 0")]
    ZeroSize { what: &'static str },
    #[error("the model returned {found} logits from {call}, expected {expected}")]
    Logits { call: &'static str, found: usize, expected: usize },
    #[error("{cached} tokens are said to be cached, but the prompt has only {prompt}")]
    Cached { cached: usize, prompt: usize },
    #[error("the sampler is sized for a vocabulary of {sampler}, the model's is {model}")]
    SamplerVocab { sampler: usize, model: usize },
    #[error(transparent)]
    Sample(#[from] SampleError),
    #[error(transparent)]
    Tokenizer(#[from] TokenizerError),
}

/// What one [`generate`] call did, for the per-phase report.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Stats {
    /// Prompt tokens (not counting the padding of the last chunk).
    pub prefill_tokens: usize,
    /// Model calls of the prefill: `prefill` chunks, plus one `decode`
    /// step per token of a last partial chunk whose padding would not fit
    /// in the cache.
    pub prefill_chunks: usize,
    /// Time in `prefill` and in sampling the first token.
    pub prefill_time: Duration,
    /// Tokens produced by `decode` steps: every generated token but the
    /// first, which comes from the prefill logits.
    pub decode_tokens: usize,
    /// Time in `decode` and in sampling.
    pub decode_time: Duration,
    /// Tokens handed to the caller (the end-of-text token is not).
    pub generated: usize,
    /// Whether generation stopped at the end-of-text token.
    pub stopped_at_end: bool,
}

impl Stats {
    /// Prompt tokens per second of prefill (0 when nothing was timed).
    pub fn prefill_rate(&self) -> f64 {
        rate(self.prefill_tokens, self.prefill_time)
    }

    /// Decode steps per second (0 when nothing was timed).
    pub fn decode_rate(&self) -> f64 {
        rate(self.decode_tokens, self.decode_time)
    }
}

fn rate(n: usize, t: Duration) -> f64 {
    if n == 0 || t.is_zero() {
        0.0
    } else {
        n as f64 / t.as_secs_f64()
    }
}

/// One generated token, as handed to the callback.
#[derive(Clone, Copy, Debug)]
pub struct Token<'a> {
    /// Its id; `None` for the last piece, the U+FFFD of a character the
    /// sequence ended in the middle of.
    pub id: Option<u32>,
    /// The text that became complete with it (may be empty mid-character).
    pub text: &'a str,
}

/// Generates up to `max_tokens` tokens after `prompt` and hands each one,
/// with the text it completes, to `on_token`; `ControlFlow::Break` from the
/// callback stops generation (e.g. when stdout is closed). Stops early,
/// without handing it over, at the tokenizer's end-of-text token. Any text
/// still held at the end (an incomplete UTF-8 character) is handed over as
/// a last U+FFFD piece with no id.
///
/// The model is [`StepModel::reset`] first, so a model can serve several
/// calls.
pub fn generate<M, F>(
    model: &mut M,
    tokenizer: &Tokenizer,
    sampler: &mut Sampler,
    prompt: &str,
    max_tokens: usize,
    on_token: F,
) -> Result<Stats, GenerateError>
where
    M: StepModel + ?Sized,
    F: FnMut(Token<'_>) -> ControlFlow<()>,
{
    let ids: Vec<i64> = tokenizer.encode(prompt)?.into_iter().map(i64::from).collect();
    let end_of_text: Vec<u32> = tokenizer.end_of_text().into_iter().collect();
    generate_from_ids(model, tokenizer, sampler, &ids, 0, max_tokens, &end_of_text, on_token)
}

/// [`generate`] from a prompt of token ids (the tokenizer only decodes
/// what is generated), stopping at any id of `end_of_text` (empty: never,
/// exactly `max_tokens` tokens unless the callback stops). The first
/// `cached` ids of `prompt` are already in the model's KV cache
/// ([`generate_ids`]).
#[allow(clippy::too_many_arguments)]
pub fn generate_from_ids<M, F>(
    model: &mut M,
    tokenizer: &Tokenizer,
    sampler: &mut Sampler,
    prompt: &[i64],
    cached: usize,
    max_tokens: usize,
    end_of_text: &[u32],
    mut on_token: F,
) -> Result<Stats, GenerateError>
where
    M: StepModel + ?Sized,
    F: FnMut(Token<'_>) -> ControlFlow<()>,
{
    let mut stream = TextStream::for_tokenizer(tokenizer);
    let mut stopped = false;
    let mut failed = None;
    let stats = generate_ids(model, sampler, prompt, cached, max_tokens, end_of_text, |id| {
        let piece = match stream.push(tokenizer, id) {
            Ok(piece) => piece,
            Err(e) => {
                failed = Some(e);
                return ControlFlow::Break(());
            }
        };
        let flow = on_token(Token { id: Some(id), text: piece });
        stopped = flow.is_break();
        flow
    })?;
    if let Some(e) = failed {
        return Err(match e {
            TokenizerError::UnknownId { id, vocab } => GenerateError::SampledToken { id: id as u32, vocab },
            other => other.into(),
        });
    }
    let rest = stream.finish();
    if !rest.is_empty() && !stopped {
        let _ = on_token(Token { id: None, text: rest });
    }
    Ok(stats)
}

/// [`generate`] on token ids, without a tokenizer: any id of
/// `end_of_text` stops generation (it is not handed to `on_token`).
///
/// Continuing a conversation: the first `cached` ids of `prompt` are the
/// ones the model's KV cache already holds, at positions `0..cached`, from
/// earlier calls (0: none, and the model is [`StepModel::reset`]). Only the
/// rest is prefilled, from position `cached`; at least the last prompt
/// token is always fed, since its logits give the first new token. The
/// tokens a call feeds are its prompt and every token it hands over but
/// the last, unless it stopped at end-of-text (then all of them).
///
/// Prompt handling: the prompt is cut into chunks of `prefill_chunk()`
/// tokens; the last chunk is padded with token 0. The padded rows write
/// cache rows past the prompt, which no later query reads before a decode
/// step overwrites them (attention is causal over `0..=pos`); when the
/// padding would run past the cache, the last chunk's tokens run as decode
/// steps instead. The first token is sampled from the logits row of the
/// last real prompt token.
pub fn generate_ids<M, F>(
    model: &mut M,
    sampler: &mut Sampler,
    prompt: &[i64],
    cached: usize,
    max_tokens: usize,
    end_of_text: &[u32],
    mut on_token: F,
) -> Result<Stats, GenerateError>
where
    M: StepModel + ?Sized,
    F: FnMut(u32) -> ControlFlow<()>,
{
    let (vocab, chunk, max_len) = (model.vocab(), model.prefill_chunk(), model.max_len());
    check(prompt, max_tokens, vocab, chunk, max_len)?;
    if sampler.vocab() != vocab {
        return Err(GenerateError::SamplerVocab { sampler: sampler.vocab(), model: vocab });
    }
    if cached > prompt.len() {
        return Err(GenerateError::Cached { cached, prompt: prompt.len() });
    }
    // The last prompt token is fed again when everything is cached: its
    // logits are the first new token's, and rewriting its cache row with
    // the same values changes nothing.
    let resume = cached.min(prompt.len() - 1);
    let mut stats = Stats { prefill_tokens: prompt.len() - resume, ..Stats::default() };
    if max_tokens == 0 {
        return Ok(stats);
    }
    if resume == 0 {
        model.reset();
    }

    // Prefill. Full chunks are slices of the prompt; only the last,
    // partial one is copied into a zero-padded buffer.
    let start = Instant::now();
    let mut padded = vec![0i64; chunk];
    let mut pos = resume;
    let mut next = 0u32;
    while pos < prompt.len() {
        let real = chunk.min(prompt.len() - pos);
        if real < chunk && pos + chunk > max_len {
            // A padded chunk would write past the cache: the tail runs one
            // decode step per token instead.
            for (p, &t) in (pos..).zip(&prompt[pos..]) {
                let logits = model.decode(t, p);
                stats.prefill_chunks += 1;
                if logits.len() != vocab {
                    return Err(GenerateError::Logits { call: "decode", found: logits.len(), expected: vocab });
                }
                if p + 1 == prompt.len() {
                    next = sampler.sample(logits)?;
                }
            }
            break;
        }
        let input: &[i64] = if real == chunk {
            &prompt[pos..pos + chunk]
        } else {
            padded[..real].copy_from_slice(&prompt[pos..]);
            &padded
        };
        let logits = model.prefill(input, pos);
        stats.prefill_chunks += 1;
        if logits.len() != chunk * vocab {
            return Err(GenerateError::Logits { call: "prefill", found: logits.len(), expected: chunk * vocab });
        }
        if pos + real == prompt.len() {
            next = sampler.sample(&logits[(real - 1) * vocab..real * vocab])?;
        }
        pos += chunk;
    }
    stats.prefill_time = start.elapsed();

    // Decode: token `i` (0-based) is fed at position `prompt.len() + i - 1`
    // to produce token `i + 1`; the last token is never fed.
    for (i, pos) in (0..max_tokens).zip(prompt.len()..) {
        if end_of_text.contains(&next) {
            stats.stopped_at_end = true;
            break;
        }
        stats.generated += 1;
        if on_token(next).is_break() || i + 1 == max_tokens {
            break;
        }
        let t = Instant::now();
        let logits = model.decode(next as i64, pos);
        if logits.len() != vocab {
            return Err(GenerateError::Logits { call: "decode", found: logits.len(), expected: vocab });
        }
        next = sampler.sample(logits)?;
        stats.decode_time += t.elapsed();
        stats.decode_tokens += 1;
    }
    Ok(stats)
}

/// Every check that can fail before the model runs.
fn check(prompt: &[i64], max_tokens: usize, vocab: usize, chunk: usize, max_len: usize) -> Result<(), GenerateError> {
    for (what, n) in [("vocabulary", vocab), ("prefill chunk", chunk), ("context (max_len)", max_len)] {
        if n == 0 {
            return Err(GenerateError::ZeroSize { what });
        }
    }
    if prompt.is_empty() {
        return Err(GenerateError::EmptyPrompt);
    }
    if let Some((index, &id)) = prompt.iter().enumerate().find(|(_, &id)| id < 0 || id as u64 >= vocab as u64) {
        return Err(GenerateError::PromptToken { index, id, vocab });
    }
    if prompt.len().saturating_add(max_tokens) > max_len {
        return Err(GenerateError::TooLong { prompt: prompt.len(), max_tokens, max_len });
    }
    Ok(())
}
