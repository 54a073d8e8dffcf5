//! `Conv` over three (and four) spatial axes: one-node graphs imported,
//! validated, run in the interpreter (fused and unfused) and compared with
//! a naive f64 convolution written here: groups, batches, strides,
//! asymmetric pads, dilations, every `auto_pad`, a bias, a run-time
//! filter, a pointwise window; and the refusals. Sums of at most 54
//! products of values below 1: 1e-5 leaves a margin without hiding a wrong
//! tap (off by > 1e-2).

use crate::common::*;
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

/// A transposed convolution case: `W [c_in, c_out / g, window...]`.
struct TCase {
    x: Vec<usize>,
    c_out_g: usize,
    kernel: Vec<usize>,
    groups: usize,
    strides: Vec<usize>,
    dilations: Vec<usize>,
    /// Leading padding per axis, and the output's spatial size.
    begin: Vec<usize>,
    out: Vec<usize>,
    bias: bool,
}

/// The spec's scatter: input position `i` and tap `t` land on `i * s - p +
/// t * d` per axis, when that lies inside the output.
fn conv_transpose_ref(c: &TCase, x: &[f32], w: &[f32], b: Option<&[f32]>) -> Vec<f32> {
    let k = c.kernel.len();
    let (n, c_in) = (c.x[0], c.x[1]);
    let (c_in_g, c_out) = (c_in / c.groups, c.c_out_g * c.groups);
    let (spatial, taps, out_sp): (usize, usize, usize) =
        (c.x[2..].iter().product(), c.kernel.iter().product(), c.out.iter().product());
    let mut y = vec![0.0f64; n * c_out * out_sp];
    for img in 0..n {
        for co in 0..c_out {
            y[(img * c_out + co) * out_sp..][..out_sp].fill(b.map_or(0.0, |b| f64::from(b[co])));
        }
        for ci in 0..c_in {
            let gi = ci / c_in_g;
            for m in 0..c.c_out_g {
                let co = gi * c.c_out_g + m;
                for i in 0..spatial {
                    let ic = coords(i, &c.x[2..]);
                    for t in 0..taps {
                        let tc = coords(t, &c.kernel);
                        let mut flat = 0usize;
                        let mut inside = true;
                        for d in 0..k {
                            let o = (ic[d] * c.strides[d] + tc[d] * c.dilations[d]) as i64 - c.begin[d] as i64;
                            inside &= (0..c.out[d] as i64).contains(&o);
                            flat = flat * c.out[d] + o.max(0) as usize;
                        }
                        if inside {
                            y[(img * c_out + co) * out_sp + flat] += f64::from(x[(img * c_in + ci) * spatial + i])
                                * f64::from(w[((ci * c.c_out_g + m) * taps) + t]);
                        }
                    }
                }
            }
        }
    }
    y.into_iter().map(|v| v as f32).collect()
}

fn check_transpose(name: &str, c: &TCase, attrs: Vec<AttributeProto>, w_input: bool) {
    let w_shape: Vec<usize> = [c.x[1], c.c_out_g].iter().chain(&c.kernel).copied().collect();
    let c_out = c.c_out_g * c.groups;
    let x = values(c.x.iter().product(), 600);
    let w = values(w_shape.iter().product(), 601);
    let b = values(c_out, 602);
    let mut attrs = attrs;
    attrs.extend([
        attr_i("group", c.groups as i64),
        attr_ints("strides", &dims(&c.strides)),
        attr_ints("dilations", &dims(&c.dilations)),
    ]);
    let mut inputs = vec!["x", "w"];
    let mut inits = vec![];
    let mut infos = vec![vi("x", &dims(&c.x))];
    if w_input {
        infos.push(vi("w", &dims(&w_shape)));
    } else {
        inits.push(init_raw("w", &dims(&w_shape), &w));
    }
    if c.bias {
        inputs.push("b");
        inits.push(init_raw("b", &[c_out as i64], &b));
    }
    let y_shape: Vec<usize> = [c.x[0], c_out].iter().chain(&c.out).copied().collect();
    let m = model(
        vec![node("ConvTranspose", "up", &inputs, &["y"], attrs)],
        inits,
        infos,
        vec![vi("y", &dims(&y_shape))],
        18,
    );
    let want = conv_transpose_ref(c, &x, &w, c.bias.then_some(&b[..]));
    let (fused, unfused) = import_fused_and_unfused(&m);
    for (what, imported) in [("fused", &fused), ("unfused", &unfused)] {
        let feeds: Vec<(&str, &[f32])> = if w_input { vec![("x", &x), ("w", &w)] } else { vec![("x", &x)] };
        let got = run(name, imported, &feeds, &["y"]);
        assert_close(&got[0], &want, TOL, &format!("{name} ({what})"));
    }
}

#[test]
fn conv_transpose_3d_matches_the_scatter() {
    // full = s * (in - 1) + op + (k - 1) * d + 1, out = full - begin - end.
    // Axis 0: 2 * 2 + 1 + 2 + 1 = 8, pads (1, 0) -> 7. Axis 1: 1 * 3 + 0 + 2 * 2 + 1 = 8,
    // pads (0, 1) -> 7. Axis 2: 2 * 3 + 1 + 1 + 1 = 9, pads (1, 1) -> 7.
    let c = TCase {
        x: vec![2, 4, 3, 4, 4],
        c_out_g: 3,
        kernel: vec![3, 3, 2],
        groups: 2,
        strides: vec![2, 1, 2],
        dilations: vec![1, 2, 1],
        begin: vec![1, 0, 1],
        out: vec![7, 7, 7],
        bias: true,
    };
    let attrs = vec![attr_ints("pads", &[1, 0, 1, 0, 1, 1]), attr_ints("output_padding", &[1, 0, 1])];
    check_transpose("t-const", &c, attrs.clone(), false);
    check_transpose("t-runtime-w", &c, attrs, true);
}

#[test]
fn conv_transpose_3d_output_shape_auto_pad_and_a_pointwise_window() {
    let same = |mode: &str| AttributeProto {
        name: "auto_pad".into(),
        r#type: AttributeType::String as i32,
        s: mode.as_bytes().to_vec(),
        ..Default::default()
    };
    // SAME_UPPER: out = in * s; total = full - out split with the extra at
    // the end. Axis 0: full 2 * 2 + 2 = 6, out 6, begin 0. Axis 1: full
    // 2 * 3 + 3 = 9, out 8, begin 0. Axis 2: full 1 * 3 + 3 = 6, out 4 at
    // stride 1, total 2, begin 1.
    let c = TCase {
        x: vec![1, 2, 3, 4, 4],
        c_out_g: 2,
        kernel: vec![2, 3, 3],
        groups: 1,
        strides: vec![2, 2, 1],
        dilations: vec![1, 1, 1],
        begin: vec![0, 0, 1],
        out: vec![6, 8, 4],
        bias: false,
    };
    check_transpose("t-same-upper", &c, vec![same("SAME_UPPER")], true);
    // output_shape smaller than the full size: the padding split with more
    // at the start (NOTSET). Axis 0: full 6, out 4, total 2, begin 1; axis
    // 1: full 9, out 6, total 3, begin 2; axis 2: full 6, out 6, begin 0.
    let c = TCase { begin: vec![1, 2, 0], out: vec![4, 6, 6], bias: true, ..c };
    check_transpose("t-output-shape", &c, vec![attr_ints("output_shape", &[4, 6, 6])], false);
    let c = TCase {
        x: vec![1, 3, 2, 3, 2],
        c_out_g: 2,
        kernel: vec![1, 1, 1],
        groups: 1,
        strides: vec![1, 1, 1],
        dilations: vec![1, 1, 1],
        begin: vec![0, 0, 0],
        out: vec![2, 3, 2],
        bias: true,
    };
    check_transpose("t-pointwise", &c, vec![], false);
}
