//! AFL target `npy`: see `checks::npy` for what it runs and asserts.
//! Reproduce a finding with `target/release/npy < FILE` (after
//! `cargo afl build --release` in `fuzz/`).

fn main() {
    afl::fuzz!(|data: &[u8]| {
        rlx_fuzz::checks::npy(rlx_fuzz::workdir("npy"), data);
    });
}
