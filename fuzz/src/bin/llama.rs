//! AFL target `llama`: see `checks::llama` for what it runs and asserts.
//! Reproduce a finding with `target/release/llama < FILE` (after
//! `cargo afl build --release` in `fuzz/`).

fn main() {
    afl::fuzz!(|data: &[u8]| {
        rlx_fuzz::checks::llama(rlx_fuzz::workdir("llama"), data);
    });
}
