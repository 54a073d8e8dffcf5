//! Transposes of transposes become one strided read of the first one's
//! source (`optimize/transposes.rs`): fewer copies, the same bits as the
//! unoptimised import (a transpose copies values; it never rounds).

use crate::common::*;
use rlx_onnx::proto::ModelProto;
use rlx_onnx::ImportOptions;

/// The optimised and the unoptimised import of `m`, run on `x`: the named
/// output of each, and the number of `Transpose` thunks of each.
fn both(test: &str, m: &ModelProto, x: &[f32], out: &str) -> [(Vec<f32>, usize); 2] {
    let opt = import_model(m, &ImportOptions::new(WEIGHTS)).expect("import");
    let plain = import_model(m, &ImportOptions::new(WEIGHTS).with_optimize(false)).expect("import, unoptimised");
    [(opt, "opt"), (plain, "plain")].map(|(imported, what)| {
        let got = run(&format!("{test}-{what}"), &imported, &[("x", x)], &[out]).remove(0);
        (got, count_kind(&imported.sched_text, "Transpose"))
    })
}

#[test]
fn a_chain_of_transposes_is_one_copy() {
    // [2, 3, 4, 5] permuted three times (each perm applied to the last).
    let nodes = vec![
        node("Transpose", "a", &["x"], &["a"], vec![attr_ints("perm", &[0, 2, 1, 3])]),
        node("Transpose", "b", &["a"], &["b"], vec![attr_ints("perm", &[3, 1, 0, 2])]),
        node("Transpose", "c", &["b"], &["y"], vec![attr_ints("perm", &[1, 3, 2, 0])]),
    ];
    let m = model(nodes, vec![], vec![vi("x", &[2, 3, 4, 5])], vec![vi("y", &[4, 3, 2, 5])], 13);
    let x = values(120, 1);
    let [(got, opt), (want, plain)] = both("chain", &m, &x, "y");
    assert_eq!((opt, plain), (1, 3));
    assert_identical_bits(&got, &want, "optimised vs unoptimised");
}

#[test]
fn the_parts_of_a_stacked_projection_read_it_in_place() {
    // torch's `nn.MultiheadAttention` (seq 5, batch 1, 2 heads of 3):
    // [5, 18] -> [5, 1, 3, 6] -> [1, 5, 1, 3, 6] -> [3, 5, 1, 1, 6]
    // (unflatten, unsqueeze, transpose) -> [3, 5, 1, 6]; each of q, k, v
    // picked (a view), -> [5, 2, 3] -> [2, 5, 3]; k -> [2, 3, 5].
    let mut nodes = vec![
        node("Reshape", "r0", &["x", "s0"], &["r0"], vec![]),
        node("Unsqueeze", "u", &["r0", "ax0"], &["u"], vec![]),
        node("Transpose", "t1", &["u"], &["t1"], vec![attr_ints("perm", &[3, 1, 2, 0, 4])]),
        node("Squeeze", "sq", &["t1", "ax3"], &["t1s"], vec![]),
    ];
    let mut outputs = Vec::new();
    for (i, part) in ["q", "k", "v"].iter().enumerate() {
        let idx = format!("i{i}");
        nodes.push(node("Gather", &format!("g{part}"), &["t1s", &idx], &[&format!("{part}0")], vec![]));
        nodes.push(node("Reshape", &format!("r{part}"), &[&format!("{part}0"), "s1"], &[&format!("{part}1")], vec![]));
        let perm: &[i64] = if *part == "k" { &[1, 2, 0] } else { &[1, 0, 2] };
        nodes.push(node(
            "Transpose",
            &format!("t{part}"),
            &[&format!("{part}1")],
            &[*part],
            vec![attr_ints("perm", perm)],
        ));
        outputs.push(vi(part, if *part == "k" { &[2, 3, 5] } else { &[2, 5, 3] }));
    }
    nodes.push(node("Concat", "cat", &["q", "v"], &["qv"], vec![attr_i("axis", 0)]));
    let inits = vec![
        init_i64("s0", &[4], &[5, 1, 3, 6]),
        init_i64("ax0", &[1], &[0]),
        init_i64("ax3", &[1], &[3]),
        init_i64("i0", &[], &[0]),
        init_i64("i1", &[], &[1]),
        init_i64("i2", &[], &[2]),
        init_i64("s1", &[3], &[5, 2, 3]),
    ];
    let m = model(nodes, inits, vec![vi("x", &[5, 18])], vec![vi("k", &[2, 3, 5]), vi("qv", &[4, 5, 3])], 13);
    let x = values(90, 2);
    for out in ["k", "qv"] {
        let [(got, opt), (want, plain)] = both(&format!("stacked-{out}"), &m, &x, out);
        // The unsqueeze/transpose of the whole projection is gone: each part
        // is one transpose of `x`.
        assert_eq!((opt, plain), (3, 4), "{out}");
        assert_identical_bits(&got, &want, "optimised vs unoptimised");
    }
}

#[test]
fn reads_that_do_not_line_up_stay_two_copies() {
    // The second transpose steps 2 at a time along the first one's axis
    // of 3 and wraps into the next row: not one strided read.
    let nodes = vec![
        node("Transpose", "a", &["x"], &["a"], vec![attr_ints("perm", &[1, 0])]),
        node("Reshape", "r", &["a", "s"], &["r"], vec![]),
        node("Transpose", "b", &["r"], &["y"], vec![attr_ints("perm", &[1, 0])]),
    ];
    let m = model(nodes, vec![init_i64("s", &[2], &[6, 2])], vec![vi("x", &[3, 4])], vec![vi("y", &[2, 6])], 13);
    let x = values(12, 3);
    let [(got, opt), (want, plain)] = both("misaligned", &m, &x, "y");
    assert_eq!((opt, plain), (2, 2));
    assert_identical_bits(&got, &want, "optimised vs unoptimised");
}

#[test]
fn moving_only_axes_of_size_one_is_a_view() {
    // [1, 6, 4] -> [6, 1, 4] (a batch axis moved) is the same elements in
    // the same order: no copy, before or after another op.
    let nodes = vec![
        node("Relu", "r", &["x"], &["rx"], vec![]),
        node("Transpose", "t", &["rx"], &["t"], vec![attr_ints("perm", &[1, 0, 2])]),
        node("Neg", "n", &["t"], &["y"], vec![]),
    ];
    let m = model(nodes, vec![], vec![vi("x", &[1, 6, 4])], vec![vi("y", &[6, 1, 4])], 13);
    let x = values(24, 4);
    let [(got, opt), (want, plain)] = both("size-one", &m, &x, "y");
    assert_eq!((opt, plain), (0, 0));
    assert_identical_bits(&got, &want, "optimised vs unoptimised");
    let expected: Vec<f32> = x.iter().map(|v| -v.max(0.0)).collect();
    assert_identical_bits(&got, &expected, "against the direct computation");
}
