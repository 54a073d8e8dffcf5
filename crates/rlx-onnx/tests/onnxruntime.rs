//! Models written by the `onnx` package (tests/make_models.py), imported
//! and run in the interpreter, against the outputs onnxruntime gave for the
//! same inputs (recorded next to each model).
//!
//! Tolerance: onnxruntime and the interpreter sum products in different
//! orders and use different exp/erf approximations; on these small models
//! (k <= 16, values of magnitude <= ~4) the differences stay near 1e-6, so
//! 1e-5 absolute catches any wrong element while allowing that.

use std::path::Path;

use crate::common::{assert_close, run, WEIGHTS};
use rlx_onnx::{import, ImportOptions};

const TOL: f32 = 1e-5;

struct Tensor {
    shape: Vec<usize>,
    data: Vec<f32>,
}

fn tensors(v: &serde_json::Value) -> Vec<(String, Tensor)> {
    v.as_object()
        .expect("object")
        .iter()
        .map(|(name, t)| {
            let shape = t["shape"].as_array().unwrap().iter().map(|d| d.as_u64().unwrap() as usize).collect();
            let data = t["data"].as_array().unwrap().iter().map(|d| d.as_f64().unwrap() as f32).collect();
            (name.clone(), Tensor { shape, data })
        })
        .collect()
}

fn check(model: &str, shapes: Vec<(String, Vec<usize>)>) -> rlx_onnx::Imported {
    let data = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data");
    let expected: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(data.join(format!("{model}.expected.json"))).unwrap()).unwrap();
    let inputs = tensors(&expected["inputs"]);
    let outputs = tensors(&expected["outputs"]);
    let mut opts = ImportOptions::new(WEIGHTS);
    opts.shapes = shapes;
    let imported = import(&data.join(format!("{model}.onnx")), &opts).expect("import");
    let feed: Vec<(&str, &[f32])> = inputs.iter().map(|(n, t)| (n.as_str(), t.data.as_slice())).collect();
    let names: Vec<&str> = outputs.iter().map(|(n, _)| n.as_str()).collect();
    let got = run(&format!("ort_{model}"), &imported, &feed, &names);
    for ((name, want), got) in outputs.iter().zip(&got) {
        assert_eq!(got.len(), want.shape.iter().product::<usize>(), "{name}");
        assert_close(got, &want.data, TOL, &format!("{model} {name}"));
    }
    imported
}

#[test]
fn mlp_with_external_weights_matches_onnxruntime() {
    let imported = check("mlp_external", vec![("x".to_string(), vec![3, 8])]);
    assert!(imported.sched_text.contains("model mlp_external\n"));
    assert_eq!(imported.report.params, 4);
}

#[test]
fn attention_block_matches_onnxruntime() {
    let imported = check("attention_block", vec![]);
    // The exporter-style shape arithmetic folds away: no thunk for Shape,
    // Gather, Unsqueeze, Concat or the Reshapes.
    for kind in ["Concat", "Gather", "Copy"] {
        assert!(!imported.sched_text.contains(&format!("{kind} {{")), "{}", imported.sched_text);
    }
}

#[test]
fn mutated_models_never_panic() {
    // Byte flips, truncations and random fills of a real model: every one
    // must give Ok or an error, never a panic (untrusted input).
    let data = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data");
    let original = std::fs::read(data.join("attention_block.onnx")).unwrap();
    let opts = ImportOptions::new(WEIGHTS);
    let mut s: u64 = 0x2545_f491_4f6c_dd1d;
    let mut next = |m: usize| {
        s ^= s << 13;
        s ^= s >> 7;
        s ^= s << 17;
        (s % m as u64) as usize
    };
    let dir = crate::common::temp_dir("mutated");
    let mut errors = 0;
    for round in 0..3000 {
        let mut bytes = original.clone();
        match round % 3 {
            0 => {
                for _ in 0..1 + next(4) {
                    let i = next(bytes.len());
                    bytes[i] = next(256) as u8;
                }
            }
            1 => bytes.truncate(next(bytes.len())),
            _ => {
                let i = next(bytes.len());
                bytes[i] ^= 1 << next(8);
            }
        }
        match rlx_onnx::import_bytes(&bytes, &data, &opts) {
            Err(_) => errors += 1,
            // Whatever the importer accepts, it must emit a valid schedule.
            Ok(imported) => {
                std::fs::write(dir.join(WEIGHTS), &imported.weights).unwrap();
                if let Err(d) = rlx_sched::check_source(&imported.sched_text, &dir) {
                    panic!("{}\n{}", d.render("m.sched", &imported.sched_text), imported.sched_text);
                }
            }
        }
    }
    let _ = std::fs::remove_dir_all(&dir);
    // Most mutations break the model; a test that never saw an error would
    // not be exercising the error paths.
    assert!(errors > 1000, "only {errors} of 3000 mutations were rejected");
}
