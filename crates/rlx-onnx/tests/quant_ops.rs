//! `QuantizeLinear`, `DequantizeLinear` and `DynamicQuantizeLinear`
//! against the spec's formulas written out here: rounding half to even,
//! saturation, per-tensor, per-axis and blocked scales.

use crate::common::typed::*;
use crate::common::*;
use rlx_onnx::ImportOptions;
use rlx_sched::DType;

/// `saturate(round_half_even(x / scale) + zp)` into `[lo, hi]`.
fn quantize_ref(x: f32, scale: f32, zp: i64, lo: i64, hi: i64) -> i64 {
    let q = (x / scale).round_ties_even() + zp as f32;
    (q.max(lo as f32).min(hi as f32)) as i64
}

#[test]
fn quantize_rounds_half_to_even_and_saturates() {
    let x = vec![0.0, 2.5, 3.5, -2.5, 1000.0, -1000.0, 0.49, 7.0];
    let scale = 1.0;
    for (d, zp, lo, hi) in [(DType::U8, 3, 0, 255), (DType::I8, -4, -128, 127), (DType::U16, 7, 0, 65535)] {
        let got = one(
            &format!("q-{d}"),
            "QuantizeLinear",
            vec![
                In::Data("x", f(&[8], x.clone())),
                In::Init("s", f(&[], vec![scale])),
                In::Init("zp", ints(d, &[], vec![zp])),
            ],
            vec![],
        );
        let want = x.iter().map(|&v| quantize_ref(v, scale, zp, lo, hi)).collect();
        assert_eq!(got, ints(d, &[8], want), "{d}");
    }
    // No zero point: uint8 with zero point 0.
    let got = one(
        "q-default",
        "QuantizeLinear",
        vec![In::Data("x", f(&[3], vec![-1.0, 0.6, 300.0])), In::Init("s", f(&[], vec![0.5]))],
        vec![],
    );
    assert_eq!(got, ints(DType::U8, &[3], vec![0, 1, 255]));
}

#[test]
fn per_axis_and_blocked_scales_reach_the_right_elements() {
    // [2, 3] along axis 1: one scale and zero point per column.
    let x: Vec<f32> = vec![1.0, 2.0, 3.0, -1.0, -2.0, -3.0];
    let (scales, zps) = (vec![0.5, 1.0, 2.0], vec![10i64, 20, 30]);
    let got = one(
        "q-axis",
        "QuantizeLinear",
        vec![
            In::Data("x", f(&[2, 3], x.clone())),
            In::Init("s", f(&[3], scales.clone())),
            In::Init("zp", ints(DType::U8, &[3], zps.clone())),
        ],
        vec![attr_i("axis", 1)],
    );
    let want = (0..6).map(|i| quantize_ref(x[i], scales[i % 3], zps[i % 3], 0, 255)).collect();
    assert_eq!(got, ints(DType::U8, &[2, 3], want));
    // Blocks of 2 along axis 1 of [1, 5]: 3 blocks, the last one short.
    let xb: Vec<i64> = vec![10, 20, 30, 40, 50];
    // `block_size` is an attribute since opset 21.
    let got = one_at(
        "dq-blocked",
        "DequantizeLinear",
        vec![
            In::Data("x", ints(DType::U8, &[1, 5], xb.clone())),
            In::Init("s", f(&[1, 3], vec![1.0, 0.5, 0.25])),
            In::Init("zp", ints(DType::U8, &[1, 3], vec![1, 2, 3])),
        ],
        vec![attr_i("axis", 1), attr_i("block_size", 2)],
        21,
    );
    let (s, z) = ([1.0f32, 0.5, 0.25], [1i64, 2, 3]);
    let want = (0..5).map(|i| (xb[i] - z[i / 2]) as f32 * s[i / 2]).collect();
    assert_eq!(got, f(&[1, 5], want));
}

#[test]
fn dequantize_is_exact_for_every_input_type() {
    let got = one(
        "dq-i8",
        "DequantizeLinear",
        vec![
            In::Data("x", ints(DType::I8, &[3], vec![-128, 0, 127])),
            In::Init("s", f(&[], vec![0.1])),
            In::Init("zp", ints(DType::I8, &[], vec![-3])),
        ],
        vec![],
    );
    assert_eq!(got, f(&[3], vec![-125.0 * 0.1, 3.0 * 0.1, 130.0 * 0.1]));
    // int32 with a zero point: the difference passes 2^31, subtracted in
    // i64 and rounded once to f32.
    let (x, zp) = (i32::MAX, -(1 << 30));
    let got = one(
        "dq-i32",
        "DequantizeLinear",
        vec![In::Data("x", i32s(&[1], vec![x])), In::Init("s", f(&[], vec![1.0])), In::Init("zp", i32s(&[], vec![zp]))],
        vec![],
    );
    assert_eq!(got, f(&[1], vec![(i64::from(x) - i64::from(zp)) as f32]));
}

#[test]
fn dynamic_quantization_follows_the_function_body() {
    let x: Vec<f32> = vec![0.3, -1.7, 2.9, 0.0, 1.1, -0.4];
    let out = run_graph(
        "dq-dynamic",
        vec![node("DynamicQuantizeLinear", "n", &["x"], &["y", "s", "zp"], vec![])],
        vec![In::Data("x", f(&[6], x.clone()))],
        &["y", "s", "zp"],
    );
    let (mn, mx) = (x.iter().copied().fold(0.0f32, f32::min), x.iter().copied().fold(0.0f32, f32::max));
    let scale = (mx - mn) / 255.0;
    let zp = (0.0 - mn / scale).clamp(0.0, 255.0).round_ties_even() as i64;
    assert_eq!(out[1], f(&[], vec![scale]));
    assert_eq!(out[2], ints(DType::U8, &[], vec![zp]));
    let want = x.iter().map(|&v| quantize_ref(v, scale, zp, 0, 255)).collect();
    assert_eq!(out[0], ints(DType::U8, &[6], want));
}

#[test]
fn a_quantized_weight_dequantizes_at_import_time() {
    // The QDQ pattern's weight half: DequantizeLinear of an initializer
    // folds to an f32 constant, so no thunk reads the int8 weight.
    let m = model(
        vec![
            node("DequantizeLinear", "dq", &["w", "s", "zp"], &["wf"], vec![]),
            node("MatMul", "mm", &["x", "wf"], &["y"], vec![]),
        ],
        vec![
            ints(DType::I8, &[2, 2], vec![1, -2, 3, 127]).proto("w"),
            f(&[], vec![0.5]).proto("s"),
            ints(DType::I8, &[], vec![1]).proto("zp"),
        ],
        vec![vi("x", &[1, 2])],
        vec![vi("y", &[1, 2])],
        19,
    );
    let imported = import_model(&m, &ImportOptions::new(WEIGHTS)).unwrap();
    assert!(!imported.sched_text.contains("Cast"), "{}", imported.sched_text);
    let got = run_model("dq-weight", &m, &[("x", f(&[1, 2], vec![1.0, 2.0]).bytes())], &["y"]).remove(0);
    // w dequantized: [[0, -1.5], [1, 63]].
    assert_eq!(got, f(&[1, 2], vec![2.0, 124.5]));
}

/// `sum_k (a - za) * (b - zb[j])` for row-major `[batch, m, k]` and
/// `[k, n]` (shared) operands.
fn int_matmul_ref(a: &[i64], b: &[i64], za: i64, zb: &[i64], [batch, m, k, n]: [usize; 4]) -> Vec<i64> {
    let mut out = Vec::new();
    for bt in 0..batch {
        for i in 0..m {
            for j in 0..n {
                let z = if zb.len() == 1 { zb[0] } else { zb[j] };
                out.push((0..k).map(|p| (a[(bt * m + i) * k + p] - za) * (b[p * n + j] - z)).sum());
            }
        }
    }
    out
}

#[test]
fn matmul_integer_is_exact_in_i32_with_per_column_zero_points() {
    let (batch, m, k, n) = (2, 3, 4, 5);
    let a: Vec<i64> = (0..batch * m * k).map(|i| (i as i64 * 53) % 256).collect();
    let b: Vec<i64> = (0..k * n).map(|i| (i as i64 * 29) % 256 - 128).collect();
    let zb: Vec<i64> = vec![-128, 0, 127, 3, -7];
    let got = one(
        "mmi",
        "MatMulInteger",
        vec![
            In::Data("a", ints(DType::U8, &[batch, m, k], a.clone())),
            In::Init("b", ints(DType::I8, &[k, n], b.clone())),
            In::Init("za", ints(DType::U8, &[], vec![200])),
            In::Init("zb", ints(DType::I8, &[n], zb.clone())),
        ],
        vec![],
    );
    let want = int_matmul_ref(&a, &b, 200, &zb, [batch, m, k, n]);
    assert_eq!(got, i32s(&[batch, m, n], want.into_iter().map(|v| v as i32).collect()));
}

#[test]
fn qlinear_matmul_requantizes_with_the_combined_scale() {
    let (m, k, n) = (2, 3, 4);
    let a: Vec<i64> = vec![10, 200, 35, 0, 255, 128];
    let b: Vec<i64> = (0..k * n).map(|i| (i as i64 * 41) % 256).collect();
    let (sa, sb, sy) = (0.02f32, 0.05f32, 0.3f32);
    let (za, zb, zy) = (128i64, 7i64, 100i64);
    let got = one(
        "qlmm",
        "QLinearMatMul",
        vec![
            In::Data("a", ints(DType::U8, &[m, k], a.clone())),
            In::Init("sa", f(&[], vec![sa])),
            In::Init("za", ints(DType::U8, &[], vec![za])),
            In::Init("b", ints(DType::U8, &[k, n], b.clone())),
            In::Init("sb", f(&[], vec![sb])),
            In::Init("zb", ints(DType::U8, &[], vec![zb])),
            In::Init("sy", f(&[], vec![sy])),
            In::Init("zy", ints(DType::U8, &[], vec![zy])),
        ],
        vec![],
    );
    let multiplier = sa * sb / sy;
    let want = int_matmul_ref(&a, &b, za, &[zb], [1, m, k, n])
        .into_iter()
        .map(|acc| ((acc as f32 * multiplier).round_ties_even() + zy as f32).clamp(0.0, 255.0) as i64)
        .collect();
    assert_eq!(got, ints(DType::U8, &[m, n], want));
}

/// What `quantize_dynamic` writes for a MatMul: `DynamicQuantizeLinear`,
/// `MatMulInteger` by a constant weight, the cast to f32, the product by
/// the two scales and the bias. With prepacking the product and its
/// dequantization are one `IntGemmPacked` (the weight packed, a u8 one
/// shifted into i8); without, the composed thunks. Same bits either way.
#[test]
fn a_dynamically_quantized_matmul_packs_its_weight_and_fuses_the_dequantization() {
    let (m, k, n) = (5usize, 13usize, 37usize);
    let x: Vec<f32> = (0..m * k).map(|i| ((i * 37 % 101) as f32 - 40.0) * 0.031).collect();
    for (w_type, per_column) in [(DType::I8, false), (DType::I8, true), (DType::U8, true)] {
        let signed = w_type == DType::I8;
        let w: Vec<i64> = (0..k * n).map(|i| (i as i64 * 71 + 9) % 256 - if signed { 128 } else { 0 }).collect();
        let zw: Vec<i64> = if per_column {
            (0..n as i64).map(|j| j * 7 % 256 - if signed { 128 } else { 0 }).collect()
        } else {
            vec![if signed { 0 } else { 128 }]
        };
        let column_shape = [n];
        let zw_shape: &[usize] = if per_column { &column_shape } else { &[] };
        let sw_len = if per_column { n } else { 1 };
        let sw: Vec<f32> = (0..sw_len).map(|j| 0.002 + 0.0001 * j as f32).collect();
        let x_t = f(&[m, k], x.clone());
        let protos = vec![
            ints(w_type, &[k, n], w).proto("w"),
            ints(w_type, zw_shape, zw).proto("zw"),
            f(zw_shape, sw).proto("sw"),
            f(&[n], (0..n).map(|j| j as f32 * 0.25 - 3.0).collect()).proto("bias"),
        ];
        let nodes = vec![
            node("DynamicQuantizeLinear", "dq", &["x"], &["xq", "sx", "zx"], vec![]),
            node("MatMulInteger", "mmi", &["xq", "w", "zx", "zw"], &["acc"], vec![]),
            node("Cast", "cast", &["acc"], &["accf"], vec![attr_i("to", 1)]),
            node("Mul", "scales", &["sx", "sw"], &["s"], vec![]),
            node("Mul", "scale", &["accf", "s"], &["y0"], vec![]),
            node("Add", "bias", &["bias", "y0"], &["y"], vec![]),
        ];
        let outs = vec![rlx_onnx::proto::ValueInfoProto { name: "y".to_string(), ..Default::default() }];
        let mdl = model(nodes, protos, vec![x_t.info("x")], outs, 18);
        let casts =
            |sched: &str| sched.lines().filter(|l| l.starts_with("Cast {") && l.contains("from: i32, to: f32")).count();
        let kinds = |sched: &str| [count_kind(sched, "IntGemmPacked"), count_kind(sched, "IntGemm"), casts(sched)];
        let fused = import_model(&mdl, &ImportOptions::new(WEIGHTS)).expect("import");
        assert_eq!(kinds(&fused.sched_text), [1, 0, 0], "{w_type} {per_column}: {}", fused.sched_text);
        let mut opts = ImportOptions::new(WEIGHTS);
        opts.prepack = false;
        let composed = import_model(&mdl, &opts).expect("import");
        assert_eq!(kinds(&composed.sched_text), [0, 1, 1], "{}", composed.sched_text);
        let feeds = vec![("x", x_t.bytes())];
        let (a, b) =
            (run_raw("dyn-mm-fused", &fused, &feeds, &["y"]), run_raw("dyn-mm-composed", &composed, &feeds, &["y"]));
        assert_eq!(a, b, "fused and composed differ ({w_type}, per column {per_column})");
        assert!(a[0].iter().any(|&v| v != a[0][0]), "a constant output proves little");
    }
}

/// `sum over the 3x3 window (padding 1) of (x - zx) * w`, per output
/// channel: x u8 `[1, c, h, w]`, w i8 `[m, c, 3, 3]`.
fn int_conv_ref(x: &[i64], w: &[i64], zx: i64, [c, h, wd, m]: [usize; 4]) -> Vec<i64> {
    let mut out = vec![0; m * h * wd];
    for oc in 0..m {
        for oy in 0..h {
            for ox in 0..wd {
                let mut sum = 0;
                for ic in 0..c {
                    for ki in 0..3 {
                        for kj in 0..3 {
                            let (iy, ix) = ((oy + ki).wrapping_sub(1), (ox + kj).wrapping_sub(1));
                            if iy < h && ix < wd {
                                sum += (x[(ic * h + iy) * wd + ix] - zx) * w[((oc * c + ic) * 3 + ki) * 3 + kj];
                            }
                        }
                    }
                }
                out[(oc * h + oy) * wd + ox] = sum;
            }
        }
    }
    out
}

/// A QLinearConv with constant scales (one `IntConv2D` and one
/// `Requantize`), and the QDQ group `quantize_static` writes for it
/// (rewritten into the same `QLinearConv`), against the spec's arithmetic
/// written out here: the same bytes.
#[test]
fn qlinear_conv_and_its_qdq_form_requantize_as_the_spec_says() {
    let [c, h, wd, m] = [3usize, 5, 18, 4];
    let x: Vec<i64> = (0..c * h * wd).map(|i| (i as i64 * 37 + 11) % 256).collect();
    let w: Vec<i64> = (0..m * c * 9).map(|i| (i as i64 * 53 + 7) % 255 - 127).collect();
    let bias: Vec<i32> = vec![1500, -2200, 0, 31];
    let (sx, sy, zx, zy) = (0.021f32, 0.17f32, 131i64, 9i64);
    let sw: Vec<f32> = vec![0.003, 0.0041, 0.0007, 0.012];
    let acc = int_conv_ref(&x, &w, zx, [c, h, wd, m]);
    let want: Vec<i64> = acc
        .iter()
        .enumerate()
        .map(|(i, &a)| {
            let oc = i / (h * wd);
            let multiplier = sx * sw[oc] / sy;
            let sum = (a as i32).wrapping_add(bias[oc]);
            ((sum as f32 * multiplier).round_ties_even() + zy as f32).clamp(0.0, 255.0) as i64
        })
        .collect();
    let pads = || vec![attr_ints("pads", &[1, 1, 1, 1]), attr_ints("kernel_shape", &[3, 3])];
    let inits = || {
        vec![
            In::Init("sx", f(&[], vec![sx])),
            In::Init("zx", ints(DType::U8, &[], vec![zx])),
            In::Init("w", ints(DType::I8, &[m, c, 3, 3], w.clone())),
            In::Init("sw", f(&[m], sw.clone())),
            In::Init("zw", ints(DType::I8, &[m], vec![0; m])),
            In::Init("sy", f(&[], vec![sy])),
            In::Init("zy", ints(DType::U8, &[], vec![zy])),
            In::Init("b", i32s(&[m], bias.clone())),
        ]
    };
    let x_in = || In::Data("x", ints(DType::U8, &[1, c, h, wd], x.clone()));
    let mut inputs = vec![x_in()];
    inputs.extend(inits());
    let got = run_graph(
        "qlinear-conv",
        vec![node("QLinearConv", "qc", &["x", "sx", "zx", "w", "sw", "zw", "sy", "zy", "b"], &["y"], pads())],
        inputs,
        &["y"],
    );
    assert_eq!(got[0], ints(DType::U8, &[1, m, h, wd], want.clone()), "QLinearConv");
    // The QDQ form: the bias as int32 in the scale sx * sw (per channel).
    let bias_scale: Vec<f32> = sw.iter().map(|&s| sx * s).collect();
    let mut inputs = vec![x_in()];
    inputs.extend(inits());
    inputs.push(In::Init("sb", f(&[m], bias_scale)));
    let nodes = vec![
        node("DequantizeLinear", "dq_x", &["x", "sx", "zx"], &["xf"], vec![]),
        node("DequantizeLinear", "dq_w", &["w", "sw", "zw"], &["wf"], vec![attr_i("axis", 0)]),
        node("DequantizeLinear", "dq_b", &["b", "sb"], &["bf"], vec![attr_i("axis", 0)]),
        node("Conv", "conv", &["xf", "wf", "bf"], &["yf"], pads()),
        node("QuantizeLinear", "q_y", &["yf", "sy", "zy"], &["y"], vec![]),
    ];
    let (mut infos, mut protos, mut feeds) = (Vec::new(), Vec::new(), Vec::new());
    for i in &inputs {
        match i {
            In::Data(n, t) => {
                infos.push(t.info(n));
                feeds.push((*n, t.bytes()));
            }
            In::Init(n, t) => protos.push(t.proto(n)),
        }
    }
    let outs = vec![rlx_onnx::proto::ValueInfoProto { name: "y".to_string(), ..Default::default() }];
    let qdq = model(nodes, protos, infos, outs, 18);
    let got = run_model("qdq-conv", &qdq, &feeds, &["y"]);
    assert_eq!(got[0], ints(DType::U8, &[1, m, h, wd], want.clone()), "QDQ Conv");
    // It ran as the integer convolution with the requantization fused
    // (`QLinearConv2D`, the filter packed), not as an f32 one.
    let kinds =
        |sched: &str| ["QLinearConv2D", "IntConv2D", "Requantize", "Conv2D"].map(|kind| count_kind(sched, kind));
    let sched = import_model(&qdq, &ImportOptions::new(WEIGHTS)).expect("import").sched_text;
    assert_eq!(kinds(&sched), [1, 0, 0, 0], "{sched}");
    // Without prepacking, the unfused pair: the same bytes.
    let mut opts = ImportOptions::new(WEIGHTS);
    opts.prepack = false;
    let pair = import_model(&qdq, &opts).expect("import");
    assert_eq!(kinds(&pair.sched_text), [0, 1, 1, 0], "{}", pair.sched_text);
    let got = run_raw("qdq-conv-pair", &pair, &feeds, &["y"]);
    assert_eq!(got[0], ints(DType::U8, &[1, m, h, wd], want).bytes(), "the IntConv2D + Requantize pair");
}

/// A depthwise QLinearConv (stride 2, asymmetric padding, per-channel
/// scales, a nonzero input zero point) fused into one `QLinearConv2D`
/// gives the bytes of the `IntConv2D` + `Requantize` pair it replaces.
#[test]
fn depthwise_qlinear_conv_fuses_with_the_pairs_bytes() {
    let [c, h, wd] = [20usize, 9, 11];
    let x: Vec<i64> = (0..c * h * wd).map(|i| (i as i64 * 29 + 5) % 256).collect();
    let w: Vec<i64> = (0..c * 9).map(|i| (i as i64 * 61 + 3) % 255 - 127).collect();
    let bias: Vec<i32> = (0..c as i32).map(|i| i * 97 - 900).collect();
    let sw: Vec<f32> = (0..c).map(|i| 0.001 + 0.0003 * i as f32).collect();
    let attrs = vec![
        attr_ints("pads", &[1, 0, 2, 1]),
        attr_ints("kernel_shape", &[3, 3]),
        attr_ints("strides", &[2, 2]),
        attr_i("group", c as i64),
    ];
    let x = ints(DType::U8, &[1, c, h, wd], x);
    let infos = vec![x.info("x")];
    let protos = vec![
        f(&[], vec![0.02]).proto("sx"),
        ints(DType::U8, &[], vec![117]).proto("zx"),
        ints(DType::I8, &[c, 1, 3, 3], w).proto("w"),
        f(&[c], sw).proto("sw"),
        ints(DType::I8, &[c], vec![0; c]).proto("zw"),
        f(&[], vec![0.05]).proto("sy"),
        ints(DType::U8, &[], vec![3]).proto("zy"),
        i32s(&[c], bias).proto("b"),
    ];
    let feeds = vec![("x", x.bytes())];
    let nodes = vec![node("QLinearConv", "qc", &["x", "sx", "zx", "w", "sw", "zw", "sy", "zy", "b"], &["y"], attrs)];
    let outs = vec![rlx_onnx::proto::ValueInfoProto { name: "y".to_string(), ..Default::default() }];
    let m = model(nodes, protos, infos, outs, 18);
    let kinds = |sched: &str| ["QLinearConv2D", "IntConv2D", "Requantize"].map(|kind| count_kind(sched, kind));
    let fused = import_model(&m, &ImportOptions::new(WEIGHTS)).expect("import");
    assert_eq!(kinds(&fused.sched_text), [1, 0, 0], "{}", fused.sched_text);
    assert!(fused.sched_text.contains(&format!("groups: {c}")), "{}", fused.sched_text);
    let mut opts = ImportOptions::new(WEIGHTS);
    opts.prepack = false;
    let pair = import_model(&m, &opts).expect("import");
    assert_eq!(kinds(&pair.sched_text), [0, 1, 1], "{}", pair.sched_text);
    let (a, b) = (run_raw("dw-fused", &fused, &feeds, &["y"]), run_raw("dw-pair", &pair, &feeds, &["y"]));
    assert_eq!(a, b, "fused and pair differ");
    assert!(a[0].iter().any(|&v| v != a[0][0]), "a constant output proves little");
}

/// Two QLinearConvs in a row, the first's output `t` also a graph output
/// or not: a private `t` is kept channels last between them (the
/// producer's `out_nhwc`, the reader's `x_nhwc`), a graph output stays
/// NCHW; either way the bytes are the unfused pairs'.
#[test]
fn chained_qlinear_convs_keep_their_activation_channels_last() {
    let [c, h, wd, m1, m2] = [8usize, 6, 7, 24, 5];
    let x = ints(DType::U8, &[1, c, h, wd], (0..c * h * wd).map(|i| (i as i64 * 41 + 3) % 256).collect());
    let w1: Vec<i64> = (0..m1 * c * 9).map(|i| (i as i64 * 67 + 1) % 255 - 127).collect();
    let w2: Vec<i64> = (0..m2 * m1).map(|i| (i as i64 * 23 + 9) % 255 - 127).collect();
    let protos = || {
        vec![
            f(&[], vec![0.02]).proto("sx"),
            ints(DType::U8, &[], vec![121]).proto("zx"),
            ints(DType::I8, &[m1, c, 3, 3], w1.clone()).proto("w1"),
            f(&[m1], (0..m1).map(|i| 0.002 + 0.0001 * i as f32).collect()).proto("sw1"),
            ints(DType::I8, &[m1], vec![0; m1]).proto("zw1"),
            f(&[], vec![0.06]).proto("st"),
            ints(DType::U8, &[], vec![17]).proto("zt"),
            i32s(&[m1], (0..m1 as i32).map(|i| i * 131 - 1500).collect()).proto("b1"),
            ints(DType::I8, &[m2, m1, 1, 1], w2.clone()).proto("w2"),
            f(&[], vec![0.004]).proto("sw2"),
            ints(DType::I8, &[], vec![0]).proto("zw2"),
            f(&[], vec![0.09]).proto("sy"),
            ints(DType::U8, &[], vec![128]).proto("zy"),
        ]
    };
    let feeds = vec![("x", x.bytes())];
    let outputs = |names: &[&str]| {
        names.iter().map(|n| rlx_onnx::proto::ValueInfoProto { name: n.to_string(), ..Default::default() }).collect()
    };
    let conv1 = || {
        let attrs = vec![attr_ints("pads", &[1, 1, 1, 1]), attr_ints("kernel_shape", &[3, 3])];
        node("QLinearConv", "qc1", &["x", "sx", "zx", "w1", "sw1", "zw1", "st", "zt", "b1"], &["t"], attrs)
    };
    let conv2 = || node("QLinearConv", "qc2", &["t", "st", "zt", "w2", "sw2", "zw2", "sy", "zy"], &["y"], vec![]);
    let flags = |sched: &str| [sched.matches("out_nhwc: true").count(), sched.matches("x_nhwc: true").count()];
    for (names, want_flags) in [(&["y"][..], [1, 1]), (&["y", "t"][..], [0, 0])] {
        let m = model(vec![conv1(), conv2()], protos(), vec![x.info("x")], outputs(names), 18);
        let fused = import_model(&m, &ImportOptions::new(WEIGHTS)).expect("import");
        assert_eq!(count_kind(&fused.sched_text, "QLinearConv2D"), 2, "{}", fused.sched_text);
        assert_eq!(flags(&fused.sched_text), want_flags, "outputs {names:?}: {}", fused.sched_text);
        let mut opts = ImportOptions::new(WEIGHTS);
        opts.prepack = false;
        let pair = import_model(&m, &opts).expect("import");
        let (a, b) = (run_raw("chain-fused", &fused, &feeds, names), run_raw("chain-pair", &pair, &feeds, names));
        assert_eq!(a, b, "outputs {names:?}: fused and pairs differ");
        assert!(a[0].iter().any(|&v| v != a[0][0]), "a constant output proves little");
    }
}

/// Imports one node over `inputs` and returns the import error.
fn import_error(op: &str, inputs: Vec<In>, attrs: Vec<rlx_onnx::proto::AttributeProto>) -> String {
    let names: Vec<&str> = inputs
        .iter()
        .map(|i| match i {
            In::Data(n, _) | In::Init(n, _) => *n,
        })
        .collect();
    let (mut infos, mut inits) = (Vec::new(), Vec::new());
    for i in &inputs {
        match i {
            In::Data(n, t) => infos.push(t.info(n)),
            In::Init(n, t) => inits.push(t.proto(n)),
        }
    }
    let outs = vec![rlx_onnx::proto::ValueInfoProto { name: "out".to_string(), ..Default::default() }];
    let m = model(vec![node(op, "q", &names, &["out"], attrs)], inits, infos, outs, 21);
    match import_model(&m, &ImportOptions::new("w.safetensors")) {
        Ok(_) => panic!("{op} imported"),
        Err(e) => e.to_string(),
    }
}

/// Scales known at import time must be finite and above 0; a zero point
/// and `output_dtype` must agree: each refused with the tensor named,
/// never imported into a division by zero or a NaN multiplier.
#[test]
fn quantization_parameters_outside_the_spec_are_refused() {
    let x = || In::Data("x", f(&[4], vec![1.0, 2.0, 3.0, 4.0]));
    let xq = || In::Data("x", ints(DType::U8, &[4], vec![1, 2, 3, 4]));
    let zp = || In::Init("zp", ints(DType::U8, &[], vec![3]));
    for bad in [0.0, -1.0, f32::NAN, f32::INFINITY] {
        for (op, input) in [("QuantizeLinear", x()), ("DequantizeLinear", xq())] {
            let e = import_error(op, vec![input, In::Init("s", f(&[], vec![bad])), zp()], vec![]);
            assert!(
                e.contains(&format!(
                    "scale `s` (input 1) holds {bad} at index 0; a quantization scale must be finite and above 0"
                )),
                "{op} {bad}: {e}"
            );
        }
    }
    // Per channel: the bad element is named.
    let e = import_error(
        "DequantizeLinear",
        vec![In::Data("x", ints(DType::I8, &[2, 3], vec![0; 6])), In::Init("s", f(&[3], vec![0.5, 0.0, 1.0]))],
        vec![attr_i("axis", 1)],
    );
    assert!(e.contains("holds 0 at index 1"), "{e}");
    let e = import_error(
        "QuantizeLinear",
        vec![x(), In::Init("s", f(&[], vec![0.5])), zp()],
        vec![attr_i("output_dtype", 3)],
    );
    assert!(e.contains("attribute `output_dtype` is i8, but y_zero_point is u8; they must agree"), "{e}");
}

/// Without raw data, ONNX stores 8- and 16-bit integers, 2-byte floats'
/// bits and bools one per `int32_data` entry: a value outside the type is
/// an error naming the tensor, never wrapped into it.
#[test]
fn typed_data_outside_its_element_type_is_refused() {
    use rlx_onnx::proto::{data_type, TensorProto};
    let cases = [
        (data_type::UINT8, 300, "`int32_data` holds 300 at index 0, outside u8's range 0..=255"),
        (data_type::UINT8, -5, "holds -5 at index 0, outside u8's range 0..=255"),
        (data_type::INT8, 128, "outside i8's range -128..=127"),
        (data_type::UINT16, 70000, "outside u16's range 0..=65535"),
        (data_type::FLOAT16, 70000, "outside float16 bits's range 0..=65535"),
        (data_type::BOOL, 2, "outside bool's range 0..=1"),
    ];
    for (dtype, value, want) in cases {
        let zp = TensorProto { name: "c".to_string(), data_type: dtype, int32_data: vec![value], ..Default::default() };
        let m = model(
            vec![node("Identity", "id", &["c"], &["out"], vec![])],
            vec![zp],
            vec![],
            vec![rlx_onnx::proto::ValueInfoProto { name: "out".to_string(), ..Default::default() }],
            18,
        );
        let Err(e) = import_model(&m, &ImportOptions::new("w.safetensors")) else { panic!("{dtype} {value} imported") };
        let e = e.to_string();
        assert!(e.contains("tensor `c`") && e.contains(want), "{dtype} {value}: {e}");
    }
}
