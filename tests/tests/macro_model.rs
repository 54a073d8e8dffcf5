//! `model!("...")` compiles a schedule at build time; the result runs bit
//! for bit like the checked-in generated code, and a broken schedule is a
//! `path:line:col` diagnostic.

use std::path::Path;

use rlx_runtime::model::GeneratedModel;

mod from_macro {
    rlx_codegen_macros::model!("../models/cnn/model.sched");
}

#[path = "../../models/cnn/src/generated.rs"]
#[rustfmt::skip]
#[allow(clippy::all, unused, missing_docs)]
mod checked_in;

#[test]
fn macro_model_matches_the_checked_in_code() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../models/cnn");
    let samples = rlx_tests::models::load_samples::<checked_in::Model>(&dir);
    let mut a = from_macro::Model::new();
    let mut b = checked_in::Model::new();
    assert_eq!(from_macro::Model::INFO, checked_in::Model::INFO);
    for i in 0..samples.count {
        rlx_tests::models::set_sample(&mut a, &samples, i);
        rlx_tests::models::set_sample(&mut b, &samples, i);
        a.run();
        b.run();
        assert_eq!(a.arena(), b.arena(), "sample {i}");
    }
}

#[test]
fn a_broken_schedule_expands_to_a_located_error() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).parent().unwrap();
    let sched = root.join("tests/sched/err/syntax_unknown_field.sched");
    let err = rlx_codegen::expand(&sched, root).expect_err("the schedule is invalid").to_string();
    assert!(err.starts_with("tests/sched/err/syntax_unknown_field.sched:"), "{err}");
    assert!(err.contains("error:") && err.contains('^'), "{err}");
}
