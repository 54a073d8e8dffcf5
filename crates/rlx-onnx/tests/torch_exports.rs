//! Graphs written by torch's TorchScript exporter (`tests/make_torch_models.py`):
//! a two-layer BERT with the sentence-transformers pooling tail, exported
//! as all-MiniLM-L6-v2 is, and a LeNet-shaped CNN. Each is imported with
//! and without the fusion passes, run in the interpreter, and compared
//! with the outputs onnxruntime gave (recorded next to the model). This is
//! the CI-sized stand-in for the opt-in `cargo xtask onnx-e2e`.
//!
//! Tolerance 1e-5 absolute: the outputs are below ~3 in magnitude, and
//! onnxruntime sums products and evaluates erf/exp in other orders and
//! approximations, which moves them by a few ulp (measured: below 1e-6);
//! a wrong element would be off by far more.

use std::path::Path;

use crate::common::{max_abs_diff, run_raw, WEIGHTS};
use rlx_onnx::{import, ImportOptions, Imported};

const TOL: f32 = 1e-5;

/// A recorded tensor as raw little-endian bytes (the interpreter's input
/// format) and, for outputs, as f32 values.
struct Recorded {
    name: String,
    bytes: Vec<u8>,
    values: Vec<f32>,
}

fn recorded(v: &serde_json::Value) -> Vec<Recorded> {
    v.as_object()
        .expect("an object of tensors")
        .iter()
        .map(|(name, t)| {
            let data = t["data"].as_array().expect("data");
            let (bytes, values) = match t["dtype"].as_str().expect("dtype") {
                "int64" => (data.iter().flat_map(|d| d.as_i64().expect("i64").to_le_bytes()).collect(), vec![]),
                "float32" => {
                    let v: Vec<f32> = data.iter().map(|d| d.as_f64().expect("f64") as f32).collect();
                    (v.iter().flat_map(|x| x.to_le_bytes()).collect(), v)
                }
                other => panic!("no {other} tensors in these fixtures"),
            };
            Recorded { name: name.clone(), bytes, values }
        })
        .collect()
}

/// Imports `model` (fused when `optimize`), runs it on the recorded inputs
/// and checks every output against onnxruntime's.
pub(crate) fn check(model: &str, optimize: bool) -> Imported {
    let data = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data");
    let text = std::fs::read_to_string(data.join(format!("{model}.expected.json"))).expect("expected outputs");
    let expected: serde_json::Value = serde_json::from_str(&text).expect("json");
    let (inputs, outputs) = (recorded(&expected["inputs"]), recorded(&expected["outputs"]));
    let mut opts = ImportOptions::new(WEIGHTS);
    opts.optimize = optimize;
    let imported = import(&data.join(format!("{model}.onnx")), &opts).expect("import");
    let feed: Vec<(&str, Vec<u8>)> = inputs.iter().map(|r| (r.name.as_str(), r.bytes.clone())).collect();
    let names: Vec<&str> = outputs.iter().map(|r| r.name.as_str()).collect();
    let got = run_raw(&format!("torch_{model}_{optimize}"), &imported, &feed, &names);
    for (want, got) in outputs.iter().zip(got) {
        let got: Vec<f32> = got.chunks_exact(4).map(|c| f32::from_le_bytes(c.try_into().unwrap())).collect();
        let err = max_abs_diff(&got, &want.values);
        assert!(err <= TOL, "{model} (optimize {optimize}) {}: max abs err {err:e}", want.name);
    }
    imported
}

pub(crate) fn count(imported: &Imported, kind: &str) -> usize {
    imported.sched_text.lines().filter(|l| l.starts_with(&format!("{kind} {{"))).count()
}

#[test]
fn tiny_bert_export_matches_onnxruntime_fused_and_unfused() {
    let fused = check("tiny_bert", true);
    check("tiny_bert", false);
    // The exporter's mask arithmetic folds away, and each layer becomes
    // projections, one attention, two residual LayerNorms and the FFN with
    // its GELU inside the product.
    assert_eq!(count(&fused, "Attention"), 2, "{}", fused.sched_text);
    assert_eq!(count(&fused, "FusedResidualLN"), 5, "{}", fused.sched_text);
    assert_eq!(fused.sched_text.matches("act: gelu").count(), 2, "{}", fused.sched_text);
    assert!(count(&fused, "Softmax") == 0 && count(&fused, "BatchedSgemm") == 0, "{}", fused.sched_text);
    // The planner stays at its lower bound.
    assert_eq!(fused.report.arena_bytes, fused.report.peak_live_bytes, "{}", fused.report);
}

#[test]
fn tiny_cnn_export_matches_onnxruntime() {
    let imported = check("tiny_cnn", true);
    // The whole chain in the blocked layout, read back once for the head.
    assert_eq!(count(&imported, "BlockedConv2D"), 2, "{}", imported.sched_text);
    assert_eq!(count(&imported, "BlockedPool2D"), 2, "{}", imported.sched_text);
    assert_eq!(count(&imported, "FromBlocked"), 1, "{}", imported.sched_text);
    // The report counts that one conversion, and says so.
    assert_eq!(imported.report.layout_conversions, 1);
    assert!(imported.report.to_string().ends_with(", 1 layout conversion(s)"), "{}", imported.report);
    check("tiny_cnn", false);
}
