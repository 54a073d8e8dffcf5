//! `OneHot`, `LpNormalization` and `LpPool`: one-node graphs imported,
//! validated, run in the interpreter and compared with naive references
//! written here (exactly for `OneHot`; within 1e-5 relative for the norms,
//! sums of at most 27 terms below 1 computed in f64), and their refusals.

use crate::common::typed::*;
use crate::common::*;
use rlx_onnx::proto::*;

/// `OneHot` as the spec words it: an index in `[-depth, depth)` (negative
/// from the end) is hot, anything else leaves its row off.
fn one_hot_ref<V: Copy>(indices: &[i64], shape: &[usize], depth: usize, axis: usize, [off, on]: [V; 2]) -> Vec<V> {
    let outer: usize = shape[..axis].iter().product();
    let inner: usize = shape[axis..].iter().product();
    let mut out = vec![off; outer * depth * inner];
    for o in 0..outer {
        for i in 0..inner {
            let v = indices[o * inner + i];
            let v = if v < 0 { v + depth as i64 } else { v };
            if (0..depth as i64).contains(&v) {
                out[(o * depth + v as usize) * inner + i] = on;
            }
        }
    }
    out
}

fn depth_init(v: T) -> In {
    In::Init("depth", v)
}

#[test]
fn one_hot_matches_the_spec_over_axes_types_and_bad_indices() {
    let shape = [2usize, 3];
    // In range, negative, and out of range both ways (all off).
    let idx = vec![0i64, 4, -1, -5, 5, -6];
    let depth = 5;
    for axis in [-3i64, -2, -1, 0, 1, 2] {
        let a = if axis < 0 { (axis + 3) as usize } else { axis as usize };
        let mut out_shape = shape.to_vec();
        out_shape.insert(a, depth);
        let attrs = vec![attr_i("axis", axis)];
        // f32 values, i64 indices, an i64 depth.
        let got = one(
            "oh-f32",
            "OneHot",
            vec![
                In::Data("i", i64s(&shape, idx.clone())),
                depth_init(i64s(&[], vec![5])),
                In::Data("v", f(&[2], vec![-1.5, 2.5])),
            ],
            attrs.clone(),
        );
        assert_eq!(got, f(&out_shape, one_hot_ref(&idx, &shape, depth, a, [-1.5, 2.5])), "axis {axis}");
        // i32 indices and values, an f32 depth (truncated).
        let got = one(
            "oh-i32",
            "OneHot",
            vec![
                In::Data("i", i32s(&shape, idx.iter().map(|&v| v as i32).collect())),
                depth_init(f(&[1], vec![5.7])),
                In::Data("v", i32s(&[2], vec![7, -9])),
            ],
            attrs.clone(),
        );
        assert_eq!(got, T::I32(out_shape.clone(), one_hot_ref(&idx, &shape, depth, a, [7, -9])), "axis {axis}");
        // f32 indices (truncated toward zero), i64 and bool values.
        let fidx: Vec<f32> = vec![0.9, 4.2, -1.0, -5.0, 5.0, -6.5];
        let truncated: Vec<i64> = fidx.iter().map(|&v| v as i64).collect();
        let got = one(
            "oh-i64",
            "OneHot",
            vec![
                In::Data("i", f(&shape, fidx.clone())),
                depth_init(i64s(&[], vec![5])),
                In::Init("v", i64s(&[2], vec![i64::MIN, i64::MAX])),
            ],
            attrs.clone(),
        );
        assert_eq!(got, T::I64(out_shape.clone(), one_hot_ref(&truncated, &shape, depth, a, [i64::MIN, i64::MAX])));
        let got = one(
            "oh-bool",
            "OneHot",
            vec![
                In::Data("i", i64s(&shape, idx.clone())),
                depth_init(i64s(&[], vec![5])),
                In::Data("v", bools(&[2], vec![false, true])),
            ],
            attrs,
        );
        assert_eq!(got, T::Bool(out_shape.clone(), one_hot_ref(&idx, &shape, depth, a, [false, true])));
    }
}

#[test]
fn one_hot_of_a_scalar_index_and_of_a_depth_of_one() {
    let got = one(
        "oh-scalar",
        "OneHot",
        vec![
            In::Data("i", i64s(&[], vec![-2])),
            depth_init(i64s(&[], vec![3])),
            In::Data("v", f(&[2], vec![0.0, 1.0])),
        ],
        vec![],
    );
    assert_eq!(got, f(&[3], vec![0.0, 1.0, 0.0]));
    let got = one(
        "oh-depth1",
        "OneHot",
        vec![
            In::Data("i", i64s(&[2], vec![0, 1])),
            depth_init(i64s(&[1], vec![1])),
            In::Data("v", f(&[2], vec![3.0, 4.0])),
        ],
        vec![attr_i("axis", 0)],
    );
    assert_eq!(got, f(&[1, 2], vec![4.0, 3.0]));
}

fn lp_norm_ref(x: &[f32], shape: &[usize], axis: usize, p: i64) -> Vec<f32> {
    let outer: usize = shape[..axis].iter().product();
    let (dim, inner): (usize, usize) = (shape[axis], shape[axis + 1..].iter().product());
    let mut out = vec![0.0f32; x.len()];
    for o in 0..outer {
        for i in 0..inner {
            let at = |k: usize| (o * dim + k) * inner + i;
            let norm: f64 =
                (0..dim).map(|k| f64::from(x[at(k)]).abs().powi(p as i32)).sum::<f64>().powf(1.0 / p as f64);
            for k in 0..dim {
                out[at(k)] = if norm == 0.0 { 0.0 } else { (f64::from(x[at(k)]) / norm) as f32 };
            }
        }
    }
    out
}

fn rel_close(got: &T, want: &[f32], what: &str) {
    let T::F32(_, got) = got else { panic!("{what}: not f32") };
    assert_eq!(got.len(), want.len(), "{what}: length");
    for (i, (&g, &w)) in got.iter().zip(want).enumerate() {
        assert!((g - w).abs() <= 1e-5 * (1.0 + w.abs()), "{what}[{i}]: got {g}, want {w}");
    }
}

#[test]
fn lp_normalization_matches_the_reference_with_zero_rows() {
    let shape = [2usize, 3, 4];
    let mut x = values(24, 901);
    // A row of zeros along each axis: x[0, 0, :], x[:, 1, 2], x[1, :, 3].
    for i in [0, 1, 2, 3, 6, 18, 15, 19, 23] {
        x[i] = 0.0;
    }
    for p in [1, 2] {
        for axis in [-3i64, -2, -1, 0, 1, 2] {
            let a = if axis < 0 { (axis + 3) as usize } else { axis as usize };
            let got = one(
                "lpn",
                "LpNormalization",
                vec![In::Data("x", f(&shape, x.clone()))],
                vec![attr_i("p", p), attr_i("axis", axis)],
            );
            rel_close(&got, &lp_norm_ref(&x, &shape, a, p), &format!("p {p} axis {axis}"));
        }
    }
    // The defaults: p 2, the last axis.
    let got = one("lpn-default", "LpNormalization", vec![In::Data("x", f(&shape, x.clone()))], vec![]);
    rel_close(&got, &lp_norm_ref(&x, &shape, 2, 2), "defaults");
}

/// One spatial axis of an `LpPool` case.
#[derive(Clone, Copy)]
struct Ax {
    input: usize,
    kernel: usize,
    stride: usize,
    dilation: usize,
    pads: (usize, usize),
    ceil: bool,
}

impl Ax {
    fn output(&self) -> usize {
        let span = (self.kernel - 1) * self.dilation + 1;
        let room = self.input + self.pads.0 + self.pads.1 - span;
        let mut out = if self.ceil { room.div_ceil(self.stride) + 1 } else { room / self.stride + 1 };
        if self.ceil && (out - 1) * self.stride >= self.input + self.pads.0 {
            out -= 1;
        }
        out
    }
}

/// `(sum of |x|^p over the window's positions inside the input)^(1/p)`.
fn lp_pool_ref(x: &[f32], nc: usize, axes: &[Ax], p: f64) -> (Vec<usize>, Vec<f32>) {
    let outs: Vec<usize> = axes.iter().map(Ax::output).collect();
    let plane: usize = axes.iter().map(|a| a.input).product();
    let out_plane: usize = outs.iter().product();
    let taps: usize = axes.iter().map(|a| a.kernel).product();
    let mut y = Vec::new();
    for ch in 0..nc {
        for o in 0..out_plane {
            let mut sum = 0.0f64;
            for t in 0..taps {
                let (mut orem, mut trem, mut flat, mut inside) = (o, t, 0usize, true);
                let mut coords = vec![0i64; axes.len()];
                for d in (0..axes.len()).rev() {
                    let (od, td) = (orem % outs[d], trem % axes[d].kernel);
                    orem /= outs[d];
                    trem /= axes[d].kernel;
                    let a = axes[d];
                    coords[d] = (od * a.stride + td * a.dilation) as i64 - a.pads.0 as i64;
                    inside &= (0..a.input as i64).contains(&coords[d]);
                }
                if inside {
                    for d in 0..axes.len() {
                        flat = flat * axes[d].input + coords[d] as usize;
                    }
                    sum += f64::from(x[ch * plane + flat]).abs().powf(p);
                }
            }
            y.push(sum.powf(1.0 / p) as f32);
        }
    }
    let mut shape = vec![1, nc];
    shape.extend(&outs);
    (shape, y)
}

#[test]
fn lp_pool_matches_the_reference_in_one_to_three_dimensions() {
    let ax = |input, kernel, stride, dilation, pads, ceil| Ax { input, kernel, stride, dilation, pads, ceil };
    let cases: Vec<Vec<Ax>> = vec![
        vec![ax(7, 3, 1, 1, (0, 0), false)],
        vec![ax(7, 2, 2, 1, (1, 0), true)],
        vec![ax(5, 3, 1, 1, (1, 1), false), ax(6, 2, 2, 1, (0, 1), false)],
        vec![ax(6, 2, 1, 2, (0, 0), false), ax(5, 3, 2, 1, (2, 1), true)],
        vec![ax(4, 2, 1, 1, (0, 0), false), ax(3, 3, 1, 1, (1, 1), false), ax(5, 2, 2, 1, (0, 1), true)],
        vec![ax(3, 2, 1, 2, (1, 0), false), ax(4, 2, 2, 1, (0, 0), false), ax(4, 3, 1, 1, (1, 1), false)],
    ];
    for (ci, axes) in cases.iter().enumerate() {
        let nc = 2;
        let mut shape = vec![1, nc];
        shape.extend(axes.iter().map(|a| a.input));
        let x = values(shape.iter().product(), 910 + ci as u64);
        let k = axes.len();
        let ints = |f: &dyn Fn(&Ax) -> usize| axes.iter().map(|a| f(a) as i64).collect::<Vec<_>>();
        let pads: Vec<i64> = ints(&|a| a.pads.0).into_iter().chain(ints(&|a| a.pads.1)).collect();
        for p in [1i64, 2, 3] {
            let mut attrs = vec![
                attr_i("p", p),
                attr_ints("kernel_shape", &ints(&|a| a.kernel)),
                attr_ints("strides", &ints(&|a| a.stride)),
                attr_ints("dilations", &ints(&|a| a.dilation)),
                attr_ints("pads", &pads),
            ];
            // `ceil_mode` is one flag for every axis.
            let ceil = axes.iter().all(|a| a.ceil);
            if ceil {
                attrs.push(attr_i("ceil_mode", 1));
            }
            let eff: Vec<Ax> = axes.iter().map(|a| Ax { ceil, ..*a }).collect();
            let (want_shape, want) = lp_pool_ref(&x, nc, &eff, p as f64);
            let got = one("lppool", "LpPool", vec![In::Data("x", f(&shape, x.clone()))], attrs);
            assert_eq!(got.shape(), want_shape.as_slice(), "case {ci} ({k}-D) p {p}");
            rel_close(&got, &want, &format!("case {ci} ({k}-D) p {p}"));
        }
    }
}

#[test]
fn lp_pool_same_upper_pads_as_the_other_poolings() {
    let shape = [1usize, 1, 5, 5];
    let x = values(25, 930);
    let attrs = vec![attr_ints("kernel_shape", &[2, 2]), attr_s("auto_pad", "SAME_UPPER")];
    let got = one("lppool-same", "LpPool", vec![In::Data("x", f(&shape, x.clone()))], attrs);
    let axes = [Ax { input: 5, kernel: 2, stride: 1, dilation: 1, pads: (0, 1), ceil: false }; 2];
    let (want_shape, want) = lp_pool_ref(&x, 1, &axes, 2.0);
    assert_eq!(got.shape(), want_shape.as_slice());
    rel_close(&got, &want, "SAME_UPPER");
}

fn attr_s(name: &str, s: &str) -> AttributeProto {
    AttributeProto {
        name: name.to_string(),
        r#type: AttributeType::String as i32,
        s: s.as_bytes().to_vec(),
        ..Default::default()
    }
}

#[test]
fn bad_one_hot_and_lp_nodes_are_import_errors() {
    let cases: Vec<(&str, Vec<In>, Vec<AttributeProto>, &str)> = vec![
        (
            "OneHot",
            vec![
                In::Data("i", i64s(&[2], vec![0, 1])),
                In::Data("depth", i64s(&[], vec![3])),
                In::Data("v", f(&[2], vec![0.0, 1.0])),
            ],
            vec![],
            "depth must be a constant",
        ),
        (
            "OneHot",
            vec![
                In::Data("i", i64s(&[2], vec![0, 1])),
                depth_init(i64s(&[], vec![0])),
                In::Data("v", f(&[2], vec![0.0, 1.0])),
            ],
            vec![],
            "depth is 0",
        ),
        (
            "OneHot",
            vec![
                In::Data("i", i64s(&[2], vec![0, 1])),
                depth_init(i64s(&[], vec![3])),
                In::Data("v", f(&[3], vec![0.0; 3])),
            ],
            vec![],
            "values have shape [3]",
        ),
        (
            "OneHot",
            vec![
                In::Data("i", bools(&[2], vec![true, false])),
                depth_init(i64s(&[], vec![3])),
                In::Data("v", f(&[2], vec![0.0, 1.0])),
            ],
            vec![],
            "indices are bool",
        ),
        (
            "OneHot",
            vec![
                In::Data("i", i64s(&[2], vec![0, 1])),
                depth_init(i64s(&[], vec![3])),
                In::Data("v", f(&[2], vec![0.0, 1.0])),
            ],
            vec![attr_i("axis", 2)],
            "attribute `axis` is 2",
        ),
        (
            "OneHot",
            vec![
                In::Data("i", i64s(&[2], vec![0, 1])),
                depth_init(i64s(&[], vec![1 << 40])),
                In::Data("v", f(&[2], vec![0.0, 1.0])),
            ],
            vec![],
            "larger than the fold limit",
        ),
        (
            "LpNormalization",
            vec![In::Data("x", f(&[2, 2], vec![1.0; 4]))],
            vec![attr_i("p", 3)],
            "attribute `p` is 3; only 1 and 2",
        ),
        (
            "LpPool",
            vec![In::Data("x", f(&[1, 1, 4, 4], vec![1.0; 16]))],
            vec![attr_ints("kernel_shape", &[2, 2]), attr_i("p", 0)],
            "attribute `p` is 0",
        ),
        ("LpPool", vec![In::Data("x", f(&[1, 1, 4, 4], vec![1.0; 16]))], vec![], "needs the attribute `kernel_shape`"),
    ];
    for (op, inputs, attrs, needle) in cases {
        let mut infos = Vec::new();
        let mut inits = Vec::new();
        let mut names = Vec::new();
        for i in &inputs {
            match i {
                In::Data(n, t) => {
                    infos.push(t.info(n));
                    names.push(*n);
                }
                In::Init(n, t) => {
                    inits.push(t.proto(n));
                    names.push(*n);
                }
            }
        }
        let out = vec![ValueInfoProto { name: "out".to_string(), ..Default::default() }];
        let m = model(vec![node(op, "n", &names, &["out"], attrs)], inits, infos, out, 18);
        let Err(err) = import_model(&m, &rlx_onnx::ImportOptions::new(WEIGHTS)) else {
            panic!("{op}: imported, expected `{needle}`")
        };
        let err = err.to_string();
        assert!(err.contains(needle), "{err}");
    }
}
