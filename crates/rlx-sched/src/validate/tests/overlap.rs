//! The in-place policy.

use super::*;

/// An input `x`, scratch `s` (1 KiB each, adjacent) and an output `y`.
fn body(thunks: &str) -> String {
    format!(
        "input x: f32[256] @ arena+0\nscratch s: f32[256] @ arena+1024\noutput y: f32[256] @ arena+2048\n\n\
         Copy {{ src: x, dst: s, len: 256 }}\n{thunks}\nCopy {{ src: s, dst: y, len: 256 }}\n"
    )
}

#[test]
fn gemms_and_copies_may_overlap_anywhere() {
    assert_clean(&body("Sgemm { a: s, b: s+64, c: s+32, m: 4, k: 4, n: 4 }"));
    assert_clean(&body(
        "BatchedSgemm { a: s, b: s+16, c: s+8, batch: 2, m: 2, k: 2, n: 2, a_bcast: false, b_bcast: true }",
    ));
    assert_clean(&body("FusedMmBiasAct { a: s, w: s+64, bias: x, c: s+32, m: 4, k: 4, n: 4, act: relu }"));
    assert_clean(&body("Copy { src: s, dst: s+4, len: 8 }"));
}

#[test]
fn a_fused_bias_must_not_overlap_the_output() {
    assert_one_error(
        &body("FusedMmBiasAct { a: x, w: x+64, bias: s+16, c: s, m: 4, k: 4, n: 4, act: relu }"),
        &["`bias` overlaps the output `c`; FusedMmBiasAct does not run in place"],
    );
}

#[test]
fn exact_aliases_are_allowed_where_the_kernel_supports_them() {
    assert_clean(&body("Softmax { src: s, dst: s, rows: 4, cols: 8 }"));
    assert_clean(&body("Activation { src: s, dst: s, len: 8, act: relu }"));
    assert_clean(&body("LayerNorm { x: s, g: x, b: none, out: s, rows: 2, h: 4, eps: 1e-5 }"));
    assert_clean(&body("Cast { src: s, dst: s, len: 4, from: f32, to: i32 }".replace("dst: s", "dst: @1024").as_str()));
    let d = diagnostics(&body("Softmax { src: s, dst: s+4, rows: 4, cols: 8 }"));
    let e = d.iter().find(|d| d.is_error()).expect("error");
    assert_eq!(
        e.message,
        "`src` overlaps the output `dst`; Softmax runs in place only when both are exactly the same bytes"
    );
    assert_eq!(e.label.as_deref(), Some("arena bytes 1024..1152; `dst` is 1028..1156"));
}

#[test]
fn other_kinds_never_overlap() {
    assert_one_error(
        &body("Transpose { src: s, dst: s, in_total: 8, out_dims: [2, 4], in_strides: [1, 2], elem_bytes: 4 }"),
        &["`src` overlaps the output `dst`; Transpose does not run in place"],
    );
    assert_one_error(
        &body("Concat { inputs: [x, s+64], dst: s, outer: 1, inner: [4, 32], elem_bytes: 4 }"),
        &["`inputs[1]` overlaps the output `dst`"],
    );
    // A cast that changes the element size cannot run in place.
    assert_one_error(
        &body("Cast { src: @1024, dst: @1024, len: 4, from: f32, to: f16 }"),
        &["Cast does not run in place"],
    );
}

#[test]
fn conditional_aliases_follow_the_fields() {
    // BinaryFull: only an operand read element for element.
    assert_clean(&body("BinaryFull { lhs: s, rhs: x, dst: s, len: 8, lhs_len: 8, rhs_len: 4, op: add, out_dims_bcast: [], bcast_lhs_strides: [], bcast_rhs_strides: [], elem_bytes: 4 }"));
    assert_one_error(
        &body("BinaryFull { lhs: x, rhs: s, dst: s, len: 8, lhs_len: 8, rhs_len: 4, op: add, out_dims_bcast: [], bcast_lhs_strides: [], bcast_rhs_strides: [], elem_bytes: 4 }"),
        &["`rhs` overlaps the output `dst`; BinaryFull does not run in place"],
    );
    // A permuting broadcast reads other elements than it writes.
    assert_one_error(
        &body("BinaryFull { lhs: s, rhs: x, dst: s, len: 8, lhs_len: 8, rhs_len: 8, op: add, out_dims_bcast: [2, 4], bcast_lhs_strides: [1, 2], bcast_rhs_strides: [4, 1], elem_bytes: 4 }"),
        &["`lhs` overlaps the output `dst`"],
    );
    // Where: scalar operands are read once for every element.
    assert_clean(&body("Where { cond: x, on_true: s, on_false: x, dst: s, len: 4, elem_bytes: 4, cond_elem_bytes: 4, cond_scalar: false, true_scalar: false, false_scalar: true }"));
    assert_one_error(
        &body("Where { cond: x, on_true: s, on_false: x, dst: s, len: 4, elem_bytes: 4, cond_elem_bytes: 4, cond_scalar: false, true_scalar: true, false_scalar: true }"),
        &["`on_true` overlaps the output `dst`"],
    );
}

#[test]
fn outputs_of_one_thunk_are_disjoint() {
    let d = diagnostics(&body(
        "TopK { src: x, dst: s, values: s+4, outer: 2, axis_dim: 4, k: 2, largest: true, indices_i64: false }",
    ));
    let errs: Vec<_> = d.iter().filter(|d| d.is_error()).map(|d| d.message.as_str()).collect();
    assert_eq!(errs, ["outputs `dst` and `values` overlap"]);
}
