//! The `bert_tiny` model against its independent reference outputs, and its CLI
//! contract.

use std::path::PathBuf;

use rlx_runtime::model::GeneratedModel;

use bert_tiny::Model;

fn dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

#[test]
fn outputs_match_the_reference() {
    // The encoder ends in LayerNorm, so outputs are O(1). Our f32 kernels
    // against numpy's float64: each output passes through dot products of
    // length <= 512 and 5 LayerNorms; each step adds ~1e-7 relative error,
    // so a few 1e-6 is expected and 1e-4 (the bound the project uses for
    // f32 encoders against onnxruntime) leaves ample margin. The test
    // prints the measured worst error.
    let worst = rlx_testkit::models::check_expected::<Model>(&dir(), 1e-4, 0.0);
    eprintln!("{}: worst abs error {worst:e}", Model::INFO.name);
}

#[test]
fn cli_contract() {
    rlx_testkit::models::check_cli::<Model>(env!("CARGO_BIN_EXE_bert_tiny"), &dir());
}

/// Instances may move to other threads and be shared by reference (the C
/// library's thread-safety note, docs/shipping.md, rests on this).
const _: () = {
    const fn send_and_sync<T: Send + Sync>() {}
    send_and_sync::<Model>();
};
