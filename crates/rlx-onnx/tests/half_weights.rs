//! Models stored in 2-byte floats: f16 / bf16 initializers import with
//! their product weights kept in 2 bytes (`PackedGemmHalf`, lossless: the
//! values came from the file) and f32 compute; 2-byte graph inputs and
//! outputs keep their type at the model's interface (`docs/onnx.md`,
//! "2-byte floats").

use crate::common::*;
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

/// Three convolutions in the `keep_io_types` layout, f16 (or bf16)
/// initializers: a 3-channel stem read as NCHW, a 3x3 `c -> c` at 12x12
/// (a shape Winograd pays for) and a pointwise `c -> 20`.
fn half_cnn(c: i64, elem: i32, round: impl Fn(f32) -> u16) -> ModelProto {
    let pad1 = || vec![attr_ints("pads", &[1, 1, 1, 1])];
    let nodes = vec![
        node("Cast", "to_half", &["x"], &["xh"], vec![attr_i("to", i64::from(elem))]),
        node("Conv", "stem", &["xh", "W1", "b1"], &["c1"], pad1()),
        node("Relu", "r1", &["c1"], &["a1"], vec![]),
        node("Conv", "body", &["a1", "W2", "b2"], &["c2"], pad1()),
        node("Relu", "r2", &["c2"], &["a2"], vec![]),
        node("Conv", "head", &["a2", "W3", "b3"], &["c3"], vec![]),
        node("Cast", "to_float", &["c3"], &["y"], vec![attr_i("to", i64::from(data_type::FLOAT))]),
    ];
    let init = |name: &str, dims: &[i64], seed: u64| {
        let n = dims.iter().product::<i64>() as usize;
        let bits: Vec<u16> = values(n, seed).into_iter().map(&round).collect();
        half_init(name, dims, &bits, elem, true)
    };
    let inits = vec![
        init("W1", &[c, 3, 3, 3], 11),
        init("b1", &[c], 12),
        init("W2", &[c, c, 3, 3], 13),
        init("b2", &[c], 14),
        init("W3", &[20, c, 1, 1], 15),
        init("b3", &[20], 16),
    ];
    model(nodes, inits, vec![vi("x", &[1, 3, 12, 12])], vec![vi("y", &[1, 20, 12, 12])], 17)
}

/// The model with f32 initializers of the same (widened) values.
fn widened_initializers(m: &ModelProto) -> ModelProto {
    let mut wide = m.clone();
    for t in &mut wide.graph.as_mut().unwrap().initializer {
        let widen = |b: &[u8]| {
            let bits = u16::from_le_bytes([b[0], b[1]]);
            if t.data_type == data_type::BFLOAT16 {
                bf16::from_bits(bits).to_f32()
            } else {
                f16::from_bits(bits).to_f32()
            }
        };
        let v: Vec<f32> = t.raw_data.chunks_exact(2).map(widen).collect();
        *t = init_raw(&t.name, &t.dims, &v);
    }
    wide
}

#[test]
fn half_convolution_filters_stay_two_bytes_with_the_f32_bits() {
    type Round = fn(f32) -> u16;
    let cases: [(i32, &str, Round); 2] = [
        (data_type::FLOAT16, "f16", |v| f16::from_f32(v).to_bits()),
        // Scaled past f16's range, so that only bf16 holds them exactly.
        (data_type::BFLOAT16, "bf16", |v| bf16::from_f32(v * 2f32.powi(-20)).to_bits()),
    ];
    let x = values(3 * 12 * 12, 17);
    for (elem, name, round) in cases {
        // 176 -> 176 channels: a transformed filter of 4.5 MB, past the
        // 4 MiB a 2-byte model runs by Winograd. Every filter 2-byte.
        let m = half_cnn(176, elem, round);
        let imported = import_model(&m, &ImportOptions::new(WEIGHTS)).unwrap();
        let text = &imported.sched_text;
        assert_eq!(count_kind(text, "BlockedConv2DHalf"), 3, "{text}");
        assert_eq!(count_kind(text, "WinogradConv2D"), 0, "{text}");
        assert!(text.contains(&format!("w_dtype: {name}")), "{text}");
        let wide = widened_initializers(&m);
        // In f32 the body is a Winograd layer; without Winograd, the bits
        // of the 2-byte filters.
        let f32_default = import_model(&wide, &ImportOptions::new(WEIGHTS)).unwrap();
        assert_eq!(count_kind(&f32_default.sched_text, "WinogradConv2D"), 1, "{}", f32_default.sched_text);
        let direct = ImportOptions::new(WEIGHTS).with_winograd(false);
        let f32_direct = import_model(&wide, &direct).unwrap();
        assert_eq!(count_kind(&f32_direct.sched_text, "BlockedConv2DHalf"), 0);
        // The graph's cast rounds `x` to the 2-byte type first.
        let got = run(&format!("half_cnn_{name}"), &imported, &[("x", &x)], &["y"]);
        let want = run(&format!("half_cnn_{name}_f32"), &f32_direct, &[("x", &x)], &["y"]);
        assert_eq!(got[0], want[0], "{name}: 2-byte filters change no bit");
        // Filters are most of the bytes: the file is about half.
        let (half_len, f32_len) = (imported.weights.len(), f32_direct.weights.len());
        assert!(half_len * 100 < f32_len * 55, "{name}: {half_len} vs {f32_len} bytes");

        // 16 -> 16: a small transformed filter, run by Winograd as the f32
        // model runs it (same bits); the other two filters 2-byte.
        let m = half_cnn(16, elem, round);
        let imported = import_model(&m, &ImportOptions::new(WEIGHTS)).unwrap();
        let text = &imported.sched_text;
        assert_eq!(count_kind(text, "BlockedConv2DHalf"), 2, "{text}");
        assert_eq!(count_kind(text, "WinogradConv2D"), 1, "{text}");
        let f32_default = import_model(&widened_initializers(&m), &ImportOptions::new(WEIGHTS)).unwrap();
        let got = run(&format!("half_cnn_small_{name}"), &imported, &[("x", &x)], &["y"]);
        let want = run(&format!("half_cnn_small_{name}_f32"), &f32_default, &[("x", &x)], &["y"]);
        assert_eq!(got[0], want[0], "{name}: small Winograd layer");
    }
}
