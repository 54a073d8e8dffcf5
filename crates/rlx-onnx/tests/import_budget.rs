//! The import budget (`rlx_onnx::ImportLimits`): models of a few bytes
//! that ask the importer for minutes of unrolling or terabytes of tables
//! are refused with the node, the figure and the limit, before the work or
//! the allocation; and the limits can be raised. Each refusal is timed
//! against a generous bound only to catch a hang (the bombs themselves
//! ran for minutes or aborted).

use std::time::{Duration, Instant};

use crate::common::*;
use rlx_onnx::proto::*;
use rlx_onnx::{ImportLimits, ImportOptions};

/// Far above any refusal here (milliseconds), far below the bombs.
const HANG_GUARD: Duration = Duration::from_secs(20);

fn graph_attr(name: &str, g: GraphProto) -> AttributeProto {
    AttributeProto { name: name.to_string(), r#type: AttributeType::Graph as i32, g: Some(g), ..Default::default() }
}

fn info(name: &str) -> ValueInfoProto {
    ValueInfoProto { name: name.to_string(), ..Default::default() }
}

fn body(nodes: Vec<NodeProto>, inputs: &[&str], outputs: &[&str], inits: Vec<TensorProto>) -> GraphProto {
    GraphProto {
        node: nodes,
        name: "body".to_string(),
        initializer: inits,
        input: inputs.iter().map(|n| info(n)).collect(),
        output: outputs.iter().map(|n| info(n)).collect(),
        ..Default::default()
    }
}

/// Imports `m` with `opts`, expecting an error, within the hang guard.
fn refused_with(m: &ModelProto, opts: &ImportOptions) -> String {
    let start = Instant::now();
    let result = import_model(m, opts);
    let took = start.elapsed();
    assert!(took < HANG_GUARD, "the refusal took {took:?}");
    match result {
        Ok(_) => panic!("the import was expected to fail"),
        Err(e) => e.to_string(),
    }
}

fn refused(m: &ModelProto) -> String {
    refused_with(m, &ImportOptions::new(WEIGHTS))
}

fn assert_has(e: &str, parts: &[&str]) {
    for p in parts {
        assert!(e.contains(p), "`{p}` is not in: {e}");
    }
}

/// `Loop` `name` over `y` with trip count `m` (an initializer of the
/// enclosing graph) and `body`, giving `y_final`.
fn loop_node(name: &str, m: &str, body: GraphProto) -> NodeProto {
    node("Loop", name, &[m, "", "y"], &["y_final"], vec![graph_attr("body", body)])
}

/// A model of one `Loop` of `trip` iterations over `y: f32[1]`.
fn loop_model(name: &str, trip: i64, body: GraphProto) -> ModelProto {
    model(
        vec![loop_node(name, "m", body)],
        vec![init_i64("m", &[], &[trip])],
        vec![vi("y", &[1])],
        vec![info("y_final")],
        18,
    )
}

/// A loop body passing `y_in` through with nodes `nodes` (`y_in` → `y_out`).
fn pass_body(nodes: Vec<NodeProto>, out: &str) -> GraphProto {
    body(nodes, &["i", "c", "y_in"], &["c", out], vec![])
}

/// `levels` `Loop`s nested, each of `trip` iterations (the inner trip
/// counts are initializers of the bodies), around one `Identity`.
fn nested_loops(levels: usize, trip: i64) -> ModelProto {
    let mut inner = pass_body(vec![node("Identity", "id", &["y_in"], &["y_out"], vec![])], "y_out");
    for level in (1..levels).rev() {
        let m = format!("trip{level}");
        let nested =
            node("Loop", &format!("loop_{level}"), &[&m, "", "y_in"], &["y_out"], vec![graph_attr("body", inner)]);
        inner = body(vec![nested], &["i", "c", "y_in"], &["c", "y_out"], vec![init_i64(&m, &[], &[trip])]);
    }
    loop_model("loop_0", trip, inner)
}

#[test]
fn a_billion_empty_iterations_are_refused_before_unrolling() {
    // Nothing in the body: the old guard (body nodes x steps) let it pass.
    let e = refused(&loop_model("loop_3", 1_000_000_000, pass_body(vec![], "y_in")));
    assert_has(
        &e,
        &[
            "node `loop_3` (Loop): unrolling needs 1,000,000,000 steps of at least 1 node each: 1,000,000,000 nodes",
            "the import budget allows 1,000,000 nodes in all",
            "(raise it with --import-limit nodes=N)",
        ],
    );
}

#[test]
fn nested_loops_are_refused_at_the_outermost_with_the_whole_unroll() {
    // 100 x (1 + 1 + 100 x (1 + 1 + 100 x (1 + 1))) nodes: each level's own
    // check passes, the product does not.
    for (levels, trip, steps, per_step, total) in [
        (3, 100, "100", "20,202", "2,020,200"),
        (2, 1000, "1,000", "2,002", "2,002,000"),
        (20, 2, "2", "2,097,150", "4,194,300"),
    ] {
        let e = refused(&nested_loops(levels, trip));
        let needs = format!(
            "node `loop_0` (Loop): unrolling needs {steps} steps of at least {per_step} nodes each: {total} nodes"
        );
        assert_has(&e, &[&needs, "the import budget allows 1,000,000 nodes in all"]);
    }
}

#[test]
fn a_scan_inside_a_scan_is_refused_at_the_outer_one() {
    // x: [1000, 1000, 1]; the outer scan's steps are rows, the inner one's
    // the elements of a row, read from the row's shape.
    let inner = body(vec![node("Add", "a", &["s", "xt"], &["s_out"], vec![])], &["s", "xt"], &["s_out"], vec![]);
    let outer = body(
        vec![node(
            "Scan",
            "inner_scan",
            &["s", "xrow"],
            &["s_out"],
            vec![graph_attr("body", inner), attr_i("num_scan_inputs", 1)],
        )],
        &["s", "xrow"],
        &["s_out"],
        vec![],
    );
    let m = model(
        vec![node(
            "Scan",
            "outer_scan",
            &["s0", "x"],
            &["f"],
            vec![graph_attr("body", outer), attr_i("num_scan_inputs", 1)],
        )],
        vec![],
        vec![vi("s0", &[1]), vi("x", &[1000, 1000, 1])],
        vec![info("f")],
        18,
    );
    let e = refused(&m);
    assert_has(
        &e,
        &[
            "node `outer_scan` (Scan): unrolling needs 1,000 steps of at least 2,002 nodes each: 2,002,000 nodes",
            "the import budget allows 1,000,000 nodes in all",
        ],
    );
}

#[test]
fn unrolls_count_against_one_budget_for_the_whole_import() {
    // Two loops of 30 iterations of 2 nodes: each fits 100 nodes, both do
    // not. The second is refused with what the first left.
    let loops = |n: usize| -> Vec<NodeProto> {
        (0..n)
            .map(|k| {
                let b = pass_body(
                    vec![
                        node("Identity", "a", &["y_in"], &["t"], vec![]),
                        node("Identity", "b", &["t"], &["y_out"], vec![]),
                    ],
                    "y_out",
                );
                let (input, output) = (if k == 0 { "y".to_string() } else { format!("y{k}") }, format!("y{}", k + 1));
                node("Loop", &format!("loop_{k}"), &["m", "", &input], &[&output], vec![graph_attr("body", b)])
            })
            .collect()
    };
    let m = |n: usize| {
        model(loops(n), vec![init_i64("m", &[], &[30])], vec![vi("y", &[1])], vec![info(&format!("y{n}"))], 18)
    };
    let opts = ImportOptions::new(WEIGHTS).with_limits(ImportLimits::default().with_nodes(100));
    assert!(import_model(&m(1), &opts).is_ok(), "one loop fits");
    let e = refused_with(&m(2), &opts);
    assert_has(
        &e,
        &[
            "node `loop_1` (Loop): unrolling needs 30 steps of at least 3 nodes each: 90 nodes",
            "the import budget allows 100 nodes in all, 7 left",
        ],
    );
    // Raised, the same model imports and runs.
    let opts = ImportOptions::new(WEIGHTS).with_limits(ImportLimits::default().with_nodes(200));
    let imported = import_model(&m(2), &opts).expect("fits 200 nodes");
    assert_eq!(run("two-loops", &imported, &[("y", &[2.5])], &["y2"]), vec![vec![2.5]]);
}

#[test]
fn the_graphs_own_nodes_count_too() {
    let nodes: Vec<NodeProto> = (0..60)
        .map(|k| {
            let input = if k == 0 { "x".to_string() } else { format!("v{k}") };
            let output = if k == 59 { "y".to_string() } else { format!("v{}", k + 1) };
            node("Relu", &format!("r{k}"), &[&input], &[&output], vec![])
        })
        .collect();
    let m = model(nodes, vec![], vec![vi("x", &[2])], vec![vi("y", &[2])], 18);
    let opts = ImportOptions::new(WEIGHTS).with_limits(ImportLimits::default().with_nodes(50));
    let e = refused_with(&m, &opts);
    assert_has(&e, &["node `r50` (Relu): it is node 51 of the import", "allows 50 nodes in all, 0 left"]);
}

#[test]
fn negative_trip_counts_are_errors_not_zero_iterations() {
    for trip in [-1, -7, i64::MIN] {
        let b = pass_body(vec![node("Identity", "id", &["y_in"], &["y_out"], vec![])], "y_out");
        let e = refused(&loop_model("loop_n", trip, b));
        assert_has(&e, &[&format!("node `loop_n`): the trip count is {trip}; a negative count is refused")]);
    }
}

/// A `DFT` of `x: f32[1, len, 1]` with `dft_length` `n` when given.
fn dft_model(len: i64, n: Option<i64>) -> ModelProto {
    let (inputs, inits) = match n {
        Some(n) => (vec!["x", "n"], vec![init_i64("n", &[], &[n])]),
        None => (vec!["x"], vec![]),
    };
    model(vec![node("DFT", "dft", &inputs, &["y"], vec![])], inits, vec![vi("x", &[1, len, 1])], vec![info("y")], 18)
}

#[test]
fn dft_tables_are_checked_before_they_are_allocated() {
    // A length past usize: the matrix size overflows (was an index panic).
    let e = refused(&dft_model(8, Some(i64::MAX)));
    assert_has(
        &e,
        &[
            "node `dft` (DFT): its twiddle matrix",
            "needs more than 18,446,744,073,709,551,615 bytes",
            "the import budget allows 4,294,967,296 bytes in all",
            "(raise it with --import-limit bytes=N)",
        ],
    );
    // 2^40 bins (was a 32 TB allocation).
    let e = refused(&dft_model(8, Some(1 << 40)));
    assert_has(&e, &["its twiddle matrix ([8, 2199023255552], 4 bytes each) needs 70,368,744,177,664 bytes"]);
    // A 100,000-sample signal: an 80 GB matrix.
    let e = refused(&dft_model(100_000, None));
    assert_has(&e, &["its twiddle matrix ([100000, 200000], 4 bytes each) needs 80,000,000,000 bytes"]);
    // A small transform fits the default, not a budget of 100 bytes.
    assert!(import_model(&dft_model(8, None), &ImportOptions::new(WEIGHTS)).is_ok());
    let opts = ImportOptions::new(WEIGHTS).with_limits(ImportLimits::default().with_bytes(100));
    let e = refused_with(&dft_model(8, None), &opts);
    assert_has(&e, &["its twiddle matrix ([8, 16], 4 bytes each) needs 512 bytes", "allows 100 bytes in all"]);
}

#[test]
fn windows_and_frame_tables_sized_by_the_model_are_checked_too() {
    // A Hann window of 2^40 values.
    let m = model(
        vec![node("HannWindow", "hann", &["size"], &["w"], vec![])],
        vec![init_i64("size", &[], &[1 << 40])],
        vec![],
        vec![info("w")],
        18,
    );
    assert_has(&refused(&m), &["node `hann` (HannWindow): the window ([1099511627776], 4 bytes each) needs"]);
    // STFT frames of a long signal, one sample apart: frames x frame_length.
    let m = model(
        vec![node("STFT", "stft", &["x", "step", "", "len"], &["y"], vec![])],
        vec![init_i64("step", &[], &[1]), init_i64("len", &[], &[400_000])],
        vec![vi("x", &[1, 1_000_000, 1])],
        vec![info("y")],
        18,
    );
    assert_has(&refused(&m), &["node `stft` (STFT): its table of frame samples ([600001, 400000], 8 bytes each)"]);
}

#[test]
fn folded_constants_count_against_the_byte_budget() {
    // Ten `ConstantOfShape`s of 4 MB each (each under the fold limit): the
    // sixth goes past a 20 MB budget.
    let nodes: Vec<NodeProto> = (0..10)
        .map(|k| node("ConstantOfShape", &format!("fill{k}"), &["shape"], &[&format!("c{k}")], vec![]))
        .collect();
    let outputs = (0..10).map(|k| info(&format!("c{k}"))).collect();
    let m = model(nodes, vec![init_i64("shape", &[1], &[1 << 20])], vec![], outputs, 18);
    let opts = ImportOptions::new(WEIGHTS).with_limits(ImportLimits::default().with_bytes(20 << 20));
    let e = refused_with(&m, &opts);
    assert_has(
        &e,
        &[
            "node `fill5` (ConstantOfShape): its constants bring the import's total to 25,165,824 bytes",
            "allows 20,971,520 bytes in all, 0 left",
        ],
    );
    assert!(import_model(&m, &ImportOptions::new(WEIGHTS)).is_ok());
}

#[test]
fn the_limits_parse_as_the_flag_gives_them() {
    let d = ImportLimits::default();
    assert_eq!((d.nodes, d.bytes), (1_000_000, 1 << 32));
    assert_eq!("nodes=2_000_000".parse::<ImportLimits>(), Ok(d.with_nodes(2_000_000)));
    assert!("bytes=lots".parse::<ImportLimits>().is_err());
}

#[test]
fn sizes_past_usize_are_errors_not_overflows() {
    // Each product overflowed (a panic with overflow checks, a wrapped size
    // without).
    let tile = model(
        vec![node("Tile", "tile", &["x", "r"], &["y"], vec![])],
        vec![init_i64("r", &[1], &[i64::MAX])],
        vec![vi("x", &[3])],
        vec![info("y")],
        18,
    );
    assert_has(&refused(&tile), &["(node `tile`): repeating [3] by [9223372036854775807] overflows"]);
    let depth = model(
        vec![node("DepthToSpace", "d2s", &["x"], &["y"], vec![attr_i("blocksize", 1 << 32)])],
        vec![],
        vec![vi("x", &[1, 4, 2, 2])],
        vec![info("y")],
        18,
    );
    assert_has(
        &refused(&depth),
        &["(node `d2s`): channels 4 are not a multiple of blocksize^2 = 18446744073709551616"],
    );
    let transposed = model(
        vec![node("ConvTranspose", "up", &["x", "w"], &["y"], vec![attr_ints("strides", &[i64::MAX, 1])])],
        vec![init_raw("w", &[1, 1, 2, 2], &[1.0; 4])],
        vec![vi("x", &[1, 1, 3, 3])],
        vec![info("y")],
        18,
    );
    assert_has(&refused(&transposed), &["(node `up`): the output size along axis 0 is out of range"]);
}

#[test]
fn tables_sized_by_declared_shapes_are_checked_too() {
    // The input itself is only an arena size (a warning); the importer's
    // own tables for it are allocated at import.
    let trilu = model(
        vec![node("Trilu", "tri", &["x"], &["y"], vec![])],
        vec![],
        vec![vi("x", &[1 << 20, 1 << 20])],
        vec![info("y")],
        18,
    );
    assert_has(
        &refused(&trilu),
        &["node `tri` (Trilu): the mask ([1048576, 1048576], 1 bytes each) needs 1,099,511,627,776 bytes"],
    );
    let hardmax = model(
        vec![node("Hardmax", "hm", &["x"], &["y"], vec![])],
        vec![],
        vec![vi("x", &[1, 1 << 40])],
        vec![info("y")],
        18,
    );
    assert_has(
        &refused(&hardmax),
        &["node `hm` (Hardmax): the positions along the axis ([1099511627776], 8 bytes each)"],
    );
}
