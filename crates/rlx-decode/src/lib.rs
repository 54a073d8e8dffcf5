//! The model-independent half of a decoder binary: sampling, the
//! tokenizer, the generation loop and its command line.
//!
//! A decoder's generated code implements [`StepModel`] (a transformer with
//! a KV cache, driven one prefill chunk or one token at a time); its
//! `main.rs` builds it once the arguments are good (so `--help` needs no
//! weights and missing weights are one error line, exit code 2):
//!
//! ```ignore
//! fn main() -> std::process::ExitCode {
//!     use llama_tiny::GeneratedModel;
//!     let make = || {
//!         let model = llama_tiny::Model::try_new().map_err(|e| e.to_string())?;
//!         rlx_decode::GeneratedStep::new(model).map_err(|e| e.to_string())
//!     };
//!     let files = rlx_decode::cli::Embedded {
//!         tokenizer_json: include_bytes!("../tokenizer.json"),
//!         generation_json: include_str!("../generation.json"),
//!     };
//!     rlx_decode::cli::main_with(make, files)
//! }
//! ```
//!
//! Ordinary (one-shot) model binaries do not link this crate.
//!
//! # Prompt handling
//!
//! The prompt is cut into chunks of [`StepModel::prefill_chunk`] tokens and
//! each chunk is one [`StepModel::prefill`] call at positions
//! `pos..pos + chunk`. The last chunk is padded with token 0: the padded
//! rows write cache rows past the prompt, which no later query sees before
//! a decode step overwrites them, because attention is causal over
//! `0..=pos`. When the padding would run past the cache, the last chunk's
//! tokens run as [`StepModel::decode`] steps instead. The first generated token is sampled from the logits row of
//! the last real prompt token; every later one from a
//! [`StepModel::decode`] step that fed the token before it. The last
//! generated token is never fed (nothing would read its logits).
//!
//! A call needs `prompt + max_tokens <= max_len`, checked before the model
//! runs ([`GenerateError`]).
//!
//! # Stopping
//!
//! Generation stops after `max_tokens` tokens, or earlier when the sampled
//! token is one of the checkpoint's end-of-reply ids (`eos_token_id` of its
//! `generation_config.json` or `config.json`, kept in the crate's
//! `generation.json`: [`generation`]), or, when the checkpoint names none,
//! the tokenizer's end-of-text token (a special added token named one of
//! [`tokenizer::END_OF_TEXT`], e.g. `<|endoftext|>`); that token is not
//! printed. Without either, generation runs to `max_tokens`.
//!
//! See docs/decoding.md for the sampling semantics and the CLI.

pub mod chat;
pub mod cli;
pub mod generate;
pub mod generation;
pub mod sampler;
pub mod step;
pub mod tokenizer;

pub use chat::{ChatError, ChatTemplate, ChildRenderer, Message, RenderLimits};
pub use generate::{generate, generate_from_ids, generate_ids, GenerateError, Stats, Token};
pub use generation::{GenerationConfig, GenerationError};
pub use sampler::{SampleError, Sampler, SamplerConfig};
pub use step::{GeneratedStep, StepError};
pub use tokenizer::{TextStream, Tokenizer, TokenizerError};

/// The contract a generated decoder implements: a transformer whose KV
/// cache lives inside the model, run one prefill chunk or one token at a
/// time. Returned logits borrow the model's arena; they are valid until the
/// next call.
pub trait StepModel {
    /// Largest number of positions the KV cache holds.
    fn max_len(&self) -> usize;
    /// Logits per token.
    fn vocab(&self) -> usize;
    /// Tokens one `prefill` call consumes.
    fn prefill_chunk(&self) -> usize;
    /// Forgets every cached position (zeroes the KV cache).
    fn reset(&mut self);
    /// Runs `chunk` (exactly `prefill_chunk()` tokens) at positions
    /// `pos..pos + chunk.len()`; returns the logits of every row,
    /// `chunk.len() * vocab()` floats, row-major.
    fn prefill(&mut self, chunk: &[i64], pos: usize) -> &[f32];
    /// Runs one token at position `pos`; returns its `vocab()` logits.
    fn decode(&mut self, token: i64, pos: usize) -> &[f32];
}

impl<M: StepModel + ?Sized> StepModel for &mut M {
    fn max_len(&self) -> usize {
        (**self).max_len()
    }
    fn vocab(&self) -> usize {
        (**self).vocab()
    }
    fn prefill_chunk(&self) -> usize {
        (**self).prefill_chunk()
    }
    fn reset(&mut self) {
        (**self).reset()
    }
    fn prefill(&mut self, chunk: &[i64], pos: usize) -> &[f32] {
        (**self).prefill(chunk, pos)
    }
    fn decode(&mut self, token: i64, pos: usize) -> &[f32] {
        (**self).decode(token, pos)
    }
}
