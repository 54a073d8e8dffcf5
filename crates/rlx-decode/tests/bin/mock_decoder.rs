//! `rlx-decode-mock`: the decoder CLI over the mock bigram model and the
//! llama_tiny tokenizer, for the process-level CLI tests (tests/cli.rs).
//! Vocabulary 512, prefill chunk 4, context 64.

#[allow(dead_code)]
#[path = "../common/mock.rs"]
mod mock;

fn main() -> std::process::ExitCode {
    rlx_decode::cli::main(mock::Bigram::new(512, 4, 64), include_bytes!("../../../../models/llama_tiny/tokenizer.json"))
}
