//! The `mlp` model against its independent reference outputs, and its CLI
//! contract (one input set per process, and batches in one process).

use std::path::PathBuf;

use rlx_runtime::model::GeneratedModel;

use mlp::Model;

fn dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

#[test]
fn outputs_match_the_reference() {
    // Probabilities in [0, 1] from f32 kernels against numpy's float64:
    // dot products of length <= 128 carry ~1e-6 relative error, which
    // softmax keeps at that scale; 1e-5 absolute leaves 10x margin.
    let worst = rlx_testkit::models::check_expected::<Model>(&dir(), 1e-5, 0.0);
    eprintln!("{}: worst abs error {worst:e}", Model::INFO.name);
}

#[test]
fn accuracy_matches_the_python_reference() {
    let expected: f64 = std::fs::read_to_string(dir().join("expected/accuracy.txt")).unwrap().trim().parse().unwrap();
    let got = rlx_testkit::models::accuracy::<Model>(&dir(), "probs");
    assert!((got - expected).abs() < 1e-9, "accuracy {got} != python reference {expected}");
}

#[test]
fn cli_contract() {
    rlx_testkit::models::check_cli::<Model>(env!("CARGO_BIN_EXE_mlp"), &dir());
}

#[test]
fn cli_batch_of_a_thousand_inputs_matches_single_runs() {
    rlx_testkit::batch::check_batch_cli::<Model>(env!("CARGO_BIN_EXE_mlp"), &dir(), 1000);
}

#[test]
fn cli_batch_reports_bad_inputs_and_goes_on() {
    rlx_testkit::batch::check_batch_failures::<Model>(env!("CARGO_BIN_EXE_mlp"), &dir());
}

#[test]
fn cli_batch_takes_input_sets_as_directories() {
    rlx_testkit::batch::check_batch_dirs::<Model>(env!("CARGO_BIN_EXE_mlp"), &dir());
}

/// Instances may move to other threads and be shared by reference (the C
/// library's thread-safety note, docs/shipping.md, rests on this).
const _: () = {
    const fn send_and_sync<T: Send + Sync>() {}
    send_and_sync::<Model>();
};
