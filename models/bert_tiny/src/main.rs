//! The `bert_tiny` model binary: `bert_tiny --input NAME=PATH.npy ... [--output NAME=PATH.npy]`.

fn main() -> std::process::ExitCode {
    rlx_runtime::cli::main::<bert_tiny::Model>()
}
