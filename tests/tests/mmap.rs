//! Weights above the size threshold are memory-mapped from a side file:
//! the mapped model computes exactly what the embedded one does, and a
//! missing or mismatched side file is an error, not a panic.

use std::path::Path;

use rlx_runtime::model::GeneratedModel;

#[path = "../../models/mlp/src/generated.rs"]
#[rustfmt::skip]
#[allow(clippy::all, unused, missing_docs)]
mod embedded;

#[test]
fn mapped_weights_match_embedded_weights_and_errors_are_reported() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../models/mlp");
    let samples = rlx_tests::models::load_samples::<embedded::Model>(&dir);

    // One test owns the environment variable, so nothing races on it.
    std::env::set_var("RLX_WEIGHTS_DIR", &dir);
    let mut mapped = rlx_tests::mmap_mlp::Model::try_new().expect("the side file maps");
    let mut inline = embedded::Model::new();
    for i in 0..samples.count {
        rlx_tests::models::set_sample(&mut mapped, &samples, i);
        rlx_tests::models::set_sample(&mut inline, &samples, i);
        mapped.run();
        inline.run();
        assert_eq!(mapped.arena(), inline.arena(), "sample {i}");
    }

    let empty = std::env::temp_dir().join(format!("rlx-no-weights-{}", std::process::id()));
    std::fs::create_dir_all(&empty).unwrap();
    std::env::set_var("RLX_WEIGHTS_DIR", &empty);
    let err = rlx_tests::mmap_mlp::Model::try_new().err().expect("a missing side file is an error");
    assert!(err.to_string().contains("weights.safetensors"), "{err}");

    // A file of the right name but other contents fails the sha256 check.
    std::fs::copy(dir.join("../cnn/weights.safetensors"), empty.join("weights.safetensors")).unwrap();
    let err = rlx_tests::mmap_mlp::Model::try_new().err().expect("other weights are an error");
    assert!(err.to_string().contains("sha256") || err.to_string().contains("outside"), "{err}");
    std::env::remove_var("RLX_WEIGHTS_DIR");
    let _ = std::fs::remove_dir_all(&empty);
}
