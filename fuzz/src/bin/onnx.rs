//! AFL target `onnx`: see `checks::onnx` for what it runs and asserts.
//! Reproduce a finding with `target/release/onnx < FILE` (after
//! `cargo afl build --release` in `fuzz/`).

fn main() {
    afl::fuzz!(|data: &[u8]| {
        rlx_fuzz::checks::onnx(rlx_fuzz::workdir("onnx"), data);
    });
}
