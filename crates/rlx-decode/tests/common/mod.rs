//! What the integration tests share: a mock decoder and the bundled
//! tokenizer.
#![allow(dead_code)]

pub mod mock;

/// The llama_tiny tokenizer (vocabulary 512, `<|endoftext|>` = 0).
pub const TOKENIZER_JSON: &[u8] = include_bytes!("../../../../models/llama_tiny/tokenizer.json");
/// Ids the Python `tokenizers` package gives for a few strings.
pub const TOKENIZER_CASES: &str = include_str!("../../../../models/llama_tiny/tokenizer_cases.json");
