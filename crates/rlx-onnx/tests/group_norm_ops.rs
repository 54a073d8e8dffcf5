//! `RMSNormalization`, `GroupNormalization` (per-channel affine from opset
//! 21, per-group before) and `InstanceNormalization`: tiny models imported,
//! run in the reference interpreter and compared with a naive f64
//! computation. Sums of at most 24 terms of magnitude <= ~4 in f32: 1e-5
//! leaves a margin without hiding a wrong group or channel (off by > 1e-2).

use crate::common::*;
use rlx_onnx::ImportOptions;

const TOL: f32 = 1e-5;

fn dims(v: &[usize]) -> Vec<i64> {
    v.iter().map(|&d| d as i64).collect()
}

/// `[n, c, hw]` normalised over groups of `c / groups` channels; the affine
/// of channel `ch` is `scale[affine(ch)]`, `bias[affine(ch)]`.
fn group_norm_ref(
    x: &[f32],
    [n, c, hw]: [usize; 3],
    groups: usize,
    (scale, bias): (&[f32], &[f32]),
    affine: impl Fn(usize) -> usize,
    eps: f32,
) -> Vec<f32> {
    let per = c / groups;
    let mut out = vec![0.0f32; x.len()];
    for b in 0..n {
        for g in 0..groups {
            let start = (b * c + g * per) * hw;
            let slice: Vec<f64> = x[start..start + per * hw].iter().map(|&v| f64::from(v)).collect();
            let mean = slice.iter().sum::<f64>() / slice.len() as f64;
            let var = slice.iter().map(|v| (v - mean) * (v - mean)).sum::<f64>() / slice.len() as f64;
            let inv = 1.0 / (var + f64::from(eps)).sqrt();
            for (i, v) in slice.iter().enumerate() {
                let ch = g * per + i / hw;
                let k = affine(ch);
                out[start + i] = ((v - mean) * inv * f64::from(scale[k]) + f64::from(bias[k])) as f32;
            }
        }
    }
    out
}

#[test]
fn group_norm_has_per_channel_affine_from_opset_21_and_per_group_before() {
    let (n, c, h, w, groups) = (2, 6, 2, 2, 3);
    let x = values(n * c * h * w, 301);
    for (opset, affine_len) in [(21, c), (18, groups)] {
        let (scale, bias) = (values(affine_len, 302), values(affine_len, 303));
        let m = model(
            vec![node(
                "GroupNormalization",
                "gn",
                &["x", "s", "b"],
                &["y"],
                vec![attr_i("num_groups", groups as i64), attr_f("epsilon", 1e-3)],
            )],
            vec![init_raw("s", &[affine_len as i64], &scale), init_raw("b", &[affine_len as i64], &bias)],
            vec![vi("x", &dims(&[n, c, h, w]))],
            vec![vi("y", &dims(&[n, c, h, w]))],
            opset,
        );
        let imported = import_model(&m, &ImportOptions::new(WEIGHTS)).expect("import");
        let out = run("gn", &imported, &[("x", &x)], &["y"]);
        let per = c / groups;
        let affine = |ch: usize| if affine_len == c { ch } else { ch / per };
        let want = group_norm_ref(&x, [n, c, h * w], groups, (&scale, &bias), affine, 1e-3);
        assert_close(&out[0], &want, TOL, &format!("opset {opset}"));
    }
}

#[test]
fn instance_norm_is_one_group_per_channel() {
    let (n, c, hw) = (2, 3, 5);
    let x = values(n * c * hw, 311);
    let (scale, bias) = (values(c, 312), values(c, 313));
    let m = model(
        vec![node("InstanceNormalization", "in", &["x", "s", "b"], &["y"], vec![])],
        vec![init_raw("s", &[c as i64], &scale), init_raw("b", &[c as i64], &bias)],
        vec![vi("x", &dims(&[n, c, hw]))],
        vec![vi("y", &dims(&[n, c, hw]))],
        22,
    );
    let imported = import_model(&m, &ImportOptions::new(WEIGHTS)).expect("import");
    let out = run("in", &imported, &[("x", &x)], &["y"]);
    assert_close(&out[0], &group_norm_ref(&x, [n, c, hw], c, (&scale, &bias), |ch| ch, 1e-5), TOL, "y");
}

#[test]
fn rms_norm_normalises_the_axes_from_axis_on() {
    let x = values(2 * 3 * 4, 321);
    let scale = values(12, 322);
    let m = model(
        vec![node("RMSNormalization", "rms", &["x", "s"], &["y"], vec![attr_i("axis", 1), attr_f("epsilon", 0.1)])],
        vec![init_raw("s", &[3, 4], &scale)],
        vec![vi("x", &[2, 3, 4])],
        vec![vi("y", &[2, 3, 4])],
        23,
    );
    let imported = import_model(&m, &ImportOptions::new(WEIGHTS)).expect("import");
    assert!(imported.sched_text.contains("RmsNorm {"), "{}", imported.sched_text);
    let out = run("rms", &imported, &[("x", &x)], &["y"]);
    let mut want = Vec::new();
    for row in x.chunks(12) {
        let ms = row.iter().map(|&v| f64::from(v) * f64::from(v)).sum::<f64>() / 12.0;
        let inv = 1.0 / (ms + 0.1f32 as f64).sqrt();
        want.extend(row.iter().zip(&scale).map(|(&v, &s)| (f64::from(v) * inv * f64::from(s)) as f32));
    }
    assert_close(&out[0], &want, TOL, "y");
}

#[test]
fn bad_groups_and_affine_shapes_are_errors_naming_the_node() {
    let build = |groups: i64, affine: usize, opset: i64| {
        model(
            vec![node("GroupNormalization", "gn", &["x", "s", "b"], &["y"], vec![attr_i("num_groups", groups)])],
            vec![
                init_raw("s", &[affine as i64], &values(affine, 1)),
                init_raw("b", &[affine as i64], &values(affine, 2)),
            ],
            vec![vi("x", &[1, 6, 2])],
            vec![vi("y", &[1, 6, 2])],
            opset,
        )
    };
    let err = |m| import_model(&m, &ImportOptions::new(WEIGHTS)).expect_err("must fail").to_string();
    let e = err(build(4, 6, 21));
    assert!(e.contains("gn") && e.contains("num_groups") && e.contains("divide the 6 channels"), "{e}");
    let e = err(build(0, 6, 21));
    assert!(e.contains("num_groups"), "{e}");
    let e = err(build(3, 3, 21));
    assert!(e.contains("scale has shape [3]; expected [6]"), "{e}");
    let e = err(build(3, 6, 18));
    assert!(e.contains("scale has shape [6]; expected [3]"), "{e}");
}
