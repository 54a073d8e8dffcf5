//! The example application on the model's samples: its probabilities match
//! the numpy reference (`models/mlp/expected/probs.npy`, the model test's
//! 1e-5 bound), and classifiers on other threads agree with one here.

use std::path::PathBuf;

use use_mlp::{Classifier, Image};

fn model_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../models/mlp")
}

fn f32s(bytes: &[u8]) -> Vec<f32> {
    bytes.chunks_exact(4).map(|c| f32::from_le_bytes(c.try_into().unwrap())).collect()
}

fn images() -> Vec<Image> {
    let x = rlx_runtime::npy::read_npy(&model_dir().join("samples/x.npy")).unwrap();
    f32s(&x.bytes).chunks_exact(64).map(|c| c.try_into().unwrap()).collect()
}

#[test]
fn probabilities_match_the_reference() {
    let expected = rlx_runtime::npy::read_npy(&model_dir().join("expected/probs.npy")).unwrap();
    let expected = f32s(&expected.bytes);
    let images = images();
    assert!(!images.is_empty());
    let mut classifier = Classifier::new();
    for (i, image) in images.iter().enumerate() {
        let got = classifier.probabilities(image);
        for (j, (g, e)) in got.iter().zip(&expected[i * 10..(i + 1) * 10]).enumerate() {
            assert!((g - e).abs() <= 1e-5, "sample {i}, digit {j}: got {g}, expected {e}");
        }
    }
}

#[test]
fn classifiers_on_other_threads_agree() {
    let images = images();
    let mut here = Classifier::new();
    let local: Vec<_> = images.iter().map(|im| here.classify(im)).collect();
    let remote: Vec<_> = std::thread::scope(|s| {
        let halves = images.chunks(images.len().div_ceil(2)).map(|part| {
            s.spawn(move || {
                let mut c = Classifier::new();
                part.iter().map(|im| c.classify(im)).collect::<Vec<_>>()
            })
        });
        halves.collect::<Vec<_>>().into_iter().flat_map(|h| h.join().unwrap()).collect()
    });
    assert_eq!(local, remote);
}
