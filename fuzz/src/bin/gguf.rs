//! AFL target `gguf`: see `checks::gguf` for what it runs and asserts.
//! Reproduce a finding with `target/release/gguf < FILE` (after
//! `cargo afl build --release` in `fuzz/`).

fn main() {
    afl::fuzz!(|data: &[u8]| {
        rlx_fuzz::checks::gguf(rlx_fuzz::workdir("gguf"), data);
    });
}
