//! Builds ONNX models in Rust and runs imported schedules in the
//! reference interpreter.

#![allow(dead_code)]

pub mod typed;

use std::path::PathBuf;

use prost::Message as _;
use rlx_interp::Interpreter;
use rlx_onnx::proto::*;
use rlx_onnx::{import_bytes, ImportOptions, Imported};

pub const WEIGHTS: &str = "weights.safetensors";

pub fn vi(name: &str, dims: &[i64]) -> ValueInfoProto {
    vi_typed(name, data_type::FLOAT, dims.iter().map(|&d| DimensionValue::DimValue(d)).collect())
}

pub fn vi_typed(name: &str, elem_type: i32, dims: Vec<DimensionValue>) -> ValueInfoProto {
    ValueInfoProto {
        name: name.to_string(),
        r#type: Some(TypeProto {
            tensor_type: Some(TypeProtoTensor {
                elem_type,
                shape: Some(TensorShapeProto {
                    dim: dims.into_iter().map(|v| Dimension { value: Some(v), denotation: String::new() }).collect(),
                }),
            }),
            denotation: String::new(),
        }),
        doc_string: String::new(),
    }
}

/// An f32 initializer stored in `raw_data`.
pub fn init_raw(name: &str, dims: &[i64], data: &[f32]) -> TensorProto {
    TensorProto {
        name: name.to_string(),
        dims: dims.to_vec(),
        data_type: data_type::FLOAT,
        raw_data: data.iter().flat_map(|v| v.to_le_bytes()).collect(),
        ..Default::default()
    }
}

/// An f32 initializer stored in `float_data`.
pub fn init_typed(name: &str, dims: &[i64], data: &[f32]) -> TensorProto {
    TensorProto {
        name: name.to_string(),
        dims: dims.to_vec(),
        data_type: data_type::FLOAT,
        float_data: data.to_vec(),
        ..Default::default()
    }
}

/// An int64 initializer stored in `int64_data`.
pub fn init_i64(name: &str, dims: &[i64], data: &[i64]) -> TensorProto {
    TensorProto {
        name: name.to_string(),
        dims: dims.to_vec(),
        data_type: data_type::INT64,
        int64_data: data.to_vec(),
        ..Default::default()
    }
}

pub fn attr_i(name: &str, i: i64) -> AttributeProto {
    AttributeProto { name: name.to_string(), r#type: AttributeType::Int as i32, i, ..Default::default() }
}

pub fn attr_s(name: &str, s: &str) -> AttributeProto {
    AttributeProto {
        name: name.to_string(),
        r#type: AttributeType::String as i32,
        s: s.as_bytes().to_vec(),
        ..Default::default()
    }
}

pub fn attr_f(name: &str, f: f32) -> AttributeProto {
    AttributeProto { name: name.to_string(), r#type: AttributeType::Float as i32, f, ..Default::default() }
}

pub fn attr_ints(name: &str, ints: &[i64]) -> AttributeProto {
    AttributeProto {
        name: name.to_string(),
        r#type: AttributeType::Ints as i32,
        ints: ints.to_vec(),
        ..Default::default()
    }
}

pub fn node(op: &str, name: &str, inputs: &[&str], outputs: &[&str], attrs: Vec<AttributeProto>) -> NodeProto {
    NodeProto {
        input: inputs.iter().map(|s| s.to_string()).collect(),
        output: outputs.iter().map(|s| s.to_string()).collect(),
        name: name.to_string(),
        op_type: op.to_string(),
        attribute: attrs,
        ..Default::default()
    }
}

pub fn model(
    nodes: Vec<NodeProto>,
    inits: Vec<TensorProto>,
    inputs: Vec<ValueInfoProto>,
    outputs: Vec<ValueInfoProto>,
    opset: i64,
) -> ModelProto {
    ModelProto {
        ir_version: 8,
        opset_import: vec![OperatorSetIdProto { domain: String::new(), version: opset }],
        producer_name: "rlx-onnx tests".to_string(),
        graph: Some(GraphProto {
            node: nodes,
            name: "test_graph".to_string(),
            initializer: inits,
            input: inputs,
            output: outputs,
            ..Default::default()
        }),
        ..Default::default()
    }
}

/// A fresh empty directory under the system temp dir.
pub fn temp_dir(test: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("rlx-onnx-{}-{test}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).expect("create temp dir");
    dir
}

/// Encodes and imports a model built in the test.
pub fn import_model(m: &ModelProto, opts: &ImportOptions) -> Result<Imported, rlx_onnx::ImportError> {
    import_bytes(&m.encode_to_vec(), std::path::Path::new("."), opts)
}

/// Writes the schedule and its weights, validates them (no errors, no
/// warnings), runs them in the interpreter and returns the outputs.
pub fn run(test: &str, imported: &Imported, inputs: &[(&str, &[f32])], outputs: &[&str]) -> Vec<Vec<f32>> {
    run_bytes(test, imported, inputs, outputs)
        .into_iter()
        .map(|bytes| bytes.chunks_exact(4).map(|c| f32::from_le_bytes(c.try_into().unwrap())).collect())
        .collect()
}

/// As [`run`], returning each output's raw bytes (for i64 outputs).
pub fn run_bytes(test: &str, imported: &Imported, inputs: &[(&str, &[f32])], outputs: &[&str]) -> Vec<Vec<u8>> {
    let dir = temp_dir(test);
    std::fs::write(dir.join("model.sched"), &imported.sched_text).expect("write sched");
    std::fs::write(dir.join(WEIGHTS), &imported.weights).expect("write weights");
    let checked = match rlx_sched::check_source(&imported.sched_text, &dir) {
        Ok(c) => c,
        Err(d) => panic!(
            "schedule does not validate:\n{}\n{}",
            d.render("model.sched", &imported.sched_text),
            imported.sched_text
        ),
    };
    assert!(
        checked.warnings.0.is_empty(),
        "warnings:\n{}\n{}",
        checked.warnings.render("model.sched", &imported.sched_text),
        imported.sched_text
    );
    let data_offset = checked.schedule.weights().as_ref().expect("weights line").data_offset;
    let mut interp = Interpreter::new(checked.schedule, &imported.weights[data_offset..]).expect("interpreter");
    for (name, data) in inputs {
        let bytes: Vec<u8> = data.iter().flat_map(|v| v.to_le_bytes()).collect();
        interp.set_bytes(name, &bytes).expect("set input");
    }
    interp.run();
    let result = outputs.iter().map(|name| interp.bytes(name).expect("output").to_vec()).collect();
    let _ = std::fs::remove_dir_all(&dir);
    result
}

/// Deterministic pseudo-random values in [-1, 1).
pub fn values(n: usize, seed: u64) -> Vec<f32> {
    let mut s = seed.wrapping_mul(0x9e37_79b9_7f4a_7c15) | 1;
    (0..n)
        .map(|_| {
            s ^= s << 13;
            s ^= s >> 7;
            s ^= s << 17;
            ((s >> 40) as f32 / (1u64 << 24) as f32) * 2.0 - 1.0
        })
        .collect()
}

/// `c[m, n] = a[m, k] @ b[k, n]`, in f64 then rounded.
pub fn matmul(a: &[f32], b: &[f32], m: usize, k: usize, n: usize) -> Vec<f32> {
    let mut c = vec![0f32; m * n];
    for i in 0..m {
        for j in 0..n {
            let s: f64 = (0..k).map(|p| f64::from(a[i * k + p]) * f64::from(b[p * n + j])).sum();
            c[i * n + j] = s as f32;
        }
    }
    c
}

/// Transposes a row-major `[r, c]` matrix.
pub fn transpose2(a: &[f32], r: usize, c: usize) -> Vec<f32> {
    let mut t = vec![0f32; r * c];
    for i in 0..r {
        for j in 0..c {
            t[j * r + i] = a[i * c + j];
        }
    }
    t
}

pub fn softmax_rows(x: &[f32], cols: usize) -> Vec<f32> {
    x.chunks(cols)
        .flat_map(|row| {
            let max = row.iter().fold(f32::NEG_INFINITY, |a, &b| a.max(b));
            let e: Vec<f64> = row.iter().map(|&v| f64::from(v - max).exp()).collect();
            let sum: f64 = e.iter().sum();
            e.into_iter().map(move |v| (v / sum) as f32)
        })
        .collect()
}

pub fn assert_close(got: &[f32], want: &[f32], tol: f32, what: &str) {
    assert_eq!(got.len(), want.len(), "{what}: length");
    for (i, (g, w)) in got.iter().zip(want).enumerate() {
        assert!((g - w).abs() <= tol, "{what}[{i}]: got {g}, want {w} (tolerance {tol})");
    }
}

/// Imports `m` twice: with the fusion passes (the default) and without
/// (`optimize: false`, the reference the fused schedule is tested against).
pub fn import_fused_and_unfused(m: &ModelProto) -> (Imported, Imported) {
    // Without prepacking, both sides run the products on the same BLAS
    // kernel, so fusion must not change a bit (`tests/prepack.rs` covers
    // the packed products).
    let mut opts = ImportOptions::new(WEIGHTS);
    opts.prepack = false;
    let fused = import_model(m, &opts).expect("import with fusion");
    opts.optimize = false;
    let unfused = import_model(m, &opts).expect("import without fusion");
    (fused, unfused)
}

/// How many thunks of `kind` a schedule has.
pub fn count_kind(sched_text: &str, kind: &str) -> usize {
    let prefix = format!("{kind} {{");
    sched_text.lines().filter(|l| l.starts_with(&prefix)).count()
}

/// As [`run_bytes`], with inputs given as raw little-endian bytes (for
/// integer inputs).
pub fn run_raw(test: &str, imported: &Imported, inputs: &[(&str, Vec<u8>)], outputs: &[&str]) -> Vec<Vec<u8>> {
    let mut interp = interpreter(test, imported);
    for (name, bytes) in inputs {
        interp.set_bytes(name, bytes).expect("set input");
    }
    interp.run();
    outputs.iter().map(|name| interp.bytes(name).expect("output").to_vec()).collect()
}

/// The interpreter over an imported schedule, validated against its
/// weights (written to a temporary directory for the validator).
pub fn interpreter<'w>(test: &str, imported: &'w Imported) -> Interpreter<'w> {
    let dir = temp_dir(test);
    std::fs::write(dir.join(WEIGHTS), &imported.weights).expect("write weights");
    let checked = rlx_sched::check_source(&imported.sched_text, &dir)
        .unwrap_or_else(|d| panic!("schedule does not validate:\n{}", d.render("model.sched", &imported.sched_text)));
    let _ = std::fs::remove_dir_all(&dir);
    let data_offset = checked.schedule.weights().as_ref().expect("weights line").data_offset;
    Interpreter::new(checked.schedule, &imported.weights[data_offset..]).expect("interpreter")
}

/// Runs `prompt` from position 0 through a decoder's `prefill` entry
/// (one chunk of `chunk` tokens, zero-padded) and returns the logits row
/// of its last token.
pub fn prefill_last_row(interp: &mut Interpreter<'_>, prompt: &[i64], chunk: usize, vocab: usize) -> Vec<f32> {
    let entry = interp.entry("prefill").expect("a prefill entry");
    let mut tokens = vec![0i64; chunk];
    tokens[..prompt.len()].copy_from_slice(prompt);
    interp.set_bytes("prefill.tokens", &tokens.iter().flat_map(|t| t.to_le_bytes()).collect::<Vec<_>>()).unwrap();
    interp.set_bytes("pos", &0i64.to_le_bytes()).unwrap();
    interp.run_entry(entry);
    let rows = interp.bytes("prefill.logits").unwrap();
    rows[(prompt.len() - 1) * vocab * 4..prompt.len() * vocab * 4]
        .chunks_exact(4)
        .map(|c| f32::from_le_bytes(c.try_into().unwrap()))
        .collect()
}

/// The largest absolute difference between two equally long slices:
/// equal values (infinities included) and two NaNs differ by 0, a NaN
/// against a number by infinity.
pub fn max_abs_diff(a: &[f32], b: &[f32]) -> f32 {
    assert_eq!(a.len(), b.len(), "lengths differ");
    let diff = |x: f32, y: f32| {
        if x == y || (x.is_nan() && y.is_nan()) {
            0.0
        } else if x.is_nan() || y.is_nan() {
            f32::INFINITY
        } else {
            (x - y).abs()
        }
    };
    a.iter().zip(b).map(|(&x, &y)| diff(x, y)).fold(0.0, f32::max)
}

/// Asserts two f32 outputs are the same bits, NaN payloads included.
pub fn assert_identical_bits(got: &[f32], want: &[f32], what: &str) {
    let bits = |v: &[f32]| v.iter().map(|f| f.to_bits()).collect::<Vec<_>>();
    assert_eq!(bits(got), bits(want), "{what}");
}
