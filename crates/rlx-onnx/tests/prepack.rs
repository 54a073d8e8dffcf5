//! Prepacked products: the importer turns every f32 product with a weight
//! into a `PackedGemm` over a weight it packs once, and the packed model
//! computes what the unpacked one does.

use crate::common::*;
use rlx_onnx::ImportOptions;

fn import_both(m: &rlx_onnx::proto::ModelProto) -> (rlx_onnx::Imported, rlx_onnx::Imported) {
    let packed = import_model(m, &ImportOptions::new(WEIGHTS)).expect("import, prepacked");
    let mut opts = ImportOptions::new(WEIGHTS);
    opts.prepack = false;
    let plain = import_model(m, &opts).expect("import, not prepacked");
    (packed, plain)
}

fn param_lines(text: &str) -> Vec<&str> {
    text.lines().filter(|l| l.starts_with("param")).collect()
}

#[test]
fn a_fused_product_packs_its_weight_and_keeps_bias_and_activation() {
    let (w, b) = (values(5 * 20, 1), values(20, 2));
    let nodes = vec![
        node("MatMul", "mm", &["x", "w"], &["h0"], vec![]),
        node("Add", "bias", &["h0", "b"], &["h1"], vec![]),
        node("Relu", "relu", &["h1"], &["y"], vec![]),
    ];
    let m = model(
        nodes,
        vec![init_raw("w", &[5, 20], &w), init_raw("b", &[20], &b)],
        vec![vi("x", &[3, 5])],
        vec![vi("y", &[3, 20])],
        17,
    );
    let (packed, plain) = import_both(&m);
    let text = &packed.sched_text;
    assert!(text.contains("PackedGemm { a: x, w: w.packed, bias: b, c: y, m: 3, k: 5, n: 20, act: relu }"), "{text}");
    // 20 columns are two panels of 16: 5 * 32 values; the unpacked weight is gone.
    let params = param_lines(text);
    assert_eq!(params.len(), 2, "{text}");
    assert!(params.iter().any(|l| l.starts_with("param   w.packed: f32[160] @")), "{text}");
    assert_eq!(count_kind(&plain.sched_text, "FusedMmBiasAct"), 1, "{}", plain.sched_text);
    let x = values(15, 3);
    let p = run("prepack-fused", &packed, &[("x", &x)], &["y"]);
    let u = run("prepack-fused-plain", &plain, &[("x", &x)], &["y"]);
    // Five products per element, summed in a different order by BLAS.
    assert_close(&p[0], &u[0], 1e-5, "y");
}

#[test]
fn a_transposed_weight_and_a_shared_one_are_packed_once_each() {
    // y = x @ wt^T (Gemm transB) ; z = x @ w ; v = x2 @ w: `w` is packed
    // once for both products that read it.
    let (wt, w) = (values(7 * 4, 4), values(4 * 7, 5));
    let nodes = vec![
        node("Gemm", "g", &["x", "wt"], &["y"], vec![attr_i("transB", 1)]),
        node("MatMul", "mm1", &["x", "w"], &["z"], vec![]),
        node("MatMul", "mm2", &["x2", "w"], &["v"], vec![]),
    ];
    let m = model(
        nodes,
        vec![init_raw("wt", &[7, 4], &wt), init_raw("w", &[4, 7], &w)],
        vec![vi("x", &[2, 4]), vi("x2", &[3, 4])],
        vec![vi("y", &[2, 7]), vi("z", &[2, 7]), vi("v", &[3, 7])],
        17,
    );
    let (packed, plain) = import_both(&m);
    let text = &packed.sched_text;
    assert_eq!(count_kind(text, "PackedGemm"), 3, "{text}");
    assert_eq!(param_lines(text).len(), 2, "{text}");
    assert_eq!(text.matches("w: w.packed,").count(), 2, "{text}");
    let (x, x2) = (values(8, 6), values(12, 7));
    let outs = ["y", "z", "v"];
    let p = run("prepack-shared", &packed, &[("x", &x), ("x2", &x2)], &outs);
    let u = run("prepack-shared-plain", &plain, &[("x", &x), ("x2", &x2)], &outs);
    for (i, name) in outs.iter().enumerate() {
        assert_close(&p[i], &u[i], 1e-5, name);
    }
}

#[test]
fn a_gemm_with_bias_and_relu_is_one_packed_product() {
    // Gemm(transB) lowers to a product and an in-place bias add; the Relu
    // after it becomes in place too: all three become one PackedGemm.
    let (wt, b) = (values(6 * 5, 21), values(6, 22));
    let nodes = vec![
        node("Gemm", "fc", &["x", "wt", "b"], &["h"], vec![attr_i("transB", 1)]),
        node("Relu", "relu", &["h"], &["y"], vec![]),
    ];
    let m = model(
        nodes,
        vec![init_raw("wt", &[6, 5], &wt), init_raw("b", &[6], &b)],
        vec![vi("x", &[2, 5])],
        vec![vi("y", &[2, 6])],
        17,
    );
    let (packed, plain) = import_both(&m);
    let text = &packed.sched_text;
    assert_eq!(count_kind(text, "PackedGemm"), 1, "{text}");
    assert!(text.contains("m: 2, k: 5, n: 6, act: relu }"), "{text}");
    assert_eq!(packed.report.thunks, 1, "{text}");
    let x = values(10, 23);
    let p = run("prepack-gemm-relu", &packed, &[("x", &x)], &["y"]);
    let u = run("prepack-gemm-relu-plain", &plain, &[("x", &x)], &["y"]);
    assert_close(&p[0], &u[0], 1e-5, "y");
    assert!(p[0].iter().all(|v| *v >= 0.0));
}
