//! AFL target `weights`: see `checks::weights` for what it runs and asserts.
//! Reproduce a finding with `target/release/weights < FILE` (after
//! `cargo afl build --release` in `fuzz/`).

fn main() {
    afl::fuzz!(|data: &[u8]| {
        rlx_fuzz::checks::weights(rlx_fuzz::workdir("weights"), data);
    });
}
