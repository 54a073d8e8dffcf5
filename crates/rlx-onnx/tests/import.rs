//! End-to-end: ONNX models built in Rust, imported, validated, run in the
//! reference interpreter and compared with a naive computation.
//!
//! Tolerances: the interpreter's GEMM (BLAS) and softmax sum in a
//! different order from the f64 reference here; with k <= 8 terms of
//! magnitude <= 1 the f32 rounding difference stays below ~1e-6, so 1e-5
//! leaves a margin without hiding a wrong element (wrong results are off
//! by > 1e-2 here).

use crate::common::*;
use rlx_onnx::proto::{AttributeProto, AttributeType, DimensionValue};
use rlx_onnx::{ImportError, ImportOptions};

const TOL: f32 = 1e-5;

fn opts() -> ImportOptions {
    ImportOptions::new(WEIGHTS)
}

#[test]
fn two_layer_mlp_matches_naive() {
    let (b, i, h, o) = (2usize, 4usize, 8usize, 3usize);
    let w1 = values(i * h, 1);
    let b1 = values(h, 2);
    let w2t = values(o * h, 3); // stored [o, h], used with transB
    let b2 = values(o, 4);
    let m = model(
        vec![
            node("Gemm", "fc1", &["x", "w1", "b1"], &["h"], vec![]),
            node("Relu", "act", &["h"], &["hr"], vec![]),
            node("Gemm", "fc2", &["hr", "w2", "b2"], &["logits"], vec![attr_i("transB", 1)]),
            node("Softmax", "probs", &["logits"], &["y"], vec![attr_i("axis", -1)]),
        ],
        vec![
            init_raw("w1", &[i as i64, h as i64], &w1),
            init_typed("b1", &[h as i64], &b1),
            init_raw("w2", &[o as i64, h as i64], &w2t),
            init_raw("b2", &[o as i64], &b2),
        ],
        vec![vi("x", &[b as i64, i as i64])],
        vec![vi("y", &[b as i64, o as i64])],
        17,
    );
    let imported = import_model(&m, &opts()).expect("import");
    // fc1 fuses its bias and the relu; fc2's transposed weight is packed
    // like any other and takes its bias add; both weights are prepacked;
    // the softmax runs in place in the output.
    assert!(
        imported.sched_text.contains("PackedGemm { a: x, w: w1.packed, bias: b1, c: h, m: 2, k: 4, n: 8, act: relu }"),
        "{}",
        imported.sched_text
    );
    assert!(
        imported
            .sched_text
            .contains("PackedGemm { a: h, w: w2.packed_t, bias: b2, c: y, m: 2, k: 8, n: 3, act: identity }"),
        "{}",
        imported.sched_text
    );
    assert!(imported.sched_text.contains("Softmax { src: y, dst: y, rows: 2, cols: 3 }"), "{}", imported.sched_text);
    assert!(imported.sched_text.contains("weights \"weights.safetensors\" sha256 \""));
    let x = values(b * i, 5);
    let out = run("mlp", &imported, &[("x", &x)], &["y"]);

    let mut hid = matmul(&x, &w1, b, i, h);
    for (k, v) in hid.iter_mut().enumerate() {
        *v = (*v + b1[k % h]).max(0.0);
    }
    let mut logits = matmul(&hid, &transpose2(&w2t, o, h), b, h, o);
    for (k, v) in logits.iter_mut().enumerate() {
        *v += b2[k % o];
    }
    assert_close(&out[0], &softmax_rows(&logits, o), TOL, "mlp y");
    assert_eq!(imported.report.params, 4);
}

#[test]
fn matmul_add_transpose_reshape_matches_naive() {
    let w = values(4 * 5, 11);
    let bias = values(5, 12);
    let m = model(
        vec![
            node("MatMul", "mm", &["x", "w"], &["p"], vec![]),
            node("Add", "add", &["bias", "p"], &["q"], vec![]),
            node("Transpose", "tr", &["q"], &["t"], vec![attr_ints("perm", &[0, 2, 1])]),
            node("Reshape", "rs", &["t", "shape"], &["y"], vec![]),
        ],
        vec![init_raw("w", &[4, 5], &w), init_raw("bias", &[5], &bias), init_i64("shape", &[2], &[0, -1])],
        vec![vi("x", &[2, 3, 4])],
        vec![vi("y", &[2, 15])],
        13,
    );
    let imported = import_model(&m, &opts()).expect("import");
    // The batch folds into one product, which takes the bias (added as
    // `bias + p`: the commuted form), and the transpose writes straight
    // into the output buffer (the reshape is a view: no copy).
    assert!(
        imported
            .sched_text
            .contains("PackedGemm { a: x, w: w.packed, bias: bias, c: p, m: 6, k: 4, n: 5, act: identity }"),
        "{}",
        imported.sched_text
    );
    assert!(imported.sched_text.contains("output  y: f32[2, 15]"), "{}", imported.sched_text);
    assert!(imported.sched_text.contains("Transpose { src: p, dst: y,"), "{}", imported.sched_text);
    assert_eq!(imported.report.thunks, 2, "{}", imported.sched_text);
    let x = values(24, 13);
    let out = run("mm_tr", &imported, &[("x", &x)], &["y"]);

    let mut q = matmul(&x, &w, 6, 4, 5);
    for (k, v) in q.iter_mut().enumerate() {
        *v += bias[k % 5];
    }
    let mut want = Vec::new();
    for batch in 0..2 {
        want.extend(transpose2(&q[batch * 15..(batch + 1) * 15], 3, 5));
    }
    assert_close(&out[0], &want, TOL, "y");
}

#[test]
fn broadcasting_binary_ops_match_naive() {
    let s = values(3, 21);
    let m = model(
        vec![
            node("Mul", "mul", &["x", "s"], &["a"], vec![]),
            node("Div", "div", &["a", "two"], &["b"], vec![]),
            node("Sub", "sub", &["b", "x"], &["c"], vec![]),
            node("Add", "add", &["row", "c"], &["y"], vec![]),
        ],
        vec![init_raw("s", &[3, 1], &s), init_raw("two", &[], &[2.0])],
        vec![vi("x", &[2, 3, 4]), vi("row", &[4])],
        vec![vi("y", &[2, 3, 4])],
        14,
    );
    let imported = import_model(&m, &opts()).expect("import");
    let x = values(24, 22);
    let row = values(4, 23);
    let out = run("bcast", &imported, &[("x", &x), ("row", &row)], &["y"]);
    let want: Vec<f32> = (0..24)
        .map(|idx| {
            let (j, l) = ((idx / 4) % 3, idx % 4);
            row[l] + (x[idx] * s[j] / 2.0 - x[idx])
        })
        .collect();
    // Elementwise f32 arithmetic in the same order as the kernels: exact.
    assert_close(&out[0], &want, 0.0, "y");
}

#[test]
fn batched_matmul_and_broadcast_a() {
    let m = model(
        vec![node("MatMul", "bmm", &["a", "b"], &["c"], vec![]), node("MatMul", "shared", &["w", "b"], &["d"], vec![])],
        vec![init_raw("w", &[3, 4], &values(12, 31))],
        vec![vi("a", &[2, 3, 4]), vi("b", &[2, 4, 5])],
        vec![vi("c", &[2, 3, 5]), vi("d", &[2, 3, 5])],
        18,
    );
    let imported = import_model(&m, &opts()).expect("import");
    assert!(imported.sched_text.contains("a_bcast: true"), "{}", imported.sched_text);
    let (a, b, w) = (values(24, 32), values(40, 33), values(12, 31));
    let out = run("bmm", &imported, &[("a", &a), ("b", &b)], &["c", "d"]);
    let mut want_c = Vec::new();
    let mut want_d = Vec::new();
    for i in 0..2 {
        want_c.extend(matmul(&a[i * 12..(i + 1) * 12], &b[i * 20..(i + 1) * 20], 3, 4, 5));
        want_d.extend(matmul(&w, &b[i * 20..(i + 1) * 20], 3, 4, 5));
    }
    assert_close(&out[0], &want_c, TOL, "c");
    assert_close(&out[1], &want_d, TOL, "d");
}

/// erf by its Taylor series in f64 (converges fast for |x| <= 1).
fn erf(x: f64) -> f64 {
    let mut term = x;
    let mut sum = x;
    for n in 1..40 {
        term *= -x * x / n as f64;
        sum += term / (2 * n + 1) as f64;
    }
    sum * 2.0 / std::f64::consts::PI.sqrt()
}

#[test]
fn unary_ops_match_std() {
    type Reference = fn(f64) -> f64;
    let ops: [(&str, Reference); 8] = [
        ("Abs", f64::abs),
        ("Neg", |v| -v),
        ("Exp", f64::exp),
        ("Sigmoid", |v| 1.0 / (1.0 + (-v).exp())),
        ("Tanh", f64::tanh),
        ("Erf", erf),
        ("Sqrt", |v| v.abs().sqrt()),
        ("Log", |v| (v.abs() + 0.5).ln()),
    ];
    let x = values(16, 41);
    for (op, f) in ops {
        // Sqrt and Log get positive inputs, |x| (+ 0.5 for Log), as their
        // references above assume.
        let input: Vec<f32> = match op {
            "Sqrt" => x.iter().map(|v| v.abs()).collect(),
            "Log" => x.iter().map(|v| v.abs() + 0.5).collect(),
            _ => x.clone(),
        };
        let m = model(
            vec![node(op, "u", &["x"], &["y"], vec![])],
            vec![],
            vec![vi("x", &[4, 4])],
            vec![vi("y", &[4, 4])],
            13,
        );
        let imported = import_model(&m, &opts()).expect("import");
        let out = run(&format!("unary_{op}"), &imported, &[("x", &input)], &["y"]);
        let want: Vec<f32> = x.iter().map(|&v| f(f64::from(v)) as f32).collect();
        // Vectorised transcendental kernels are accurate to a few ulp; on
        // values of magnitude <= e (Exp of 1) 2e-6 is ~8 ulp.
        assert_close(&out[0], &want, 2e-6, op);
    }
}

#[test]
fn shape_arithmetic_folds_and_views_cost_nothing() {
    // y = relu(reshape(x, concat(unsqueeze(shape(x)[0]), [-1])))
    let m = model(
        vec![
            node("Shape", "shape", &["x"], &["s"], vec![]),
            node("Gather", "dim0", &["s", "zero"], &["d0"], vec![attr_i("axis", 0)]),
            node("Unsqueeze", "unsq", &["d0", "axes"], &["d0v"], vec![]),
            node("Concat", "cat", &["d0v", "minus1"], &["target"], vec![attr_i("axis", 0)]),
            node("Reshape", "rs", &["x", "target"], &["x2"], vec![]),
            node("Relu", "relu", &["x2"], &["y"], vec![]),
            node("Flatten", "fl", &["x"], &["xf"], vec![attr_i("axis", 2)]),
            node("Relu", "relu2", &["xf"], &["z"], vec![]),
        ],
        vec![init_i64("zero", &[], &[0]), init_i64("axes", &[1], &[0]), init_i64("minus1", &[1], &[-1])],
        vec![vi("x", &[2, 3, 4])],
        vec![vi("y", &[2, 12]), vi("z", &[6, 4])],
        13,
    );
    let imported = import_model(&m, &opts()).expect("import");
    // Only the two Relus run: shape arithmetic folded, views are free.
    assert_eq!(imported.report.thunks, 2, "{}", imported.sched_text);
    let x = values(24, 51);
    let out = run("fold", &imported, &[("x", &x)], &["y", "z"]);
    let want: Vec<f32> = x.iter().map(|v| v.max(0.0)).collect();
    assert_eq!(out[0], want);
    assert_eq!(out[1], want);
}

#[test]
fn gemm_variants_match_naive() {
    // transA with a full [m, n] C (in-place broadcast add), and a column
    // C [m, 1] (strided broadcast).
    let at = values(4 * 2, 61); // A stored [k=4, m=2]
    let bw = values(4 * 3, 62);
    let cfull = values(6, 63);
    let ccol = values(2, 64);
    let m = model(
        vec![
            node("Gemm", "g1", &["at", "b", "cfull"], &["y1"], vec![attr_i("transA", 1)]),
            node("Gemm", "g2", &["a", "b", "ccol"], &["y2"], vec![attr_f("alpha", 1.0)]),
            node("Gemm", "g3", &["a", "b"], &["y3"], vec![]),
        ],
        vec![init_raw("b", &[4, 3], &bw), init_raw("cfull", &[2, 3], &cfull), init_raw("ccol", &[2, 1], &ccol)],
        vec![vi("at", &[4, 2]), vi("a", &[2, 4])],
        vec![vi("y1", &[2, 3]), vi("y2", &[2, 3]), vi("y3", &[2, 3])],
        13,
    );
    let imported = import_model(&m, &opts()).expect("import");
    let a = values(8, 65);
    let out = run("gemm", &imported, &[("at", &at), ("a", &a)], &["y1", "y2", "y3"]);
    let p1 = matmul(&transpose2(&at, 4, 2), &bw, 2, 4, 3);
    let p2 = matmul(&a, &bw, 2, 4, 3);
    let want1: Vec<f32> = p1.iter().zip(&cfull).map(|(p, c)| p + c).collect();
    let want2: Vec<f32> = p2.iter().enumerate().map(|(k, p)| p + ccol[k / 3]).collect();
    assert_close(&out[0], &want1, TOL, "y1");
    assert_close(&out[1], &want2, TOL, "y2");
    assert_close(&out[2], &p2, TOL, "y3");
}

#[test]
fn identity_output_and_opset12_softmax() {
    // Opset 12 Softmax (default axis 1) flattens [2, 3, 2] to [2, 6].
    let m = model(
        vec![node("Identity", "id", &["x"], &["same"], vec![]), node("Softmax", "sm", &["x"], &["p"], vec![])],
        vec![],
        vec![vi("x", &[2, 3, 2])],
        vec![vi("same", &[2, 3, 2]), vi("p", &[2, 3, 2])],
        12,
    );
    let imported = import_model(&m, &opts()).expect("import");
    let x = values(12, 71);
    let out = run("ident", &imported, &[("x", &x)], &["same", "p"]);
    assert_eq!(out[0], x);
    assert_close(&out[1], &softmax_rows(&x, 6), TOL, "p");
}

#[test]
fn arena_reuses_dead_intermediates() {
    // A chain of 6 transposes on [16, 16] (a kind that never works in
    // place; unoptimised, since the passes would compose the chain into
    // one copy): each intermediate dies after the next thunk, so two
    // scratch slots serve all five.
    let names = ["x", "t1", "t2", "t3", "t4", "t5", "y"];
    let nodes = (0..6).map(|i| node("Transpose", &format!("t{i}"), &[names[i]], &[names[i + 1]], vec![])).collect();
    let m = model(nodes, vec![], vec![vi("x", &[16, 16])], vec![vi("y", &[16, 16])], 13);
    let imported = import_model(&m, &opts().with_optimize(false)).expect("import");
    let slot = 16 * 16 * 4;
    assert_eq!(imported.report.arena_bytes, 4 * slot, "{}", imported.report);
    assert_eq!(imported.report.peak_live_bytes, 4 * slot);
    let x = values(256, 81);
    let out = run("chain", &imported, &[("x", &x)], &["y"]);
    // An even number of transposes is the identity.
    assert_eq!(out[0], x);
}

#[test]
fn elementwise_chains_run_in_place() {
    // Six relus and a softmax: the relus fuse into one elementwise region
    // reading the input (never overwritten) and writing the output
    // buffer, and the softmax works in place there.
    let names = ["x", "t1", "t2", "t3", "t4", "t5", "t6", "y"];
    let mut nodes: Vec<_> =
        (0..6).map(|i| node("Relu", &format!("r{i}"), &[names[i]], &[names[i + 1]], vec![])).collect();
    nodes.push(node("Softmax", "sm", &["t6"], &["y"], vec![]));
    let m = model(nodes, vec![], vec![vi("x", &[16, 16])], vec![vi("y", &[16, 16])], 13);
    let imported = import_model(&m, &opts()).expect("import");
    assert_eq!(imported.report.buffers, 2, "{}", imported.sched_text);
    assert_eq!(imported.report.arena_bytes, 2 * 16 * 16 * 4, "{}", imported.report);
    assert!(
        imported.sched_text.contains(
            "ElementwiseRegion { inputs: [x], dst: y, len: 256, steps: [relu, relu, relu, relu, relu, relu] }"
        ),
        "{}",
        imported.sched_text
    );
    assert!(imported.sched_text.contains("Softmax { src: y, dst: y, rows: 16, cols: 16 }"), "{}", imported.sched_text);
    let x = values(256, 82);
    let out = run("inplace", &imported, &[("x", &x)], &["y"]);
    let relu: Vec<f32> = x.iter().map(|v| v.max(0.0)).collect();
    assert_close(&out[0], &softmax_rows(&relu, 16), TOL, "y");
}

#[test]
fn external_initializers_are_read_relative_to_the_model() {
    let dir = temp_dir("external");
    let w = values(6, 91);
    let mut blob = vec![0u8; 16]; // data starts at offset 16
    blob.extend(w.iter().flat_map(|v| v.to_le_bytes()));
    std::fs::write(dir.join("weights.bin"), &blob).unwrap();
    let ext = |offset: &str, length: &str| rlx_onnx::proto::TensorProto {
        name: "w".to_string(),
        dims: vec![2, 3],
        data_type: rlx_onnx::proto::data_type::FLOAT,
        data_location: rlx_onnx::proto::DATA_LOCATION_EXTERNAL,
        external_data: [("location", "weights.bin"), ("offset", offset), ("length", length)]
            .iter()
            .map(|(k, v)| rlx_onnx::proto::StringStringEntryProto { key: k.to_string(), value: v.to_string() })
            .collect(),
        ..Default::default()
    };
    let build = |t| {
        model(
            vec![node("MatMul", "mm", &["x", "w"], &["y"], vec![])],
            vec![t],
            vec![vi("x", &[1, 2])],
            vec![vi("y", &[1, 3])],
            13,
        )
    };
    use prost::Message as _;
    let path = dir.join("m.onnx");
    std::fs::write(&path, build(ext("16", "24")).encode_to_vec()).unwrap();
    let imported = rlx_onnx::import(&path, &opts()).expect("import");
    assert!(imported.sched_text.contains("model m\n"), "{}", imported.sched_text);
    let x = [0.5f32, -2.0];
    let out = run("external_run", &imported, &[("x", &x)], &["y"]);
    assert_close(&out[0], &matmul(&x, &w, 1, 2, 3), TOL, "y");

    std::fs::write(&path, build(ext("16", "40")).encode_to_vec()).unwrap();
    let err = rlx_onnx::import(&path, &opts()).unwrap_err().to_string();
    assert!(err.starts_with("tensor `w`: external data") && err.contains("outside `weights.bin`"), "{err}");
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn unsupported_op_is_named_with_its_node() {
    let m = model(
        vec![node("Relu", "r", &["x"], &["h"], vec![]), node("RoiAlign", "roi1", &["h", "w"], &["y"], vec![])],
        vec![],
        vec![vi("x", &[1, 4])],
        vec![vi("y", &[1, 4])],
        13,
    );
    let err = import_model(&m, &opts()).unwrap_err();
    assert!(matches!(err, ImportError::UnsupportedOp { .. }));
    let msg = err.to_string();
    assert!(
        msg.starts_with(
            "unsupported ONNX op `RoiAlign` (node `roi1`); supported ops: Abs, Acos, Acosh, Add, AffineGrid, And, "
        ),
        "{msg}"
    );
    assert!(msg.contains("MatMul") && msg.contains("Transpose"), "{msg}");
}

#[test]
fn bad_attributes_are_errors_naming_op_node_and_attribute() {
    let gemm = |attrs| {
        model(
            vec![node("Gemm", "g", &["a", "b"], &["y"], attrs)],
            vec![],
            vec![vi("a", &[2, 2]), vi("b", &[2, 2])],
            vec![vi("y", &[2, 2])],
            13,
        )
    };
    let msg = import_model(&gemm(vec![attr_i("transA", 2)]), &opts()).unwrap_err().to_string();
    assert_eq!(msg, "ONNX op `Gemm` (node `g`): attribute `transA` is 2; must be 0 or 1");

    let sm = model(
        vec![node("Softmax", "sm", &["x"], &["y"], vec![attr_i("axis", 2)])],
        vec![],
        vec![vi("x", &[2, 3])],
        vec![vi("y", &[2, 3])],
        13,
    );
    let msg = import_model(&sm, &opts()).unwrap_err().to_string();
    assert_eq!(msg, "ONNX op `Softmax` (node `sm`): attribute `axis` is 2, out of range for rank 2");

    let tr = model(
        vec![node("Transpose", "t", &["x"], &["y"], vec![attr_ints("perm", &[0, 0])])],
        vec![],
        vec![vi("x", &[2, 3])],
        vec![vi("y", &[3, 2])],
        13,
    );
    let msg = import_model(&tr, &opts()).unwrap_err().to_string();
    assert!(msg.contains("attribute `perm` [0, 0] is not a permutation"), "{msg}");
}

#[test]
fn attributes_of_the_wrong_type_are_errors_not_defaults() {
    let one = |op: &str, attr: AttributeProto, x: &[i64], y: &[i64]| {
        let m = model(vec![node(op, "n", &["x"], &["y"], vec![attr])], vec![], vec![vi("x", x)], vec![vi("y", y)], 13);
        import_model(&m, &opts()).unwrap_err().to_string()
    };
    // A STRING `axis` used to be read as 0 and import cleanly.
    let axis = AttributeProto {
        name: "axis".to_string(),
        r#type: AttributeType::String as i32,
        s: b"1".to_vec(),
        ..Default::default()
    };
    assert_eq!(
        one("Softmax", axis, &[2, 3], &[2, 3]),
        "ONNX op `Softmax` (node `n`): attribute `axis` has type STRING, expected INT"
    );
    // FLOAT for INT, INT for FLOAT, INT for INTS, INTS for STRING.
    assert_eq!(
        one("Softmax", attr_f("axis", 1.0), &[2, 3], &[2, 3]),
        "ONNX op `Softmax` (node `n`): attribute `axis` has type FLOAT, expected INT"
    );
    assert_eq!(
        one("LeakyRelu", attr_i("alpha", 1), &[2], &[2]),
        "ONNX op `LeakyRelu` (node `n`): attribute `alpha` has type INT, expected FLOAT"
    );
    assert_eq!(
        one("Transpose", attr_i("perm", 1), &[2, 3], &[3, 2]),
        "ONNX op `Transpose` (node `n`): attribute `perm` has type INT, expected INTS"
    );
    assert_eq!(
        one("Gelu", attr_ints("approximate", &[1]), &[2], &[2]),
        "ONNX op `Gelu` (node `n`): attribute `approximate` has type INTS, expected STRING"
    );
    // An unknown type number is no type the importer reads.
    let odd = AttributeProto { name: "axis".to_string(), r#type: 99, i: 1, ..Default::default() };
    assert_eq!(
        one("Softmax", odd, &[2, 3], &[2, 3]),
        "ONNX op `Softmax` (node `n`): attribute `axis` has type UNDEFINED, expected INT"
    );
    // Before IR version 3 the type may be unset: the field holding a value
    // decides. An int in `i` reads; a string in `s` does not.
    let legacy = |a: AttributeProto| {
        let m = model(
            vec![node("Softmax", "n", &["x"], &["y"], vec![a])],
            vec![],
            vec![vi("x", &[2, 3])],
            vec![vi("y", &[2, 3])],
            13,
        );
        import_model(&m, &opts())
    };
    let untyped_int = AttributeProto { name: "axis".to_string(), i: 1, ..Default::default() };
    assert!(legacy(untyped_int).is_ok());
    let untyped_str = AttributeProto { name: "axis".to_string(), s: b"x".to_vec(), ..Default::default() };
    let msg = legacy(untyped_str).unwrap_err().to_string();
    assert_eq!(msg, "ONNX op `Softmax` (node `n`): attribute `axis` has type STRING, expected INT");
}

#[test]
fn symbolic_dims_need_a_shape_override() {
    let dims = vec![DimensionValue::DimParam("batch".to_string()), DimensionValue::DimValue(4)];
    let m = model(
        vec![node("Relu", "r", &["x"], &["y"], vec![])],
        vec![],
        vec![vi_typed("x", rlx_onnx::proto::data_type::FLOAT, dims.clone())],
        vec![vi_typed("y", rlx_onnx::proto::data_type::FLOAT, dims)],
        13,
    );
    let msg = import_model(&m, &opts()).unwrap_err().to_string();
    assert_eq!(msg, "tensor `x`: is a graph input with shape [batch, 4]; give a static shape with --shape x=D1,D2,...");
    let mut o = opts();
    o.shapes.push(rlx_onnx::parse_shape_override("x=3,4").unwrap());
    let imported = import_model(&m, &o).expect("import with override");
    let x = values(12, 101);
    let out = run("override", &imported, &[("x", &x)], &["y"]);
    assert_eq!(out[0], x.iter().map(|v| v.max(0.0)).collect::<Vec<_>>());

    o.shapes.push(("nope".to_string(), vec![1]));
    let msg = import_model(&m, &o).unwrap_err().to_string();
    assert_eq!(msg, "--shape `nope`: no graph input has this name");
}

#[test]
fn shape_overrides_bind_only_symbolic_dims() {
    let n = || DimensionValue::DimParam("N".to_string());
    let four = DimensionValue::DimValue(4);
    let m = model(
        vec![node("Add", "a", &["x", "y"], &["z"], vec![])],
        vec![],
        vec![
            vi_typed("x", rlx_onnx::proto::data_type::FLOAT, vec![n(), four.clone()]),
            vi_typed("y", rlx_onnx::proto::data_type::FLOAT, vec![n(), four.clone()]),
        ],
        vec![vi_typed("z", rlx_onnx::proto::data_type::FLOAT, vec![n(), four])],
        13,
    );
    let with = |specs: &[&str]| {
        let mut o = opts();
        for s in specs {
            o.shapes.push(rlx_onnx::parse_shape_override(s).unwrap());
        }
        import_model(&m, &o).map(|_| ()).map_err(|e| e.to_string())
    };
    assert_eq!(with(&["x=3,4", "y=3,4"]), Ok(()));
    // A static dim that disagrees, a changed rank, a scalar, a repeat.
    assert_eq!(
        with(&["x=3,7", "y=3,4"]),
        Err("--shape `x=3,7`: dim 1 of input `x` is 4 in the model (shape [N, 4]), the override gives 7; \
             only symbolic dims can be bound"
            .to_string())
    );
    assert_eq!(
        with(&["x=1,4,5", "y=1,4"]),
        Err("--shape `x=1,4,5`: input `x` has rank 2 (shape [N, 4]), the override has rank 3".to_string())
    );
    assert_eq!(
        with(&["x=", "y=1,4"]),
        Err("--shape `x=`: input `x` has rank 2 (shape [N, 4]), the override has rank 0".to_string())
    );
    assert_eq!(with(&["x=3,4", "y=3,4", "x="]), Err("--shape `x=`: input `x` already has a shape (x=3,4)".to_string()));
    // One symbol, one value.
    assert_eq!(
        with(&["x=3,4", "y=5,4"]),
        Err("--shape `y=5,4`: dim `N` is 3 by --shape x=3,4, the override gives 5".to_string())
    );
    // A fully static input may be restated, never changed.
    let s = model(
        vec![node("Relu", "r", &["x"], &["y"], vec![])],
        vec![],
        vec![vi("x", &[2, 4])],
        vec![vi("y", &[2, 4])],
        13,
    );
    let mut o = opts();
    o.shapes.push(("x".to_string(), vec![2, 4]));
    assert!(import_model(&s, &o).is_ok());
    o.shapes[0].1 = vec![8];
    let msg = import_model(&s, &o).unwrap_err().to_string();
    assert_eq!(msg, "--shape `x=8`: input `x` has rank 2 (shape [2, 4]), the override has rank 1");
}

#[test]
fn unusual_graphs_import_with_warnings() {
    let relu = |opset: i64, outputs: Vec<rlx_onnx::proto::ValueInfoProto>| {
        model(vec![node("Relu", "r", &["x"], &["y"], vec![])], vec![], vec![vi("x", &[2])], outputs, opset)
    };
    assert!(import_model(&relu(13, vec![vi("y", &[2])]), &opts()).unwrap().warnings.is_empty());
    let future = import_model(&relu(999, vec![vi("y", &[2])]), &opts()).unwrap();
    assert_eq!(
        future.warnings,
        [format!(
            "the model imports opset 999; the importer knows opsets 1 to {0} and reads its ops as of opset {0}: \
             compare the results with `cargo xtask verify`",
            rlx_onnx::NEWEST_OPSET
        )]
    );
    let silent = import_model(&relu(13, vec![]), &opts()).unwrap();
    assert_eq!(silent.warnings, ["the graph has no outputs: the schedule computes nothing a caller can read"]);
    let msg = import_model(&relu(0, vec![vi("y", &[2])]), &opts()).unwrap_err().to_string();
    assert_eq!(msg, "the model imports opset 0 of the default domain; ONNX opsets start at 1");
    // A declared dim that makes an 8 GiB arena: importing allocates none of it.
    let big = 1i64 << 30;
    let m = model(
        vec![node("Relu", "r", &["x"], &["y"], vec![])],
        vec![],
        vec![vi("x", &[big])],
        vec![vi("y", &[big])],
        13,
    );
    let huge = import_model(&m, &opts()).unwrap();
    assert_eq!(huge.report.arena_bytes, 8 << 30);
    assert_eq!(
        huge.warnings,
        ["the arena is 8589934592 bytes, more than 4294967296: running the model needs that much memory at start-up \
          (check the input shapes, or give static ones with --shape)"]
    );
}

#[test]
fn shape_overrides_parse() {
    assert_eq!(rlx_onnx::parse_shape_override("ids=1,128"), Ok(("ids".to_string(), vec![1, 128])));
    assert_eq!(rlx_onnx::parse_shape_override("s="), Ok(("s".to_string(), vec![])));
    assert!(rlx_onnx::parse_shape_override("x").is_err());
    assert!(rlx_onnx::parse_shape_override("x=1,a").is_err());
    assert!(rlx_onnx::parse_shape_override("=1").is_err());
}

#[test]
fn malformed_input_is_an_error_not_a_panic() {
    let err = rlx_onnx::import_bytes(&[0xff, 0xff, 0xff, 0x07, 0x01], std::path::Path::new("."), &opts()).unwrap_err();
    assert!(matches!(err, ImportError::Decode(_)), "{err}");
    // A raw_data length that does not match the shape.
    let mut t = init_raw("w", &[2, 3], &values(6, 1));
    t.raw_data.pop();
    let m = model(
        vec![node("MatMul", "mm", &["x", "w"], &["y"], vec![])],
        vec![t],
        vec![vi("x", &[1, 2])],
        vec![vi("y", &[1, 3])],
        13,
    );
    let msg = import_model(&m, &opts()).unwrap_err().to_string();
    assert_eq!(msg, "tensor `w`: holds 23 data bytes, its shape needs 6 elements of 4 bytes");
    // A node reading a name nothing produces.
    let m = model(
        vec![node("Relu", "r", &["ghost"], &["y"], vec![])],
        vec![],
        vec![vi("x", &[1])],
        vec![vi("y", &[1])],
        13,
    );
    let msg = import_model(&m, &opts()).unwrap_err().to_string();
    assert!(msg.starts_with("ONNX op `Relu` (node `r`): input `ghost` is not"), "{msg}");
    // An absolute weights path.
    let m =
        model(vec![node("Relu", "r", &["x"], &["y"], vec![])], vec![], vec![vi("x", &[1])], vec![vi("y", &[1])], 13);
    assert!(matches!(import_model(&m, &ImportOptions::new("/abs/w.safetensors")), Err(ImportError::Weights(_))));
}

#[test]
fn huge_shapes_are_errors_not_panics() {
    // Each buffer (2^61 bytes) fits in isize, the arena of four does not.
    let big = 1i64 << 59;
    let m = model(
        vec![
            node("Relu", "r", &["x"], &["y"], vec![]),
            node("Transpose", "t", &["y"], &["z"], vec![]),
            node("Transpose", "u", &["z"], &["w"], vec![]),
        ],
        vec![],
        vec![vi("x", &[big, 1])],
        vec![vi("y", &[big, 1]), vi("z", &[1, big]), vi("w", &[big, 1])],
        13,
    );
    let err = import_model(&m, &opts()).unwrap_err();
    assert!(matches!(err, ImportError::ArenaTooLarge(_)), "{err}");
    // A single buffer too large for memory.
    let m = model(
        vec![node("Relu", "r", &["x"], &["y"], vec![])],
        vec![],
        vec![vi("x", &[big, 64])],
        vec![vi("y", &[big, 64])],
        13,
    );
    let msg = import_model(&m, &opts()).unwrap_err().to_string();
    assert!(msg.starts_with("tensor `x`: shape [576460752303423488, 64] is too large"), "{msg}");
}

/// Two graph inputs of one name would be renamed apart and the caller's
/// value fed to only one of them: refused, as the ONNX checker refuses a
/// graph that is not in SSA form.
#[test]
fn a_graph_input_declared_twice_is_refused() {
    let m = model(
        vec![node("Add", "a", &["x", "x"], &["y"], vec![])],
        vec![],
        vec![vi("x", &[2]), vi("x", &[2])],
        vec![vi("y", &[2])],
        17,
    );
    let Err(e) = import_model(&m, &opts()) else { panic!("imported") };
    assert_eq!(e.to_string(), "tensor `x`: is declared twice among the graph inputs");
}
