//! The ops lowered onto existing kinds or small compositions of them:
//! the unary activations, `PRelu`, `Dropout`, `Size`, `CastLike`,
//! `LogSoftmax`, `Hardmax`, the further reductions, `Mod`, `Trilu`,
//! `DepthToSpace` / `SpaceToDepth` and `Xor`. Each case is a one-node
//! graph run in the interpreter and compared with a reference written
//! here from the ONNX spec's formula (in f64 where it computes): exact for
//! moves, selects, integers and single IEEE operations; within a stated
//! relative tolerance for transcendental functions.

use crate::common::typed::*;
use crate::common::*;
use rlx_onnx::proto::*;
use rlx_onnx::ImportOptions;

/// Values with every edge the activations branch on.
fn edge_values() -> Vec<f32> {
    let mut v = vec![
        0.0,
        -0.0,
        0.5,
        -0.5,
        1.0,
        -1.0,
        1.5,
        2.5,
        -2.5,
        3.0,
        -3.0,
        7.25,
        -7.25,
        1e-20,
        -1e-20,
        30.0,
        -30.0,
        f32::INFINITY,
        f32::NEG_INFINITY,
        f32::NAN,
    ];
    v.extend(values(17, 41).iter().map(|x| x * 6.0));
    v
}

fn floats(t: T) -> Vec<f32> {
    match t {
        T::F32(_, v) => v,
        other => panic!("expected f32, got {other:?}"),
    }
}

/// `got` within `rel * |want| + abs` of `want`; NaN only for NaN, an
/// infinity only for itself.
fn assert_within(got: &[f32], want: &[f64], rel: f64, abs: f64, what: &str) {
    assert_eq!(got.len(), want.len(), "{what}: length");
    for (i, (&g, &w)) in got.iter().zip(want).enumerate() {
        let ok = if w.is_nan() {
            g.is_nan()
        } else if w.is_infinite() || (w as f32).is_infinite() {
            f64::from(g) == w || g == w as f32
        } else {
            (f64::from(g) - w).abs() <= rel * w.abs() + abs
        };
        assert!(ok, "{what} at {i}: got {g:e}, want {w:e}");
    }
}

/// [`assert_within`] with a relative bound only (1e-30 absolute).
fn assert_near(got: &[f32], want: &[f64], rel: f64, what: &str) {
    assert_within(got, want, rel, 1e-30, what);
}

fn softplus(x: f64) -> f64 {
    if x > 30.0 {
        x
    } else {
        x.exp().ln_1p()
    }
}

#[test]
fn unary_activations_follow_the_spec_formulas() {
    let x = edge_values();
    let n = x.len();
    type Ref = fn(f64) -> f64;
    let cases: Vec<(&str, Vec<AttributeProto>, Ref, f64)> = vec![
        // -inf gives the limit, 0, where the product alone would be NaN.
        ("HardSwish", vec![], |x| if x == f64::NEG_INFINITY { 0.0 } else { x * (x / 6.0 + 0.5).clamp(0.0, 1.0) }, 1e-6),
        ("Mish", vec![], |x| if x == f64::NEG_INFINITY { 0.0 } else { x * softplus(x).tanh() }, 1e-6),
        ("Softplus", vec![], softplus, 1e-6),
        ("Softsign", vec![], |x| if x.is_infinite() { x.signum() } else { x / (1.0 + x.abs()) }, 1e-6),
        ("Sin", vec![], f64::sin, 1e-6),
        ("Cos", vec![], f64::cos, 1e-6),
        ("Tan", vec![], f64::tan, 1e-6),
        ("Asin", vec![], f64::asin, 1e-6),
        ("Acos", vec![], f64::acos, 1e-6),
        ("Atan", vec![], f64::atan, 1e-6),
        ("Sinh", vec![], f64::sinh, 1e-6),
        ("Cosh", vec![], f64::cosh, 1e-6),
        ("Asinh", vec![], f64::asinh, 1e-6),
        ("Acosh", vec![], f64::acosh, 1e-6),
        ("Atanh", vec![], f64::atanh, 1e-6),
        (
            "Sign",
            vec![],
            |x| {
                if x > 0.0 {
                    1.0
                } else if x < 0.0 {
                    -1.0
                } else {
                    x
                }
            },
            0.0,
        ),
        ("Round", vec![], f64::round_ties_even, 0.0),
        ("Floor", vec![], f64::floor, 0.0),
        ("Ceil", vec![], f64::ceil, 0.0),
        ("Reciprocal", vec![], |x| 1.0 / x, 1e-7),
        ("Elu", vec![attr_f("alpha", 0.5)], |x| if x < 0.0 { 0.5 * x.exp_m1() } else { x }, 1e-6),
        (
            "Selu",
            vec![],
            |x| {
                let (a, g) = (1.673_263_192_176_818_8, 1.050_701_022_148_132_3);
                if x > 0.0 {
                    g * x
                } else {
                    g * a * x.exp_m1()
                }
            },
            1e-6,
        ),
        ("Celu", vec![attr_f("alpha", 2.0)], |x| x.max(0.0) + (2.0 * (x / 2.0).exp_m1()).min(0.0), 1e-6),
        ("ThresholdedRelu", vec![attr_f("alpha", 0.5)], |x| if x > 0.5 { x } else { 0.0 }, 0.0),
        ("ThresholdedRelu", vec![], |x| if x > 1.0 { x } else { 0.0 }, 0.0),
        (
            "Shrink",
            vec![attr_f("bias", 0.25), attr_f("lambd", 1.0)],
            |x| {
                if x < -1.0 {
                    x + 0.25
                } else if x > 1.0 {
                    x - 0.25
                } else {
                    0.0
                }
            },
            1e-7,
        ),
        (
            "Shrink",
            vec![],
            // bias 0: x outside [-0.5, 0.5], else 0.
            |x| if x.abs() > 0.5 { x } else { 0.0 },
            0.0,
        ),
    ];
    for (op, attrs, reference, rel) in cases {
        let got = floats(one(op, op, vec![In::Data("x", f(&[n], x.clone()))], attrs));
        let want: Vec<f64> = x.iter().map(|&v| reference(f64::from(v))).collect();
        // NaN propagates, except through ThresholdedRelu and Shrink, whose
        // formulas send it to 0 (`f64::max` in a reference would drop it).
        let nan_to = if matches!(op, "ThresholdedRelu" | "Shrink") { 0.0 } else { f64::NAN };
        let want: Vec<f64> = want.iter().zip(&x).map(|(&w, v)| if v.is_nan() { nan_to } else { w }).collect();
        assert_near(&got, &want, rel, op);
    }
}

#[test]
fn celu_with_alpha_zero_is_refused() {
    let m = model(
        vec![node("Celu", "c", &["x"], &["y"], vec![attr_f("alpha", 0.0)])],
        vec![],
        vec![vi("x", &[2])],
        vec![vi("y", &[2])],
        18,
    );
    let err = import_model(&m, &ImportOptions::new(WEIGHTS)).unwrap_err().to_string();
    assert!(err.contains("node `c`") && err.contains("attribute `alpha`"), "{err}");
}

#[test]
fn prelu_broadcasts_the_slope_to_x() {
    let mut x: Vec<f32> = (0..24).map(|i| (i as f32 - 11.5) * 0.75).collect();
    // NaN and -0.0 pass through (`x < 0` is false for both).
    x[3] = f32::NAN;
    x[5] = -0.0;
    for (shape, slope) in [(vec![4], vec![0.1f32, -2.0, 0.5, 3.0]), (vec![3, 1], vec![0.25, -1.0, 2.0])] {
        let got = floats(one(
            "prelu",
            "PRelu",
            vec![In::Data("x", f(&[2, 3, 4], x.clone())), In::Init("s", f(&shape, slope.clone()))],
            vec![],
        ));
        for i in 0..24 {
            let s = slope[bidx(i, &[2, 3, 4], &shape)];
            let want = if x[i] < 0.0 { s * x[i] } else { x[i] };
            assert!(got[i].to_bits() == want.to_bits() || (got[i].is_nan() && want.is_nan()), "{i}: {}", got[i]);
        }
    }
    // A slope that broadcasts only the other way is refused.
    let m = model(
        vec![node("PRelu", "p", &["x", "s"], &["y"], vec![])],
        vec![init_raw("s", &[2, 4], &[1.0; 8])],
        vec![vi("x", &[4])],
        vec![vi("y", &[4])],
        16,
    );
    let err = import_model(&m, &ImportOptions::new(WEIGHTS)).unwrap_err().to_string();
    assert!(err.contains("does not broadcast to X"), "{err}");
}

#[test]
fn dropout_at_inference_is_the_identity_with_an_all_true_mask() {
    let x = values(6, 3);
    let data = || In::Data("x", f(&[2, 3], x.clone()));
    let out = run_graph("dropout", vec![node("Dropout", "d", &["x"], &["y", "m"], vec![])], vec![data()], &["y", "m"]);
    assert_eq!(out, vec![f(&[2, 3], x.clone()), bools(&[2, 3], vec![true; 6])]);
    // training_mode false, or true with ratio 0, is the identity too.
    for (ratio, training) in [(0.5f32, false), (0.0, true)] {
        let out = run_graph(
            "dropout-modes",
            vec![node("Dropout", "d", &["x", "r", "t"], &["y"], vec![])],
            vec![data(), In::Init("r", f(&[], vec![ratio])), In::Init("t", bools(&[], vec![training]))],
            &["y"],
        );
        assert_eq!(out, vec![f(&[2, 3], x.clone())]);
    }
    // Opset 11: ratio is an attribute.
    let out = run_graph_opset(
        "dropout-11",
        vec![node("Dropout", "d", &["x"], &["y"], vec![attr_f("ratio", 0.2)])],
        vec![data()],
        &["y"],
        11,
    );
    assert_eq!(out, vec![f(&[2, 3], x.clone())]);
    // Random dropout is refused with a message.
    let m = model(
        vec![node("Dropout", "d", &["x", "r", "t"], &["y"], vec![])],
        vec![init_raw("r", &[], &[0.5]), T::Bool(vec![], vec![true]).proto("t")],
        vec![vi("x", &[2, 3])],
        vec![vi("y", &[2, 3])],
        18,
    );
    let err = import_model(&m, &ImportOptions::new(WEIGHTS)).unwrap_err().to_string();
    assert!(err.contains("node `d`") && err.contains("training mode"), "{err}");
}

#[test]
fn size_folds_and_cast_like_takes_the_second_type() {
    let got = one("size", "Size", vec![In::Data("x", f(&[2, 3, 4], values(24, 1)))], vec![]);
    assert_eq!(got, i64s(&[], vec![24]));
    let x = vec![-2.7f32, 0.5, 3.9];
    let got = one(
        "castlike-i64",
        "CastLike",
        vec![In::Data("x", f(&[3], x.clone())), In::Data("like", i64s(&[1], vec![0]))],
        vec![],
    );
    assert_eq!(got, i64s(&[3], vec![-2, 0, 3]));
    let got = one(
        "castlike-f32",
        "CastLike",
        vec![In::Data("x", i32s(&[2], vec![-5, 7])), In::Init("like", f(&[], vec![0.0]))],
        vec![],
    );
    assert_eq!(got, f(&[2], vec![-5.0, 7.0]));
    let got = one(
        "castlike-bool",
        "CastLike",
        vec![In::Data("x", f(&[3], vec![0.0, -0.0, 2.0])), In::Data("like", bools(&[1], vec![false]))],
        vec![],
    );
    assert_eq!(got, bools(&[3], vec![false, false, true]));
}

/// `[outer, axis_dim, inner]` rows of `x` through `f` (one row's values
/// in, the row's results out), in f64.
fn per_row(x: &[f32], [outer, axis, inner]: [usize; 3], f: impl Fn(&[f64]) -> Vec<f64>) -> Vec<f64> {
    let mut out = vec![0.0; x.len()];
    for o in 0..outer {
        for i in 0..inner {
            let at = |a: usize| (o * axis + a) * inner + i;
            let row: Vec<f64> = (0..axis).map(|a| f64::from(x[at(a)])).collect();
            for (a, v) in f(&row).into_iter().enumerate() {
                out[at(a)] = v;
            }
        }
    }
    out
}

fn log_softmax_ref(row: &[f64]) -> Vec<f64> {
    let m = row.iter().cloned().fold(f64::NEG_INFINITY, f64::max);
    let lse = row.iter().map(|v| (v - m).exp()).sum::<f64>().ln();
    row.iter().map(|v| v - m - lse).collect()
}

fn hardmax_ref(row: &[f64]) -> Vec<f64> {
    let first = (0..row.len()).fold(0, |best, i| if row[i] > row[best] { i } else { best });
    (0..row.len()).map(|i| if i == first { 1.0 } else { 0.0 }).collect()
}

#[test]
fn log_softmax_and_hardmax_on_one_axis_and_coerced_to_2d() {
    // Large offsets: a softmax followed by a log would lose the small ones.
    let mut x: Vec<f32> = values(60, 7).iter().map(|v| v * 40.0).collect();
    x[10] = 10_000.0;
    x[11] = 10_001.0;
    // Ties for Hardmax: the first wins.
    x[20] = 100.0;
    x[25] = 100.0;
    let shape = [3usize, 4, 5];
    for (opset, axis, split) in [
        (13, 1, [3, 4, 5]),
        (13, -1, [12, 5, 1]),
        (13, 0, [1, 3, 20]),
        (11, 1, [3, 20, 1]),
        (11, 0, [1, 60, 1]),
        (11, -1, [12, 5, 1]),
    ] {
        // LogSoftmax: f32 rounding of values up to ~80 in magnitude, and of
        // log-sum-exps near 0 (an absolute 1e-6 covers both; a wrong row or
        // a softmax-then-log underflow is off by far more).
        for (op, reference, rel, abs) in
            [("LogSoftmax", log_softmax_ref as fn(&[f64]) -> Vec<f64>, 1e-6, 1e-6), ("Hardmax", hardmax_ref, 0.0, 0.0)]
        {
            let out = run_graph_opset(
                op,
                vec![node(op, "n", &["x"], &["y"], vec![attr_i("axis", axis)])],
                vec![In::Data("x", f(&shape, x.clone()))],
                &["y"],
                opset,
            );
            let want = per_row(&x, split, reference);
            assert_within(&floats(out[0].clone()), &want, rel, abs, &format!("{op} opset {opset} axis {axis}"));
        }
    }
}

/// An f64 reduction of rows of `x` viewed as `[outer, axis, inner]`.
fn reduce_ref(x: &[f32], [outer, axis, inner]: [usize; 3], f: impl Fn(&[f64]) -> f64) -> Vec<f64> {
    let mut out = Vec::new();
    for o in 0..outer {
        for i in 0..inner {
            let row: Vec<f64> = (0..axis).map(|a| f64::from(x[(o * axis + a) * inner + i])).collect();
            out.push(f(&row));
        }
    }
    out
}

#[test]
fn min_prod_l1_sum_square_log_sum_and_log_sum_exp_reductions() {
    let x: Vec<f32> = values(24, 9).iter().map(|v| v + 1.5).collect();
    type Red = fn(&[f64]) -> f64;
    let ops: [(&str, Red); 6] = [
        ("ReduceMin", |r| r.iter().cloned().fold(f64::INFINITY, f64::min)),
        ("ReduceProd", |r| r.iter().product()),
        ("ReduceL1", |r| r.iter().map(|v| v.abs()).sum()),
        ("ReduceSumSquare", |r| r.iter().map(|v| v * v).sum()),
        ("ReduceLogSum", |r| r.iter().sum::<f64>().ln()),
        ("ReduceLogSumExp", |r| r.iter().map(|v| v.exp()).sum::<f64>().ln()),
    ];
    for (op, reference) in ops {
        // Axis 1 of [2, 3, 4], as an input (opset 18) and an attribute (13),
        // without and with keepdims.
        let want = reduce_ref(&x, [2, 3, 4], reference);
        let got = run_graph(
            op,
            vec![node(op, "r", &["x", "axes"], &["y"], vec![attr_i("keepdims", 0)])],
            vec![In::Data("x", f(&[2, 3, 4], x.clone())), In::Init("axes", i64s(&[1], vec![1]))],
            &["y"],
        );
        assert_eq!(got[0].shape(), [2, 4], "{op}");
        assert_near(&floats(got[0].clone()), &want, 1e-6, op);
        let got = run_graph_opset(
            op,
            vec![node(op, "r", &["x"], &["y"], vec![attr_ints("axes", &[-2])])],
            vec![In::Data("x", f(&[2, 3, 4], x.clone()))],
            &["y"],
            13,
        );
        assert_eq!(got[0].shape(), [2, 1, 4], "{op}");
        assert_near(&floats(got[0].clone()), &want, 1e-6, op);
        // Scattered axes 0 and 2.
        let moved: Vec<f32> = (0..24).map(|k| x[(k / 8) * 4 + ((k % 8) / 4) * 12 + k % 4]).collect();
        let got = one(
            op,
            op,
            vec![In::Data("x", f(&[2, 3, 4], x.clone())), In::Init("axes", i64s(&[2], vec![0, 2]))],
            vec![attr_i("keepdims", 0)],
        );
        assert_near(&floats(got), &reduce_ref(&moved, [3, 8, 1], reference), 1e-6, op);
        // A scalar is reduced over its one element.
        let got = one(op, op, vec![In::Data("x", f(&[], vec![-0.75]))], vec![]);
        assert_near(&floats(got), &[reference(&[-0.75])], 1e-6, op);
        // Over an empty set: the reduction's identity.
        let got = one(
            op,
            op,
            vec![In::Data("x", f(&[2, 0, 3], vec![])), In::Init("axes", i64s(&[1], vec![1]))],
            vec![attr_i("keepdims", 1)],
        );
        assert_eq!(got.shape(), [2, 1, 3], "{op}");
        assert_near(&floats(got), &[reference(&[]); 6], 0.0, op);
        // No axes with noop_with_empty_axes: the input.
        let got = one(op, op, vec![In::Data("x", f(&[2, 3, 4], x.clone()))], vec![attr_i("noop_with_empty_axes", 1)]);
        assert_eq!(got, f(&[2, 3, 4], x.clone()), "{op}");
    }
    // ReduceMin of bools is `all`.
    let got = one(
        "min-bool",
        "ReduceMin",
        vec![In::Data("x", bools(&[2, 2], vec![true, false, true, true])), In::Init("axes", i64s(&[1], vec![1]))],
        vec![attr_i("keepdims", 0)],
    );
    assert_eq!(got, bools(&[2], vec![false, true]));
}

#[test]
fn mod_is_floored_for_integers_and_truncated_with_fmod() {
    let a = vec![7i64, -7, 7, -7, 0, 5, i64::MIN];
    let b = vec![3i64, 3, -3, -3, -2, 5, -1];
    let floored = |x: i64, y: i64| {
        let r = x.wrapping_rem(y);
        if r != 0 && (r < 0) != (y < 0) {
            r + y
        } else {
            r
        }
    };
    let ins = || vec![In::Data("a", i64s(&[7], a.clone())), In::Data("b", i64s(&[7], b.clone()))];
    let got = one("mod-i64", "Mod", ins(), vec![]);
    assert_eq!(got, i64s(&[7], (0..7).map(|i| floored(a[i], b[i])).collect()));
    let got = one("fmod-i64", "Mod", ins(), vec![attr_i("fmod", 1)]);
    assert_eq!(got, i64s(&[7], (0..7).map(|i| a[i].wrapping_rem(b[i])).collect()));
    // i32 with a broadcast divisor.
    let a32 = vec![-4i32, 7, -9, 10, 11, -12];
    let got = one(
        "mod-i32",
        "Mod",
        vec![In::Data("a", i32s(&[2, 3], a32.clone())), In::Init("b", i32s(&[3], vec![3, -4, 5]))],
        vec![],
    );
    let want: Vec<i32> = (0..6).map(|i| floored(a32[i].into(), [3, -4, 5][i % 3]) as i32).collect();
    assert_eq!(got, i32s(&[2, 3], want));
    // f32 needs fmod = 1 (C fmod).
    let (fa, fb) = (vec![5.5f32, -5.5, 5.5, -5.5], vec![2.0f32, 2.0, -2.0, -2.0]);
    let got = one(
        "fmod-f32",
        "Mod",
        vec![In::Data("a", f(&[4], fa.clone())), In::Data("b", f(&[4], fb.clone()))],
        vec![attr_i("fmod", 1)],
    );
    assert_eq!(got, f(&[4], vec![1.5, -1.5, 1.5, -1.5]));
    let m = model(
        vec![node("Mod", "m", &["a", "b"], &["y"], vec![])],
        vec![],
        vec![vi("a", &[4]), vi("b", &[4])],
        vec![vi("y", &[4])],
        13,
    );
    let err = import_model(&m, &ImportOptions::new(WEIGHTS)).unwrap_err().to_string();
    assert!(err.contains("node `m`") && err.contains("attribute `fmod`"), "{err}");
}

#[test]
fn trilu_keeps_a_triangle_from_diagonal_k() {
    let x: Vec<f32> = (1..=24).map(|v| v as f32).collect();
    for (upper, k) in [(1, 0), (1, 1), (1, -2), (0, 0), (0, -1), (0, 3)] {
        let mut inputs = vec![In::Data("x", f(&[2, 3, 4], x.clone()))];
        if k != 0 {
            inputs.push(In::Init("k", i64s(&[], vec![k])));
        }
        let got = one("trilu", "Trilu", inputs, vec![attr_i("upper", upper)]);
        let want: Vec<f32> = (0..24)
            .map(|i| {
                let (r, c) = ((i / 4) % 3, i % 4);
                let d = c as i64 - r as i64;
                let keep = if upper == 1 { d >= k } else { d <= k };
                if keep {
                    x[i]
                } else {
                    0.0
                }
            })
            .collect();
        assert_eq!(got, f(&[2, 3, 4], want), "upper {upper} k {k}");
    }
    let got = one("trilu-i64", "Trilu", vec![In::Data("x", i64s(&[2, 2], vec![1, 2, 3, 4]))], vec![attr_i("upper", 0)]);
    assert_eq!(got, i64s(&[2, 2], vec![1, 0, 3, 4]));
}

#[test]
fn depth_to_space_and_space_to_depth_move_blocks() {
    let (n, c, h, w, b) = (2usize, 8usize, 2usize, 3usize, 2usize);
    let x: Vec<f32> = (0..n * c * h * w).map(|v| v as f32).collect();
    let s = |mode: &str| AttributeProto {
        name: "mode".to_string(),
        r#type: AttributeType::String as i32,
        s: mode.as_bytes().to_vec(),
        ..Default::default()
    };
    let cb = c / (b * b);
    for mode in ["DCR", "CRD"] {
        let got = one(
            "d2s",
            "DepthToSpace",
            vec![In::Data("x", f(&[n, c, h, w], x.clone()))],
            vec![attr_i("blocksize", b as i64), s(mode)],
        );
        // The spec's index formula.
        let mut want = Vec::new();
        for ni in 0..n {
            for co in 0..cb {
                for y in 0..h * b {
                    for xx in 0..w * b {
                        let (bi, bj) = (y % b, xx % b);
                        let ci = if mode == "DCR" { (bi * b + bj) * cb + co } else { (co * b + bi) * b + bj };
                        want.push(x[((ni * c + ci) * h + y / b) * w + xx / b]);
                    }
                }
            }
        }
        assert_eq!(got, f(&[n, cb, h * b, w * b], want.clone()), "{mode}");
        if mode == "DCR" {
            // SpaceToDepth inverts DCR.
            let back = one(
                "s2d",
                "SpaceToDepth",
                vec![In::Data("x", f(&[n, cb, h * b, w * b], want))],
                vec![attr_i("blocksize", b as i64)],
            );
            assert_eq!(back, f(&[n, c, h, w], x.clone()));
        }
    }
    let m = model(
        vec![node("DepthToSpace", "d", &["x"], &["y"], vec![attr_i("blocksize", 3)])],
        vec![],
        vec![vi("x", &[1, 8, 2, 2])],
        vec![vi("y", &[1, 1, 6, 6])],
        13,
    );
    let err = import_model(&m, &ImportOptions::new(WEIGHTS)).unwrap_err().to_string();
    assert!(err.contains("not a multiple of blocksize"), "{err}");
}

#[test]
fn xor_of_bools_broadcasts() {
    let a = vec![true, false, true, false, true, true];
    let b = vec![true, false, false];
    let got = one(
        "xor",
        "Xor",
        vec![In::Data("a", bools(&[2, 3], a.clone())), In::Data("b", bools(&[3], b.clone()))],
        vec![],
    );
    assert_eq!(got, bools(&[2, 3], (0..6).map(|i| a[i] ^ b[i % 3]).collect()));
}

/// `Sum`, `Mean`, `Max` and `Min` of any number of inputs, broadcast
/// together: a left-to-right chain of binary ops, exact against the same
/// chain written here (one IEEE operation per step); one input is itself;
/// integers stay integers; constant inputs fold.
#[test]
fn variadic_sum_mean_max_min() {
    let a = vec![1.5f32, -2.0, 0.25, 3.0, -0.5, 8.0];
    let b = vec![0.5f32, 4.0, -1.0];
    let c = vec![10.0f32];
    let inputs = || {
        vec![In::Data("a", f(&[2, 3], a.clone())), In::Data("b", f(&[3], b.clone())), In::Data("c", f(&[1], c.clone()))]
    };
    let each = |g: &dyn Fn(f32, f32, f32) -> f32| (0..6).map(|i| g(a[i], b[i % 3], c[0])).collect::<Vec<f32>>();
    let cases: [(&str, Vec<f32>); 4] = [
        ("Sum", each(&|x, y, z| x + y + z)),
        ("Mean", each(&|x, y, z| (x + y + z) / 3.0)),
        ("Max", each(&|x, y, z| x.max(y).max(z))),
        ("Min", each(&|x, y, z| x.min(y).min(z))),
    ];
    for (op, want) in cases {
        let got = run_graph(
            &format!("variadic-{op}"),
            vec![node(op, "v", &["a", "b", "c"], &["y"], vec![])],
            inputs(),
            &["y"],
        );
        assert_eq!(got, vec![f(&[2, 3], want)], "{op}");
    }
    // One input: its value.
    let got = run_graph(
        "variadic-one",
        vec![node("Sum", "v", &["a"], &["y"], vec![])],
        vec![In::Data("a", f(&[2, 3], a.clone()))],
        &["y"],
    );
    assert_eq!(got, vec![f(&[2, 3], a.clone())]);
    // Integers, and a constant operand.
    let got = run_graph(
        "variadic-i64",
        vec![node("Max", "v", &["p", "q", "r"], &["y"], vec![])],
        vec![
            In::Data("p", i64s(&[3], vec![1, -5, 7])),
            In::Init("q", i64s(&[3], vec![2, -6, 0])),
            In::Data("r", i64s(&[1], vec![3])),
        ],
        &["y"],
    );
    assert_eq!(got, vec![i64s(&[3], vec![3, 3, 7])]);
}

/// `EyeLike`: ones on diagonal `k` of the input's 2-D shape, in the
/// input's type or `dtype`; the input's values are never read.
#[test]
fn eye_like_is_a_constant_diagonal() {
    let x = || vec![In::Data("x", f(&[3, 4], vec![7.0; 12]))];
    let got = run_graph("eye-like-k1", vec![node("EyeLike", "e", &["x"], &["y"], vec![attr_i("k", 1)])], x(), &["y"]);
    let want = vec![0.0, 1.0, 0.0, 0.0, 0.0, 0.0, 1.0, 0.0, 0.0, 0.0, 0.0, 1.0];
    assert_eq!(got, vec![f(&[3, 4], want)]);
    let attrs = vec![attr_i("k", -1), attr_i("dtype", i64::from(data_type::INT64))];
    let got = run_graph("eye-like-i64", vec![node("EyeLike", "e", &["x"], &["y"], attrs)], x(), &["y"]);
    assert_eq!(got, vec![i64s(&[3, 4], vec![0, 0, 0, 0, 1, 0, 0, 0, 0, 1, 0, 0])]);
}

/// `IsInf` with each pair of detected signs, NaN never counting.
#[test]
fn is_inf_detects_the_chosen_signs() {
    let x = vec![f32::INFINITY, f32::NEG_INFINITY, f32::NAN, 0.0, -f32::MAX, f32::MAX];
    for (pos, neg) in [(1, 1), (1, 0), (0, 1), (0, 0)] {
        let attrs = vec![attr_i("detect_positive", pos), attr_i("detect_negative", neg)];
        let got = run_graph(
            &format!("is-inf-{pos}{neg}"),
            vec![node("IsInf", "i", &["x"], &["y"], attrs)],
            vec![In::Data("x", f(&[6], x.clone()))],
            &["y"],
        );
        let want =
            x.iter().map(|v| v.is_infinite() && if v.is_sign_positive() { pos == 1 } else { neg == 1 }).collect();
        assert_eq!(got, vec![bools(&[6], want)], "detect_positive {pos}, detect_negative {neg}");
    }
}

/// `TopK` of integers ranks exactly on the i64 kernel (values beyond 2^53
/// that f32 would tie), along the last axis and another, i32 values
/// narrowed back; ties by lower index.
#[test]
fn top_k_of_integers_is_exact() {
    let big = 1i64 << 60;
    let x = vec![big + 1, big, 5, big + 1, -3, 5];
    let k = || In::Init("k", i64s(&[1], vec![2]));
    let got = run_graph(
        "top-k-i64-last",
        vec![node("TopK", "t", &["x", "k"], &["v", "i"], vec![])],
        vec![In::Data("x", i64s(&[2, 3], x.clone())), k()],
        &["v", "i"],
    );
    assert_eq!(got, vec![i64s(&[2, 2], vec![big + 1, big, big + 1, 5]), i64s(&[2, 2], vec![0, 1, 0, 2])]);
    // Along axis 0, smallest, of i32.
    let y = vec![4i32, -1, 7, 4, -1, 0];
    let got = run_graph(
        "top-k-i32-axis0",
        vec![node("TopK", "t", &["y", "k"], &["v", "i"], vec![attr_i("axis", 0), attr_i("largest", 0)])],
        vec![In::Data("y", i32s(&[3, 2], y)), k()],
        &["v", "i"],
    );
    assert_eq!(got, vec![i32s(&[2, 2], vec![-1, -1, 4, 0]), i64s(&[2, 2], vec![2, 0, 0, 2])]);
}

#[test]
fn center_crop_pad_crops_and_pads_around_the_centre() {
    // [3, 5] to [2, 8] on both axes: rows cropped from floor((3 - 2) / 2)
    // = 0, columns padded floor(3 / 2) = 1 before and 2 after.
    let x: Vec<f32> = (1..=15).map(|v| v as f32).collect();
    let got = one(
        "ccp-both",
        "CenterCropPad",
        vec![In::Data("x", f(&[3, 5], x.clone())), In::Init("s", i64s(&[2], vec![2, 8]))],
        vec![],
    );
    let mut want = vec![0.0f32; 16];
    for r in 0..2 {
        for c in 0..5 {
            want[r * 8 + 1 + c] = x[r * 5 + c];
        }
    }
    assert_eq!(got, f(&[2, 8], want));
    // Only the last axis (negative), cropped 5 -> 2: start floor(3 / 2) = 1.
    let got = one(
        "ccp-axis",
        "CenterCropPad",
        vec![In::Data("x", f(&[3, 5], x.clone())), In::Init("s", i64s(&[1], vec![2]))],
        vec![attr_ints("axes", &[-1])],
    );
    assert_eq!(got, f(&[3, 2], vec![2.0, 3.0, 7.0, 8.0, 12.0, 13.0]));
    // The same size: unchanged.
    let got = one(
        "ccp-same",
        "CenterCropPad",
        vec![In::Data("x", f(&[3, 5], x.clone())), In::Init("s", i64s(&[2], vec![3, 5]))],
        vec![],
    );
    assert_eq!(got, f(&[3, 5], x));
}

/// `RotaryEmbedding` as the spec computes it, on `[batch, seq, heads,
/// head]` with caches already gathered to `[batch, seq, rotary / 2]`.
fn rotary_ref(
    x: &[f32],
    [b, s, h, d]: [usize; 4],
    cos: &[f32],
    sin: &[f32],
    rotary: usize,
    interleaved: bool,
) -> Vec<f32> {
    let half = rotary / 2;
    let mut out = x.to_vec();
    for bi in 0..b {
        for si in 0..s {
            for hi in 0..h {
                let base = ((bi * s + si) * h + hi) * d;
                for i in 0..half {
                    let (p, q) = if interleaved { (2 * i, 2 * i + 1) } else { (i, i + half) };
                    let (c, sn) = (cos[(bi * s + si) * half + i], sin[(bi * s + si) * half + i]);
                    let (x1, x2) = (x[base + p], x[base + q]);
                    out[base + p] = c * x1 - sn * x2;
                    out[base + q] = sn * x1 + c * x2;
                }
            }
        }
    }
    out
}

#[test]
fn rotary_embedding_rotates_by_position_in_both_layouts() {
    let (b, s, h, d) = (2usize, 3usize, 2usize, 8usize);
    let x = values(b * s * h * d, 7);
    let positions = vec![0i64, 4, 2, 1, 1, 3];
    for (rotary, interleaved) in [(8usize, false), (4, true), (4, false)] {
        let half = rotary / 2;
        let cache = |seed: u64| values(5 * half, seed);
        let (cos, sin) = (cache(1), cache(2));
        let gathered =
            |t: &[f32]| positions.iter().flat_map(|&p| t[p as usize * half..][..half].to_vec()).collect::<Vec<f32>>();
        let want = rotary_ref(&x, [b, s, h, d], &gathered(&cos), &gathered(&sin), rotary, interleaved);
        let attrs = vec![
            attr_i("num_heads", h as i64),
            attr_i("rotary_embedding_dim", rotary as i64),
            attr_i("interleaved", i64::from(interleaved)),
        ];
        // 3-D: [batch, seq, heads * head].
        let got = one(
            "rope-3d",
            "RotaryEmbedding",
            vec![
                In::Data("x", f(&[b, s, h * d], x.clone())),
                In::Data("cos", f(&[5, half], cos.clone())),
                In::Data("sin", f(&[5, half], sin.clone())),
                In::Data("pos", i64s(&[b, s], positions.clone())),
            ],
            attrs.clone(),
        );
        assert_close(&floats(got), &want, 1e-6, &format!("3-D rotary {rotary} interleaved {interleaved}"));
        // 4-D: [batch, heads, seq, head], without the num_heads attribute.
        let to_bhsd = |v: &[f32]| {
            let mut t = vec![0.0; v.len()];
            for (i, &e) in v.iter().enumerate() {
                let (bi, si, hi, di) = (i / (s * h * d), i / (h * d) % s, i / d % h, i % d);
                t[((bi * h + hi) * s + si) * d + di] = e;
            }
            t
        };
        let got = one(
            "rope-4d",
            "RotaryEmbedding",
            vec![
                In::Data("x", f(&[b, h, s, d], to_bhsd(&x))),
                In::Data("cos", f(&[5, half], cos.clone())),
                In::Data("sin", f(&[5, half], sin.clone())),
                In::Data("pos", i64s(&[b, s], positions.clone())),
            ],
            attrs[1..].to_vec(),
        );
        assert_close(&floats(got), &to_bhsd(&want), 1e-6, &format!("4-D rotary {rotary} interleaved {interleaved}"));
    }
}

#[test]
fn causal_conv_with_state_convolves_the_past_and_returns_the_new_state() {
    let (b, c, len, k) = (2usize, 3usize, 5usize, 3usize);
    let x = values(b * c * len, 11);
    let w = values(c * k, 12);
    let bias = vec![0.5f32, -0.25, 1.0];
    let past = values(b * c * (k - 1), 13);
    let got = run_graph_opset(
        "causal-conv",
        vec![node(
            "CausalConvWithState",
            "n",
            &["x", "w", "bias", "past"],
            &["y", "state"],
            vec![attr_s("activation", "silu")],
        )],
        vec![
            In::Data("x", f(&[b, c, len], x.clone())),
            In::Data("w", f(&[c, 1, k], w.clone())),
            In::Data("bias", f(&[c], bias.clone())),
            In::Data("past", f(&[b, c, k - 1], past.clone())),
        ],
        &["y", "state"],
        24,
    );
    let total = len + k - 1;
    let mut y = Vec::new();
    let mut state = Vec::new();
    for bi in 0..b {
        for ci in 0..c {
            let row: Vec<f64> = past[(bi * c + ci) * (k - 1)..][..k - 1]
                .iter()
                .chain(&x[(bi * c + ci) * len..][..len])
                .map(|&v| f64::from(v))
                .collect();
            for t in 0..len {
                let conv: f64 =
                    (0..k).map(|j| row[t + j] * f64::from(w[ci * k + j])).sum::<f64>() + f64::from(bias[ci]);
                y.push(conv / (1.0 + (-conv).exp()));
            }
            state.extend(row[total - (k - 1)..].iter().map(|&v| v as f32));
        }
    }
    assert_near(&floats(got[0].clone()), &y, 1e-5, "silu(conv)");
    assert_eq!(got[1], f(&[b, c, k - 1], state));
}

#[test]
fn swish_mvn_compress_and_non_zero() {
    let x = vec![-2.0f32, -0.5, 0.0, 1.5];
    let got = one("swish", "Swish", vec![In::Data("x", f(&[4], x.clone()))], vec![attr_f("alpha", 0.5)]);
    let want: Vec<f64> = x.iter().map(|&v| f64::from(v) / (1.0 + (-0.5 * f64::from(v)).exp())).collect();
    assert_within(&floats(got), &want, 1e-6, 1e-7, "swish alpha 0.5");

    // MVN over the last axis of [2, 3]: each row normalised.
    let v = vec![1.0f32, 2.0, 4.0, -1.0, 0.0, 5.0];
    let got = one(
        "mvn",
        "MeanVarianceNormalization",
        vec![In::Data("x", f(&[2, 3], v.clone()))],
        vec![attr_ints("axes", &[1])],
    );
    let mut want = Vec::new();
    for row in v.chunks(3) {
        let mean = row.iter().map(|&a| f64::from(a)).sum::<f64>() / 3.0;
        let var = row.iter().map(|&a| f64::from(a).powi(2)).sum::<f64>() / 3.0 - mean * mean;
        want.extend(row.iter().map(|&a| (f64::from(a) - mean) / (var.sqrt() + 1e-9)));
    }
    assert_within(&floats(got), &want, 1e-5, 1e-6, "mvn");

    // Compress along axis 1, and flattened (no axis, a shorter condition).
    let m: Vec<f32> = (0..6).map(|i| i as f32).collect();
    let cond = |v: Vec<bool>| In::Init("c", bools(&[v.len()], v));
    let got = one(
        "compress-axis",
        "Compress",
        vec![In::Data("x", f(&[2, 3], m.clone())), cond(vec![true, false, true])],
        vec![attr_i("axis", 1)],
    );
    assert_eq!(got, f(&[2, 2], vec![0.0, 2.0, 3.0, 5.0]));
    let got = one(
        "compress-flat",
        "Compress",
        vec![In::Data("x", f(&[2, 3], m)), cond(vec![false, true, false, true])],
        vec![],
    );
    assert_eq!(got, f(&[2], vec![1.0, 3.0]));

    // NonZero of a constant folds to [rank, count] indices.
    let got = one("nonzero", "NonZero", vec![In::Init("x", f(&[2, 2], vec![0.0, 3.0, 1.0, 0.0]))], vec![]);
    assert_eq!(got, i64s(&[2, 2], vec![0, 1, 1, 0]));
}

#[test]
fn lrn_reverse_sequence_max_unpool_and_tensor_scatter() {
    // LRN over 4 channels, size 3 (window c-1..c+1).
    let x = values(2 * 4 * 3, 31);
    let got =
        one("lrn", "LRN", vec![In::Data("x", f(&[2, 4, 3], x.clone()))], vec![attr_i("size", 3), attr_f("bias", 1.5)]);
    let mut want = Vec::new();
    for n in 0..2 {
        for c in 0..4 {
            for p in 0..3 {
                let sum: f64 =
                    (c.max(1) - 1..(c + 2).min(4)).map(|cc| f64::from(x[(n * 4 + cc) * 3 + p]).powi(2)).sum();
                want.push(f64::from(x[(n * 4 + c) * 3 + p]) / (1.5 + 1e-4 / 3.0 * sum).powf(0.75));
            }
        }
    }
    assert_within(&floats(got), &want, 1e-5, 1e-7, "lrn");

    // ReverseSequence: time axis 0, batch axis 1, lengths 1, 3, 0 (kept as is).
    let m: Vec<f32> = (0..9).map(|i| i as f32).collect();
    let got = one(
        "reverse-sequence",
        "ReverseSequence",
        vec![In::Data("x", f(&[3, 3], m)), In::Data("lens", i64s(&[3], vec![1, 3, 0]))],
        vec![attr_i("time_axis", 0), attr_i("batch_axis", 1)],
    );
    assert_eq!(got, f(&[3, 3], vec![0.0, 7.0, 2.0, 3.0, 4.0, 5.0, 6.0, 1.0, 8.0]));

    // MaxUnpool 2x2 / 2 of [1, 1, 2, 2] into [1, 1, 4, 4], then into a
    // larger output_shape (zeros after).
    let vals = vec![5.0f32, 6.0, 7.0, 8.0];
    let at = vec![0i64, 3, 12, 10];
    let pool = || vec![attr_ints("kernel_shape", &[2, 2]), attr_ints("strides", &[2, 2])];
    let got = one(
        "unpool",
        "MaxUnpool",
        vec![In::Data("x", f(&[1, 1, 2, 2], vals.clone())), In::Data("i", i64s(&[1, 1, 2, 2], at.clone()))],
        pool(),
    );
    let mut want = vec![0.0f32; 16];
    for (v, &i) in vals.iter().zip(&at) {
        want[i as usize] = *v;
    }
    assert_eq!(got, f(&[1, 1, 4, 4], want.clone()));
    let got = one(
        "unpool-shape",
        "MaxUnpool",
        vec![
            In::Data("x", f(&[1, 1, 2, 2], vals)),
            In::Data("i", i64s(&[1, 1, 2, 2], at)),
            In::Init("s", i64s(&[4], vec![1, 1, 5, 4])),
        ],
        pool(),
    );
    want.extend([0.0; 4]);
    assert_eq!(got, f(&[1, 1, 5, 4], want));

    // TensorScatter: two steps per batch entry at 3 and 1 of a cache of 4,
    // circular (batch 0 wraps to position 0).
    let cache = vec![0.0f32; 2 * 4];
    let update = vec![1.0f32, 2.0, 3.0, 4.0];
    let got = one(
        "tensor-scatter",
        "TensorScatter",
        vec![
            In::Data("cache", f(&[2, 4, 1], cache)),
            In::Data("update", f(&[2, 2, 1], update)),
            In::Data("w", i64s(&[2], vec![3, 1])),
        ],
        vec![attr_s("mode", "circular")],
    );
    assert_eq!(got, f(&[2, 4, 1], vec![2.0, 0.0, 0.0, 1.0, 0.0, 3.0, 4.0, 0.0]));
}

#[test]
fn det_expands_small_matrices_and_refuses_large_ones() {
    // [2, 3, 3]: a general matrix and a singular one.
    let a = vec![2.0f32, -1.0, 0.5, 1.0, 3.0, -2.0, 0.0, 4.0, 1.0, 1.0, 2.0, 3.0, 2.0, 4.0, 6.0, 0.5, 1.0, 7.0];
    let got = one("det", "Det", vec![In::Data("x", f(&[2, 3, 3], a.clone()))], vec![]);
    let det3 = |m: &[f32]| {
        let m: Vec<f64> = m.iter().map(|&v| f64::from(v)).collect();
        m[0] * (m[4] * m[8] - m[5] * m[7]) - m[1] * (m[3] * m[8] - m[5] * m[6]) + m[2] * (m[3] * m[7] - m[4] * m[6])
    };
    assert_within(&floats(got), &[det3(&a[..9]), det3(&a[9..])], 1e-6, 1e-6, "det 3x3");
    let got = one("det1", "Det", vec![In::Data("x", f(&[1, 1], vec![-2.5]))], vec![]);
    assert_eq!(got, f(&[], vec![-2.5]));
    let m = model(
        vec![node("Det", "d", &["x"], &["y"], vec![])],
        vec![],
        vec![vi("x", &[6, 6])],
        vec![ValueInfoProto { name: "y".to_string(), ..Default::default() }],
        22,
    );
    let e = import_model(&m, &rlx_onnx::ImportOptions::new("w.safetensors")).unwrap_err().to_string();
    assert!(e.contains("1 to 5 rows"), "{e}");
}
