//! AFL target `sched_run`: see `checks::sched_run` for what it runs and asserts.
//! Reproduce a finding with `target/release/sched_run < FILE` (after
//! `cargo afl build --release` in `fuzz/`).

fn main() {
    afl::fuzz!(|data: &[u8]| {
        rlx_fuzz::checks::sched_run(rlx_fuzz::workdir("sched_run"), data);
    });
}
