//! The `llama_tiny` decoder, compiled ahead of time by rlx: one decoder step
//! (the generated code in `src/generated.rs`, written by `cargo xtask gen`)
//! over a KV cache held in `state` buffers of the arena, with a `decode`
//! entry (`run`) and a `prefill` entry (`run_prefill`); see `docs/decoding.md`.

#[rustfmt::skip]
#[allow(clippy::all, clippy::pedantic, unused, missing_docs)]
mod generated;

pub use generated::*;
pub use rlx_runtime::model::GeneratedModel;
