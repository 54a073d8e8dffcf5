//! `Scan`, `If` and `Loop`, unrolled at import time: graphs imported,
//! validated, run in the interpreter and compared exactly with references
//! computed here (sums and products of small integers in f32), and the
//! refusals (run-time trip counts and conditions, branches of different
//! shapes, oversized unrolls), and nested control flow.

use crate::common::typed::*;
use crate::common::*;
use rlx_onnx::proto::*;

fn graph_attr(name: &str, g: GraphProto) -> AttributeProto {
    AttributeProto { name: name.to_string(), r#type: AttributeType::Graph as i32, g: Some(g), ..Default::default() }
}

/// A body graph: its nodes, input names and output names (types and
/// shapes are inferred from what is bound to them).
fn body(nodes: Vec<NodeProto>, inputs: &[&str], outputs: &[&str], inits: Vec<TensorProto>) -> GraphProto {
    let infos =
        |names: &[&str]| names.iter().map(|n| ValueInfoProto { name: n.to_string(), ..Default::default() }).collect();
    GraphProto {
        node: nodes,
        name: "body".to_string(),
        initializer: inits,
        input: infos(inputs),
        output: infos(outputs),
        ..Default::default()
    }
}

fn import_err(nodes: Vec<NodeProto>, inputs: Vec<In>, outputs: &[&str], opset: i64) -> String {
    let mut infos = Vec::new();
    let mut inits = Vec::new();
    for i in &inputs {
        match i {
            In::Data(n, t) => infos.push(t.info(n)),
            In::Init(n, t) => inits.push(t.proto(n)),
        }
    }
    let outs = outputs.iter().map(|n| ValueInfoProto { name: n.to_string(), ..Default::default() }).collect();
    let m = model(nodes, inits, infos, outs, opset);
    match import_model(&m, &rlx_onnx::ImportOptions::new("w.safetensors")) {
        Ok(_) => panic!("the import was expected to fail"),
        Err(e) => e.to_string(),
    }
}

#[test]
fn scan_threads_states_slices_inputs_and_stacks_outputs_in_every_direction() {
    // Two scan inputs of 4 steps: `x` [4, 3] along axis 0 forward, `y` [3, 4]
    // along axis 1 in reverse. The state is a running sum of x + y + the
    // outer-scope `bias` (read by the body without being bound) + the
    // body's own initializer `one`; the scan output is state * 2, stacked
    // along axis 1 in reverse.
    let x: Vec<f32> = (0..12).map(|v| v as f32).collect();
    let y: Vec<f32> = (0..12).map(|v| (v * 3 % 7) as f32).collect();
    let bias = vec![10.0f32, 20.0, 30.0];
    let b = body(
        vec![
            node("Add", "a", &["s", "xt"], &["s1"], vec![]),
            node("Add", "b", &["s1", "yt"], &["s2"], vec![]),
            node("Add", "c", &["s2", "bias"], &["s3"], vec![]),
            node("Add", "d", &["s3", "one"], &["s_out"], vec![]),
            node("Mul", "e", &["s_out", "two"], &["scan_out"], vec![]),
        ],
        &["s", "xt", "yt"],
        &["s_out", "scan_out"],
        vec![init_typed("one", &[1], &[1.0]), init_typed("two", &[1], &[2.0])],
    );
    let scan = node(
        "Scan",
        "scan",
        &["s0", "x", "y"],
        &["final", "stacked"],
        vec![
            graph_attr("body", b),
            attr_i("num_scan_inputs", 2),
            attr_ints("scan_input_axes", &[0, -1]),
            attr_ints("scan_input_directions", &[0, 1]),
            attr_ints("scan_output_axes", &[1]),
            attr_ints("scan_output_directions", &[1]),
        ],
    );
    let got = run_graph(
        "scan-dirs",
        vec![scan],
        vec![
            In::Data("s0", f(&[3], vec![1.0, 2.0, 3.0])),
            In::Data("x", f(&[4, 3], x.clone())),
            In::Data("y", f(&[3, 4], y.clone())),
            In::Init("bias", f(&[3], bias.clone())),
        ],
        &["final", "stacked"],
    );
    let mut s = vec![1.0f32, 2.0, 3.0];
    let mut steps = Vec::new();
    for t in 0..4 {
        let yt = 3 - t;
        for j in 0..3 {
            s[j] = s[j] + x[t * 3 + j] + y[j * 4 + yt] + bias[j] + 1.0;
        }
        steps.push(s.iter().map(|v| v * 2.0).collect::<Vec<f32>>());
    }
    // Output [3, 4]: step t lands in column 3 - t (reverse, axis 1).
    let mut stacked = vec![0.0f32; 12];
    for (t, row) in steps.iter().enumerate() {
        for j in 0..3 {
            stacked[j * 4 + (3 - t)] = row[j];
        }
    }
    assert_eq!(got, vec![f(&[3], s), f(&[3, 4], stacked)]);
}

#[test]
fn opset_8_scan_runs_each_batch_element() {
    // [batch 2, steps 3, 2]: a running sum per batch element.
    let b = body(
        vec![node("Add", "a", &["s", "xt"], &["s_out"], vec![]), node("Identity", "i", &["s_out"], &["o"], vec![])],
        &["s", "xt"],
        &["s_out", "o"],
        vec![],
    );
    let scan = node(
        "Scan",
        "scan",
        &["", "s0", "x"],
        &["final", "all"],
        vec![graph_attr("body", b), attr_i("num_scan_inputs", 1)],
    );
    let x: Vec<f32> = (1..=12).map(|v| v as f32).collect();
    let got = run_graph_opset(
        "scan-8",
        vec![scan],
        vec![In::Data("s0", f(&[2, 2], vec![0.0, 100.0, 0.0, 200.0])), In::Data("x", f(&[2, 3, 2], x))],
        &["final", "all"],
        8,
    );
    let all = vec![1.0, 102.0, 4.0, 106.0, 9.0, 112.0, 7.0, 208.0, 16.0, 218.0, 27.0, 230.0];
    assert_eq!(got, vec![f(&[2, 2], vec![9.0, 112.0, 27.0, 230.0]), f(&[2, 3, 2], all)]);
}

fn branches() -> Vec<AttributeProto> {
    let then_branch = body(vec![node("Add", "t", &["a", "b"], &["r"], vec![])], &[], &["r"], vec![]);
    let else_branch = body(vec![node("Mul", "e", &["a", "b"], &["r"], vec![])], &[], &["r"], vec![]);
    vec![graph_attr("then_branch", then_branch), graph_attr("else_branch", else_branch)]
}

#[test]
fn if_on_a_run_time_condition_selects_between_both_branches() {
    let (a, b) = (vec![1.0f32, 2.0, 3.0], vec![4.0f32, 5.0, 6.0]);
    for cond in [true, false] {
        let got = run_graph(
            "if-data",
            vec![node("If", "if", &["c"], &["out"], branches())],
            vec![
                In::Data("c", bools(&[], vec![cond])),
                In::Data("a", f(&[3], a.clone())),
                In::Data("b", f(&[3], b.clone())),
            ],
            &["out"],
        );
        let want = if cond { vec![5.0, 7.0, 9.0] } else { vec![4.0, 10.0, 18.0] };
        assert_eq!(got, vec![f(&[3], want)], "cond {cond}");
    }
}

#[test]
fn if_on_a_constant_condition_inlines_only_its_branch() {
    // The branch not taken holds an op the importer does not know: it is
    // never lowered.
    let then_branch = body(vec![node("Neg", "t", &["a"], &["r"], vec![])], &[], &["r"], vec![]);
    let else_branch = body(vec![node("NoSuchOp", "e", &["a"], &["r"], vec![])], &[], &["r"], vec![]);
    let attrs = vec![graph_attr("then_branch", then_branch), graph_attr("else_branch", else_branch)];
    let got = run_graph(
        "if-const",
        vec![node("If", "if", &["c"], &["out"], attrs)],
        vec![In::Init("c", bools(&[1], vec![true])), In::Data("a", f(&[2], vec![1.5, -2.0]))],
        &["out"],
    );
    assert_eq!(got, vec![f(&[2], vec![-1.5, 2.0])]);
}

/// A loop body: `y_out = y_in + iteration` (carried), scan output `y_out`,
/// and the condition `iteration < stop` (a constant each iteration).
fn counting_body(stop: i64) -> GraphProto {
    body(
        vec![
            node("Cast", "c", &["i"], &["fi"], vec![attr_i("to", 1)]),
            node("Add", "a", &["y_in", "fi"], &["y_out"], vec![]),
            node("Identity", "s", &["y_out"], &["scan"], vec![]),
            node("Less", "l", &["i", "stop"], &["cond_out"], vec![]),
        ],
        &["i", "cond_in", "y_in"],
        &["cond_out", "y_out", "scan"],
        vec![init_i64("stop", &[], &[stop])],
    )
}

#[test]
fn loop_unrolls_a_constant_trip_count_and_stops_on_a_constant_condition() {
    for (stop, iterations) in [(10, 4), (1, 2)] {
        let got = run_graph(
            "loop",
            vec![node(
                "Loop",
                "loop",
                &["m", "c", "y"],
                &["y_final", "ys"],
                vec![graph_attr("body", counting_body(stop))],
            )],
            vec![
                In::Init("m", i64s(&[], vec![4])),
                In::Init("c", bools(&[], vec![true])),
                In::Data("y", f(&[2], vec![0.5, -1.0])),
            ],
            &["y_final", "ys"],
        );
        let mut y = vec![0.5f32, -1.0];
        let mut ys = Vec::new();
        for i in 0..iterations {
            y.iter_mut().for_each(|v| *v += i as f32);
            ys.extend(y.iter().copied());
        }
        assert_eq!(got, vec![f(&[2], y), f(&[iterations, 2], ys)], "stop {stop}");
    }
}

#[test]
fn control_flow_that_depends_on_run_time_values_is_refused_with_the_reason() {
    let looped = |m: In, c: In| {
        import_err(
            vec![node(
                "Loop",
                "loop",
                &["m", "c", "y"],
                &["y_final", "ys"],
                vec![graph_attr("body", counting_body(9))],
            )],
            vec![m, c, In::Data("y", f(&[2], vec![0.0, 0.0]))],
            &["y_final", "ys"],
            18,
        )
    };
    let e = looped(In::Data("m", i64s(&[], vec![3])), In::Init("c", bools(&[], vec![true])));
    assert!(e.contains("must be an integer constant known at import time"), "{e}");
    let e = looped(In::Init("m", i64s(&[], vec![3])), In::Data("c", bools(&[], vec![true])));
    assert!(e.contains("loop condition is computed at run time"), "{e}");

    // A body whose condition depends on the data.
    let data_cond = body(
        vec![
            node("Identity", "a", &["y_in"], &["y_out"], vec![]),
            node("ReduceSum", "r", &["y_in"], &["sum"], vec![attr_i("keepdims", 0)]),
            node("Less", "l", &["sum", "limit"], &["cond_out"], vec![]),
        ],
        &["i", "cond_in", "y_in"],
        &["cond_out", "y_out"],
        vec![init_typed("limit", &[], &[5.0])],
    );
    let e = import_err(
        vec![node("Loop", "loop", &["m", "", "y"], &["y_final"], vec![graph_attr("body", data_cond)])],
        vec![In::Init("m", i64s(&[], vec![3])), In::Data("y", f(&[2], vec![0.0, 0.0]))],
        &["y_final"],
        18,
    );
    assert!(e.contains("computes its condition at run time"), "{e}");

    // Branches of different shapes on a run-time condition.
    let then_branch = body(vec![node("Identity", "t", &["a"], &["r"], vec![])], &[], &["r"], vec![]);
    let else_branch = body(vec![node("Identity", "e", &["b"], &["r"], vec![])], &[], &["r"], vec![]);
    let e = import_err(
        vec![node(
            "If",
            "if",
            &["c"],
            &["out"],
            vec![graph_attr("then_branch", then_branch), graph_attr("else_branch", else_branch)],
        )],
        vec![
            In::Data("c", bools(&[], vec![true])),
            In::Data("a", f(&[2], vec![0.0; 2])),
            In::Data("b", f(&[3], vec![0.0; 3])),
        ],
        &["out"],
        18,
    );
    assert!(e.contains("the branches give f32 [2] and f32 [3]"), "{e}");
}

#[test]
fn nested_control_flow_reads_the_enclosing_body_and_oversized_unrolls_are_refused() {
    // A Scan body holding an If on a run-time flag; the branches read the
    // body's own values (`s`, `xt`), renamed per step.
    let then_branch = body(vec![node("Add", "t", &["s", "xt"], &["r"], vec![])], &[], &["r"], vec![]);
    let else_branch = body(vec![node("Sub", "e", &["s", "xt"], &["r"], vec![])], &[], &["r"], vec![]);
    let nested = body(
        vec![
            node(
                "If",
                "inner_if",
                &["flag"],
                &["s_out"],
                vec![graph_attr("then_branch", then_branch), graph_attr("else_branch", else_branch)],
            ),
            node("Identity", "o", &["s_out"], &["o"], vec![]),
        ],
        &["s", "xt"],
        &["s_out", "o"],
        vec![],
    );
    for flag in [true, false] {
        let got = run_graph(
            "nested",
            vec![node(
                "Scan",
                "scan",
                &["s0", "x"],
                &["f", "all"],
                vec![graph_attr("body", nested.clone()), attr_i("num_scan_inputs", 1)],
            )],
            vec![
                In::Data("s0", f(&[1], vec![10.0])),
                In::Data("x", f(&[3, 1], vec![1.0, 2.0, 3.0])),
                In::Data("flag", bools(&[], vec![flag])),
            ],
            &["f", "all"],
        );
        let steps: Vec<f32> = if flag { vec![11.0, 13.0, 16.0] } else { vec![9.0, 7.0, 4.0] };
        assert_eq!(got, vec![f(&[1], vec![steps[2]]), f(&[3, 1], steps)], "flag {flag}");
    }

    let e = import_err(
        vec![node(
            "Loop",
            "loop",
            &["m", "", "y"],
            &["y_final", "ys"],
            vec![graph_attr("body", counting_body(i64::MAX))],
        )],
        vec![In::Init("m", i64s(&[], vec![1_000_000])), In::Data("y", f(&[1], vec![0.0]))],
        &["y_final", "ys"],
        18,
    );
    assert!(e.contains("node `loop` (Loop): unrolling needs 1,000,000 steps of at least 5 nodes each"), "{e}");
    assert!(e.contains("the import budget allows 1,000,000 nodes in all"), "{e}");
}
