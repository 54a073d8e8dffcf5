//! `chat-renderer`: the process the tokenizer fuzz target of
//! `tests/mutation.rs` renders chat templates in, as a decoder binary
//! renders them in a copy of itself (`rlx_decode::ChildRenderer`).

fn main() -> std::process::ExitCode {
    rlx_decode::chat::serve_render_request();
    eprintln!("chat-renderer: started by rlx_decode::ChildRenderer only");
    std::process::ExitCode::from(2)
}
