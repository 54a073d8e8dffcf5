//! End-to-end tests of the neural-network ops (normalisations,
//! parameterised activations, convolution, pooling, reductions) and the
//! residual + LayerNorm fusion: models built in Rust, imported, validated
//! with no warnings, run in the reference interpreter and compared with a
//! naive f64 computation written here.
//!
//! Tolerances: unless a test says otherwise, results are sums of at most
//! ~20 f32 terms of magnitude <= ~4 computed in f32 by the kernels against
//! an f64 reference; the f32 rounding error stays below ~1e-6, so 1e-5
//! leaves a margin without hiding a wrong element (a wrong tap, pad or
//! normalisation is off by > 1e-2 with these values).

use crate::common::typed::{self, f, i32s, T};
use crate::common::*;
use rlx_onnx::proto::{AttributeProto, AttributeType};
use rlx_onnx::ImportOptions;

const TOL: f32 = 1e-5;

fn opts() -> ImportOptions {
    ImportOptions::new(WEIGHTS)
}

fn attr_s(name: &str, s: &str) -> AttributeProto {
    AttributeProto {
        name: name.to_string(),
        r#type: AttributeType::String as i32,
        s: s.as_bytes().to_vec(),
        ..Default::default()
    }
}

fn f64s(v: &[f32]) -> Vec<f64> {
    v.iter().map(|&x| f64::from(x)).collect()
}

/// Naive layer norm of rows of `h` in f64.
fn layer_norm_ref(x: &[f32], g: &[f32], b: Option<&[f32]>, h: usize, eps: f32) -> Vec<f32> {
    let mut out = Vec::new();
    for row in x.chunks(h) {
        let row = f64s(row);
        let mean = row.iter().sum::<f64>() / h as f64;
        let var = row.iter().map(|v| (v - mean) * (v - mean)).sum::<f64>() / h as f64;
        let inv = 1.0 / (var + f64::from(eps)).sqrt();
        for (j, v) in row.iter().enumerate() {
            let shift = b.map_or(0.0, |b| f64::from(b[j]));
            out.push(((v - mean) * inv * f64::from(g[j]) + shift) as f32);
        }
    }
    out
}

#[test]
fn layer_norm_with_and_without_bias_matches_naive() {
    let h = 8;
    let (g, b) = (values(h, 201), values(h, 202));
    let m = model(
        vec![
            node("LayerNormalization", "ln1", &["x", "g", "b"], &["y"], vec![attr_f("epsilon", 1e-3)]),
            node("LayerNormalization", "ln2", &["x", "g"], &["z"], vec![attr_i("axis", 2)]),
        ],
        vec![init_raw("g", &[8], &g), init_raw("b", &[8], &b)],
        vec![vi("x", &[2, 3, 8])],
        vec![vi("y", &[2, 3, 8]), vi("z", &[2, 3, 8])],
        17,
    );
    let imported = import_model(&m, &opts()).expect("import");
    assert!(imported.sched_text.contains("LayerNorm { x: x, g: g, b: b, out: y, rows: 6, h: 8, eps: 0.001"));
    assert!(imported.sched_text.contains("LayerNorm { x: x, g: g, b: none, out: z, rows: 6, h: 8, eps: 1e-5"));
    let x = values(48, 203);
    let out = run("ln", &imported, &[("x", &x)], &["y", "z"]);
    assert_close(&out[0], &layer_norm_ref(&x, &g, Some(&b), h, 1e-3), TOL, "y");
    assert_close(&out[1], &layer_norm_ref(&x, &g, None, h, 1e-5), TOL, "z");
}

#[test]
fn layer_norm_errors_name_op_node_and_attribute() {
    let build = |attrs, outputs: &[&str]| {
        model(
            vec![node("LayerNormalization", "ln", &["x", "g"], outputs, attrs)],
            vec![init_raw("g", &[4], &values(4, 1))],
            vec![vi("x", &[3, 4])],
            vec![vi("y", &[3, 4])],
            17,
        )
    };
    // Axis 0 normalises both axes: a scale of [4] does not cover them.
    let msg = import_model(&build(vec![attr_i("axis", 0)], &["y"]), &opts()).unwrap_err().to_string();
    assert_eq!(msg, "ONNX op `LayerNormalization` (node `ln`): Scale has shape [4]; expected [3, 4]");
    let msg = import_model(&build(vec![attr_i("axis", 2)], &["y"]), &opts()).unwrap_err().to_string();
    assert_eq!(msg, "ONNX op `LayerNormalization` (node `ln`): attribute `axis` is 2, out of range for rank 2");
    // A scale that does not match the normalised axis.
    let m = model(
        vec![node("LayerNormalization", "ln", &["x", "g"], &["y"], vec![])],
        vec![init_raw("g", &[3], &values(3, 1))],
        vec![vi("x", &[3, 4])],
        vec![vi("y", &[3, 4])],
        17,
    );
    let msg = import_model(&m, &opts()).unwrap_err().to_string();
    assert_eq!(msg, "ONNX op `LayerNormalization` (node `ln`): Scale has shape [3]; expected [4]");
}

fn erf(x: f64) -> f64 {
    // Taylor series; converges fast for |x| <= 1 (inputs here are in [-1, 1)).
    let mut term = x;
    let mut sum = x;
    for n in 1..40 {
        term *= -x * x / n as f64;
        sum += term / (2 * n + 1) as f64;
    }
    sum * 2.0 / std::f64::consts::PI.sqrt()
}

/// `(op, attributes, inputs, opset, f64 reference)`.
type ActCase = (&'static str, Vec<AttributeProto>, Vec<&'static str>, i64, fn(f64) -> f64);

#[test]
fn parameterised_activations_match_naive() {
    let lo = 0.25f32;
    let hi = 0.5f32;
    let cases: Vec<ActCase> = vec![
        ("LeakyRelu", vec![attr_f("alpha", 0.1)], vec!["x"], 13, |v| if v < 0.0 { 0.1 * v } else { v }),
        ("LeakyRelu", vec![], vec!["x"], 13, |v| if v < 0.0 { 0.01 * v } else { v }),
        ("HardSigmoid", vec![attr_f("alpha", 0.3), attr_f("beta", 0.4)], vec!["x"], 13, |v| {
            (0.3 * v + 0.4).clamp(0.0, 1.0)
        }),
        ("HardSigmoid", vec![], vec!["x"], 13, |v| (0.2 * v + 0.5).clamp(0.0, 1.0)),
        ("Gelu", vec![], vec!["x"], 20, |v| 0.5 * v * (1.0 + erf(v / 2f64.sqrt()))),
        ("Gelu", vec![attr_s("approximate", "tanh")], vec!["x"], 20, |v| {
            0.5 * v * (1.0 + ((2.0 / std::f64::consts::PI).sqrt() * (v + 0.044715 * v * v * v)).tanh())
        }),
        ("Clip", vec![], vec!["x", "lo", "hi"], 13, |v| v.clamp(-0.25, 0.5)),
        ("Clip", vec![], vec!["x", "", "hi"], 13, |v| v.min(0.5)),
        ("Clip", vec![], vec!["x"], 13, |v| v),
        ("Clip", vec![attr_f("min", -0.25), attr_f("max", 0.5)], vec!["x"], 6, |v| v.clamp(-0.25, 0.5)),
        ("Clip", vec![attr_f("max", 0.5)], vec!["x"], 6, |v| v.min(0.5)),
    ];
    let x = values(32, 301);
    for (i, (op, attrs, inputs, opset, f)) in cases.into_iter().enumerate() {
        let m = model(
            vec![node(op, "act", &inputs, &["y"], attrs)],
            vec![init_raw("lo", &[], &[-lo]), init_raw("hi", &[1], &[hi])],
            vec![vi("x", &[4, 8])],
            vec![vi("y", &[4, 8])],
            opset,
        );
        let imported = import_model(&m, &opts()).unwrap_or_else(|e| panic!("case {i} ({op}): {e}"));
        assert!(imported.sched_text.contains("Activation {"), "{}", imported.sched_text);
        let out = run(&format!("act{i}"), &imported, &[("x", &x)], &["y"]);
        let want: Vec<f32> = x.iter().map(|&v| f(f64::from(v)) as f32).collect();
        // Piecewise-linear kinds are one or two f32 operations (< 1 ulp of
        // values <= 1); the GELUs use vectorised erf/exp accurate to a few
        // ulp: 2e-6 is ~16 ulp at these magnitudes.
        assert_close(&out[0], &want, 2e-6, &format!("case {i} ({op})"));
    }
}

#[test]
fn pow_broadcasts_like_the_other_binaries() {
    let e = values(8, 311).iter().map(|v| v * 2.0).collect::<Vec<_>>();
    let m = model(
        vec![node("Pow", "pow", &["x", "e"], &["y"], vec![])],
        vec![init_raw("e", &[8], &e)],
        vec![vi("x", &[4, 8])],
        vec![vi("y", &[4, 8])],
        15,
    );
    let imported = import_model(&m, &opts()).expect("import");
    assert!(imported.sched_text.contains("op: pow"), "{}", imported.sched_text);
    // Positive bases, as a real power needs.
    let x: Vec<f32> = values(32, 312).iter().map(|v| v.abs() + 0.1).collect();
    let out = run("pow", &imported, &[("x", &x)], &["y"]);
    let want: Vec<f32> = x.iter().enumerate().map(|(i, &b)| f64::from(b).powf(f64::from(e[i % 8])) as f32).collect();
    // powf is accurate to ~1 ulp; results are <= 10^2, so 1e-5 relative is
    // the bound used.
    for (i, (g, w)) in out[0].iter().zip(&want).enumerate() {
        assert!((g - w).abs() <= 1e-5 * w.abs().max(1.0), "y[{i}]: got {g}, want {w}");
    }
}

#[test]
fn squares_and_cubes_are_products_bit_for_bit() {
    // Exponents 2 and 3 of any numeric type and broadcast shape compute
    // `x * x` and `(x * x) * x` (what onnxruntime computes for them), on
    // every sign; any other exponent stays a `pow`.
    let x: Vec<f32> = values(32, 313).iter().map(|v| v * 3.0).collect();
    // The exponent, and what `y` must be (none: stays a `pow`).
    type Case = (T, Option<fn(f32) -> f32>);
    let cases: [Case; 5] = [
        (f(&[], vec![2.0]), Some(|v| v * v)),
        (f(&[1, 1], vec![3.0]), Some(|v| v * v * v)),
        (typed::i64s(&[1], vec![2]), Some(|v| v * v)),
        (i32s(&[], vec![3]), Some(|v| v * v * v)),
        (f(&[], vec![2.5]), None),
    ];
    for (i, (e, want)) in cases.into_iter().enumerate() {
        let m = model(
            vec![node("Pow", "pow", &["x", "e"], &["y"], vec![])],
            vec![e.proto("e")],
            vec![vi("x", &[4, 8])],
            vec![rlx_onnx::proto::ValueInfoProto { name: "y".into(), ..Default::default() }],
            15,
        );
        let imported = import_model(&m, &opts()).expect("import");
        assert_eq!(imported.sched_text.contains("op: pow"), want.is_none(), "case {i}:\n{}", imported.sched_text);
        let Some(want) = want else { continue };
        let out = run(&format!("pow_int{i}"), &imported, &[("x", &x)], &["y"]);
        let want: Vec<f32> = x.iter().map(|&v| want(v)).collect();
        assert_eq!(out[0].len(), want.len());
        for (k, (g, w)) in out[0].iter().zip(&want).enumerate() {
            assert_eq!(g.to_bits(), w.to_bits(), "case {i}, y[{k}]: got {g}, want {w}");
        }
    }
}

#[test]
fn clip_of_a_constant_folds() {
    // TF-style "same" padding clamps shape arithmetic with `Clip`: it must
    // stay constant so a `Pad` after it knows its pads at import.
    let m = model(
        vec![node("Clip", "clip", &["c", "lo", "hi"], &["k"], vec![]), node("Add", "add", &["x", "k"], &["y"], vec![])],
        vec![
            init_raw("c", &[4], &[-3.0, 2.5, 9.0, f32::NAN]),
            init_raw("lo", &[], &[0.0]),
            init_raw("hi", &[], &[6.0]),
        ],
        vec![vi("x", &[4])],
        vec![vi("y", &[4])],
        13,
    );
    let imported = import_model(&m, &opts()).expect("import");
    assert!(!imported.sched_text.contains("Activation {"), "{}", imported.sched_text);
    let out = run("clip_const", &imported, &[("x", &[1.0, 1.0, 1.0, 1.0])], &["y"]);
    assert_eq!(&out[0][..3], &[1.0, 3.5, 7.0]);
    assert!(out[0][3].is_nan(), "a NaN passes through the clamp");
}

#[test]
fn activation_attribute_errors() {
    let m = model(
        vec![node("Gelu", "g", &["x"], &["y"], vec![attr_s("approximate", "fast")])],
        vec![],
        vec![vi("x", &[4])],
        vec![vi("y", &[4])],
        20,
    );
    let msg = import_model(&m, &opts()).unwrap_err().to_string();
    assert_eq!(msg, "ONNX op `Gelu` (node `g`): attribute `approximate` is `fast`; expected `none` or `tanh`");
    let m = model(
        vec![node("Clip", "c", &["x"], &["y"], vec![attr_f("min", 0.0)])],
        vec![],
        vec![vi("x", &[4])],
        vec![vi("y", &[4])],
        13,
    );
    let msg = import_model(&m, &opts()).unwrap_err().to_string();
    assert_eq!(msg, "ONNX op `Clip` (node `c`): attribute `min` is an input since opset 11, not an attribute");
    // A bound that is data, not a constant.
    let m = model(
        vec![node("Clip", "c", &["x", "x"], &["y"], vec![])],
        vec![],
        vec![vi("x", &[1])],
        vec![vi("y", &[1])],
        13,
    );
    let msg = import_model(&m, &opts()).unwrap_err().to_string();
    assert_eq!(msg, "ONNX op `Clip` (node `c`): input `x` must be an f32 scalar constant known at import time");
}

/// Naive NCHW convolution with per-side padding `[hb, wb, he, we]`.
fn conv_ref(
    x: &[f32],
    [n, ci, h, w]: [usize; 4],
    wt: &[f32],
    [co, cig, kh, kw]: [usize; 4],
    bias: Option<&[f32]>,
    [sh, sw]: [usize; 2],
    [dh, dw]: [usize; 2],
    [hb, wb, he, we]: [usize; 4],
    groups: usize,
) -> (Vec<f32>, [usize; 2]) {
    let ho = (h + hb + he - ((kh - 1) * dh + 1)) / sh + 1;
    let wo = (w + wb + we - ((kw - 1) * dw + 1)) / sw + 1;
    let co_per_group = co / groups;
    let mut out = vec![0f32; n * co * ho * wo];
    for b in 0..n {
        for oc in 0..co {
            let g = oc / co_per_group;
            for oy in 0..ho {
                for ox in 0..wo {
                    let mut s = bias.map_or(0.0, |bb| f64::from(bb[oc]));
                    for icg in 0..cig {
                        let ic = g * cig + icg;
                        for ky in 0..kh {
                            for kx in 0..kw {
                                let iy = (oy * sh + ky * dh) as isize - hb as isize;
                                let ix = (ox * sw + kx * dw) as isize - wb as isize;
                                if iy < 0 || ix < 0 || iy >= h as isize || ix >= w as isize {
                                    continue;
                                }
                                let xv = x[((b * ci + ic) * h + iy as usize) * w + ix as usize];
                                let wv = wt[((oc * cig + icg) * kh + ky) * kw + kx];
                                s += f64::from(xv) * f64::from(wv);
                            }
                        }
                    }
                    out[((b * co + oc) * ho + oy) * wo + ox] = s as f32;
                }
            }
        }
    }
    (out, [ho, wo])
}

#[test]
fn conv_grouped_strided_dilated_with_end_padding_matches_naive() {
    let xs = [2usize, 4, 6, 5];
    let ws = [6usize, 2, 3, 3];
    let wt = values(6 * 2 * 9, 401);
    let bias = values(6, 402);
    let w2 = values(3 * 4 * 9, 403);
    let (want1, [ho, wo]) = conv_ref(&values(240, 404), xs, &wt, ws, Some(&bias), [2, 1], [1, 2], [1, 1, 0, 1], 2);
    assert_eq!([ho, wo], [3, 3]);
    let m = model(
        vec![
            node(
                "Conv",
                "c1",
                &["x", "w", "b"],
                &["y"],
                vec![
                    attr_i("group", 2),
                    attr_ints("strides", &[2, 1]),
                    attr_ints("dilations", &[1, 2]),
                    attr_ints("pads", &[1, 1, 0, 1]),
                    attr_ints("kernel_shape", &[3, 3]),
                ],
            ),
            node("Conv", "c2", &["x", "w2"], &["z"], vec![attr_s("auto_pad", "SAME_UPPER")]),
        ],
        vec![init_raw("w", &[6, 2, 3, 3], &wt), init_raw("b", &[6], &bias), init_raw("w2", &[3, 4, 3, 3], &w2)],
        vec![vi("x", &[2, 4, 6, 5])],
        vec![vi("y", &[2, 6, 3, 3]), vi("z", &[2, 3, 6, 5])],
        13,
    );
    let imported = import_model(&m, &opts()).expect("import");
    assert!(imported.sched_text.contains("ph: 1, pw: 1, dh: 1, dw: 2, groups: 2"), "{}", imported.sched_text);
    let x = values(240, 404);
    let out = run("conv", &imported, &[("x", &x)], &["y", "z"]);
    assert_close(&out[0], &want1, TOL, "y");
    let (want2, _) = conv_ref(&x, xs, &w2, [3, 4, 3, 3], None, [1, 1], [1, 1], [1, 1, 1, 1], 1);
    assert_close(&out[1], &want2, TOL, "z");
}

/// Naive ONNX pooling with per-side padding; `ceil` as the spec (a window
/// must start inside the input or the leading padding).
fn pool_ref(
    x: &[f32],
    [n, c, h, w]: [usize; 4],
    [kh, kw]: [usize; 2],
    [sh, sw]: [usize; 2],
    [hb, wb, he, we]: [usize; 4],
    ceil: bool,
    max: bool,
    count_pad: bool,
) -> (Vec<f32>, [usize; 2]) {
    let size = |len: usize, b: usize, e: usize, k: usize, s: usize| {
        let room = len + b + e - k;
        let mut o = if ceil { room.div_ceil(s) + 1 } else { room / s + 1 };
        if ceil && (o - 1) * s >= len + b {
            o -= 1;
        }
        o
    };
    let (ho, wo) = (size(h, hb, he, kh, sh), size(w, wb, we, kw, sw));
    let mut out = Vec::new();
    for p in 0..n * c {
        for oy in 0..ho {
            for ox in 0..wo {
                let (mut acc, mut real, mut padded) = (if max { f64::NEG_INFINITY } else { 0.0 }, 0usize, 0usize);
                for ky in 0..kh {
                    for kx in 0..kw {
                        let iy = (oy * sh + ky) as isize - hb as isize;
                        let ix = (ox * sw + kx) as isize - wb as isize;
                        let in_padded = iy < (h + he) as isize && ix < (w + we) as isize;
                        if in_padded {
                            padded += 1;
                        }
                        if iy < 0 || ix < 0 || iy >= h as isize || ix >= w as isize {
                            continue;
                        }
                        let v = f64::from(x[(p * h + iy as usize) * w + ix as usize]);
                        acc = if max { acc.max(v) } else { acc + v };
                        real += 1;
                    }
                }
                let r = if max { acc } else { acc / (if count_pad { padded } else { real }) as f64 };
                out.push(r as f32);
            }
        }
    }
    (out, [ho, wo])
}

#[test]
fn pools_match_naive() {
    let dims = [2usize, 3, 8, 6];
    let x = values(288, 501);
    let (max_want, max_hw) = pool_ref(&x, dims, [3, 3], [2, 2], [1, 1, 1, 1], true, true, false);
    // ceil_mode gives one more row and column than floor here.
    assert_eq!(max_hw, [5, 4]);
    let (avg_pad_want, avg_pad_hw) = pool_ref(&x, dims, [2, 3], [2, 2], [1, 1, 1, 1], false, false, true);
    let (avg_want, avg_hw) = pool_ref(&x, dims, [3, 2], [2, 1], [0, 1, 2, 0], false, false, false);
    let (ceil_pad_want, ceil_pad_hw) = pool_ref(&x, dims, [3, 3], [2, 2], [1, 1, 1, 1], true, false, true);
    let gap: Vec<f32> = x.chunks(48).map(|plane| (f64s(plane).iter().sum::<f64>() / 48.0) as f32).collect();
    let gmp: Vec<f32> = x.chunks(48).map(|plane| plane.iter().fold(f32::NEG_INFINITY, |a, &b| a.max(b))).collect();
    let shape = |hw: [usize; 2]| [2, 3, hw[0] as i64, hw[1] as i64];
    let m = model(
        vec![
            node(
                "MaxPool",
                "mp",
                &["x"],
                &["mp"],
                vec![
                    attr_ints("kernel_shape", &[3, 3]),
                    attr_ints("strides", &[2, 2]),
                    attr_ints("pads", &[1, 1, 1, 1]),
                    attr_i("ceil_mode", 1),
                ],
            ),
            node(
                "AveragePool",
                "ap_pad",
                &["x"],
                &["ap_pad"],
                vec![
                    attr_ints("kernel_shape", &[2, 3]),
                    attr_ints("strides", &[2, 2]),
                    attr_ints("pads", &[1, 1, 1, 1]),
                    attr_i("count_include_pad", 1),
                ],
            ),
            node(
                "AveragePool",
                "ap",
                &["x"],
                &["ap"],
                vec![
                    attr_ints("kernel_shape", &[3, 2]),
                    attr_ints("strides", &[2, 1]),
                    attr_ints("pads", &[0, 1, 2, 0]),
                ],
            ),
            node(
                "AveragePool",
                "ap_ceil",
                &["x"],
                &["ap_ceil"],
                vec![
                    attr_ints("kernel_shape", &[3, 3]),
                    attr_ints("strides", &[2, 2]),
                    attr_ints("pads", &[1, 1, 1, 1]),
                    attr_i("ceil_mode", 1),
                    attr_i("count_include_pad", 1),
                ],
            ),
            node("GlobalAveragePool", "gap", &["x"], &["gap"], vec![]),
            node("GlobalMaxPool", "gmp", &["x"], &["gmp"], vec![]),
        ],
        vec![],
        vec![vi("x", &[2, 3, 8, 6])],
        vec![
            vi("mp", &shape(max_hw)),
            vi("ap_pad", &shape(avg_pad_hw)),
            vi("ap", &shape(avg_hw)),
            vi("ap_ceil", &shape(ceil_pad_hw)),
            vi("gap", &[2, 3, 1, 1]),
            vi("gmp", &[2, 3, 1, 1]),
        ],
        13,
    );
    let imported = import_model(&m, &opts()).expect("import");
    let out = run("pool", &imported, &[("x", &x)], &["mp", "ap_pad", "ap", "ap_ceil", "gap", "gmp"]);
    assert_close(&out[0], &max_want, 0.0, "max");
    assert_close(&out[1], &avg_pad_want, TOL, "avg count_include_pad");
    assert_close(&out[2], &avg_want, TOL, "avg asymmetric pads");
    assert_close(&out[3], &ceil_pad_want, TOL, "avg ceil count_include_pad");
    assert_close(&out[4], &gap, TOL, "global avg");
    assert_close(&out[5], &gmp, 0.0, "global max");
}

#[test]
fn pool_and_conv_attribute_errors() {
    let one =
        |n| model(vec![n], vec![init_raw("w", &[2, 3, 1, 1], &values(6, 1))], vec![vi("x", &[1, 3, 4, 4])], vec![], 13);
    let cases = [
        (
            node("MaxPool", "p", &["x"], &["y"], vec![attr_ints("kernel_shape", &[2, 2]), attr_i("storage_order", 2)]),
            "ONNX op `MaxPool` (node `p`): attribute `storage_order` is 2; must be 0 (row major) or 1 (column major)",
        ),
        (
            node("AveragePool", "p", &["x"], &["y", "idx"], vec![attr_ints("kernel_shape", &[2, 2])]),
            "ONNX op `AveragePool` (node `p`): output `idx` is not supported; only the first output is",
        ),
        (
            node("MaxPool", "p", &["x"], &["y"], vec![attr_ints("kernel_shape", &[2, 2]), attr_ints("dilations", &[0, 2])]),
            "ONNX op `MaxPool` (node `p`): attribute `dilations` is [0, 2]; expected 2 positive values",
        ),
        (
            node("MaxPool", "p", &["x"], &["y"], vec![attr_ints("kernel_shape", &[2, 2, 2])]),
            "ONNX op `MaxPool` (node `p`): attribute `kernel_shape` is [2, 2, 2]; expected 2 positive values",
        ),
        (
            node("Conv", "c", &["x", "w"], &["y"], vec![attr_i("group", 2)]),
            "ONNX op `Conv` (node `c`): attribute `group` is 2; X has 3 channels and W 2 filters of 3 channels",
        ),
        (
            node("Conv", "c", &["x", "w"], &["y"], vec![attr_s("auto_pad", "SAME")]),
            "ONNX op `Conv` (node `c`): attribute `auto_pad` is `SAME`; expected NOTSET, VALID, SAME_UPPER or SAME_LOWER",
        ),
        (
            node("Conv", "c", &["x", "w"], &["y"], vec![attr_ints("strides", &[0, 1])]),
            "ONNX op `Conv` (node `c`): attribute `strides` is [0, 1]; expected two positive values (2-D only)",
        ),
        (
            node("MaxPool", "p", &["x"], &["y"], vec![attr_ints("kernel_shape", &[9, 2])]),
            "ONNX op `MaxPool` (node `p`): the window (9 with dilation 1) is larger than the padded input (4)",
        ),
    ];
    for (n, want) in cases {
        let msg = import_model(&one(n), &opts()).unwrap_err().to_string();
        assert_eq!(msg, want);
    }
}

#[test]
fn batch_norm_matches_naive() {
    let c = 3;
    let (scale, bias, mean) = (values(c, 601), values(c, 602), values(c, 603));
    let var: Vec<f32> = values(c, 604).iter().map(|v| v.abs() + 0.1).collect();
    let m = model(
        vec![node(
            "BatchNormalization",
            "bn",
            &["x", "scale", "bias", "mean", "var"],
            &["y"],
            vec![attr_f("epsilon", 1e-3)],
        )],
        vec![
            init_raw("scale", &[3], &scale),
            init_raw("bias", &[3], &bias),
            init_raw("mean", &[3], &mean),
            init_raw("var", &[3], &var),
        ],
        vec![vi("x", &[2, 3, 2, 2])],
        vec![vi("y", &[2, 3, 2, 2])],
        15,
    );
    let imported = import_model(&m, &opts()).expect("import");
    let x = values(24, 605);
    let out = run("bn", &imported, &[("x", &x)], &["y"]);
    let want: Vec<f32> = (0..24)
        .map(|i| {
            let ch = (i / 4) % 3;
            let inv = 1.0 / (f64::from(var[ch]) + 1e-3f64).sqrt();
            ((f64::from(x[i]) - f64::from(mean[ch])) * inv * f64::from(scale[ch]) + f64::from(bias[ch])) as f32
        })
        .collect();
    assert_close(&out[0], &want, TOL, "y");
    let mut training = m.clone();
    training.graph.as_mut().unwrap().node[0].attribute.push(attr_i("training_mode", 2));
    let msg = import_model(&training, &opts()).unwrap_err().to_string();
    assert_eq!(msg, "ONNX op `BatchNormalization` (node `bn`): attribute `training_mode` is 2; must be 0 or 1");
}

/// Naive reduction of the contiguous axes `[first, last]` of `shape`.
fn reduce_ref(x: &[f32], shape: &[usize], first: usize, last: usize, op: &str) -> Vec<f32> {
    let outer: usize = shape[..first].iter().product();
    let mid: usize = shape[first..=last].iter().product();
    let inner: usize = shape[last + 1..].iter().product();
    let mut out = Vec::new();
    for o in 0..outer {
        for i in 0..inner {
            let vals: Vec<f64> = (0..mid).map(|m| f64::from(x[(o * mid + m) * inner + i])).collect();
            let r = match op {
                "mean" => vals.iter().sum::<f64>() / mid as f64,
                "sum" => vals.iter().sum(),
                "max" => vals.iter().fold(f64::NEG_INFINITY, |a, &b| a.max(b)),
                "l2" => vals.iter().map(|v| v * v).sum::<f64>().sqrt(),
                _ => unreachable!("test op"),
            };
            out.push(r as f32);
        }
    }
    out
}

#[test]
fn reductions_match_naive() {
    let shape = [2usize, 3, 4, 5];
    let x = values(120, 701);
    let m13 = model(
        vec![
            node("ReduceMean", "mean", &["x"], &["mean"], vec![attr_ints("axes", &[2, 1])]),
            node("ReduceSum", "sum", &["x", "last"], &["sum"], vec![attr_i("keepdims", 0)]),
            node("ReduceMax", "max", &["x"], &["max"], vec![]),
        ],
        vec![init_i64("last", &[1], &[-1])],
        vec![vi("x", &[2, 3, 4, 5])],
        vec![vi("mean", &[2, 1, 1, 5]), vi("sum", &[2, 3, 4]), vi("max", &[1, 1, 1, 1])],
        13,
    );
    let imported = import_model(&m13, &opts()).expect("import opset 13");
    assert!(
        imported.sched_text.contains("Reduce { src: x, dst: mean, outer: 2, axis_dim: 12, inner: 5, op: mean }"),
        "{}",
        imported.sched_text
    );
    let out = run("reduce13", &imported, &[("x", &x)], &["mean", "sum", "max"]);
    assert_close(&out[0], &reduce_ref(&x, &shape, 1, 2, "mean"), TOL, "mean");
    assert_close(&out[1], &reduce_ref(&x, &shape, 3, 3, "sum"), TOL, "sum");
    assert_close(&out[2], &reduce_ref(&x, &shape, 0, 3, "max"), 0.0, "max");

    let m18 = model(
        vec![
            node("ReduceL2", "l2", &["x", "first"], &["l2"], vec![]),
            node("ReduceMean", "mean", &["x", "mid"], &["mean"], vec![attr_i("keepdims", 0)]),
        ],
        vec![init_i64("first", &[1], &[0]), init_i64("mid", &[2], &[2, 1])],
        vec![vi("x", &[2, 3, 4, 5])],
        vec![vi("l2", &[1, 3, 4, 5]), vi("mean", &[2, 5])],
        18,
    );
    let imported = import_model(&m18, &opts()).expect("import opset 18");
    let out = run("reduce18", &imported, &[("x", &x)], &["l2", "mean"]);
    // l2 of two values <= 1 and means of 12: a few f32 roundings.
    assert_close(&out[0], &reduce_ref(&x, &shape, 0, 0, "l2"), TOL, "l2");
    assert_close(&out[1], &reduce_ref(&x, &shape, 1, 2, "mean"), TOL, "mean18");

    // Axes that are not one range are moved last first.
    let gap = model(
        vec![node("ReduceSum", "s", &["x"], &["y"], vec![attr_ints("axes", &[0, 2])])],
        vec![],
        vec![vi("x", &[2, 3, 4, 5])],
        vec![vi("y", &[1, 3, 1, 5])],
        11,
    );
    let imported = import_model(&gap, &opts()).expect("import scattered axes");
    let out = run("reduce-gap", &imported, &[("x", &x)], &["y"]);
    let want: Vec<f32> = (0..15)
        .map(|o| {
            let (c, w) = (o / 5, o % 5);
            (0..2).flat_map(|n| (0..4).map(move |h| ((n * 3 + c) * 4 + h) * 5 + w)).map(|i| x[i]).sum()
        })
        .collect();
    assert_close(&out[0], &want, TOL, "sum over axes 0 and 2");
    let attr18 = model(
        vec![node("ReduceMax", "r", &["x"], &["y"], vec![attr_ints("axes", &[0])])],
        vec![],
        vec![vi("x", &[2, 3])],
        vec![],
        18,
    );
    let msg = import_model(&attr18, &opts()).unwrap_err().to_string();
    assert_eq!(msg, "ONNX op `ReduceMax` (node `r`): attribute `axes` is an input since opset 18, not an attribute");
}

/// `y = LayerNorm(x + r)`; with `expose_sum` the sum is also a graph
/// output, so it is read elsewhere and must not be fused away.
fn residual_ln_model(expose_sum: bool, g: &[f32], b: &[f32]) -> rlx_onnx::proto::ModelProto {
    let mut outputs = vec![vi("y", &[4, 16])];
    if expose_sum {
        outputs.push(vi("s", &[4, 16]));
    }
    model(
        vec![
            node("Add", "residual", &["x", "r"], &["s"], vec![]),
            node("LayerNormalization", "ln", &["s", "g", "b"], &["y"], vec![attr_f("epsilon", 1e-5)]),
        ],
        vec![init_raw("g", &[16], g), init_raw("b", &[16], b)],
        vec![vi("x", &[4, 16]), vi("r", &[4, 16])],
        outputs,
        17,
    )
}

#[test]
fn residual_add_and_layer_norm_fuse_and_agree_with_unfused() {
    let (g, b) = (values(16, 801), values(16, 802));
    let fused = import_model(&residual_ln_model(false, &g, &b), &opts()).expect("import fused");
    assert!(
        fused
            .sched_text
            .contains("FusedResidualLN { x: x, res: r, bias: none, g: g, b: b, out: y, rows: 4, h: 16, eps: 1e-5 }"),
        "{}",
        fused.sched_text
    );
    assert_eq!(fused.report.thunks, 1, "{}", fused.sched_text);
    // The sum's buffer is gone with the add: inputs, output, two params.
    assert_eq!(fused.report.buffers, 5, "{}", fused.sched_text);
    let unfused = import_model(&residual_ln_model(true, &g, &b), &opts()).expect("import unfused");
    assert!(!unfused.sched_text.contains("FusedResidualLN"), "{}", unfused.sched_text);
    assert!(unfused.sched_text.contains("LayerNorm {"), "{}", unfused.sched_text);

    let (x, r) = (values(64, 803), values(64, 804));
    let a = run("fused_ln", &fused, &[("x", &x), ("r", &r)], &["y"]);
    let u = run("unfused_ln", &unfused, &[("x", &x), ("r", &r)], &["y", "s"]);
    // Both add x + r with one f32 rounding, so the normalised rows start
    // from identical sums; the two kernels may accumulate the mean and
    // variance of 16 values in a different order, a few ulp apart, which
    // the division by the standard deviation (>= ~0.3 here) scales into
    // outputs of magnitude <= ~4: 2e-6 (~16 ulp at 1) bounds that.
    assert_close(&a[0], &u[0], 2e-6, "fused vs unfused");
    let sum: Vec<f32> = x.iter().zip(&r).map(|(p, q)| p + q).collect();
    assert_eq!(u[1], sum);
    assert_close(&a[0], &layer_norm_ref(&sum, &g, Some(&b), 16, 1e-5), TOL, "fused vs naive");
}

#[test]
fn residual_fusion_needs_a_shift_and_a_dead_sum() {
    // Without a LayerNorm bias the fused kind (whose `b` is required) does
    // not apply.
    let m = model(
        vec![
            node("Add", "residual", &["x", "r"], &["s"], vec![]),
            node("LayerNormalization", "ln", &["s", "g"], &["y"], vec![]),
        ],
        vec![init_raw("g", &[8], &values(8, 1))],
        vec![vi("x", &[2, 8]), vi("r", &[2, 8])],
        vec![vi("y", &[2, 8])],
        17,
    );
    let imported = import_model(&m, &opts()).expect("import");
    assert!(!imported.sched_text.contains("FusedResidualLN"), "{}", imported.sched_text);
    let (x, r) = (values(16, 2), values(16, 3));
    let out = run("nofuse", &imported, &[("x", &x), ("r", &r)], &["y"]);
    let sum: Vec<f32> = x.iter().zip(&r).map(|(p, q)| p + q).collect();
    assert_close(&out[0], &layer_norm_ref(&sum, &values(8, 1), None, 8, 1e-5), TOL, "y");
}

fn i64s(bytes: &[u8]) -> Vec<i64> {
    bytes.chunks_exact(8).map(|c| i64::from_le_bytes(c.try_into().unwrap())).collect()
}

/// Naive arg-reduction along the middle axis of `[outer, dim, inner]`.
fn arg_ref(x: &[f32], outer: usize, dim: usize, inner: usize, max: bool, last: bool) -> Vec<i64> {
    let mut out = Vec::new();
    for o in 0..outer {
        for i in 0..inner {
            let mut best = 0usize;
            for d in 1..dim {
                let (v, b) = (x[(o * dim + d) * inner + i], x[(o * dim + best) * inner + i]);
                let better = if max { v > b } else { v < b };
                if better || (last && v == b) {
                    best = d;
                }
            }
            out.push(best as i64);
        }
    }
    out
}

#[test]
fn arg_max_and_min_write_int64_indices() {
    // Coarse values (-2..=2) so that ties are common and select_last_index
    // matters.
    let x: Vec<f32> = values(2 * 5 * 3, 901).iter().map(|v| (v * 2.0).round()).collect();
    let m = model(
        vec![
            node("ArgMax", "amax", &["x"], &["amax"], vec![attr_i("axis", 1), attr_i("keepdims", 0)]),
            node(
                "ArgMax",
                "amax_last",
                &["x"],
                &["amax_last"],
                vec![attr_i("axis", -2), attr_i("select_last_index", 1)],
            ),
            node("ArgMin", "amin", &["x"], &["amin"], vec![attr_i("axis", 2)]),
            // A view of an output as a second output: copied as i64.
            node("Identity", "again", &["amax"], &["again"], vec![]),
        ],
        vec![],
        vec![vi("x", &[2, 5, 3])],
        vec![
            vi_typed(
                "amax",
                rlx_onnx::proto::data_type::INT64,
                vec![rlx_onnx::proto::DimensionValue::DimValue(2), rlx_onnx::proto::DimensionValue::DimValue(3)],
            ),
            vi("amax_last", &[2, 1, 3]),
            vi("amin", &[2, 5, 1]),
            vi("again", &[2, 3]),
        ],
        13,
    );
    let imported = import_model(&m, &opts()).expect("import");
    assert!(imported.sched_text.contains("output  amax: i64[2, 3]"), "{}", imported.sched_text);
    assert!(imported.sched_text.contains("CopyI64 { src: amax, dst: again, len: 6 }"), "{}", imported.sched_text);
    let out = run_bytes("argmax", &imported, &[("x", &x)], &["amax", "amax_last", "amin", "again"]);
    let first = arg_ref(&x, 2, 5, 3, true, false);
    let last = arg_ref(&x, 2, 5, 3, true, true);
    assert_ne!(first, last, "the test data must contain ties");
    assert_eq!(i64s(&out[0]), first);
    assert_eq!(i64s(&out[1]), last);
    assert_eq!(i64s(&out[2]), arg_ref(&x, 10, 3, 1, false, false));
    assert_eq!(i64s(&out[3]), first);

    // Integer data is refused by f32 ops, with the op and node named.
    let m = model(
        vec![node("ArgMax", "amax", &["x"], &["i"], vec![]), node("Relu", "r", &["i"], &["y"], vec![])],
        vec![],
        vec![vi("x", &[2, 5])],
        vec![vi("y", &[1, 5])],
        13,
    );
    let msg = import_model(&m, &opts()).unwrap_err().to_string();
    assert_eq!(msg, "ONNX op `Relu` (node `r`): input `i` is i64 data; this op supports f32 data only");
}

/// An attribute the op's schema does not define at the model's opset is
/// an error naming it and the schema's attributes, never ignored; one the
/// schema defines at that opset imports.
#[test]
fn an_attribute_the_op_does_not_have_is_refused() {
    let relu = |attrs, opset| {
        let m = model(
            vec![node("Relu", "r", &["x"], &["y"], attrs)],
            vec![],
            vec![vi("x", &[4])],
            vec![vi("y", &[4])],
            opset,
        );
        import_model(&m, &opts()).map(drop).map_err(|e| e.to_string())
    };
    assert_eq!(
        relu(vec![attr_f("alpha", 0.1)], 17).unwrap_err(),
        "ONNX op `Relu` (node `r`): attribute `alpha` is not an attribute of Relu at opset 17 (its schema since opset 14 defines: none)"
    );
    let softmax = |opset| {
        let m = model(
            vec![node("Softmax", "s", &["x"], &["y"], vec![attr_i("axis", -1), attr_i("keepdims", 1)])],
            vec![],
            vec![vi("x", &[2, 4])],
            vec![vi("y", &[2, 4])],
            opset,
        );
        import_model(&m, &opts()).map(drop).map_err(|e| e.to_string())
    };
    assert_eq!(
        softmax(13).unwrap_err(),
        "ONNX op `Softmax` (node `s`): attribute `keepdims` is not an attribute of Softmax at opset 13 (its schema since opset 13 defines: axis)"
    );
    // `consumed_inputs` was an attribute of opset 1's Relu only.
    assert!(relu(vec![attr_ints("consumed_inputs", &[])], 1).is_ok());
    assert!(relu(vec![attr_ints("consumed_inputs", &[])], 6).unwrap_err().contains("since opset 6 defines: none"));
}
