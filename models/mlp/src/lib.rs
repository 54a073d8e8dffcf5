//! The `mlp` model, compiled ahead of time by rlx: the generated code
//! (`src/generated.rs`, written by `cargo xtask gen`), compiled once for the
//! binary, the tests and any crate that links the model.

#[rustfmt::skip]
#[allow(clippy::all, clippy::pedantic, unused, missing_docs)]
mod generated;

/// The C library's functions (`include/mlp.h`), generated from the same
/// schedule; built by `cargo xtask build mlp --lib`.
#[cfg(feature = "capi")]
#[rustfmt::skip]
#[allow(clippy::all, clippy::pedantic, missing_docs)]
pub mod capi;

pub use generated::*;
pub use rlx_runtime::model::GeneratedModel;
