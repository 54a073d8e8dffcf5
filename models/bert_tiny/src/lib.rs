//! The `bert_tiny` model, compiled ahead of time by rlx: the generated code
//! (`src/generated.rs`, written by `cargo xtask gen`), compiled once for the
//! binary, the tests and any crate that links the model.

#[rustfmt::skip]
#[allow(clippy::all, clippy::pedantic, unused, missing_docs)]
mod generated;

pub use generated::*;
pub use rlx_runtime::model::GeneratedModel;
