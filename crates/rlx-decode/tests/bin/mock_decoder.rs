//! `rlx-decode-mock`: the decoder CLI over the mock bigram model and the
//! llama_tiny tokenizer, for the process-level CLI tests (tests/cli.rs).
//! Vocabulary 512, prefill chunk 4, context 64; `mock_generation.json`
//! gives it a ChatML-style template and no end-of-reply ids (the
//! tokenizer's `<|endoftext|>` stops it).

#[allow(dead_code)]
#[path = "../common/mock.rs"]
mod mock;

fn main() -> std::process::ExitCode {
    let files = rlx_decode::cli::Embedded {
        tokenizer_json: include_bytes!("../../../../models/llama_tiny/tokenizer.json"),
        generation_json: include_str!("mock_generation.json"),
    };
    rlx_decode::cli::main(mock::Bigram::new(512, 4, 64), files)
}
