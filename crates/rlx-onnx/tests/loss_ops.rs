//! `NegativeLogLikelihoodLoss` and `SoftmaxCrossEntropyLoss`: one-node
//! graphs over 2-D to 5-D inputs, every `reduction`, with and without
//! `weight` and `ignore_index` (inside the classes, negative, past them),
//! i64 and i32 targets, imported, run in the interpreter and compared with
//! the spec's definition computed naively in f64. Sums of at most 24 terms
//! of magnitude below 4: 1e-5 (absolute and relative) leaves a margin
//! without hiding a wrong class or weight. Also the rule for targets out of
//! range and the refusals.

use crate::common::typed::*;
use crate::common::*;
use rlx_onnx::proto::*;

const TOL: f64 = 1e-5;

fn attr_s(name: &str, s: &str) -> AttributeProto {
    AttributeProto {
        name: name.to_string(),
        r#type: AttributeType::String as i32,
        s: s.as_bytes().to_vec(),
        ..Default::default()
    }
}

/// The spec's loss of log-probabilities `x` (`[n, c, d]`) against `t`.
fn nll_ref(x: &[f32], [n, c, d]: [usize; 3], t: &[i64], w: Option<&[f32]>, ii: Option<i64>, red: &str) -> Vec<f32> {
    let (mut loss, mut weights) = (Vec::new(), Vec::new());
    for b in 0..n {
        for j in 0..d {
            let cls = t[b * d + j];
            if Some(cls) == ii {
                loss.push(0.0);
                weights.push(0.0);
                continue;
            }
            let cls = usize::try_from(cls).expect("test targets lie in the classes");
            let wt = w.map_or(1.0, |w| f64::from(w[cls]));
            loss.push(-f64::from(x[(b * c + cls) * d + j]) * wt);
            weights.push(wt);
        }
    }
    let sum: f64 = loss.iter().sum();
    match red {
        "none" => loss.iter().map(|&v| v as f32).collect(),
        "sum" => vec![sum as f32],
        _ if w.is_some() || ii.is_some() => vec![(sum / weights.iter().sum::<f64>()) as f32],
        _ => vec![(sum / loss.len() as f64) as f32],
    }
}

/// Log-softmax over axis 1 of `[n, c, d]`, in f64.
fn log_softmax_ref(x: &[f32], [n, c, d]: [usize; 3]) -> Vec<f32> {
    let mut out = vec![0.0f32; x.len()];
    for b in 0..n {
        for j in 0..d {
            let at = |k: usize| f64::from(x[(b * c + k) * d + j]);
            let max = (0..c).map(at).fold(f64::NEG_INFINITY, f64::max);
            let lse = (0..c).map(|k| (at(k) - max).exp()).sum::<f64>().ln() + max;
            for k in 0..c {
                out[(b * c + k) * d + j] = (at(k) - lse) as f32;
            }
        }
    }
    out
}

fn close(got: &T, want: &[f32], what: &str) {
    let T::F32(_, got) = got else { panic!("{what}: not f32") };
    assert_eq!(got.len(), want.len(), "{what}: length");
    for (i, (&g, &w)) in got.iter().zip(want).enumerate() {
        let ok = (g.is_nan() && w.is_nan()) || f64::from((g - w).abs()) <= TOL * (1.0 + f64::from(w.abs()));
        assert!(ok, "{what}[{i}]: got {g}, want {w}");
    }
}

/// Targets in `0..c`, every third one `ignore` when given.
fn targets(count: usize, c: usize, seed: u64, ignore: Option<i64>) -> Vec<i64> {
    values(count, seed)
        .iter()
        .enumerate()
        .map(|(i, v)| match ignore {
            Some(ii) if i % 3 == 1 => ii,
            _ => (((v + 1.0) * 0.5 * c as f32) as i64).min(c as i64 - 1),
        })
        .collect()
}

/// A one-node loss graph: inputs x, t and optionally w; outputs `outs`.
fn run_loss(test: &str, op: &str, x: T, t: T, w: Option<T>, attrs: Vec<AttributeProto>, outs: &[&str]) -> Vec<T> {
    let mut names = vec!["x", "t"];
    let mut inputs = vec![In::Data("x", x), In::Data("t", t)];
    if let Some(w) = w {
        names.push("w");
        inputs.push(In::Data("w", w));
    }
    run_graph_opset(test, vec![node(op, "loss", &names, outs, attrs)], inputs, outs, op_opset(op))
}

fn op_opset(op: &str) -> i64 {
    if op == "SoftmaxCrossEntropyLoss" {
        13
    } else {
        22
    }
}

const SHAPES: [&[usize]; 4] = [&[3, 5], &[2, 4, 3], &[2, 3, 2, 2], &[1, 2, 1, 2, 3]];

#[test]
fn nll_loss_matches_the_spec() {
    let mut cases = 0;
    for (si, shape) in SHAPES.iter().enumerate() {
        let (n, c) = (shape[0], shape[1]);
        let d: usize = shape[2..].iter().product();
        let t_shape: Vec<usize> = [n].iter().chain(&shape[2..]).copied().collect();
        let x = values(n * c * d, 40 + si as u64);
        let w: Vec<f32> = values(c, 50 + si as u64).iter().map(|v| v.abs() + 0.1).collect();
        for red in ["none", "sum", "mean"] {
            for ignore in [None, Some(1), Some(-1), Some(c as i64 + 5)] {
                for weighted in [false, true] {
                    let t = targets(n * d, c, 60 + si as u64, ignore);
                    let want = nll_ref(&x, [n, c, d], &t, weighted.then_some(&w[..]), ignore, red);
                    let mut attrs = vec![attr_s("reduction", red)];
                    if let Some(ii) = ignore {
                        attrs.push(attr_i("ignore_index", ii));
                    }
                    // i32 targets on every other case.
                    let tt = if cases % 2 == 0 {
                        i64s(&t_shape, t.clone())
                    } else {
                        i32s(&t_shape, t.iter().map(|&v| v as i32).collect())
                    };
                    let wt = weighted.then(|| f(&[c], w.clone()));
                    let what = format!("{shape:?} {red} ignore {ignore:?} weighted {weighted}");
                    let got =
                        run_loss("nll", "NegativeLogLikelihoodLoss", f(shape, x.clone()), tt, wt, attrs, &["out"]);
                    let want_shape: &[usize] = if red == "none" { &t_shape } else { &[] };
                    assert_eq!(got[0].shape(), want_shape, "{what}: shape");
                    close(&got[0], &want, &what);
                    cases += 1;
                }
            }
        }
    }
    assert_eq!(cases, 96);
}

#[test]
fn softmax_cross_entropy_matches_the_spec_with_its_log_prob() {
    for (si, shape) in SHAPES.iter().enumerate() {
        let (n, c) = (shape[0], shape[1]);
        let d: usize = shape[2..].iter().product();
        let t_shape: Vec<usize> = [n].iter().chain(&shape[2..]).copied().collect();
        let x: Vec<f32> = values(n * c * d, 70 + si as u64).iter().map(|v| v * 3.0).collect();
        let w: Vec<f32> = values(c, 80 + si as u64).iter().map(|v| v.abs() + 0.1).collect();
        let log_prob = log_softmax_ref(&x, [n, c, d]);
        for red in ["none", "sum", "mean"] {
            for (ignore, weighted) in [(None, false), (Some(0), false), (None, true), (Some(-2), true)] {
                let t = targets(n * d, c, 90 + si as u64, ignore);
                let want = nll_ref(&log_prob, [n, c, d], &t, weighted.then_some(&w[..]), ignore, red);
                let mut attrs = vec![attr_s("reduction", red)];
                if let Some(ii) = ignore {
                    attrs.push(attr_i("ignore_index", ii));
                }
                let what = format!("{shape:?} {red} ignore {ignore:?} weighted {weighted}");
                let wt = weighted.then(|| f(&[c], w.clone()));
                let t = i64s(&t_shape, t);
                let outs = ["out", "log_prob"];
                let got = run_loss(
                    "sce",
                    "SoftmaxCrossEntropyLoss",
                    f(shape, x.clone()),
                    t.clone(),
                    wt.clone(),
                    attrs.clone(),
                    &outs,
                );
                close(&got[0], &want, &what);
                close(&got[1], &log_prob, &format!("{what} log_prob"));
                // Without the second output the loss is the same.
                let got = run_loss("sce1", "SoftmaxCrossEntropyLoss", f(shape, x.clone()), t, wt, attrs, &["out"]);
                close(&got[0], &want, &format!("{what}, loss only"));
            }
        }
    }
}

#[test]
fn targets_outside_the_classes_read_as_gather_elements_does() {
    // c = 3: -1 counts from the end (class 2); 3 and -4 are out of range:
    // a loss of 0 and, with weights, a weight of 0.
    let x = vec![-0.5f32, -1.0, -2.0, -0.25, -0.75, -1.5, -3.0, -0.1, -0.2, -0.3, -0.4, -0.6];
    let t = i64s(&[4], vec![-1, 3, -4, 1]);
    let got = run_loss(
        "oor",
        "NegativeLogLikelihoodLoss",
        f(&[4, 3], x.clone()),
        t.clone(),
        None,
        vec![attr_s("reduction", "none")],
        &["out"],
    );
    assert_eq!(got[0], f(&[4], vec![2.0, 0.0, 0.0, 0.4]));
    let w = f(&[3], vec![1.0, 2.0, 4.0]);
    let got = run_loss(
        "oorw",
        "NegativeLogLikelihoodLoss",
        f(&[4, 3], x),
        t,
        Some(w),
        vec![attr_s("reduction", "mean")],
        &["out"],
    );
    // (2 * 4 + 0.4 * 2) / (4 + 2)
    close(&got[0], &[(8.0 + 0.8) / 6.0], "weighted mean");
}

#[test]
fn a_mean_over_only_ignored_targets_is_nan_as_zero_by_zero() {
    let got = run_loss(
        "all-ignored",
        "NegativeLogLikelihoodLoss",
        f(&[2, 2], vec![-1.0; 4]),
        i64s(&[2], vec![7, 7]),
        None,
        vec![attr_i("ignore_index", 7)],
        &["out"],
    );
    let T::F32(_, v) = &got[0] else { panic!() };
    assert!(v[0].is_nan(), "{v:?}");
}

/// A loss node that must not import: op, target, weight, attributes and a
/// piece of the message.
type BadLoss = (&'static str, T, Option<T>, Vec<AttributeProto>, &'static str);

#[test]
fn bad_losses_are_import_errors() {
    let x = || T::F32(vec![2, 3], vec![0.0; 6]);
    let cases: Vec<BadLoss> = vec![
        (
            "NegativeLogLikelihoodLoss",
            i64s(&[2], vec![0, 1]),
            None,
            vec![attr_s("reduction", "max")],
            "attribute `reduction` is `max`",
        ),
        (
            "NegativeLogLikelihoodLoss",
            i64s(&[3], vec![0; 3]),
            None,
            vec![],
            "target has shape [3]; input [2, 3] needs [2]",
        ),
        ("NegativeLogLikelihoodLoss", f(&[2], vec![0.0; 2]), None, vec![], "target is f32"),
        (
            "SoftmaxCrossEntropyLoss",
            i64s(&[2], vec![0, 1]),
            Some(f(&[2], vec![1.0; 2])),
            vec![],
            "weight has shape [2]; expected [3]",
        ),
        (
            "SoftmaxCrossEntropyLoss",
            i64s(&[2], vec![0, 1]),
            None,
            vec![attr_f("ignore_index", 1.0)],
            "attribute `ignore_index` has type FLOAT",
        ),
    ];
    for (op, t, w, attrs, needle) in cases {
        let mut names = vec!["x", "t"];
        let mut infos = vec![x().info("x"), t.info("t")];
        if let Some(w) = &w {
            names.push("w");
            infos.push(w.info("w"));
        }
        let out = vec![ValueInfoProto { name: "out".to_string(), ..Default::default() }];
        let m = model(vec![node(op, "loss", &names, &["out"], attrs)], vec![], infos, out, 13);
        let Err(err) = import_model(&m, &rlx_onnx::ImportOptions::new(WEIGHTS)) else {
            panic!("{op}: imported, expected `{needle}`")
        };
        let err = err.to_string();
        assert!(err.contains(needle), "{err}");
    }
}
