//! `Conv` over three (and four) spatial axes: one-node graphs imported,
//! validated, run in the interpreter (fused and unfused) and compared with
//! a naive f64 convolution written here: groups, batches, strides,
//! asymmetric pads, dilations, every `auto_pad`, a bias, a run-time
//! filter, a pointwise window; and the refusals. Sums of at most 54
//! products of values below 1: 1e-5 leaves a margin without hiding a wrong
//! tap (off by > 1e-2).

mod common;

use common::*;
use rlx_onnx::proto::*;
use rlx_onnx::ImportOptions;

const TOL: f32 = 1e-5;

/// A convolution case: shapes and attributes.
struct Case {
    x: Vec<usize>,
    c_out: usize,
    kernel: Vec<usize>,
    groups: usize,
    strides: Vec<usize>,
    dilations: Vec<usize>,
    /// `[begin..., end...]`.
    pads: Vec<usize>,
    bias: bool,
}

impl Case {
    fn k(&self) -> usize {
        self.x.len() - 2
    }

    fn w_shape(&self) -> Vec<usize> {
        [self.c_out, self.x[1] / self.groups].iter().chain(&self.kernel).copied().collect()
    }

    fn out_shape(&self) -> Vec<usize> {
        let k = self.k();
        let mut s = vec![self.x[0], self.c_out];
        for d in 0..k {
            let span = (self.kernel[d] - 1) * self.dilations[d] + 1;
            s.push((self.x[d + 2] + self.pads[d] + self.pads[d + k] - span) / self.strides[d] + 1);
        }
        s
    }
}

fn coords(mut i: usize, dims: &[usize]) -> Vec<usize> {
    let mut c = vec![0; dims.len()];
    for d in (0..dims.len()).rev() {
        c[d] = i % dims[d];
        i /= dims[d];
    }
    c
}

/// The convolution by its definition, in f64.
fn conv_ref(c: &Case, x: &[f32], w: &[f32], b: Option<&[f32]>) -> Vec<f32> {
    let k = c.k();
    let out = c.out_shape();
    let (c_in, cpg, mpg) = (c.x[1], c.x[1] / c.groups, c.c_out / c.groups);
    let spatial: usize = c.x[2..].iter().product();
    let taps: usize = c.kernel.iter().product();
    let out_spatial: usize = out[2..].iter().product();
    let mut y = Vec::with_capacity(out.iter().product());
    for n in 0..c.x[0] {
        for m in 0..c.c_out {
            let g = m / mpg;
            for o in 0..out_spatial {
                let oc = coords(o, &out[2..]);
                let mut s = b.map_or(0.0, |b| f64::from(b[m]));
                for ci in 0..cpg {
                    for t in 0..taps {
                        let tc = coords(t, &c.kernel);
                        let mut flat = 0usize;
                        let mut inside = true;
                        for d in 0..k {
                            let p = (oc[d] * c.strides[d] + tc[d] * c.dilations[d]) as i64 - c.pads[d] as i64;
                            inside &= (0..c.x[d + 2] as i64).contains(&p);
                            flat = flat * c.x[d + 2] + p.max(0) as usize;
                        }
                        if inside {
                            let xv = x[(n * c_in + g * cpg + ci) * spatial + flat];
                            let wv = w[(m * cpg + ci) * taps + t];
                            s += f64::from(xv) * f64::from(wv);
                        }
                    }
                }
                y.push(s as f32);
            }
        }
    }
    y
}

fn dims(v: &[usize]) -> Vec<i64> {
    v.iter().map(|&d| d as i64).collect()
}

/// Imports the case (filter and bias as initializers, or the filter as a
/// graph input with `w_input`), fused and unfused, and checks both.
fn check(name: &str, c: &Case, extra: Vec<AttributeProto>, w_input: bool) {
    let x = values(c.x.iter().product(), 500);
    let w = values(c.w_shape().iter().product(), 501);
    let b = values(c.c_out, 502);
    let mut attrs = vec![
        attr_ints("strides", &dims(&c.strides)),
        attr_ints("dilations", &dims(&c.dilations)),
        attr_i("group", c.groups as i64),
    ];
    if extra.is_empty() {
        attrs.push(attr_ints("pads", &dims(&c.pads)));
    }
    attrs.extend(extra);
    let mut inputs = vec!["x", "w"];
    let mut inits = vec![];
    let mut infos = vec![vi("x", &dims(&c.x))];
    if w_input {
        infos.push(vi("w", &dims(&c.w_shape())));
    } else {
        inits.push(init_raw("w", &dims(&c.w_shape()), &w));
    }
    if c.bias {
        inputs.push("b");
        inits.push(init_raw("b", &[c.c_out as i64], &b));
    }
    let m = model(
        vec![node("Conv", "conv", &inputs, &["y"], attrs)],
        inits,
        infos,
        vec![vi("y", &dims(&c.out_shape()))],
        18,
    );
    let want = conv_ref(c, &x, &w, c.bias.then_some(&b[..]));
    let (fused, unfused) = import_fused_and_unfused(&m);
    for (what, imported) in [("fused", &fused), ("unfused", &unfused)] {
        assert!(!imported.sched_text.contains("Conv2D"), "{name}: a 3-D convolution is no Conv2D");
        let feeds: Vec<(&str, &[f32])> = if w_input { vec![("x", &x), ("w", &w)] } else { vec![("x", &x)] };
        let got = run(name, imported, &feeds, &["y"]);
        assert_close(&got[0], &want, TOL, &format!("{name} ({what})"));
    }
}

fn case(x: &[usize], c_out: usize, kernel: &[usize], groups: usize) -> Case {
    let k = x.len() - 2;
    Case {
        x: x.to_vec(),
        c_out,
        kernel: kernel.to_vec(),
        groups,
        strides: vec![1; k],
        dilations: vec![1; k],
        pads: vec![0; 2 * k],
        bias: false,
    }
}

#[test]
fn conv3d_plain_strided_padded_dilated() {
    check("plain", &case(&[1, 2, 4, 5, 6], 3, &[2, 3, 2], 1), vec![], false);
    let c = Case {
        strides: vec![2, 1, 3],
        pads: vec![1, 0, 2, 0, 1, 1],
        bias: true,
        ..case(&[1, 3, 5, 4, 7], 4, &[3, 2, 3], 1)
    };
    check("strided-padded", &c, vec![], false);
    let c = Case { dilations: vec![2, 1, 2], pads: vec![2, 1, 0, 1, 0, 2], ..case(&[1, 2, 6, 5, 6], 2, &[2, 3, 3], 1) };
    check("dilated", &c, vec![], false);
}

#[test]
fn conv3d_with_groups_batches_and_a_run_time_filter() {
    let c = Case { pads: vec![1, 1, 1, 1, 1, 1], bias: true, ..case(&[2, 4, 3, 4, 5], 6, &[3, 3, 3], 2) };
    check("groups-batch", &c, vec![], false);
    // Depthwise, with the filter fed at run time.
    let c = Case { strides: vec![1, 2, 2], pads: vec![0, 1, 1, 0, 0, 1], ..case(&[2, 3, 3, 5, 5], 3, &[1, 3, 3], 3) };
    check("depthwise-runtime-w", &c, vec![], true);
    // One group, a batch of three, the filter at run time.
    check("batch-runtime-w", &Case { bias: true, ..case(&[3, 2, 3, 3, 4], 5, &[2, 2, 2], 1) }, vec![], true);
}

#[test]
fn conv3d_pointwise_reads_the_input_as_it_is() {
    let c = Case { bias: true, ..case(&[2, 4, 2, 3, 3], 3, &[1, 1, 1], 1) };
    check("pointwise", &c, vec![], false);
    // A 1x1x1 window at stride 2 still unfolds (a strided read).
    let c = Case { strides: vec![2, 2, 2], ..case(&[1, 2, 3, 5, 4], 3, &[1, 1, 1], 1) };
    check("pointwise-strided", &c, vec![], false);
}

#[test]
fn conv3d_auto_pad_modes() {
    let auto = |mode: &str| {
        vec![AttributeProto {
            name: "auto_pad".into(),
            r#type: AttributeType::String as i32,
            s: mode.as_bytes().to_vec(),
            ..Default::default()
        }]
    };
    // SAME: out = ceil(in / stride), the odd pad at the end (upper) or start.
    let base = case(&[1, 2, 5, 4, 6], 2, &[2, 3, 4], 1);
    let c = Case { strides: vec![2, 1, 2], pads: vec![0, 1, 1, 1, 1, 1], ..case(&[1, 2, 5, 4, 6], 2, &[2, 3, 4], 1) };
    check("same-upper", &c, auto("SAME_UPPER"), false);
    let c = Case { strides: vec![2, 1, 2], pads: vec![0, 1, 1, 1, 1, 1], ..base };
    let lower = Case { pads: vec![c.pads[3], c.pads[4], c.pads[5], c.pads[0], c.pads[1], c.pads[2]], ..c };
    check("same-lower", &lower, auto("SAME_LOWER"), false);
    check("valid", &case(&[1, 2, 5, 4, 6], 2, &[2, 3, 4], 1), auto("VALID"), false);
}

#[test]
fn conv_over_four_spatial_axes() {
    let c = Case {
        pads: vec![1, 0, 0, 1, 0, 1, 1, 0],
        strides: vec![1, 2, 1, 1],
        ..case(&[1, 2, 3, 4, 3, 4], 2, &[2, 2, 2, 2], 1)
    };
    check("4d", &c, vec![], false);
}

/// A convolution that must not import: X and W shapes, attributes and a
/// piece of the message.
type BadConv = (Vec<usize>, Vec<usize>, Vec<AttributeProto>, &'static str);

#[test]
fn bad_3d_convolutions_are_import_errors() {
    let cases: Vec<BadConv> = vec![
        (vec![1, 4, 3, 3, 3], vec![2, 3, 1, 1, 1], vec![], "attribute `group` is 1"),
        (vec![1, 4, 3, 3, 3], vec![2, 2, 1, 1, 1], vec![attr_i("group", 3)], "attribute `group` is 3"),
        (vec![1, 2, 3, 3, 3], vec![2, 2, 1, 1], vec![], "W has shape [2, 2, 1, 1]"),
        (
            vec![1, 2, 3, 3, 3],
            vec![2, 2, 1, 1, 1],
            vec![attr_ints("kernel_shape", &[1, 1, 2])],
            "attribute `kernel_shape`",
        ),
        (vec![1, 2, 3, 3, 3], vec![2, 2, 4, 1, 1], vec![], "larger than the padded input"),
        (vec![1, 2, 3, 3, 3], vec![2, 2, 1, 1, 1], vec![attr_ints("strides", &[1, 0, 1])], "attribute `strides`"),
        (vec![1, 2, 3, 3, 3], vec![2, 2, 1, 1, 1], vec![attr_ints("pads", &[1, 1, 1])], "attribute `pads`"),
        (vec![1, 2, 0, 3, 3], vec![2, 2, 1, 1, 1], vec![], "empty shapes"),
    ];
    for (xs, ws, attrs, needle) in cases {
        let m = model(
            vec![node("Conv", "conv", &["x", "w"], &["y"], attrs)],
            vec![init_raw("w", &dims(&ws), &values(ws.iter().product(), 1))],
            vec![vi("x", &dims(&xs))],
            vec![ValueInfoProto { name: "y".into(), ..Default::default() }],
            18,
        );
        let Err(err) = import_model(&m, &ImportOptions::new(WEIGHTS)) else { panic!("imported, expected `{needle}`") };
        let err = err.to_string();
        assert!(err.contains(needle), "{err}");
    }
}
