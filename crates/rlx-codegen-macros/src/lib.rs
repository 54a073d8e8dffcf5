//! `model!("model.sched")`: expands to the same code `cargo xtask gen`
//! writes, for crates that prefer not to check generated code in.
//!
//! Use it inside a module: `mod model { rlx_codegen_macros::model!("model.sched"); }`.
//! The path is relative to the crate's manifest directory. Diagnostics
//! become a `compile_error!` carrying `path:line:col`, and the `.sched` file
//! and the weights are included with `include_bytes!`, so editing either
//! rebuilds the crate.

#![deny(clippy::undocumented_unsafe_blocks)]

use std::path::{Path, PathBuf};

use proc_macro::TokenStream;
use syn::{parse_macro_input, LitStr};

#[proc_macro]
pub fn model(input: TokenStream) -> TokenStream {
    let lit = parse_macro_input!(input as LitStr);
    let manifest = PathBuf::from(std::env::var("CARGO_MANIFEST_DIR").unwrap_or_else(|_| ".".into()));
    match rlx_codegen::expand(&manifest.join(lit.value()), &workspace_root(&manifest)) {
        Ok(tokens) => tokens.into(),
        Err(message) => syn::Error::new(lit.span(), message).to_compile_error().into(),
    }
}

/// The nearest ancestor whose `Cargo.toml` declares a workspace (the
/// crate's own directory when there is none), so paths in the generated
/// code match what `cargo xtask gen` writes.
fn workspace_root(manifest: &Path) -> PathBuf {
    manifest
        .ancestors()
        .find(|dir| std::fs::read_to_string(dir.join("Cargo.toml")).is_ok_and(|t| t.contains("[workspace]")))
        .unwrap_or(manifest)
        .to_path_buf()
}
