//! Models stored in 2-byte floats: f16 / bf16 initializers import with
//! their product weights kept in 2 bytes (`PackedGemmHalf`, lossless: the
//! values came from the file) and f32 compute; 2-byte graph inputs and
//! outputs keep their type at the model's interface (`docs/onnx.md`,
//! "2-byte floats").

mod common;

use common::*;
use half::{bf16, f16};
use rlx_onnx::proto::*;
use rlx_onnx::ImportOptions;

const M: usize = 3;
const K: usize = 8;
const N: usize = 20;

fn half_init(name: &str, dims: &[i64], bits: &[u16], data_type: i32, raw: bool) -> TensorProto {
    TensorProto {
        name: name.to_string(),
        dims: dims.to_vec(),
        data_type,
        raw_data: if raw { bits.iter().flat_map(|b| b.to_le_bytes()).collect() } else { Vec::new() },
        int32_data: if raw { Vec::new() } else { bits.iter().map(|&b| i32::from(b)).collect() },
        ..Default::default()
    }
}

fn vi_of(name: &str, elem: i32, dims: &[i64]) -> ValueInfoProto {
    vi_typed(name, elem, dims.iter().map(|&d| DimensionValue::DimValue(d)).collect())
}

/// `y = relu(x @ W + b)` in the layout a float16 conversion with
/// `keep_io_types` writes: f32 input and output, casts at both ends, f16
/// initializers (`W` as raw data, `b` in `int32_data`).
fn keep_io_types_model(w: &[u16], b: &[u16]) -> ModelProto {
    let nodes = vec![
        node("Cast", "to_half", &["x"], &["xh"], vec![attr_i("to", i64::from(data_type::FLOAT16))]),
        node("MatMul", "mm", &["xh", "W"], &["p"], vec![]),
        node("Add", "bias", &["p", "b"], &["q"], vec![]),
        node("Relu", "relu", &["q"], &["r"], vec![]),
        node("Cast", "to_float", &["r"], &["y"], vec![attr_i("to", i64::from(data_type::FLOAT))]),
    ];
    let inits = vec![
        half_init("W", &[K as i64, N as i64], w, data_type::FLOAT16, true),
        half_init("b", &[N as i64], b, data_type::FLOAT16, false),
    ];
    model(nodes, inits, vec![vi("x", &[M as i64, K as i64])], vec![vi("y", &[M as i64, N as i64])], 17)
}

/// The f64 product over the widened weights, as f32.
fn reference(x: &[f32], w: &[f32], b: &[f32]) -> Vec<f32> {
    let mut out = vec![0.0f32; M * N];
    for i in 0..M {
        for j in 0..N {
            let mut acc = f64::from(b[j]);
            for p in 0..K {
                acc += f64::from(x[i * K + p]) * f64::from(w[p * N + j]);
            }
            out[i * N + j] = (acc.max(0.0)) as f32;
        }
    }
    out
}

#[test]
fn f16_initializers_stay_two_bytes_and_compute_in_f32() {
    let w: Vec<f16> = values(K * N, 1).into_iter().map(f16::from_f32).collect();
    let b: Vec<f16> = values(N, 2).into_iter().map(f16::from_f32).collect();
    let bits = |v: &[f16]| v.iter().map(|h| h.to_bits()).collect::<Vec<_>>();
    let m = keep_io_types_model(&bits(&w), &bits(&b));
    let imported = import_model(&m, &ImportOptions::new(WEIGHTS)).unwrap();
    let text = &imported.sched_text;
    assert_eq!(count_kind(text, "PackedGemmHalf"), 1, "{text}");
    assert!(text.contains("w_dtype: f16"), "{text}");
    assert!(text.contains("input   x: f32[3, 8]") && text.contains("output  y: f32[3, 20]"), "{text}");
    // The packed weight (k x 32 columns) in 2 bytes, the bias widened.
    assert!(text.contains(": f16[256] @ weights+"), "{text}");

    let x = values(M * K, 3);
    let widened = |v: &[f16]| v.iter().map(|h| h.to_f32()).collect::<Vec<_>>();
    // The graph's cast of `x` to f16 rounds it, as the spec says.
    let x_half: Vec<f32> = x.iter().map(|&v| f16::from_f32(v).to_f32()).collect();
    let want = reference(&x_half, &widened(&w), &widened(&b));
    let got = run("f16_keep_io", &imported, &[("x", &x)], &["y"]);
    // f32 compute: within f32 rounding of the f64 product; the values
    // between the casts are not rounded to f16 (docs/onnx.md).
    assert_close(&got[0], &want, 1e-5, "y");

    // The same model with f32 initializers of the same values: the same
    // bits, and twice the weight bytes.
    let mut f32_model = m.clone();
    let graph = f32_model.graph.as_mut().unwrap();
    graph.initializer =
        vec![init_raw("W", &[K as i64, N as i64], &widened(&w)), init_raw("b", &[N as i64], &widened(&b))];
    let f32_imported = import_model(&f32_model, &ImportOptions::new(WEIGHTS)).unwrap();
    assert_eq!(count_kind(&f32_imported.sched_text, "PackedGemmHalf"), 0);
    let f32_got = run("f16_keep_io_f32", &f32_imported, &[("x", &x)], &["y"]);
    assert_eq!(got[0], f32_got[0], "narrowing an exact weight changes no bit");
    assert!(imported.weights.len() < f32_imported.weights.len());
}

/// A graph that computes in float16 end to end (`model.half()`): f16
/// input and output buffers, widened on the way in and rounded to f16 on
/// the way out; bf16 the same.
#[test]
fn two_byte_inputs_and_outputs_keep_their_type() {
    for (elem, name) in [(data_type::FLOAT16, "f16"), (data_type::BFLOAT16, "bf16")] {
        let to_bits =
            |v: &[f32]| -> Vec<u16> {
                v.iter()
                    .map(|&x| {
                        if elem == data_type::FLOAT16 {
                            f16::from_f32(x).to_bits()
                        } else {
                            bf16::from_f32(x).to_bits()
                        }
                    })
                    .collect()
            };
        let widen =
            |bits: &[u16]| -> Vec<f32> {
                bits.iter()
                    .map(|&b| {
                        if elem == data_type::FLOAT16 {
                            f16::from_bits(b).to_f32()
                        } else {
                            bf16::from_bits(b).to_f32()
                        }
                    })
                    .collect()
            };
        let (w, b) = (to_bits(&values(K * N, 4)), to_bits(&values(N, 5)));
        let nodes = vec![
            node("MatMul", "mm", &["x", "W"], &["p"], vec![]),
            node("Add", "bias", &["p", "b"], &["q"], vec![]),
            node("Relu", "relu", &["q"], &["y"], vec![]),
        ];
        let inits =
            vec![half_init("W", &[K as i64, N as i64], &w, elem, false), half_init("b", &[N as i64], &b, elem, true)];
        let m = model(
            nodes,
            inits,
            vec![vi_of("x", elem, &[M as i64, K as i64])],
            vec![vi_of("y", elem, &[M as i64, N as i64])],
            17,
        );
        let imported = import_model(&m, &ImportOptions::new(WEIGHTS)).unwrap();
        let text = &imported.sched_text;
        assert!(text.contains(&format!("input   x: {name}[3, 8]")), "{text}");
        assert!(text.contains(&format!("output  y: {name}[3, 20]")), "{text}");
        // Lossless either way: bf16 values of this range are exact in f16
        // too, which the importer tries first.
        assert_eq!(count_kind(text, "PackedGemmHalf"), 1, "{text}");
        let x_bits = to_bits(&values(M * K, 6));
        let x_bytes: Vec<u8> = x_bits.iter().flat_map(|b| b.to_le_bytes()).collect();
        let got = run_raw(&format!("half_io_{name}"), &imported, &[("x", x_bytes)], &["y"]);
        let got_bits: Vec<u16> = got[0].chunks_exact(2).map(|c| u16::from_le_bytes([c[0], c[1]])).collect();
        let want = reference(&widen(&x_bits), &widen(&w), &widen(&b));
        // One rounding to the 2-byte type at the end: within one unit in
        // its last place of the f64 result (f32 compute adds far less).
        for (i, (&g, &r)) in widen(&got_bits).iter().zip(&want).enumerate() {
            let ulp =
                if elem == data_type::FLOAT16 { 2f32.powi(-10) } else { 2f32.powi(-7) } * r.abs().max(2f32.powi(-14));
            assert!((g - r).abs() <= ulp, "{name} y[{i}]: {g} vs {r}");
        }
    }
}
