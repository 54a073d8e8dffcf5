//! AFL target `tokenizer`: see `checks::tokenizer` for what it runs and asserts.
//! Reproduce a finding with `target/release/tokenizer < FILE` (after
//! `cargo afl build --release` in `fuzz/`).

fn main() {
    // Chat templates render in a child process running this binary.
    rlx_decode::chat::serve_render_request();
    afl::fuzz!(|data: &[u8]| {
        rlx_fuzz::checks::tokenizer(rlx_fuzz::workdir("tokenizer"), data);
    });
}
