//! A constant `Pad` read only by sliding windows becomes their padding
//! (`lower/build/pad_fold.rs`): no copy of the tensor is lowered, and the
//! results equal a naive f64 window over the explicitly padded tensor.
//! Pads the readers cannot take (another reader, a value other than the
//! window's implicit one, a graph output) stay a copy, with the same
//! results.
//!
//! Tolerance: sums of at most 3·3·4 = 36 products of values in [-1, 1)
//! in f32 against f64: under 1e-5.

use crate::common::*;
use rlx_onnx::proto::{AttributeProto, ModelProto, NodeProto, TensorProto};
use rlx_onnx::ImportOptions;

const TOL: f32 = 1e-5;

/// `[1, c, h, w]` padded with `fill`: `pads` is `[top, left, bottom, right]`.
fn pad_ref(x: &[f32], [c, h, w]: [usize; 3], pads: [usize; 4], fill: f32) -> (Vec<f64>, [usize; 3]) {
    let (h2, w2) = (h + pads[0] + pads[2], w + pads[1] + pads[3]);
    let mut out = vec![fill as f64; c * h2 * w2];
    for ch in 0..c {
        for i in 0..h {
            for j in 0..w {
                out[(ch * h2 + i + pads[0]) * w2 + j + pads[1]] = x[(ch * h + i) * w + j] as f64;
            }
        }
    }
    (out, [c, h2, w2])
}

/// What a window computes at each position.
enum Op<'a> {
    /// Weights `[c_out, c / groups, k, k]`, bias, groups.
    Conv {
        w: &'a [f32],
        bias: &'a [f32],
        c_out: usize,
        groups: usize,
    },
    Max,
    /// Average over every position of the window, padding included.
    Avg,
}

/// A `k`×`k` window with `stride` over `x` (`[c, h, w]`), padded with
/// `pads` (`[top, left, bottom, right]`) of zero (conv, average) or -inf
/// (max).
fn window_ref(x: &[f64], [c, h, w]: [usize; 3], k: usize, stride: usize, pads: [usize; 4], op: &Op<'_>) -> Vec<f32> {
    let fill = if matches!(op, Op::Max) { f32::NEG_INFINITY } else { 0.0 };
    let x32: Vec<f32> = x.iter().map(|&v| v as f32).collect();
    let (p, [_, hp, wp]) = pad_ref(&x32, [c, h, w], pads, fill);
    let (ho, wo) = ((hp - k) / stride + 1, (wp - k) / stride + 1);
    let at = |ch: usize, i: usize, j: usize| p[(ch * hp + i) * wp + j];
    let mut out = Vec::new();
    let c_out = match op {
        Op::Conv { c_out, .. } => *c_out,
        _ => c,
    };
    for o in 0..c_out {
        for i in 0..ho {
            for j in 0..wo {
                let taps = (0..k).flat_map(|a| (0..k).map(move |b| (i * stride + a, j * stride + b)));
                let v = match op {
                    Op::Conv { w: wt, bias, groups, .. } => {
                        let per = c / groups;
                        let g = o / (c_out / groups);
                        let mut s = bias[o] as f64;
                        for ci in 0..per {
                            for (a, b) in taps.clone() {
                                let (ka, kb) = (a - i * stride, b - j * stride);
                                s += at(g * per + ci, a, b) * wt[((o * per + ci) * k + ka) * k + kb] as f64;
                            }
                        }
                        s
                    }
                    Op::Max => taps.map(|(a, b)| at(o, a, b)).fold(f64::NEG_INFINITY, f64::max),
                    Op::Avg => taps.map(|(a, b)| at(o, a, b)).sum::<f64>() / (k * k) as f64,
                };
                out.push(v as f32);
            }
        }
    }
    out
}

/// `x [1, c, h, w] -> Pad(pads, fill) -> p`, then `readers`, outputs
/// `outputs` (all f32, shapes given).
fn pad_model(
    [c, h, w]: [usize; 3],
    pads: [usize; 4],
    fill: f32,
    readers: Vec<NodeProto>,
    mut inits: Vec<TensorProto>,
    outputs: &[(&str, Vec<i64>)],
) -> ModelProto {
    let [t, l, b, r] = pads.map(|p| p as i64);
    inits.push(init_i64("pads", &[8], &[0, 0, t, l, 0, 0, b, r]));
    inits.push(init_raw("fill", &[], &[fill]));
    let mut nodes = vec![node("Pad", "pad", &["x", "pads", "fill"], &["p"], vec![])];
    nodes.extend(readers);
    model(
        nodes,
        inits,
        vec![vi("x", &[1, c as i64, h as i64, w as i64])],
        outputs.iter().map(|(n, s)| vi(n, s)).collect(),
        17,
    )
}

fn import(m: &ModelProto) -> rlx_onnx::Imported {
    import_model(m, &ImportOptions::new(WEIGHTS)).expect("import")
}

/// Whether the schedule copies the padded tensor (the unfolded `Pad`).
fn pads_copied(sched: &str) -> bool {
    count_kind(sched, "Pad") > 0
}

#[test]
fn a_tf_same_pad_folds_into_a_strided_convolution() {
    // TF "same" for a stride-2 3x3 window over 8x8: one row and column at
    // the end only.
    let (c, h, w, co) = (3, 8, 8, 4);
    let x = values(c * h * w, 1);
    let wt = values(co * c * 9, 2);
    let bias = values(co, 3);
    let conv = node("Conv", "conv", &["p", "w", "b"], &["y"], vec![attr_ints("strides", &[2, 2])]);
    let inits = vec![init_raw("w", &[co as i64, c as i64, 3, 3], &wt), init_raw("b", &[co as i64], &bias)];
    let m = pad_model([c, h, w], [0, 0, 1, 1], 0.0, vec![conv], inits, &[("y", vec![1, co as i64, 4, 4])]);
    let imported = import(&m);
    assert!(!pads_copied(&imported.sched_text), "{}", imported.sched_text);
    let got = run("pad_fold_same", &imported, &[("x", &x)], &["y"]);
    let xd: Vec<f64> = x.iter().map(|&v| v as f64).collect();
    let want = window_ref(&xd, [c, h, w], 3, 2, [0, 0, 1, 1], &Op::Conv { w: &wt, bias: &bias, c_out: co, groups: 1 });
    assert_close(&got[0], &want, TOL, "conv after a folded pad");
}

#[test]
fn an_asymmetric_pad_adds_to_a_depthwise_convolutions_own_pads() {
    // Pad (top 1, left 1, bottom 1, right 0) on top of the conv's own 1 on
    // every side, on the depthwise path.
    let (c, h, w) = (8, 7, 6);
    let x = values(c * h * w, 4);
    let wt = values(c * 9, 5);
    let bias = values(c, 6);
    let conv =
        node("Conv", "dw", &["p", "w", "b"], &["y"], vec![attr_ints("pads", &[1, 1, 1, 1]), attr_i("group", c as i64)]);
    let inits = vec![init_raw("w", &[c as i64, 1, 3, 3], &wt), init_raw("b", &[c as i64], &bias)];
    let (ho, wo) = (7 + 4 - 2, 6 + 3 - 2);
    let m = pad_model([c, h, w], [1, 1, 1, 0], 0.0, vec![conv], inits, &[("y", vec![1, c as i64, ho, wo])]);
    let imported = import(&m);
    assert!(!pads_copied(&imported.sched_text), "{}", imported.sched_text);
    let got = run("pad_fold_dw", &imported, &[("x", &x)], &["y"]);
    let xd: Vec<f64> = x.iter().map(|&v| v as f64).collect();
    let want = window_ref(&xd, [c, h, w], 3, 1, [2, 2, 2, 1], &Op::Conv { w: &wt, bias: &bias, c_out: c, groups: c });
    assert_close(&got[0], &want, TOL, "depthwise conv after a folded pad");
}

#[test]
fn a_pad_read_by_two_convolutions_folds_into_both() {
    let (c, h, w, co) = (2, 5, 5, 3);
    let x = values(c * h * w, 7);
    let (w1, w2, bias) = (values(co * c * 9, 8), values(co * c * 9, 9), values(co, 10));
    let readers = vec![
        node("Conv", "c1", &["p", "w1", "b"], &["y1"], vec![]),
        node("Conv", "c2", &["p", "w2", "b"], &["y2"], vec![attr_ints("strides", &[2, 2])]),
    ];
    let inits = vec![
        init_raw("w1", &[co as i64, c as i64, 3, 3], &w1),
        init_raw("w2", &[co as i64, c as i64, 3, 3], &w2),
        init_raw("b", &[co as i64], &bias),
    ];
    let m =
        pad_model([c, h, w], [1, 1, 1, 1], 0.0, readers, inits, &[("y1", vec![1, 3, 5, 5]), ("y2", vec![1, 3, 3, 3])]);
    let imported = import(&m);
    assert!(!pads_copied(&imported.sched_text), "{}", imported.sched_text);
    let got = run("pad_fold_two", &imported, &[("x", &x)], &["y1", "y2"]);
    let xd: Vec<f64> = x.iter().map(|&v| v as f64).collect();
    let p = [1, 1, 1, 1];
    assert_close(
        &got[0],
        &window_ref(&xd, [c, h, w], 3, 1, p, &Op::Conv { w: &w1, bias: &bias, c_out: co, groups: 1 }),
        TOL,
        "y1",
    );
    assert_close(
        &got[1],
        &window_ref(&xd, [c, h, w], 3, 2, p, &Op::Conv { w: &w2, bias: &bias, c_out: co, groups: 1 }),
        TOL,
        "y2",
    );
}

/// One conv reader of a padded 2x4x4 tensor and its expected output.
fn conv_reader(x: &[f32], pads: [usize; 4], fill: f32) -> (NodeProto, Vec<TensorProto>, Vec<f32>) {
    let (c, co) = (2, 2);
    let wt = values(co * c * 9, 11);
    let bias = vec![0.0; co];
    let (p, dims) = pad_ref(x, [c, 4, 4], pads, fill);
    let want = window_ref(&p, dims, 3, 1, [0; 4], &Op::Conv { w: &wt, bias: &bias, c_out: co, groups: 1 });
    let inits = vec![init_raw("w", &[co as i64, c as i64, 3, 3], &wt), init_raw("b", &[co as i64], &bias)];
    (node("Conv", "conv", &["p", "w", "b"], &["y"], vec![]), inits, want)
}

#[test]
fn pads_the_readers_cannot_take_stay_a_copy_with_the_same_results() {
    let x = values(2 * 16, 12);
    let pads = [1, 0, 1, 2];
    let p_ref: Vec<f32> = pad_ref(&x, [2, 4, 4], pads, 0.0).0.iter().map(|&v| v as f32).collect();
    let relu_ref: Vec<f32> = p_ref.iter().map(|&v| v.max(0.0)).collect();
    let y_shape = vec![1, 2, 4, 4];

    // Another reader (a Relu).
    let (conv, inits, want) = conv_reader(&x, pads, 0.0);
    let relu = node("Relu", "relu", &["p"], &["r"], vec![]);
    let m =
        pad_model([2, 4, 4], pads, 0.0, vec![conv, relu], inits, &[("y", y_shape.clone()), ("r", vec![1, 2, 6, 6])]);
    let imported = import(&m);
    assert!(pads_copied(&imported.sched_text), "{}", imported.sched_text);
    let got = run("pad_fold_relu", &imported, &[("x", &x)], &["y", "r"]);
    assert_close(&got[0], &want, TOL, "conv beside a relu reader");
    assert_close(&got[1], &relu_ref, 0.0, "relu of the padded tensor");

    // A pad value other than zero.
    let (conv, inits, want) = conv_reader(&x, pads, 0.5);
    let m = pad_model([2, 4, 4], pads, 0.5, vec![conv], inits, &[("y", y_shape.clone())]);
    let imported = import(&m);
    assert!(pads_copied(&imported.sched_text), "{}", imported.sched_text);
    assert_close(&run("pad_fold_half", &imported, &[("x", &x)], &["y"])[0], &want, TOL, "conv after a 0.5 pad");

    // Minus zero is not the convolution's +0 padding.
    let (conv, inits, _) = conv_reader(&x, pads, -0.0);
    let m = pad_model([2, 4, 4], pads, -0.0, vec![conv], inits, &[("y", y_shape.clone())]);
    assert!(pads_copied(&import(&m).sched_text));

    // A pad as wide as the window: a window would hold padding only.
    let wide = [3, 0, 0, 0];
    let (conv, inits, want) = conv_reader(&x, wide, 0.0);
    let m = pad_model([2, 4, 4], wide, 0.0, vec![conv], inits, &[("y", vec![1, 2, 5, 2])]);
    let imported = import(&m);
    assert!(pads_copied(&imported.sched_text), "{}", imported.sched_text);
    assert_close(&run("pad_fold_wide", &imported, &[("x", &x)], &["y"])[0], &want, TOL, "conv after a wide pad");

    // The padded tensor is also a graph output.
    let (conv, inits, want) = conv_reader(&x, pads, 0.0);
    let m = pad_model([2, 4, 4], pads, 0.0, vec![conv], inits, &[("y", y_shape), ("p", vec![1, 2, 6, 6])]);
    let imported = import(&m);
    assert!(pads_copied(&imported.sched_text), "{}", imported.sched_text);
    let got = run("pad_fold_output", &imported, &[("x", &x)], &["y", "p"]);
    assert_close(&got[0], &want, TOL, "conv beside the pad as an output");
    assert_close(&got[1], &p_ref, 0.0, "the padded tensor");
}

/// Pads, reader, pad value, extra attributes, whether it folds, reference.
type PoolCase = ([usize; 4], &'static str, f32, Vec<AttributeProto>, bool, Op<'static>);

#[test]
fn pools_take_the_pad_of_their_own_padding_value_only() {
    let (c, h, w) = (3, 6, 5);
    let x = values(c * h * w, 13);
    let k = attr_ints("kernel_shape", &[2, 2]);
    let (uneven, even) = ([1, 1, 0, 1], [1, 0, 1, 0]);
    let cases: [PoolCase; 5] = [
        (uneven, "MaxPool", f32::NEG_INFINITY, vec![], true, Op::Max),
        (even, "AveragePool", 0.0, vec![attr_i("count_include_pad", 1)], true, Op::Avg),
        // Max over zeros, or an average that skips padding: the pad's
        // elements are real ones for these readers.
        (uneven, "MaxPool", 0.0, vec![], false, Op::Max),
        (even, "AveragePool", 0.0, vec![], false, Op::Avg),
        // Uneven padding would send the average to the shifted-read form.
        (uneven, "AveragePool", 0.0, vec![attr_i("count_include_pad", 1)], false, Op::Avg),
    ];
    for (i, (pads, op, fill, extra, folds, reference)) in cases.into_iter().enumerate() {
        let attrs = std::iter::once(k.clone()).chain(extra).collect();
        let (ho, wo) = (h + pads[0] + pads[2] - 1, w + pads[1] + pads[3] - 1);
        let out = [("y", vec![1, c as i64, ho as i64, wo as i64])];
        let m = pad_model([c, h, w], pads, fill, vec![node(op, "pool", &["p"], &["y"], attrs)], vec![], &out);
        let imported = import(&m);
        assert_eq!(!pads_copied(&imported.sched_text), folds, "{op} over a {fill} pad:\n{}", imported.sched_text);
        let got = run(&format!("pad_fold_pool{i}"), &imported, &[("x", &x)], &["y"]);
        // The explicit pad's elements are real: pool them with no padding
        // of the window's own.
        let (p, dims) = pad_ref(&x, [c, h, w], pads, fill);
        let want = window_ref(&p, dims, 2, 1, [0; 4], &reference);
        assert_close(&got[0], &want, TOL, &format!("{op} over a {fill} pad"));
    }
}

#[test]
fn a_pad_folds_into_a_1d_convolution() {
    let (c, l, co) = (2, 7, 3);
    let x = values(c * l, 14);
    let wt = values(co * c * 3, 15);
    let bias = values(co, 16);
    let inits = vec![
        init_i64("pads", &[6], &[0, 0, 1, 0, 0, 1]),
        init_raw("w", &[co as i64, c as i64, 3], &wt),
        init_raw("b", &[co as i64], &bias),
    ];
    let nodes = vec![
        node("Pad", "pad", &["x", "pads"], &["p"], vec![]),
        node("Conv", "conv", &["p", "w", "b"], &["y"], vec![attr_ints("pads", &[1, 0])]),
    ];
    let m = model(nodes, inits, vec![vi("x", &[1, c as i64, l as i64])], vec![vi("y", &[1, co as i64, 8])], 17);
    let imported = import(&m);
    assert!(!pads_copied(&imported.sched_text), "{}", imported.sched_text);
    let got = run("pad_fold_1d", &imported, &[("x", &x)], &["y"]);
    // Left 1 + 1, right 1 + 0.
    let xd: Vec<f64> = x.iter().map(|&v| v as f64).collect();
    let mut want = Vec::new();
    for o in 0..co {
        for j in 0..8 {
            let mut s = bias[o] as f64;
            for ci in 0..c {
                for kk in 0..3 {
                    let pos = (j + kk) as i64 - 2;
                    if (0..l as i64).contains(&pos) {
                        s += xd[ci * l + pos as usize] * wt[(o * c + ci) * 3 + kk] as f64;
                    }
                }
            }
            want.push(s as f32);
        }
    }
    assert_close(&got[0], &want, TOL, "1-D conv after a folded pad");
}
