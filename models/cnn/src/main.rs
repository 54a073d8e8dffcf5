//! The `cnn` model binary: `cnn --input NAME=PATH.npy ... [--output NAME=PATH.npy]`.

fn main() -> std::process::ExitCode {
    rlx_runtime::cli::main::<cnn::Model>()
}
