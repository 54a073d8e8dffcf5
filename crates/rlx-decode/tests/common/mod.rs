//! What the integration tests share: a mock decoder and the bundled
//! tokenizer.
#![allow(dead_code)]

pub mod mock;

/// The llama_tiny tokenizer (vocabulary 512, `<|endoftext|>` = 0).
pub const TOKENIZER_JSON: &[u8] = include_bytes!("../../../../models/llama_tiny/tokenizer.json");
/// The llama_tiny tokenizer and a generation config naming no end-of-reply
/// ids and no chat template: generation stops at the tokenizer's
/// `<|endoftext|>`.
pub const FILES: rlx_decode::cli::Embedded<'static> =
    rlx_decode::cli::Embedded { tokenizer_json: TOKENIZER_JSON, generation_json: "{}" };
/// Ids the Python `tokenizers` package gives for a few strings.
pub const TOKENIZER_CASES: &str = include_str!("../../../../models/llama_tiny/tokenizer_cases.json");
