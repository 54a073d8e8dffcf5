//! The fusion passes (GELU, attention, elementwise chains, and their
//! order with the bias/activation/residual fusions): each model is built
//! in Rust, imported with the passes (`optimize: true`) and without
//! (`optimize: false`, every node keeps its own thunks), both schedules
//! validated and run in the reference interpreter on the same inputs, and
//! the outputs compared. Each test also checks which thunks the fused
//! schedule has, so a pattern that silently stops matching fails here;
//! every deviation from a pattern has a test that it stays unfused.
//!
//! Tolerances are stated where they are used, with the reason.

use crate::common::*;
use rlx_onnx::proto::{AttributeProto, ModelProto, NodeProto, TensorProto};
use rlx_onnx::Imported;

/// Runs both schedules on `inputs` and returns their first outputs.
fn run_both(test: &str, fused: &Imported, unfused: &Imported, inputs: &[(&str, &[f32])], out: &str) -> [Vec<f32>; 2] {
    let f = run(&format!("{test}-fused"), fused, inputs, &[out]).remove(0);
    let u = run(&format!("{test}-unfused"), unfused, inputs, &[out]).remove(0);
    [f, u]
}

/// Asserts two outputs are the same bits (a NaN matching any NaN).
fn assert_same_bits(got: &[f32], want: &[f32], what: &str) {
    assert_eq!(got.len(), want.len(), "{what}: length");
    for (i, (g, w)) in got.iter().zip(want).enumerate() {
        assert!(g.to_bits() == w.to_bits() || (g.is_nan() && w.is_nan()), "{what}[{i}]: fused {g}, unfused {w}");
    }
}

fn scalar(name: &str, v: f32) -> TensorProto {
    init_raw(name, &[], &[v])
}

// ---------------------------------------------------------------- GELU

/// The spellings of the erf GELU the pass accepts.
#[derive(Clone, Copy, Debug)]
enum GeluForm {
    /// torch's `F.gelu`: `Mul(Mul(x, Add(Erf(Div(x, sqrt2)), 1)), 0.5)`.
    DivHalfLast,
    /// The same with `Mul(x, 1/sqrt2)` for the division.
    MulHalfLast,
    /// `x * 0.5 * (1 + erf(x / sqrt2))`: the half first.
    HalfFirst,
    /// Every commutative op with its operands swapped.
    Swapped,
}

/// GELU nodes from `x` to `y` with constants `c_sqrt2` (`sqrt2` or its
/// reciprocal, by form), `c_one`, `c_half`.
fn gelu_nodes(form: GeluForm, x: &str, y: &str, p: &str) -> Vec<NodeProto> {
    let n = |op: &str, name: &str, ins: &[&str], out: &str| node(op, &format!("{p}{name}"), ins, &[out], vec![]);
    let (u, e, q, m) = (format!("{p}u"), format!("{p}e"), format!("{p}p"), format!("{p}m"));
    let (c2, c1, ch) = (format!("{p}c_sqrt2"), format!("{p}c_one"), format!("{p}c_half"));
    match form {
        GeluForm::DivHalfLast | GeluForm::MulHalfLast => vec![
            n(if matches!(form, GeluForm::DivHalfLast) { "Div" } else { "Mul" }, "div", &[x, &c2], &u),
            n("Erf", "erf", &[&u], &e),
            n("Add", "add", &[&e, &c1], &q),
            n("Mul", "mul", &[x, &q], &m),
            n("Mul", "half", &[&m, &ch], y),
        ],
        GeluForm::HalfFirst => vec![
            n("Mul", "half", &[x, &ch], &m),
            n("Div", "div", &[x, &c2], &u),
            n("Erf", "erf", &[&u], &e),
            n("Add", "add", &[&e, &c1], &q),
            n("Mul", "mul", &[&m, &q], y),
        ],
        GeluForm::Swapped => vec![
            n("Mul", "div", &[&c2, x], &u),
            n("Erf", "erf", &[&u], &e),
            n("Add", "add", &[&c1, &e], &q),
            n("Mul", "mul", &[&q, x], &m),
            n("Mul", "half", &[&ch, &m], y),
        ],
    }
}

fn gelu_consts(form: GeluForm, p: &str, sqrt2: f32, one: f32, half: f32) -> Vec<TensorProto> {
    let c2 = match form {
        GeluForm::DivHalfLast | GeluForm::HalfFirst => sqrt2,
        GeluForm::MulHalfLast | GeluForm::Swapped => 1.0 / sqrt2,
    };
    vec![scalar(&format!("{p}c_sqrt2"), c2), scalar(&format!("{p}c_one"), one), scalar(&format!("{p}c_half"), half)]
}

fn gelu_model(form: GeluForm, sqrt2: f32, one: f32, half: f32) -> ModelProto {
    model(
        gelu_nodes(form, "x", "y", ""),
        gelu_consts(form, "", sqrt2, one, half),
        vec![vi("x", &[3, 7])],
        vec![vi("y", &[3, 7])],
        17,
    )
}

/// Inputs in [-4, 4): the whole interesting range of GELU.
fn gelu_input() -> Vec<f32> {
    values(21, 901).iter().map(|v| v * 4.0).collect()
}

/// GELU replaces a formula evaluated in five f32 roundings (plus erf's own
/// ulp) by one evaluation within a few ulp. For x < 0, `1 + erf(x/sqrt2)`
/// cancels: its absolute error stays ~2^-24, which the final products
/// scale by |x|/2 <= 2; so the two differ by at most a few 1e-7 in
/// absolute terms over [-4, 4]. 2e-6 leaves a margin and still catches a
/// wrong formula (tanh GELU differs by > 1e-4 here, a missing 0.5 by ~1).
const GELU_TOL: f32 = 2e-6;

#[test]
fn every_torch_gelu_form_becomes_one_activation() {
    let x = gelu_input();
    for form in [GeluForm::DivHalfLast, GeluForm::MulHalfLast, GeluForm::HalfFirst, GeluForm::Swapped] {
        let m = gelu_model(form, std::f32::consts::SQRT_2, 1.0, 0.5);
        let (fused, unfused) = import_fused_and_unfused(&m);
        assert!(
            fused.sched_text.contains("Activation { src: x, dst: y, len: 21, act: gelu }"),
            "{form:?}:\n{}",
            fused.sched_text
        );
        assert_eq!(fused.report.thunks, 1, "{form:?}:\n{}", fused.sched_text);
        assert_eq!(unfused.report.thunks, 5, "{form:?}:\n{}", unfused.sched_text);
        // The constants only the pattern read are gone from the weights.
        assert_eq!(fused.report.params, 0, "{form:?}");
        let [f, u] = run_both(&format!("gelu-{form:?}"), &fused, &unfused, &[("x", &x)], "y");
        assert_close(&f, &u, GELU_TOL, &format!("{form:?}"));
    }
}

#[test]
fn gelu_is_recognised_by_its_values_not_its_constants_bits() {
    // Constants a rounding or two away from the exact ones compute GELU
    // within f32 rounding: recognised. Constants 1e-3 off compute another
    // function: a region evaluating exactly what the graph says.
    let up = |v: f32, ulps: u32| f32::from_bits(v.to_bits() + ulps);
    let down = |v: f32, ulps: u32| f32::from_bits(v.to_bits() - ulps);
    let sqrt2 = std::f32::consts::SQRT_2;
    let x = gelu_input();
    for (sqrt2, one, half) in [(up(sqrt2, 1), 1.0, 0.5), (down(sqrt2, 2), 1.0, 0.5), (sqrt2, 1.0, down(0.5, 1))] {
        let near = gelu_model(GeluForm::DivHalfLast, sqrt2, one, half);
        let (fused, unfused) = import_fused_and_unfused(&near);
        assert!(fused.sched_text.contains("act: gelu"), "{}", fused.sched_text);
        let [f, u] = run_both("gelu-near", &fused, &unfused, &[("x", &x)], "y");
        assert_close(&f, &u, GELU_TOL, "constants a rounding off");
    }
    for (sqrt2, one, half) in [(sqrt2 * 1.001, 1.0, 0.5), (sqrt2, 1.001, 0.5), (sqrt2, 1.0, 0.5005)] {
        let far = gelu_model(GeluForm::DivHalfLast, sqrt2, one, half);
        let (fused, unfused) = import_fused_and_unfused(&far);
        assert!(!fused.sched_text.contains("gelu"), "{}", fused.sched_text);
        // Not a GELU, but still an elementwise chain: one region whose
        // steps call the same kernels as the unfused thunks.
        assert_eq!(count_kind(&fused.sched_text, "ElementwiseRegion"), 1, "{}", fused.sched_text);
        let [f, u] = run_both("gelu-far", &fused, &unfused, &[("x", &x)], "y");
        assert_same_bits(&f, &u, "constants 1e-3 off");
    }
}

/// An activation as one exporter spells it: nodes from `x` to `y`, their
/// constants, and the activation it must become (none: it is another
/// function and stays a region).
struct Spelling {
    what: &'static str,
    nodes: Vec<NodeProto>,
    consts: Vec<TensorProto>,
    act: Option<&'static str>,
}

fn spellings() -> Vec<Spelling> {
    let n = |op: &str, ins: &[&str], out: &str| node(op, out, ins, &[out], vec![]);
    vec![
        Spelling {
            // Hugging Face's `NewGELUActivation` (GPT-2):
            // 0.5 * x * (1 + tanh(sqrt(2 / pi) * (x + 0.044715 * x^3))).
            what: "tanh GELU, GPT-2",
            nodes: vec![
                n("Mul", &["x", "c_half"], "a"),
                n("Pow", &["x", "c_three"], "p"),
                n("Mul", &["p", "c_k"], "q"),
                n("Add", &["x", "q"], "r"),
                n("Mul", &["r", "c_s"], "s"),
                n("Tanh", &["s"], "th"),
                n("Add", &["th", "c_one"], "u"),
                n("Mul", &["a", "u"], "y"),
            ],
            consts: vec![
                scalar("c_half", 0.5),
                scalar("c_three", 3.0),
                scalar("c_k", 0.044715),
                scalar("c_s", (2.0f64 / std::f64::consts::PI).sqrt() as f32),
                scalar("c_one", 1.0),
            ],
            act: Some("gelu_tanh"),
        },
        Spelling {
            what: "SiLU as sigmoid times x",
            nodes: vec![n("Sigmoid", &["x"], "s"), n("Mul", &["s", "x"], "y")],
            consts: vec![],
            act: Some("silu"),
        },
        Spelling {
            // TF/Keras: x * relu6(x + 3) / 6.
            what: "HardSwish, TF",
            nodes: vec![
                n("Add", &["x", "c_three"], "a"),
                node("Clip", "clip", &["a", "c_zero", "c_six"], &["c"], vec![]),
                n("Mul", &["x", "c"], "m"),
                n("Div", &["m", "c_six"], "y"),
            ],
            consts: vec![scalar("c_three", 3.0), scalar("c_zero", 0.0), scalar("c_six", 6.0)],
            act: Some("hard_swish"),
        },
        Spelling {
            what: "Mish",
            nodes: vec![n("Softplus", &["x"], "sp"), n("Tanh", &["sp"], "th"), n("Mul", &["x", "th"], "y")],
            consts: vec![],
            act: Some("mish"),
        },
        Spelling {
            // QuickGELU: close to GELU, but another function.
            what: "QuickGELU",
            nodes: vec![n("Mul", &["x", "c_k"], "a"), n("Sigmoid", &["a"], "s"), n("Mul", &["x", "s"], "y")],
            consts: vec![scalar("c_k", 1.702)],
            act: None,
        },
    ]
}

#[test]
fn every_spelling_of_an_activation_becomes_that_activation() {
    let x = gelu_input();
    for s in spellings() {
        let m = model(s.nodes, s.consts, vec![vi("x", &[3, 7])], vec![vi("y", &[3, 7])], 17);
        let (fused, unfused) = import_fused_and_unfused(&m);
        let [f, u] = run_both(&format!("spelling-{}", s.what), &fused, &unfused, &[("x", &x)], "y");
        match s.act {
            Some(act) => {
                let want = format!("Activation {{ src: x, dst: y, len: 21, act: {act} }}");
                assert!(fused.sched_text.contains(&want), "{}:\n{}", s.what, fused.sched_text);
                assert_eq!(fused.report.thunks, 1, "{}:\n{}", s.what, fused.sched_text);
                // One evaluation within a few ulp against a chain of f32
                // roundings: GELU_TOL's reasoning, |x| <= 4.
                assert_close(&f, &u, GELU_TOL, s.what);
            }
            None => {
                assert!(!fused.sched_text.contains("Activation {"), "{}:\n{}", s.what, fused.sched_text);
                assert_same_bits(&f, &u, s.what);
            }
        }
    }
}

#[test]
fn gelu_with_an_intermediate_read_elsewhere_stays_unfused() {
    // The erf value is also a graph output.
    let mut m = gelu_model(GeluForm::DivHalfLast, std::f32::consts::SQRT_2, 1.0, 0.5);
    m.graph.as_mut().unwrap().output.push(vi("e", &[3, 7]));
    let (fused, unfused) = import_fused_and_unfused(&m);
    assert!(!fused.sched_text.contains("gelu"), "{}", fused.sched_text);
    let x = gelu_input();
    let f = run("gelu-extra-fused", &fused, &[("x", &x)], &["y", "e"]);
    let u = run("gelu-extra-unfused", &unfused, &[("x", &x)], &["y", "e"]);
    assert_same_bits(&f[0], &u[0], "y");
    assert_same_bits(&f[1], &u[1], "e");
}

#[test]
fn matmul_bias_and_gelu_become_one_fused_product() {
    let (w, b) = (values(5 * 6, 911), values(6, 912));
    let mut nodes =
        vec![node("MatMul", "mm", &["x", "w"], &["h0"], vec![]), node("Add", "bias", &["b", "h0"], &["h"], vec![])];
    nodes.extend(gelu_nodes(GeluForm::DivHalfLast, "h", "y", "g_"));
    let mut inits = vec![init_raw("w", &[5, 6], &w), init_raw("b", &[6], &b)];
    inits.extend(gelu_consts(GeluForm::DivHalfLast, "g_", std::f32::consts::SQRT_2, 1.0, 0.5));
    let m = model(nodes, inits, vec![vi("x", &[4, 5])], vec![vi("y", &[4, 6])], 17);
    let (fused, unfused) = import_fused_and_unfused(&m);
    assert!(
        fused.sched_text.contains("FusedMmBiasAct { a: x, w: w, bias: b, c: y, m: 4, k: 5, n: 6, act: gelu }"),
        "{}",
        fused.sched_text
    );
    assert_eq!(fused.report.thunks, 1, "{}", fused.sched_text);
    let x = values(20, 913);
    let [f, u] = run_both("mm-gelu", &fused, &unfused, &[("x", &x)], "y");
    // Products of 5 terms in [-1, 1] plus a bias: |h| < 6; the GELU
    // argument is the same bits in both, so GELU_TOL's reasoning holds
    // with |x|/2 < 3.
    assert_close(&f, &u, GELU_TOL * 1.5, "y");
}

#[test]
fn conv_and_its_activation_become_one_conv_with_the_same_bits() {
    let (w, b) = (values(4 * 3 * 3 * 3, 931), values(4, 932));
    let conv = |y: &str| {
        node(
            "Conv",
            "conv",
            &["x", "w", "b"],
            &[y],
            vec![attr_ints("pads", &[1, 1, 1, 1]), attr_ints("strides", &[2, 2])],
        )
    };
    let m = model(
        vec![conv("h"), node("Clip", "relu6", &["h", "lo", "hi"], &["y"], vec![])],
        vec![init_raw("w", &[4, 3, 3, 3], &w), init_raw("b", &[4], &b), scalar("lo", 0.0), scalar("hi", 6.0)],
        vec![vi("x", &[1, 3, 9, 8])],
        vec![vi("y", &[1, 4, 5, 4])],
        17,
    );
    let (fused, unfused) = import_fused_and_unfused(&m);
    // One blocked convolution (reading the 3-channel input as NCHW) with
    // the clip inside, and the read-back of the model output.
    assert_eq!(count_kind(&fused.sched_text, "BlockedConv2D"), 1, "{}", fused.sched_text);
    assert!(fused.sched_text.contains("groups: 1, act: clip(0.0, 6.0), x_nchw: true }"), "{}", fused.sched_text);
    assert_eq!(fused.report.thunks, 2, "{}", fused.sched_text);
    let x: Vec<f32> = values(3 * 9 * 8, 933).iter().map(|v| v * 8.0).collect();
    let [f, u] = run_both("conv-clip", &fused, &unfused, &[("x", &x)], "y");
    // The activation runs on the same values through the same kernel.
    assert_same_bits(&f, &u, "y");

    // A convolution whose raw result is also an output keeps its
    // activation separate.
    let m = model(
        vec![conv("h"), node("Relu", "relu", &["h"], &["y"], vec![])],
        vec![init_raw("w", &[4, 3, 3, 3], &w), init_raw("b", &[4], &b)],
        vec![vi("x", &[1, 3, 9, 8])],
        vec![vi("y", &[1, 4, 5, 4]), vi("h", &[1, 4, 5, 4])],
        17,
    );
    let (fused, _) = import_fused_and_unfused(&m);
    assert!(fused.sched_text.contains("groups: 1, act: identity, x_nchw: true }"), "{}", fused.sched_text);
    assert_eq!(count_kind(&fused.sched_text, "Activation"), 1, "{}", fused.sched_text);
}

// ---------------------------------------------------- elementwise chains

#[test]
fn elementwise_chain_becomes_one_region_with_the_same_bits() {
    // y = -sigmoid(max(z / (1 - (x + z) * 0.5), x)): every step kind, the
    // chain value on both sides of non-commutative ops.
    let nodes = vec![
        node("Add", "a", &["x", "z"], &["a"], vec![]),
        node("Mul", "b", &["a", "half"], &["b"], vec![]),
        node("Sub", "c", &["one", "b"], &["c"], vec![]),
        node("Div", "d", &["z", "c"], &["d"], vec![]),
        node("Max", "e", &["d", "x"], &["e"], vec![]),
        node("Sigmoid", "f", &["e"], &["f"], vec![]),
        node("Neg", "g", &["f"], &["y"], vec![]),
    ];
    let m = model(
        nodes,
        vec![scalar("half", 0.5), scalar("one", 1.0)],
        vec![vi("x", &[3, 7]), vi("z", &[3, 7])],
        vec![vi("y", &[3, 7])],
        17,
    );
    let (fused, unfused) = import_fused_and_unfused(&m);
    assert!(
        fused.sched_text.contains(
            "ElementwiseRegion { inputs: [x, z], dst: y, len: 21, steps: [add(in1), mul(0.5), rsub(1.0), rdiv(in1), max(in0), sigmoid, neg] }"
        ),
        "{}",
        fused.sched_text
    );
    assert_eq!(fused.report.thunks, 1);
    assert_eq!(unfused.report.thunks, 7);
    let (x, z) = (values(21, 921), values(21, 922));
    let [f, u] = run_both("region", &fused, &unfused, &[("x", &x), ("z", &z)], "y");
    // The region calls the same scalar `math` functions in the same order
    // as `BinaryFull` and the (exact) sigmoid/neg kernels: same bits.
    assert_same_bits(&f, &u, "y");
}

/// Nodes in [`a_long_chain_fuses_into_one_region`]: enough that a pass
/// quadratic in the graph's length would take minutes (each pass is linear
/// or `n log n`; `docs/onnx-fusion.md`).
const LONG_CHAIN: usize = 200_000;

#[test]
fn a_long_chain_fuses_into_one_region() {
    // y = relu((relu((x + 1) * 0.5) + 1) * 0.5 ...): Add, Mul and Relu in
    // turn, each reading the one before.
    let nodes: Vec<NodeProto> = (0..LONG_CHAIN)
        .map(|i| {
            let input = if i == 0 { "x".to_string() } else { format!("v{}", i - 1) };
            let output = if i + 1 == LONG_CHAIN { "y".to_string() } else { format!("v{i}") };
            let name = format!("n{i}");
            match i % 3 {
                0 => node("Add", &name, &[&input, "one"], &[&output], vec![]),
                1 => node("Mul", &name, &[&input, "half"], &[&output], vec![]),
                _ => node("Relu", &name, &[&input], &[&output], vec![]),
            }
        })
        .collect();
    let m = model(nodes, vec![scalar("one", 1.0), scalar("half", 0.5)], vec![vi("x", &[5])], vec![vi("y", &[5])], 17);
    let mut opts = rlx_onnx::ImportOptions::new(WEIGHTS);
    opts.prepack = false;
    let fused = import_model(&m, &opts).expect("import");
    assert_eq!(fused.report.thunks, 1, "one region");
    assert_eq!(count_kind(&fused.sched_text, "ElementwiseRegion"), 1);
    let x = [-3.0f32, -1.0, 0.0, 0.25, 7.0];
    let want: Vec<f32> = x
        .iter()
        .map(|&v| {
            (0..LONG_CHAIN).fold(v, |acc, i| match i % 3 {
                0 => acc + 1.0,
                1 => acc * 0.5,
                _ => acc.max(0.0),
            })
        })
        .collect();
    let got = run("long-chain", &fused, &[("x", &x)], &["y"]).remove(0);
    // Adding 1, halving and clamping at 0 are exact in f32 at these
    // magnitudes, in the region as here.
    assert_same_bits(&got, &want, "y");
}

#[test]
fn chains_end_at_shared_values_broadcasts_and_two_sided_reads() {
    // a = x + z (also an output) ; b = exp(a) ; c = b * row (a broadcast
    // row ends any chain) ; d = tanh(c) ; e = d - 2 ; y = e * e (reads the
    // value twice: not a step).
    let nodes = vec![
        node("Add", "a", &["x", "z"], &["a"], vec![]),
        node("Exp", "b", &["a"], &["b"], vec![]),
        node("Mul", "c", &["b", "row"], &["c"], vec![]),
        node("Tanh", "d", &["c"], &["d"], vec![]),
        node("Sub", "e", &["d", "two"], &["e"], vec![]),
        node("Mul", "f", &["e", "e"], &["y"], vec![]),
    ];
    let m = model(
        nodes,
        vec![init_raw("row", &[7], &values(7, 931)), scalar("two", 2.0)],
        vec![vi("x", &[3, 7]), vi("z", &[3, 7])],
        vec![vi("y", &[3, 7]), vi("a", &[3, 7])],
        17,
    );
    let (fused, unfused) = import_fused_and_unfused(&m);
    assert_eq!(count_kind(&fused.sched_text, "ElementwiseRegion"), 1, "{}", fused.sched_text);
    assert!(fused.sched_text.contains("steps: [tanh, sub(2.0)] }"), "{}", fused.sched_text);
    // add, exp, mul(row), the region, e * e.
    assert_eq!(fused.report.thunks, 5, "{}", fused.sched_text);
    let (x, z) = (values(21, 932), values(21, 933));
    let f = run("chain-ends-fused", &fused, &[("x", &x), ("z", &z)], &["y", "a"]);
    let u = run("chain-ends-unfused", &unfused, &[("x", &x), ("z", &z)], &["y", "a"]);
    // Same scalar functions in the same order: same bits.
    assert_same_bits(&f[0], &u[0], "y");
    assert_same_bits(&f[1], &u[1], "a");
}

#[test]
fn chains_meeting_at_one_binary_do_not_both_take_it() {
    // y = exp(x) * 2 + (-z) * 3: the chains from `exp` and from `neg` both
    // reach the add; the first takes it, the second ends before it.
    let nodes = vec![
        node("Exp", "a0", &["x"], &["a0"], vec![]),
        node("Mul", "a1", &["a0", "two"], &["a1"], vec![]),
        node("Neg", "b0", &["z"], &["b0"], vec![]),
        node("Mul", "b1", &["b0", "three"], &["b1"], vec![]),
        node("Add", "sum", &["a1", "b1"], &["y"], vec![]),
    ];
    let m = model(
        nodes,
        vec![scalar("two", 2.0), scalar("three", 3.0)],
        vec![vi("x", &[2, 5]), vi("z", &[2, 5])],
        vec![vi("y", &[2, 5])],
        17,
    );
    let (fused, unfused) = import_fused_and_unfused(&m);
    let text = &fused.sched_text;
    assert!(text.contains("ElementwiseRegion { inputs: [z], dst: y, len: 10, steps: [neg, mul(3.0)] }"), "{text}");
    assert!(
        text.contains("ElementwiseRegion { inputs: [x, y], dst: y, len: 10, steps: [exp, mul(2.0), add(in1)] }"),
        "{text}"
    );
    assert_eq!(fused.report.thunks, 2, "{text}");
    let (x, z) = (values(10, 981), values(10, 982));
    let [f, u] = run_both("chains-meet", &fused, &unfused, &[("x", &x), ("z", &z)], "y");
    assert_same_bits(&f, &u, "y");
}

#[test]
fn max_with_the_chain_value_on_the_right_ends_the_chain() {
    // y = 1 / (max(x, -tanh(z)) * 3): continuing the chain through
    // `max(x, acc)` would need `max(acc, x)`, which returns the other zero
    // of a +0/-0 tie; so the chain ends before the max, and a new one
    // starts there with x as its first input, in the graph's order.
    let nodes = vec![
        node("Tanh", "t", &["z"], &["t"], vec![]),
        node("Neg", "n", &["t"], &["n"], vec![]),
        node("Max", "m", &["x", "n"], &["m"], vec![]),
        node("Mul", "s", &["m", "three"], &["s"], vec![]),
        node("Div", "r", &["one", "s"], &["y"], vec![]),
    ];
    let m = model(
        nodes,
        vec![scalar("three", 3.0), scalar("one", 1.0)],
        vec![vi("x", &[2, 5]), vi("z", &[2, 5])],
        vec![vi("y", &[2, 5])],
        17,
    );
    let (fused, unfused) = import_fused_and_unfused(&m);
    let text = &fused.sched_text;
    assert!(text.contains("ElementwiseRegion { inputs: [z], dst: y, len: 10, steps: [tanh, neg] }"), "{text}");
    assert!(
        text.contains("ElementwiseRegion { inputs: [x, y], dst: y, len: 10, steps: [max(in1), mul(3.0), rdiv(1.0)] }"),
        "{text}"
    );
    // Ties of signed zeros both ways (a wrong zero becomes a wrong
    // infinity through the division).
    let x = [-0.0, 0.0, 1.0, -1.0, 0.5, -0.0, 0.0, 2.0, -2.0, 0.25];
    let z = [-0.0, 0.0, 0.0, -0.0, -0.5, 0.0, -0.0, 1.0, 3.0, -0.25];
    let [f, u] = run_both("max-right", &fused, &unfused, &[("x", &x), ("z", &z)], "y");
    assert_same_bits(&f, &u, "y");
}

#[test]
fn chains_leave_bias_activation_and_residual_to_the_fused_kernels() {
    // h = relu(x @ w + b) ; s = h * 2 + r ; y = LayerNorm(s): the bias and
    // relu go into the product, the add into FusedResidualLN; the lone
    // `* 2` left is no chain.
    let (w, b, g, beta) = (values(40, 941), values(8, 942), values(8, 943), values(8, 944));
    let nodes = vec![
        node("MatMul", "mm", &["x", "w"], &["h0"], vec![]),
        node("Add", "bias", &["h0", "b"], &["h1"], vec![]),
        node("Relu", "relu", &["h1"], &["h"], vec![]),
        node("Mul", "twice", &["h", "two"], &["t"], vec![]),
        node("Add", "res", &["t", "r"], &["s"], vec![]),
        node("LayerNormalization", "ln", &["s", "g", "beta"], &["y"], vec![]),
    ];
    let inits = vec![
        init_raw("w", &[5, 8], &w),
        init_raw("b", &[8], &b),
        init_raw("g", &[8], &g),
        init_raw("beta", &[8], &beta),
        scalar("two", 2.0),
    ];
    let m = model(nodes, inits, vec![vi("x", &[3, 5]), vi("r", &[3, 8])], vec![vi("y", &[3, 8])], 17);
    let (fused, unfused) = import_fused_and_unfused(&m);
    let text = &fused.sched_text;
    assert!(text.contains("act: relu }"), "{text}");
    assert_eq!(count_kind(text, "FusedMmBiasAct"), 1, "{text}");
    assert_eq!(count_kind(text, "FusedResidualLN"), 1, "{text}");
    assert_eq!(count_kind(text, "ElementwiseRegion"), 0, "{text}");
    assert_eq!(fused.report.thunks, 3, "{text}");
    let (x, r) = (values(15, 945), values(24, 946));
    let [f, u] = run_both("chain-order", &fused, &unfused, &[("x", &x), ("r", &r)], "y");
    // The fused kernels round as the separate ones up to the order of a
    // sum of 8 terms (LayerNorm statistics): values are O(1) after the
    // normalisation, the difference a few ulp; 1e-5 is ~80 ulp of 1.
    assert_close(&f, &u, 1e-5, "y");
}

#[test]
fn a_region_writes_over_an_input_read_for_the_last_time() {
    // h = x @ w (scratch) ; y = exp(h) * 0.5: the region reads h and can
    // write there; h then takes the output's name.
    let w = values(20, 951);
    let nodes = vec![
        node("MatMul", "mm", &["x", "w"], &["h"], vec![]),
        node("Exp", "exp", &["h"], &["e"], vec![]),
        node("Mul", "half", &["e", "half"], &["y"], vec![]),
    ];
    let m = model(
        nodes,
        vec![init_raw("w", &[4, 5], &w), scalar("half", 0.5)],
        vec![vi("x", &[2, 4])],
        vec![vi("y", &[2, 5])],
        17,
    );
    let (fused, unfused) = import_fused_and_unfused(&m);
    assert!(
        fused.sched_text.contains("ElementwiseRegion { inputs: [y], dst: y, len: 10, steps: [exp, mul(0.5)] }"),
        "{}",
        fused.sched_text
    );
    assert_eq!(fused.report.buffers, 3, "x, y and w:\n{}", fused.sched_text);
    let x = values(8, 952);
    let [f, u] = run_both("region-in-place", &fused, &unfused, &[("x", &x)], "y");
    assert_same_bits(&f, &u, "y");
}

// ------------------------------------------------------------- attention

/// How the scores are scaled.
#[derive(Clone, Copy, Debug, PartialEq)]
enum Scale {
    /// `Mul(S, 1/sqrt(d))` (BERT as exported by torch).
    Mul,
    /// `Div(S, sqrt(d))`.
    Div,
    /// `Mul(Q, d^-1/4)` and `Mul(K, d^-1/4)` (torch's SDPA export).
    PreScaled,
}

/// The mask added to the scores.
#[derive(Clone, Copy, Debug, PartialEq)]
enum Mask {
    None,
    /// Input `m` `[B, 1, 1, S]` of 1/0, made `(1 - m) * f32::MIN` in the
    /// graph (BERT's extended attention mask).
    KeyPadding,
    /// Input `bias` `[1, 1, S, S]` added as is.
    PerQuery,
}

/// A deviation from the pattern.
#[derive(Clone, Copy, Debug, PartialEq)]
enum Deviation {
    None,
    /// The probabilities are a graph output too.
    ProbsOutput,
    /// Heads split as `[B, S, D, H]` (head index fastest), transposed to
    /// the same shapes with other permutations: a different attention.
    OtherSplit,
    /// The mask is added before the scale.
    MaskBeforeScale,
    /// `Softmax` with `axis = 2`: before opset 13 over the flattened
    /// `[S, KV]`, from 13 on over the query axis.
    SoftmaxAxis2,
}

#[derive(Clone, Copy, Debug)]
struct Attn {
    batch: usize,
    seq: usize,
    heads: usize,
    head_dim: usize,
    layers: usize,
    scale: Scale,
    mask: Mask,
    deviation: Deviation,
    opset: i64,
    /// torch's SDPA NaN guard after the softmax: `Where(IsNaN(p), 0, p)`.
    nan_guard: bool,
}

impl Attn {
    fn bert(batch: usize, seq: usize, heads: usize, head_dim: usize) -> Self {
        Attn {
            batch,
            seq,
            heads,
            head_dim,
            layers: 1,
            scale: Scale::Mul,
            mask: Mask::KeyPadding,
            deviation: Deviation::None,
            opset: 17,
            nan_guard: false,
        }
    }

    fn hidden(&self) -> usize {
        self.heads * self.head_dim
    }
}

/// BERT-style self-attention layers as torch's TorchScript exporter
/// writes them: projections with the bias first, `Reshape` +
/// `Transpose` into heads, scores, scale, mask, softmax, context, merge
/// of the heads and an output projection feeding the next layer.
fn attention_model(a: Attn) -> ModelProto {
    let (b, s, h, d) = (a.batch as i64, a.seq as i64, a.heads as i64, a.head_dim as i64);
    let hidden = a.hidden();
    let mut nodes = Vec::new();
    let mut inits = vec![
        init_i64("heads_shape", &[4], &[b, s, -1, d]),
        init_i64("merged_shape", &[3], &[b, s, h * d]),
        init_i64("other_shape", &[4], &[b, s, d, -1]),
        scalar("one", 1.0),
        scalar("neg_max", f32::MIN),
        scalar("zero", 0.0),
    ];
    let mut inputs = vec![vi("x", &[b, s, h * d])];
    let mask = match a.mask {
        Mask::None => None,
        Mask::KeyPadding => {
            inputs.push(vi("m", &[b, 1, 1, s]));
            nodes.push(node("Sub", "mask_inv", &["one", "m"], &["m_inv"], vec![]));
            nodes.push(node("Mul", "mask_bias", &["m_inv", "neg_max"], &["mask"], vec![]));
            Some("mask")
        }
        Mask::PerQuery => {
            inputs.push(vi("bias", &[1, 1, s, s]));
            Some("bias")
        }
    };
    let scale = 1.0 / (a.head_dim as f32).sqrt();
    inits.push(scalar("scale", scale));
    inits.push(scalar("sqrt_d", (a.head_dim as f32).sqrt()));
    inits.push(scalar("sqrt_scale", scale.sqrt()));
    let other = a.deviation == Deviation::OtherSplit;
    let mut x = "x".to_string();
    for l in 0..a.layers {
        let n = |name: &str| format!("l{l}_{name}");
        let mut add = |op: &str, name: &str, ins: &[&str], attrs: Vec<AttributeProto>| {
            nodes.push(node(op, &n(name), ins, &[&n(name)], attrs))
        };
        for (p, seed) in [("q", 0), ("k", 1), ("v", 2), ("o", 3)] {
            let seed = 1000 + 10 * l as u64 + seed;
            inits.push(init_raw(&n(&format!("w{p}")), &[hidden as i64, hidden as i64], &values(hidden * hidden, seed)));
            inits.push(init_raw(&n(&format!("b{p}")), &[hidden as i64], &values(hidden, seed + 500)));
        }
        for p in ["q", "k", "v"] {
            add("MatMul", &format!("{p}0"), &[&x, &n(&format!("w{p}"))], vec![]);
            add("Add", &format!("{p}1"), &[&n(&format!("b{p}")), &n(&format!("{p}0"))], vec![]);
            let shape = if other { "other_shape" } else { "heads_shape" };
            add("Reshape", &format!("{p}2"), &[&n(&format!("{p}1")), shape], vec![]);
        }
        let perm = |p: &[i64]| vec![attr_ints("perm", p)];
        let (q_perm, k_perm): (&[i64], &[i64]) =
            if other { (&[0, 3, 1, 2], &[0, 3, 2, 1]) } else { (&[0, 2, 1, 3], &[0, 2, 3, 1]) };
        add("Transpose", "qt", &[&n("q2")], perm(q_perm));
        add("Transpose", "kt", &[&n("k2")], perm(k_perm));
        add("Transpose", "vt", &[&n("v2")], perm(q_perm));
        let (mut q, mut k) = (n("qt"), n("kt"));
        if a.scale == Scale::PreScaled {
            add("Mul", "qs", &[&q, "sqrt_scale"], vec![]);
            add("Mul", "ks", &[&k, "sqrt_scale"], vec![]);
            (q, k) = (n("qs"), n("ks"));
        }
        add("MatMul", "scores", &[&q, &k], vec![]);
        let mut sc = n("scores");
        let scale_op = match a.scale {
            Scale::Mul => Some(("Mul", "scale")),
            Scale::Div => Some(("Div", "sqrt_d")),
            Scale::PreScaled => None,
        };
        let order = if a.deviation == Deviation::MaskBeforeScale { ["mask", "scale"] } else { ["scale", "mask"] };
        for step in order {
            match (step, scale_op, mask) {
                ("scale", Some((op, c)), _) => {
                    add(op, "scaled", &[&sc, c], vec![]);
                    sc = n("scaled");
                }
                ("mask", _, Some(mask)) => {
                    add("Add", "masked", &[&sc, mask], vec![]);
                    sc = n("masked");
                }
                _ => {}
            }
        }
        let axis = if a.deviation == Deviation::SoftmaxAxis2 { 2 } else { -1 };
        add("Softmax", "probs", &[&sc], vec![attr_i("axis", axis)]);
        let mut probs = n("probs");
        if a.nan_guard {
            add("IsNaN", "is_nan", &[&probs], vec![]);
            add("Where", "guarded", &[&n("is_nan"), "zero", &probs], vec![]);
            probs = n("guarded");
        }
        add("MatMul", "ctx", &[&probs, &n("vt")], vec![]);
        add("Transpose", "ctx_t", &[&n("ctx")], perm(if other { &[0, 2, 3, 1] } else { &[0, 2, 1, 3] }));
        add("Reshape", "merged", &[&n("ctx_t"), "merged_shape"], vec![]);
        add("MatMul", "o0", &[&n("merged"), &n("wo")], vec![]);
        add("Add", "o1", &[&n("o0"), &n("bo")], vec![]);
        x = n("o1");
    }
    let last = a.layers - 1;
    nodes.push(node("Identity", "out", &[&x], &["y"], vec![]));
    let mut outputs = vec![vi("y", &[b, s, h * d])];
    if a.deviation == Deviation::ProbsOutput {
        nodes.push(node("Identity", "probs_out", &[&format!("l{last}_probs")], &["p"], vec![]));
        outputs.push(vi("p", &[b, h, s, s]));
    }
    model(nodes, inits, inputs, outputs, a.opset)
}

/// Inputs for `a`: `x`, and the mask input when there is one. The
/// key-padding mask hides the last `seq / 3` keys of batch 0 and every
/// key of batch 1 (a row seeing no key); the per-query mask hides a
/// band with `-inf`, and every key of query 2.
fn attention_inputs(a: &Attn) -> Vec<(&'static str, Vec<f32>)> {
    let (b, s) = (a.batch, a.seq);
    let mut inputs = vec![("x", values(b * s * a.hidden(), 961))];
    match a.mask {
        Mask::None => {}
        Mask::KeyPadding => {
            let m = (0..b * s).map(|i| if i / s == 0 && i % s < s - s / 3 { 1.0 } else { 0.0 }).collect();
            inputs.push(("m", m));
        }
        Mask::PerQuery => {
            let bias = (0..s * s)
                .map(|i| {
                    let (q, k) = (i / s, i % s);
                    if q == 2 || (k + 3 < q) {
                        f32::NEG_INFINITY
                    } else {
                        0.0
                    }
                })
                .collect();
            inputs.push(("bias", bias));
        }
    }
    inputs
}

/// Scores are sums of `head_dim` products of values O(1); the fused kernel
/// scales inside its product (or once by `c_q * c_k`) where the graph
/// scales before or after it, so a score may differ by a few ulp of values
/// below ~20 (~5e-6 absolute). The softmax turns an absolute score error
/// `e` into a relative probability error of about `e`, and the context and
/// the output projection sum those times values below ~5: measured
/// differences are at most 1.1e-6 (exactly 0 when the scale is a power of
/// two). 1e-5 leaves a margin while a wrong scale, head order or mask is
/// off by > 1e-2.
const ATTN_TOL: f32 = 1e-5;

/// Imports `a` both ways, checks the fused schedule has `attentions`
/// `Attention` thunks and runs both.
fn check_attention(test: &str, a: Attn, attentions: usize) -> Imported {
    let m = attention_model(a);
    let (fused, unfused) = import_fused_and_unfused(&m);
    assert_eq!(count_kind(&fused.sched_text, "Attention"), attentions, "{a:?}:\n{}", fused.sched_text);
    assert_eq!(count_kind(&unfused.sched_text, "Attention"), 0);
    let inputs = attention_inputs(&a);
    let refs: Vec<(&str, &[f32])> = inputs.iter().map(|(n, v)| (*n, v.as_slice())).collect();
    let mut outs = vec!["y"];
    if a.deviation == Deviation::ProbsOutput {
        outs.push("p");
    }
    let f = run(&format!("{test}-fused"), &fused, &refs, &outs);
    let u = run(&format!("{test}-unfused"), &unfused, &refs, &outs);
    for (i, name) in outs.iter().enumerate() {
        let diff = max_abs_diff(&f[i], &u[i]);
        eprintln!("{test}: output {name}: fused vs unfused max abs difference {diff:e}");
        assert!(diff <= ATTN_TOL, "{a:?}: output {name} differs by {diff}");
        assert!(f[i].iter().all(|v| v.is_finite()), "{a:?}: output {name} is not finite");
    }
    fused
}

#[test]
fn bert_attention_becomes_one_thunk_per_layer_with_one_shared_mask() {
    let a = Attn { layers: 2, ..Attn::bert(1, 13, 3, 4) };
    let fused = check_attention("bert", a, 2);
    let text = &fused.sched_text;
    for kind in ["Softmax", "BatchedSgemm"] {
        assert_eq!(count_kind(text, kind), 0, "{kind}:\n{text}");
    }
    // The [1, 1, 1, 13] mask broadcast once to [1, 3, 13, 13] and shared.
    assert_eq!(count_kind(text, "Transpose"), 1, "{text}");
    assert!(
        text.contains("Transpose { src: mask, dst: mask_heads, in_total: 13, out_dims: [39, 13], in_strides: [0, 1]"),
        "{text}"
    );
    assert!(
        text.contains(
            "mask: mask_heads, out: l0_ctx_t, batch: 1, seq: 13, kv_seq: 13, heads: 3, head_dim: 4, v_head_dim: 4, mask_kind: bias, scale: 0.5, softcap: 0.0, q_row_stride: 12, k_row_stride: 12, v_row_stride: 12, bhsd: false, kv_heads: 3 }"
        ),
        "{text}"
    );
    // q, k and v are read where the projections wrote them.
    assert!(text.contains("Attention { q: l0_q0, k: l0_k0, v: l0_v0,"), "{text}");
}

#[test]
fn attention_variants_fuse() {
    // Div scale, no mask, 2 heads of 5, seq 9.
    let a = Attn { scale: Scale::Div, mask: Mask::None, ..Attn::bert(1, 9, 2, 5) };
    let text = check_attention("attn-div", a, 1).sched_text;
    assert!(text.contains("mask: none,") && text.contains("mask_kind: none"), "{text}");
    assert_eq!(count_kind(&text, "Transpose"), 0, "{text}");
    // SDPA export: Q and K each scaled by d^-1/4, a per-query mask with
    // -inf (a query seeing no key) broadcast over 4 heads.
    let a = Attn { scale: Scale::PreScaled, mask: Mask::PerQuery, ..Attn::bert(1, 11, 4, 3) };
    let text = check_attention("attn-sdpa", a, 1).sched_text;
    assert!(text.contains("Transpose { src: bias, dst: bias_heads, in_total: 121, out_dims: [4, 121]"), "{text}");
    // The same with the NaN guard torch's SDPA export puts after the
    // softmax: the kernel gives NaN probabilities no weight too.
    let a = Attn { scale: Scale::PreScaled, mask: Mask::PerQuery, nan_guard: true, ..Attn::bert(1, 11, 4, 3) };
    let text = check_attention("attn-sdpa-guard", a, 1).sched_text;
    assert!(count_kind(&text, "Where") == 0 && count_kind(&text, "Compare") == 0, "{text}");
    // Batch 2 with a [2, 1, 1, S] key-padding mask (a strided broadcast)
    // and a batch whose keys are all hidden.
    let a = Attn { layers: 2, ..Attn::bert(2, 7, 2, 3) };
    let text = check_attention("attn-batch2", a, 2).sched_text;
    assert!(text.contains("out_dims: [2, 2, 7, 7], in_strides: [7, 0, 0, 1]"), "{text}");
    assert_eq!(count_kind(&text, "Transpose"), 1, "{text}");
}

#[test]
fn attention_deviations_stay_unfused() {
    for deviation in [Deviation::ProbsOutput, Deviation::OtherSplit, Deviation::SoftmaxAxis2] {
        let a = Attn { deviation, ..Attn::bert(1, 7, 2, 3) };
        check_attention(&format!("attn-{deviation:?}"), a, 0);
    }
    // At opset 11 the last-axis softmax fuses; over axis 2 (the flattened
    // scores of a head) it is another function and does not.
    let a = Attn { opset: 11, ..Attn::bert(1, 7, 2, 3) };
    check_attention("attn-opset11", a, 1);
    let a = Attn { opset: 11, deviation: Deviation::SoftmaxAxis2, ..Attn::bert(1, 7, 2, 3) };
    check_attention("attn-opset11-axis2", a, 0);
}

#[test]
fn attention_scaled_after_its_mask_fuses() {
    // `(qk + mask) * c` is `qk * c + mask * c`: the bias is built by the
    // mask's broadcast and the graph's own scale. Every mask kind, rows
    // hiding every key included.
    for mask in [Mask::None, Mask::KeyPadding, Mask::PerQuery] {
        let a = Attn { deviation: Deviation::MaskBeforeScale, mask, ..Attn::bert(2, 7, 2, 3) };
        check_attention(&format!("attn-mask-then-scale-{mask:?}"), a, 1);
    }
}

#[test]
fn attention_block_fixture_fuses_its_gelu_not_its_attention() {
    // K is a transpose of Q and V is Q itself: the head tensor has three
    // readers, which the attention pattern does not allow.
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/attention_block.onnx");
    let bytes = std::fs::read(&path).expect("fixture");
    let m = <ModelProto as prost::Message>::decode(bytes.as_slice()).expect("decode");
    let (fused, unfused) = import_fused_and_unfused(&m);
    assert_eq!(count_kind(&fused.sched_text, "Attention"), 0, "{}", fused.sched_text);
    assert!(fused.sched_text.contains("act: gelu }"), "{}", fused.sched_text);
    let x = values(32, 971);
    let [f, u] = run_both("fixture", &fused, &unfused, &[("x", &x)], "y");
    // Only the GELU differs (values O(1)): see GELU_TOL.
    assert_close(&f, &u, GELU_TOL, "y");
}

// ------------------------------------------------------------ MiniLM

/// The data of a little-endian `.npy` array of `descr` (`<i8`, `<f4`).
fn npy_data(path: &std::path::Path, descr: &str) -> Vec<u8> {
    let bytes = std::fs::read(path).expect("read npy");
    assert_eq!(&bytes[..6], b"\x93NUMPY", "{} is not an npy file", path.display());
    let (header_len, start) = match bytes[6] {
        1 => (u16::from_le_bytes([bytes[8], bytes[9]]) as usize, 10),
        _ => (u32::from_le_bytes(bytes[8..12].try_into().unwrap()) as usize, 12),
    };
    let header = std::str::from_utf8(&bytes[start..start + header_len]).expect("npy header");
    assert!(header.contains(&format!("'descr': '{descr}'")), "{}: {header}", path.display());
    assert!(header.contains("'fortran_order': False"), "{}: {header}", path.display());
    bytes[start + header_len..].to_vec()
}

#[test]
fn minilm_fused_matches_unfused() {
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../.cache/onnx-models/minilm");
    let onnx = dir.join("minilm.onnx");
    if !onnx.exists() {
        eprintln!("skipped: {} is missing (see README: the MiniLM export)", onnx.display());
        return;
    }
    let opts = rlx_onnx::ImportOptions::new(WEIGHTS);
    let fused = match rlx_onnx::import(&onnx, &opts) {
        Ok(i) => i,
        Err(e) => {
            eprintln!("skipped: minilm does not import with this build: {e}");
            return;
        }
    };
    let mut opts = opts.clone();
    opts.optimize = false;
    let unfused = rlx_onnx::import(&onnx, &opts).expect("imports unfused when it imports fused");
    eprintln!("minilm: fused {} thunks, unfused {} thunks", fused.report.thunks, unfused.report.thunks);
    for (what, imported) in [("fused", &fused), ("unfused", &unfused)] {
        eprintln!("minilm {what}: {}", imported.report);
        eprintln!("minilm {what} thunks by kind: {:?}", kinds(&imported.sched_text));
    }
    assert_eq!(count_kind(&fused.sched_text, "Attention"), 6, "one per layer");
    assert_eq!(count_kind(&fused.sched_text, "Softmax"), 0);
    assert_eq!(fused.sched_text.matches("act: gelu }").count(), 6, "one GELU per layer, in its product");
    let inputs: Vec<(&str, Vec<u8>)> = ["input_ids", "attention_mask", "token_type_ids"]
        .into_iter()
        .map(|n| (n, npy_data(&dir.join(format!("{n}.npy")), "<i8")))
        .collect();
    let to_f32 = |b: &[u8]| b.chunks_exact(4).map(|c| f32::from_le_bytes(c.try_into().unwrap())).collect::<Vec<_>>();
    let f = to_f32(&run_raw("minilm-fused", &fused, &inputs, &["embedding"])[0]);
    let u = to_f32(&run_raw("minilm-unfused", &unfused, &inputs, &["embedding"])[0]);
    let diff = max_abs_diff(&f, &u);
    eprintln!("minilm: fused vs unfused max abs difference {diff:e}");
    // Unit-norm embeddings of 384 values after six layers whose GELU and
    // attention round differently (see GELU_TOL, ATTN_TOL): MiniLM's
    // end-to-end tolerance against onnxruntime (`onnx-e2e`) is 1e-4; fused
    // and unfused must agree well inside it.
    assert!(diff <= 1e-5, "fused and unfused embeddings differ by {diff}");
    let expected = npy_data(&dir.join("expected.npy"), "<f4");
    eprintln!("minilm: fused vs expected.npy max abs difference {:e}", max_abs_diff(&f, &to_f32(&expected)));
    for (what, imported) in [("fused", &fused), ("unfused", &unfused)] {
        let ms = best_run_ms(&format!("minilm-time-{what}"), imported, &inputs);
        eprintln!("minilm: {what}: interpreter run {ms:.1} ms (best of 3, this build's profile)");
    }
}

/// How many thunks of each kind a schedule has.
fn kinds(sched_text: &str) -> std::collections::BTreeMap<&str, usize> {
    let mut counts = std::collections::BTreeMap::new();
    for line in sched_text.lines().filter(|l| l.ends_with('}') && l.starts_with(|c: char| c.is_ascii_uppercase())) {
        *counts.entry(line.split(' ').next().unwrap_or_default()).or_default() += 1;
    }
    counts
}

/// The fastest of three interpreter runs of `imported`, in milliseconds.
fn best_run_ms(test: &str, imported: &Imported, inputs: &[(&str, Vec<u8>)]) -> f64 {
    let dir = temp_dir(test);
    std::fs::write(dir.join(WEIGHTS), &imported.weights).expect("write weights");
    let checked = rlx_sched::check_source(&imported.sched_text, &dir).expect("validates");
    let data_offset = checked.schedule.weights().as_ref().expect("weights line").data_offset;
    let mut interp =
        rlx_interp::Interpreter::new(checked.schedule, &imported.weights[data_offset..]).expect("interpreter");
    for (name, bytes) in inputs {
        interp.set_bytes(name, bytes).expect("set input");
    }
    let best = (0..3)
        .map(|_| {
            let start = std::time::Instant::now();
            interp.run();
            start.elapsed().as_secs_f64() * 1e3
        })
        .fold(f64::INFINITY, f64::min);
    let _ = std::fs::remove_dir_all(&dir);
    best
}

/// torch's `nn.MultiheadAttention` as the TorchScript exporter writes it
/// (torchvision's ViT): seq-first `[seq, 1, embed]`, one stacked in-projection
/// `[embed, 3 * embed]` + bias, unflattened to `[seq, 1, 3, embed]` and moved
/// to `[3, seq, 1, 1, embed]`, q/k/v picked by `Gather`, each to `[heads,
/// seq, dim]` (`[heads, dim, seq]` for k), both scaled by `dim^-1/4`, then
/// the products, the softmax, and the heads merged back to `[seq, 1,
/// embed]`. Seq 7, 3 heads of 4.
fn multihead_attention_model() -> ModelProto {
    let (s, h, d) = (7i64, 3i64, 4i64);
    let e = h * d;
    let c = (d as f32).powf(-0.25);
    let n = |op: &str, ins: &[&str], out: &str| node(op, out, ins, &[out], vec![]);
    let t = |ins: &str, out: &str, perm: &[i64]| node("Transpose", out, &[ins], &[out], vec![attr_ints("perm", perm)]);
    let mut nodes = vec![
        n("MatMul", &["x", "w_in"], "proj0"),
        n("Add", &["proj0", "b_in"], "proj"),
        n("Reshape", &["proj", "unflat"], "u4"),
        n("Unsqueeze", &["u4", "ax0"], "u5"),
        t("u5", "stacked", &[3, 1, 2, 0, 4]),
        n("Squeeze", &["stacked", "ax3"], "qkv"),
    ];
    for (i, part) in ["q", "k", "v"].iter().enumerate() {
        nodes.push(n("Gather", &["qkv", &format!("i{i}")], &format!("{part}0")));
        nodes.push(n("Reshape", &[&format!("{part}0"), "heads"], &format!("{part}1")));
    }
    nodes.extend([
        t("q1", "qh", &[1, 0, 2]),
        t("k1", "kh", &[1, 2, 0]),
        t("v1", "vh", &[1, 0, 2]),
        n("Mul", &["qh", "c"], "qs"),
        n("Mul", &["kh", "c"], "ks"),
        n("MatMul", &["qs", "ks"], "scores"),
        node("Softmax", "softmax", &["scores"], &["p"], vec![attr_i("axis", -1)]),
        n("MatMul", &["p", "vh"], "ctx"),
        t("ctx", "merged", &[1, 0, 2]),
        n("Reshape", &["merged", "back"], "y"),
    ]);
    let inits = vec![
        init_raw("w_in", &[e, 3 * e], &values((3 * e * e) as usize, 951)),
        init_raw("b_in", &[3 * e], &values((3 * e) as usize, 952)),
        init_i64("unflat", &[4], &[s, 1, 3, e]),
        init_i64("ax0", &[1], &[0]),
        init_i64("ax3", &[1], &[3]),
        init_i64("i0", &[], &[0]),
        init_i64("i1", &[], &[1]),
        init_i64("i2", &[], &[2]),
        init_i64("heads", &[3], &[s, h, d]),
        scalar("c", c),
        init_i64("back", &[3], &[s, 1, e]),
    ];
    model(nodes, inits, vec![vi("x", &[s, 1, e])], vec![vi("y", &[s, 1, e])], 17)
}

#[test]
fn torch_multihead_attention_reads_its_stacked_projection_in_place() {
    let m = multihead_attention_model();
    let (fused, unfused) = import_fused_and_unfused(&m);
    let text = &fused.sched_text;
    assert_eq!(count_kind(text, "Attention"), 1, "{text}");
    // q, k and v are rows of the projection, 3 * 12 floats apart.
    assert!(text.contains("q_row_stride: 36, k_row_stride: 36, v_row_stride: 36"), "{text}");
    assert_eq!(count_kind(text, "Transpose"), 0, "{text}");
    let x = values(7 * 12, 953);
    let [f, u] = run_both("mha", &fused, &unfused, &[("x", &x)], "y");
    let diff = max_abs_diff(&f, &u);
    assert!(diff <= ATTN_TOL, "fused vs unfused differ by {diff}");
}
