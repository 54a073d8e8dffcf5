//! AFL target `sched`: see `checks::sched` for what it runs and asserts.
//! Reproduce a finding with `target/release/sched < FILE` (after
//! `cargo afl build --release` in `fuzz/`).

fn main() {
    afl::fuzz!(|data: &[u8]| {
        rlx_fuzz::checks::sched(rlx_fuzz::workdir("sched"), data);
    });
}
