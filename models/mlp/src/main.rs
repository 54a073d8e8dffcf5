//! The `mlp` model binary: `mlp --input NAME=PATH.npy ... [--output NAME=PATH.npy]`.

fn main() -> std::process::ExitCode {
    rlx_runtime::cli::main::<mlp::Model>()
}
