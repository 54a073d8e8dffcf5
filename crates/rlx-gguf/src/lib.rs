//! GGUF, llama.cpp's model format: a reader ([`Gguf`]), ggml's block
//! types and their dequantizers ([`quants`]), and a Llama GGUF mapped to
//! the Hugging Face checkpoint the Llama importer reads ([`llama`],
//! [`tokenizer`]; `docs/decoding.md`, "GGUF").

pub mod error;
pub mod llama;
pub mod quants;
pub mod reader;
pub mod tokenizer;
pub mod types;

pub use error::GgufError;
pub use llama::{llama_checkpoint, HfCheckpoint};
pub use reader::{Gguf, TensorInfo, Value};
pub use types::GgmlType;
