//! The `mlp` model binary: `mlp --input NAME=PATH.npy ... [--output NAME=PATH.npy]`.

#[rustfmt::skip]
#[allow(clippy::all, clippy::pedantic, unused, missing_docs)]
mod generated;

fn main() -> std::process::ExitCode {
    rlx_runtime::cli::main::<generated::Model>()
}
