//! AFL target `tokenizer`: see `checks::tokenizer` for what it runs and asserts.
//! Reproduce a finding with `target/release/tokenizer < FILE` (after
//! `cargo afl build --release` in `fuzz/`).

fn main() {
    afl::fuzz!(|data: &[u8]| {
        rlx_fuzz::checks::tokenizer(data);
    });
}
