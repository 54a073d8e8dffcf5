//! `LSTM`, `GRU` and `RNN` against a naive f64 reference written from the
//! spec's equations on ONNX's own weight layout: both directions, both
//! layouts, every optional input and output, `clip`, `linear_before_reset`,
//! Relu activations; prepacked and not; and the refusals, each naming the
//! node and what is refused. The kernels compute in f32 with f32 sigmoid
//! and tanh over a few steps of small layers: 1e-5 max abs covers it (the
//! measured error is below 1e-6), while a wrong gate order, bias or
//! direction moves outputs by more than 1e-2.

use crate::common::*;
use rlx_onnx::proto::{AttributeProto, AttributeType, ModelProto};
use rlx_onnx::ImportOptions;

fn attr_s(name: &str, s: &str) -> AttributeProto {
    AttributeProto {
        name: name.into(),
        r#type: AttributeType::String as i32,
        s: s.as_bytes().to_vec(),
        ..Default::default()
    }
}

fn attr_strings(name: &str, v: &[&str]) -> AttributeProto {
    AttributeProto {
        name: name.into(),
        r#type: AttributeType::Strings as i32,
        strings: v.iter().map(|s| s.as_bytes().to_vec()).collect(),
        ..Default::default()
    }
}

#[derive(Clone, Copy, Debug, PartialEq)]
enum Op {
    Lstm,
    Gru { linear_before_reset: bool },
    Rnn,
}

impl Op {
    fn name(self) -> &'static str {
        match self {
            Op::Lstm => "LSTM",
            Op::Gru { .. } => "GRU",
            Op::Rnn => "RNN",
        }
    }

    fn gates(self) -> usize {
        match self {
            Op::Lstm => 4,
            Op::Gru { .. } => 3,
            Op::Rnn => 1,
        }
    }
}

#[derive(Clone, Copy, Debug, PartialEq)]
enum Act {
    Sigmoid,
    Tanh,
    Relu,
}

impl Act {
    fn apply(self, x: f64) -> f64 {
        match self {
            Act::Sigmoid => 1.0 / (1.0 + (-x).exp()),
            Act::Tanh => x.tanh(),
            Act::Relu => x.max(0.0),
        }
    }
}

/// One layer: sizes, weights in ONNX's layout, options.
#[derive(Clone, Debug)]
struct Layer {
    op: Op,
    seq: usize,
    batch: usize,
    input: usize,
    hidden: usize,
    /// `reverse` per direction.
    dirs: Vec<bool>,
    w: Vec<f32>,
    r: Vec<f32>,
    b: Option<Vec<f32>>,
    p: Option<Vec<f32>>,
    clip: Option<f32>,
    /// Per direction: `f, g, h` (as many as the op reads).
    acts: Vec<Vec<Act>>,
}

impl Layer {
    fn new(op: Op, (seq, batch, input, hidden): (usize, usize, usize, usize), dirs: &[bool], seed: u64) -> Layer {
        let (nd, g) = (dirs.len(), op.gates());
        let scale = |v: Vec<f32>, s: f32| v.into_iter().map(|x| x * s).collect::<Vec<_>>();
        let acts = match op {
            Op::Lstm => vec![Act::Sigmoid, Act::Tanh, Act::Tanh],
            Op::Gru { .. } => vec![Act::Sigmoid, Act::Tanh],
            Op::Rnn => vec![Act::Tanh],
        };
        Layer {
            op,
            seq,
            batch,
            input,
            hidden,
            dirs: dirs.to_vec(),
            w: scale(values(nd * g * hidden * input, seed), 0.8),
            r: scale(values(nd * g * hidden * hidden, seed + 1), 0.6),
            b: Some(scale(values(nd * 2 * g * hidden, seed + 2), 0.5)),
            p: (op == Op::Lstm).then(|| scale(values(nd * 3 * hidden, seed + 3), 0.5)),
            clip: None,
            acts: vec![acts; nd],
        }
    }

    /// The spec's equations in f64 on sequence-major `x` and states:
    /// `(Y [seq, dirs, batch, hidden], Y_h, Y_c)`.
    fn reference(&self, x: &[f32], h0: Option<&[f32]>, c0: Option<&[f32]>) -> (Vec<f32>, Vec<f32>, Vec<f32>) {
        let (n, nd, g, inp, batch) = (self.hidden, self.dirs.len(), self.op.gates(), self.input, self.batch);
        let mut y = vec![0.0f32; self.seq * nd * batch * n];
        let (mut y_h, mut y_c) = (vec![0.0f32; nd * batch * n], vec![0.0f32; nd * batch * n]);
        let clip = |v: f64| self.clip.map_or(v, |c| v.clamp(-f64::from(c), f64::from(c)));
        for (d, &reverse) in self.dirs.iter().enumerate() {
            let w = |gate: usize, j: usize, k: usize| f64::from(self.w[((d * g + gate) * n + j) * inp + k]);
            let r = |gate: usize, j: usize, k: usize| f64::from(self.r[((d * g + gate) * n + j) * n + k]);
            let wb =
                |gate: usize, j: usize| self.b.as_ref().map_or(0.0, |b| f64::from(b[d * 2 * g * n + gate * n + j]));
            let rb = |gate: usize, j: usize| {
                self.b.as_ref().map_or(0.0, |b| f64::from(b[d * 2 * g * n + g * n + gate * n + j]))
            };
            let p = |k: usize, j: usize| self.p.as_ref().map_or(0.0, |p| f64::from(p[d * 3 * n + k * n + j]));
            let acts = &self.acts[d];
            for b in 0..batch {
                let state = |s: Option<&[f32]>| {
                    (0..n).map(|j| s.map_or(0.0, |s| f64::from(s[(d * batch + b) * n + j]))).collect::<Vec<f64>>()
                };
                let (mut h, mut c) = (state(h0), state(c0));
                for i in 0..self.seq {
                    let t = if reverse { self.seq - 1 - i } else { i };
                    let xt = |k: usize| f64::from(x[(t * batch + b) * inp + k]);
                    let xw = |gate: usize, j: usize| (0..inp).map(|k| xt(k) * w(gate, j, k)).sum::<f64>();
                    let hr = |hv: &[f64], gate: usize, j: usize| (0..n).map(|k| hv[k] * r(gate, j, k)).sum::<f64>();
                    let new_h: Vec<f64> = match self.op {
                        Op::Lstm => {
                            let pre = |gate: usize, j: usize| xw(gate, j) + hr(&h, gate, j) + wb(gate, j) + rb(gate, j);
                            let mut next = vec![0.0; n];
                            let new_c: Vec<f64> = (0..n)
                                .map(|j| {
                                    let ig = acts[0].apply(clip(pre(0, j) + p(0, j) * c[j]));
                                    let fg = acts[0].apply(clip(pre(2, j) + p(2, j) * c[j]));
                                    let cg = acts[1].apply(clip(pre(3, j)));
                                    fg * c[j] + ig * cg
                                })
                                .collect();
                            for j in 0..n {
                                let og = acts[0].apply(clip(pre(1, j) + p(1, j) * new_c[j]));
                                next[j] = og * acts[2].apply(new_c[j]);
                            }
                            c = new_c;
                            next
                        }
                        Op::Gru { linear_before_reset } => {
                            let pre = |gate: usize, j: usize| xw(gate, j) + hr(&h, gate, j) + wb(gate, j) + rb(gate, j);
                            let z: Vec<f64> = (0..n).map(|j| acts[0].apply(clip(pre(0, j)))).collect();
                            let rg: Vec<f64> = (0..n).map(|j| acts[0].apply(clip(pre(1, j)))).collect();
                            let rh: Vec<f64> = (0..n).map(|k| rg[k] * h[k]).collect();
                            (0..n)
                                .map(|j| {
                                    let cand = if linear_before_reset {
                                        xw(2, j) + rg[j] * (hr(&h, 2, j) + rb(2, j)) + wb(2, j)
                                    } else {
                                        xw(2, j) + hr(&rh, 2, j) + rb(2, j) + wb(2, j)
                                    };
                                    let cand = acts[1].apply(clip(cand));
                                    (1.0 - z[j]) * cand + z[j] * h[j]
                                })
                                .collect()
                        }
                        Op::Rnn => {
                            (0..n).map(|j| acts[0].apply(clip(xw(0, j) + hr(&h, 0, j) + wb(0, j) + rb(0, j)))).collect()
                        }
                    };
                    h = new_h;
                    for j in 0..n {
                        y[((t * nd + d) * batch + b) * n + j] = h[j] as f32;
                    }
                }
                for j in 0..n {
                    y_h[(d * batch + b) * n + j] = h[j] as f32;
                    y_c[(d * batch + b) * n + j] = c[j] as f32;
                }
            }
        }
        (y, y_h, y_c)
    }

    /// The ONNX model: `X` (and the states when `states`) as graph inputs,
    /// the weights as initializers.
    fn model(&self, batch_major: bool, states: bool, outputs: &[&str], extra: Vec<AttributeProto>) -> ModelProto {
        let (nd, g, n) = (self.dirs.len() as i64, self.op.gates() as i64, self.hidden as i64);
        let (seq, batch, input) = (self.seq as i64, self.batch as i64, self.input as i64);
        let x_dims = if batch_major { [batch, seq, input] } else { [seq, batch, input] };
        let state_dims = if batch_major { [batch, nd, n] } else { [nd, batch, n] };
        let y_dims = if batch_major { vec![batch, seq, nd, n] } else { vec![seq, nd, batch, n] };
        let lstm = self.op == Op::Lstm;
        let mut inputs = vec!["X", "W", "R", "B", "", "", "", ""];
        let mut graph_inputs = vec![vi("X", &x_dims)];
        let mut inits = vec![init_raw("W", &[nd, g * n, input], &self.w), init_raw("R", &[nd, g * n, n], &self.r)];
        match &self.b {
            Some(b) => inits.push(init_raw("B", &[nd, 2 * g * n], b)),
            None => inputs[3] = "",
        }
        if states {
            inputs[5] = "h0";
            graph_inputs.push(vi("h0", &state_dims));
            if lstm {
                inputs[6] = "c0";
                graph_inputs.push(vi("c0", &state_dims));
            }
        }
        if let Some(p) = &self.p {
            inputs[7] = "P";
            inits.push(init_raw("P", &[nd, 3 * n], p));
        }
        while inputs.last() == Some(&"") {
            inputs.pop();
        }
        let direction = match self.dirs[..] {
            [false] => "forward",
            [true] => "reverse",
            _ => "bidirectional",
        };
        let mut attrs = vec![attr_i("hidden_size", n), attr_s("direction", direction)];
        if batch_major {
            attrs.push(attr_i("layout", 1));
        }
        if let Op::Gru { linear_before_reset: true } = self.op {
            attrs.push(attr_i("linear_before_reset", 1));
        }
        if let Some(c) = self.clip {
            attrs.push(attr_f("clip", c));
        }
        let names: Vec<&str> = self
            .acts
            .iter()
            .flatten()
            .map(|a| match a {
                Act::Sigmoid => "Sigmoid",
                Act::Tanh => "Tanh",
                Act::Relu => "Relu",
            })
            .collect();
        attrs.push(attr_strings("activations", &names));
        attrs.extend(extra);
        let all = ["Y", "Y_h", "Y_c"];
        let node_outputs: Vec<&str> = all.iter().map(|o| if outputs.contains(o) { *o } else { "" }).collect();
        let graph_outputs =
            outputs.iter().map(|o| if *o == "Y" { vi(o, &y_dims) } else { vi(o, &state_dims) }).collect();
        model(vec![node(self.op.name(), "rnn", &inputs, &node_outputs, attrs)], inits, graph_inputs, graph_outputs, 14)
    }
}

/// `[a, b, rest]` with the first two axes swapped.
fn swap01(v: &[f32], a: usize, b: usize) -> Vec<f32> {
    let rest = v.len() / (a * b);
    let mut out = vec![0.0; v.len()];
    for i in 0..a {
        for j in 0..b {
            out[(j * a + i) * rest..][..rest].copy_from_slice(&v[(i * b + j) * rest..][..rest]);
        }
    }
    out
}

/// Y `[seq, dirs, batch, n]` to `[batch, seq, dirs, n]`.
fn y_batch_major(y: &[f32], seq: usize, dirs: usize, batch: usize, n: usize) -> Vec<f32> {
    let mut out = vec![0.0; y.len()];
    for t in 0..seq {
        for d in 0..dirs {
            for b in 0..batch {
                out[((b * seq + t) * dirs + d) * n..][..n].copy_from_slice(&y[((t * dirs + d) * batch + b) * n..][..n]);
            }
        }
    }
    out
}

/// Imports (prepacked or not), runs, and compares every output with the
/// reference, in the given layout.
fn check(layer: &Layer, batch_major: bool, prepack: bool, outputs: &[&str], test: &str) {
    let (nd, n) = (layer.dirs.len(), layer.hidden);
    let x = values(layer.seq * layer.batch * layer.input, 91);
    let h0 = values(nd * layer.batch * n, 92);
    let c0 = values(nd * layer.batch * n, 93);
    let (y, y_h, y_c) = layer.reference(&x, Some(&h0), Some(&c0));
    let lstm = layer.op == Op::Lstm;
    let m = layer.model(batch_major, true, outputs, vec![]);
    let mut opts = ImportOptions::new(WEIGHTS);
    opts.prepack = prepack;
    let imported = import_model(&m, &opts).unwrap_or_else(|e| panic!("{test}: {e}"));
    assert_eq!(count_kind(&imported.sched_text, "Recurrent"), nd, "{}", imported.sched_text);
    let product = if prepack { "PackedGemm" } else { "FusedMmBiasAct" };
    assert_eq!(count_kind(&imported.sched_text, product), 1, "{}", imported.sched_text);
    let (xs, h0s, c0s) = if batch_major {
        (swap01(&x, layer.seq, layer.batch), swap01(&h0, nd, layer.batch), swap01(&c0, nd, layer.batch))
    } else {
        (x.clone(), h0.clone(), c0.clone())
    };
    let mut inputs: Vec<(&str, &[f32])> = vec![("X", &xs), ("h0", &h0s)];
    if lstm {
        inputs.push(("c0", &c0s));
    }
    let got = run(test, &imported, &inputs, outputs);
    for (o, got) in outputs.iter().zip(&got) {
        let want = match (*o, batch_major) {
            ("Y", false) => y.clone(),
            ("Y", true) => y_batch_major(&y, layer.seq, nd, layer.batch, n),
            ("Y_h", false) => y_h.clone(),
            ("Y_h", true) => swap01(&y_h, nd, layer.batch),
            ("Y_c", false) => y_c.clone(),
            (_, true) => swap01(&y_c, nd, layer.batch),
            _ => unreachable!(),
        };
        assert_close(got, &want, 1e-5, &format!("{test}: {o}"));
    }
}

#[test]
fn lstm_bidirectional_with_peepholes_states_and_bias_in_both_layouts() {
    let layer = Layer::new(Op::Lstm, (5, 3, 4, 7), &[false, true], 1);
    for batch_major in [false, true] {
        for prepack in [true, false] {
            check(&layer, batch_major, prepack, &["Y", "Y_h", "Y_c"], &format!("lstm_bi_{batch_major}_{prepack}"));
        }
    }
}

#[test]
fn lstm_reverse_with_clip_and_only_the_final_state() {
    let mut layer = Layer::new(Op::Lstm, (6, 2, 3, 17), &[true], 2);
    layer.clip = Some(0.9);
    layer.p = None;
    check(&layer, false, true, &["Y_h"], "lstm_rev_clip");
    layer.acts = vec![vec![Act::Sigmoid, Act::Relu, Act::Tanh]];
    check(&layer, true, true, &["Y", "Y_c"], "lstm_rev_relu");
}

#[test]
fn gru_both_reset_orders_bidirectional() {
    for linear_before_reset in [false, true] {
        let mut layer = Layer::new(Op::Gru { linear_before_reset }, (4, 2, 5, 6), &[false, true], 3);
        check(&layer, false, true, &["Y", "Y_h"], &format!("gru_{linear_before_reset}"));
        layer.clip = Some(0.5);
        check(&layer, true, false, &["Y", "Y_h"], &format!("gru_clip_{linear_before_reset}"));
    }
}

#[test]
fn rnn_forward_reverse_and_relu() {
    let mut layer = Layer::new(Op::Rnn, (7, 1, 3, 9), &[false], 4);
    check(&layer, false, true, &["Y", "Y_h"], "rnn_fwd");
    layer.dirs = vec![true];
    layer.acts = vec![vec![Act::Relu]];
    layer.b = None;
    check(&layer, true, true, &["Y", "Y_h"], "rnn_rev_relu");
}

#[test]
fn without_states_bias_and_names_the_defaults_apply() {
    // No `B`, no initial states, no `activations` attribute: zeros and
    // the default activations; batch 1, hidden 1.
    let mut layer = Layer::new(Op::Lstm, (3, 1, 2, 1), &[false], 5);
    layer.b = None;
    layer.p = None;
    let x = values(3 * 2, 94);
    let (y, y_h, _) = layer.reference(&x, None, None);
    let mut m = layer.model(false, false, &["Y", "Y_h"], vec![]);
    m.graph.as_mut().unwrap().node[0].attribute.retain(|a| a.name != "activations");
    let imported = import_model(&m, &ImportOptions::new(WEIGHTS)).expect("import");
    let got = run("lstm_defaults", &imported, &[("X", &x)], &["Y", "Y_h"]);
    assert_close(&got[0], &y, 1e-5, "Y");
    assert_close(&got[1], &y_h, 1e-5, "Y_h");
}

#[test]
fn full_sequence_lens_are_accepted_and_others_refused() {
    let layer = Layer::new(Op::Rnn, (3, 2, 2, 4), &[false], 6);
    let with_lens = |lens: &[i64]| {
        let mut m = layer.model(false, false, &["Y_h"], vec![]);
        let g = m.graph.as_mut().unwrap();
        g.node[0].input = vec!["X".into(), "W".into(), "R".into(), "B".into(), "lens".into()];
        g.initializer.push(init_i64("lens", &[2], lens));
        import_model(&m, &ImportOptions::new(WEIGHTS))
    };
    with_lens(&[3, 3]).expect("full lengths import");
    let e = with_lens(&[3, 2]).expect_err("a shorter sequence").to_string();
    assert!(e.contains("`rnn`") && e.contains("sequence_lens") && e.contains("[3, 2]"), "{e}");
}

/// `layer`'s model with `attrs` replacing the attributes of their names.
fn with_attrs(layer: &Layer, attrs: Vec<AttributeProto>) -> ModelProto {
    let mut m = layer.model(false, false, &["Y_h"], vec![]);
    let node_attrs = &mut m.graph.as_mut().unwrap().node[0].attribute;
    node_attrs.retain(|a| attrs.iter().all(|b| b.name != a.name));
    node_attrs.extend(attrs);
    m
}

#[test]
fn refusals_name_the_node_and_what_is_refused() {
    let layer = Layer::new(Op::Lstm, (2, 1, 2, 3), &[false], 7);
    let refused = |m: &ModelProto, needles: &[&str]| {
        let e = import_model(m, &ImportOptions::new(WEIGHTS)).expect_err("refused").to_string();
        assert!(e.contains("`rnn`"), "{e}");
        for n in needles {
            assert!(e.contains(n), "{e} should contain {n}");
        }
    };
    let alpha = AttributeProto {
        name: "activation_alpha".into(),
        r#type: AttributeType::Floats as i32,
        floats: vec![0.1],
        ..Default::default()
    };
    for (attr, needles) in [
        (attr_i("input_forget", 1), &["input_forget", "only 0"][..]),
        (attr_s("direction", "sideways"), &["direction", "sideways"]),
        (attr_f("clip", -1.0), &["clip", "positive"]),
        (attr_i("layout", 2), &["layout", "is 2"]),
        (alpha, &["activation_alpha"]),
        (attr_strings("activations", &["Sigmoid", "Softsign", "Tanh"]), &["activations", "Softsign"]),
        (attr_strings("activations", &["Sigmoid", "Tanh"]), &["activations", "2 names; expected 3"]),
        (attr_i("hidden_size", 4), &["hidden_size", "is 4"]),
    ] {
        refused(&with_attrs(&layer, vec![attr]), needles);
    }
    // W as a graph input: not a constant.
    let mut m = layer.model(false, false, &["Y_h"], vec![]);
    let g = m.graph.as_mut().unwrap();
    g.initializer.retain(|t| t.name != "W");
    g.input.push(vi("W", &[1, 12, 2]));
    refused(&m, &["W", "constant"]);
}
