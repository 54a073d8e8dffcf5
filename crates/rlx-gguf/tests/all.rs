//! The crate's integration tests, one binary (`Cargo.toml`).

mod dequantize;
mod llama_tiny;
mod malformed;
