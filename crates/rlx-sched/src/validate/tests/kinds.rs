//! Operand resolution and the per-kind extent rules.

use super::*;
use crate::thunk::ThunkKind;
use crate::validate::extents;

/// Four 1 KiB buffers: two inputs, a scratch and an output.
const BUFS: &str = "input a: f32[256] @ arena+0\ninput b: f32[256] @ arena+1024\n\
                    scratch c: f32[256] @ arena+2048\noutput y: f32[256] @ arena+3072\n\n";

/// `thunk` over [`BUFS`], plus a copy so the output is always written.
fn body(thunk: &str) -> String {
    format!("{BUFS}Copy {{ src: a, dst: y, len: 256 }}\n{thunk}\n")
}

fn one_error(thunk: &str, needles: &[&str]) {
    assert_one_error(&body(thunk), needles);
}

fn some_error(thunk: &str, needles: &[&str]) {
    assert_error(&body(thunk), needles);
}

fn clean(thunk: &str) {
    assert_clean(&body(thunk));
}

#[test]
fn every_kind_has_one_access_per_operand() {
    let path = cases_dir().join("ok/validate_all_kinds.sched");
    let text = std::fs::read_to_string(&path).expect("all-kinds case");
    let ast = parse(&text).expect("all-kinds case parses");
    let mut seen: Vec<ThunkKind> = ast.thunks.iter().map(|t| t.thunk.kind()).collect();
    seen.sort();
    seen.dedup();
    assert_eq!(seen, ThunkKind::ALL, "ok/validate_all_kinds.sched must use every kind");
    for decl in &ast.thunks {
        let rules = extents::rules(&decl.thunk);
        assert!(rules.issues.is_empty(), "line {}: {:?}", decl.line, rules.issues);
        assert_eq!(rules.accesses.len(), decl.thunk.operands().len(), "line {}", decl.line);
    }
}

#[test]
fn operands_resolve_with_suggestions() {
    let d = diagnostics(&body("Copy { src: bb, dst: c, len: 4 }"));
    assert_eq!(d.len(), 1);
    assert_eq!(d[0].message, "unknown buffer `bb`");
    assert_eq!(d[0].hint.as_deref(), Some("did you mean `b`?"));
    let d = diagnostics(&body("Copy { src: zzz_unrelated, dst: c, len: 4 }"));
    assert!(d[0].hint.as_deref().is_some_and(|h| h.starts_with("declare it")));
    one_error(
        "Copy { src: b+1028, dst: c, len: 1 }",
        &["view `b+1028` starts past the end of buffer `b` (1024 bytes)"],
    );
    one_error("Copy { src: @5000, dst: c, len: 1 }", &["raw offset `@5000` is past the end of the arena (4096 bytes)"]);
}

#[test]
fn accesses_stay_inside_buffers_and_segments() {
    let d = diagnostics(&body("Sgemm { a: a, b: b, c: c, m: 16, k: 32, n: 4 }"));
    assert_eq!(d.len(), 1, "{d:#?}");
    assert_eq!(d[0].message, "`a` reads 2048 bytes, but buffer `a` has 1024");
    assert_eq!(d[0].hint.as_deref(), Some("Sgemm reads m*k = 512 f32 elements at `a`"));
    one_error(
        "Copy { src: b+1000, dst: c, len: 8 }",
        &["`src` reads 32 bytes from byte 1000 of buffer `b`, which has 1024"],
    );
    one_error(
        "Copy { src: a, dst: @4000, len: 32 }",
        &["`dst` writes arena bytes 4000..4128, past the end of the arena (4096 bytes)"],
    );
    // A view or raw offset exactly at the end with nothing to touch is fine.
    clean("Copy { src: b+1024, dst: @4096, len: 0 }");
}

#[test]
fn operands_are_aligned_and_typed() {
    one_error(
        "Copy { src: @2, dst: c, len: 1 }",
        &["`src` at arena offset 2 is not aligned to 4 bytes (4-byte elements)"],
    );
    one_error(
        "SgemmF16 { a: a, b: b, c: c, m: 1, k: 4, n: 4 }",
        &["`b` of SgemmF16 must be f16 data, but buffer `b` is f32"],
    );
    one_error(
        "Cast { src: a, dst: c, len: 4, from: f32, to: i64 }",
        &["`dst` of Cast must be i64 data, but buffer `c` is f32"],
    );
    one_error(
        "Compare { lhs: a, rhs: b, dst: c, len: 4, op: lt, inputs_i64: false, inputs_elem_bytes: 4, dst_elem_bytes: 1, lhs_scalar: false, rhs_scalar: false, lhs_len: 4, rhs_len: 4, out_dims_bcast: [], bcast_lhs_strides: [], bcast_rhs_strides: [] }",
        &["`dst` of Compare must be bool or u8 data"],
    );
    // Byte movers take any dtype of the element size; 16-byte elements any.
    clean("Narrow { src: a, dst: c, outer: 2, src_stride: 4, dst_stride: 4, inner: 4, elem_bytes: 16 }");
    some_error(
        "Narrow { src: a, dst: c, outer: 2, src_stride: 4, dst_stride: 4, inner: 4, elem_bytes: 8 }",
        &["`src` of Narrow must be 8-byte data, but buffer `a` is f32"],
    );
}

#[test]
fn overflowing_extents_are_errors_not_panics() {
    some_error(
        "Sgemm { a: a, b: b, c: c, m: 4294967296, k: 4294967296, n: 1 }",
        &["the extent of `a` (m*k) overflows"],
    );
    some_error(
        "Attention { q: a, k: b, v: b, mask: none, out: c, batch: 4294967296, seq: 4294967296, kv_seq: 1, heads: 1, head_dim: 1, v_head_dim: 1, mask_kind: none, scale: 1.0, softcap: 0.0, q_row_stride: 1, k_row_stride: 1, v_row_stride: 1, bhsd: false, kv_heads: 1 }",
        &["overflows"],
    );
    some_error(
        "Transpose { src: a, dst: c, in_total: 4, out_dims: [4294967296, 4294967296, 2], in_strides: [1, 1, 1], elem_bytes: 4 }",
        &["computing with `out_dims` overflows"],
    );
    some_error(
        "Attention { q: a, k: b, v: b, mask: none, out: c, batch: 1, seq: 65536, kv_seq: 4294967296, heads: 4294967296, head_dim: 0, v_head_dim: 0, mask_kind: none, scale: 1.0, softcap: 0.0, q_row_stride: 0, k_row_stride: 0, v_row_stride: 0, bhsd: true, kv_heads: 1 }",
        &["the scratch this thunk needs"],
    );
}

#[test]
fn attention_fields_are_consistent() {
    let att = |fields: &str| {
        format!("Attention {{ q: a, k: b, v: b, out: c, batch: 1, seq: 4, kv_seq: 4, head_dim: 4, v_head_dim: 4, scale: 0.5, softcap: 0.0, q_row_stride: 16, k_row_stride: 16, v_row_stride: 16, bhsd: false, {fields} }}")
    };
    clean(&att("heads: 4, kv_heads: 2, mask: none, mask_kind: causal"));
    one_error(
        &att("heads: 3, kv_heads: 2, mask: none, mask_kind: none"),
        &["`heads` 3 is not a multiple of `kv_heads` 2"],
    );
    one_error(&att("heads: 4, kv_heads: 0, mask: none, mask_kind: none"), &["`kv_heads` must be at least 1"]);
    one_error(
        &att("heads: 4, kv_heads: 4, mask: none, mask_kind: custom"),
        &["mask kind `custom` reads a mask, but `mask` is `none`"],
    );
    one_error(&att("heads: 4, kv_heads: 4, mask: a, mask_kind: causal"), &["mask kind `causal` reads no mask"]);
    // Custom: batch*kv_seq floats; bias: batch*heads*seq*kv_seq.
    clean(&att("heads: 4, kv_heads: 4, mask: a+1008, mask_kind: custom"));
    one_error(&att("heads: 4, kv_heads: 4, mask: a+1008, mask_kind: bias"), &["`mask` reads 256 bytes from byte 1008"]);
    one_error(
        &att("heads: 8, kv_heads: 1, mask: none, mask_kind: none"),
        &["`q_row_stride` 16 is smaller than a row of heads*head_dim = 32 elements"],
    );
    some_error(
        &att("heads: 4, kv_heads: 4, mask: none, mask_kind: none").replace("scale: 0.5", "scale: inf"),
        &["`scale` must be a finite number"],
    );
    some_error(
        &att("heads: 4, kv_heads: 4, mask: none, mask_kind: none").replace("softcap: 0.0", "softcap: -1.0"),
        &["`softcap` must not be negative"],
    );
}

#[test]
fn attention_extents_follow_the_layout() {
    // [B, S, H, D] with a fused QKV row of 3*H*D: q, k, v are views into it.
    let qkv = "Attention { q: a, k: a+32, v: a+64, mask: none, out: c, batch: 2, seq: 4, kv_seq: 4, heads: 2, head_dim: 4, v_head_dim: 4, mask_kind: none, scale: 0.5, softcap: 0.0, q_row_stride: 24, k_row_stride: 24, v_row_stride: 24, bhsd: false, kv_heads: 2 }";
    clean(qkv);
    // v reads (2*4-1)*24 + 8 = 176 floats = 704 bytes from byte 64: fits;
    // one more row does not.
    some_error(
        &qkv.replace("seq: 4, kv_seq: 4", "seq: 4, kv_seq: 6"),
        &["`v` reads 1088 bytes from byte 64 of buffer `a`"],
    );
    // [B, H, S, D] is dense and ignores the strides; GQA shares kv heads.
    clean("Attention { q: a, k: b, v: b, mask: none, out: c, batch: 1, seq: 8, kv_seq: 8, heads: 4, head_dim: 8, v_head_dim: 8, mask_kind: none, scale: 0.5, softcap: 0.0, q_row_stride: 0, k_row_stride: 0, v_row_stride: 0, bhsd: true, kv_heads: 1 }");
    some_error(
        "Attention { q: a, k: b, v: b, mask: none, out: c, batch: 1, seq: 8, kv_seq: 8, heads: 4, head_dim: 8, v_head_dim: 8, mask_kind: none, scale: 0.5, softcap: 0.0, q_row_stride: 0, k_row_stride: 0, v_row_stride: 0, bhsd: true, kv_heads: 8 }",
        &["`heads` 4 is not a multiple of `kv_heads` 8"],
    );
}

#[test]
fn convolution_and_pooling_shapes() {
    let conv = |fields: &str| {
        format!("Conv2D {{ x: a, w: b, bias: none, out: c, n: 1, c_in: 2, h: 4, w_in: 4, kh: 3, kw: 3, sh: 1, sw: 1, dh: 1, dw: 1, act: identity, {fields} }}")
    };
    clean(&conv("c_out: 2, h_out: 4, w_out: 4, ph: 1, pw: 1, groups: 2"));
    // Ceil mode: windows start at 0, 2, 4 of a padded 5.
    clean(&conv("c_out: 2, h_out: 3, w_out: 3, ph: 1, pw: 1, groups: 1").replace("sh: 1, sw: 1", "sh: 2, sw: 2"));
    one_error(
        &conv("c_out: 3, h_out: 4, w_out: 4, ph: 1, pw: 1, groups: 2"),
        &["`groups` 2 does not divide `c_out` 3"],
    );
    some_error(&conv("c_out: 2, h_out: 4, w_out: 4, ph: 1, pw: 1, groups: 0"), &["`groups` must be at least 1"]);
    one_error(
        &conv("c_out: 2, h_out: 6, w_out: 4, ph: 1, pw: 1, groups: 1"),
        &["`h_out` 6 is too large: the last window starts at padded position 5, past the input (h + ph = 5)"],
    );
    let pool = |fields: &str| {
        format!("Pool2D {{ src: a, dst: c, n: 1, c: 2, h: 4, w: 4, kh: 2, kw: 2, sh: 2, sw: 2, {fields} }}")
    };
    clean(&pool("h_out: 2, w_out: 2, ph: 0, pw: 0, kind: max, count_include_pad: false"));
    clean(&pool("h_out: 3, w_out: 3, ph: 1, pw: 1, kind: mean, count_include_pad: true"));
    one_error(
        &pool("h_out: 2, w_out: 2, ph: 0, pw: 0, kind: max, count_include_pad: true"),
        &["only applies to mean pooling"],
    );
    one_error(
        &pool("h_out: 2, w_out: 2, ph: 2, pw: 0, kind: max, count_include_pad: false"),
        &["padding `ph` 2 must be smaller than the kernel `kh` 2"],
    );
    one_error(
        &pool("h_out: 3, w_out: 2, ph: 0, pw: 0, kind: max, count_include_pad: false"),
        &["`h_out` 3 is too large"],
    );
}

#[test]
fn elementwise_fields_are_consistent() {
    let bin = |fields: &str| format!("BinaryFull {{ lhs: a, rhs: b, dst: c, op: add, {fields} }}");
    clean(&bin("len: 8, lhs_len: 8, rhs_len: 4, out_dims_bcast: [], bcast_lhs_strides: [], bcast_rhs_strides: [], elem_bytes: 4"));
    clean(&bin("len: 8, lhs_len: 8, rhs_len: 2, out_dims_bcast: [2, 4], bcast_lhs_strides: [4, 1], bcast_rhs_strides: [1, 0], elem_bytes: 4"));
    one_error(
        &bin("len: 8, lhs_len: 8, rhs_len: 3, out_dims_bcast: [], bcast_lhs_strides: [], bcast_rhs_strides: [], elem_bytes: 4"),
        &["`rhs_len` 3 does not divide `len` 8"],
    );
    one_error(
        &bin("len: 8, lhs_len: 8, rhs_len: 2, out_dims_bcast: [2, 3], bcast_lhs_strides: [4, 1], bcast_rhs_strides: [1, 0], elem_bytes: 4"),
        &["`out_dims_bcast` holds 6 elements, but `len` is 8"],
    );
    one_error(
        &bin("len: 8, lhs_len: 8, rhs_len: 2, out_dims_bcast: [2, 4], bcast_lhs_strides: [4, 1], bcast_rhs_strides: [0, 1], elem_bytes: 4"),
        &["`bcast_rhs_strides` reach element 3, but `rhs_len` is 2"],
    );
    one_error(
        &bin("len: 8, lhs_len: 8, rhs_len: 8, out_dims_bcast: [8], bcast_lhs_strides: [1, 0], bcast_rhs_strides: [1], elem_bytes: 4"),
        &["`bcast_lhs_strides` has 2 entries, but `out_dims_bcast` has 1"],
    );
    one_error(
        &bin("len: 8, lhs_len: 8, rhs_len: 8, out_dims_bcast: [], bcast_lhs_strides: [1], bcast_rhs_strides: [], elem_bytes: 4"),
        &["`bcast_lhs_strides` is given without `out_dims_bcast`"],
    );
    one_error(
        &bin("len: 8, lhs_len: 8, rhs_len: 8, out_dims_bcast: [], bcast_lhs_strides: [], bcast_rhs_strides: [], elem_bytes: 2"),
        &["element size 2 is not supported"],
    );
    one_error(
        "ElementwiseRegion { inputs: [a, b], dst: c, len: 4, steps: [add(in2)] }",
        &["a step reads `in2`, but the region has 2 input(s)"],
    );
    one_error(
        "ElementwiseRegion { inputs: [], dst: c, len: 4, steps: [relu] }",
        &["ElementwiseRegion needs at least one input"],
    );
    one_error("Fma { a: a, b: b, c: b, dst: c, len: 4, elem_bytes: 2 }", &["element size 2"]);
    let cmp = |fields: &str| {
        format!("Compare {{ lhs: a, rhs: b, dst: c, len: 4, op: eq, dst_elem_bytes: 4, out_dims_bcast: [], bcast_lhs_strides: [], bcast_rhs_strides: [], {fields} }}")
    };
    clean(&cmp("inputs_i64: false, inputs_elem_bytes: 4, lhs_scalar: false, rhs_scalar: true, lhs_len: 4, rhs_len: 1"));
    one_error(
        &cmp("inputs_i64: true, inputs_elem_bytes: 4, lhs_scalar: false, rhs_scalar: false, lhs_len: 4, rhs_len: 4"),
        &["`inputs_i64` is true"],
    );
    one_error(
        &cmp("inputs_i64: false, inputs_elem_bytes: 4, lhs_scalar: true, rhs_scalar: false, lhs_len: 4, rhs_len: 4"),
        &["`lhs_scalar` is set, so `lhs_len` must be 1, not 4"],
    );
    one_error(
        &cmp("inputs_i64: false, inputs_elem_bytes: 4, lhs_scalar: false, rhs_scalar: false, lhs_len: 2, rhs_len: 4"),
        &["`lhs_len` is 2"],
    );
    let sel = |fields: &str| {
        format!("Where {{ cond: a, on_true: b, on_false: b, dst: c, len: 4, cond_scalar: false, true_scalar: false, false_scalar: true, {fields} }}")
    };
    clean(&sel("elem_bytes: 4, cond_elem_bytes: 4"));
    one_error(&sel("elem_bytes: 2, cond_elem_bytes: 4"), &["element size 2 is not supported: expected 4 or 8"]);
    one_error(&sel("elem_bytes: 4, cond_elem_bytes: 2"), &["element size 2"]);
}

#[test]
fn movement_and_reduction_fields_are_consistent() {
    one_error(
        "Transpose { src: a, dst: c, in_total: 8, out_dims: [4, 2], in_strides: [1, 5], elem_bytes: 4 }",
        &["`in_strides` reach element 8, but `in_total` is 8"],
    );
    one_error(
        "Transpose { src: a, dst: c, in_total: 8, out_dims: [8], in_strides: [1, 1], elem_bytes: 4 }",
        &["`in_strides` has 2 entries"],
    );
    one_error(
        "Transpose { src: a, dst: c, in_total: 8, out_dims: [8], in_strides: [1], elem_bytes: 3 }",
        &["element size 3"],
    );
    clean("Transpose { src: a, dst: c, in_total: 8, out_dims: [0, 4], in_strides: [9, 9], elem_bytes: 4 }");
    one_error(
        "Concat { inputs: [a, b], dst: c, outer: 2, inner: [4], elem_bytes: 4 }",
        &["`inner` has 1 entries, but there are 2 inputs"],
    );
    one_error(
        "Gather { table: a, indices: b, dst: c, num_indices: 2, row_len: 4, vocab: 4, index_dtype: f64 }",
        &["`index_dtype` f64 is not supported: expected one of i64, i32, f32"],
    );
    one_error(
        "Narrow { src: a, dst: c, outer: 2, src_stride: 4, dst_stride: 2, inner: 4, elem_bytes: 4 }",
        &["`dst_stride` 2 is smaller than `inner` 4"],
    );
    one_error(
        "KvAppend { src: a, cache: c, batch: 1, new_len: 2, max_len: 4, row: 4, pos: 3, elem_bytes: 4 }",
        &["`pos` 3 + `new_len` 2 is past `max_len` 4"],
    );
    one_error(
        "Rope { x: a, cos: b, sin: b, out: c, batch: 1, seq: 2, heads: 2, head_dim: 3, interleaved: true }",
        &["`head_dim` 3 is odd"],
    );
    one_error(
        "ArgReduce { src: a, dst: c, outer: 2, axis_dim: 0, inner: 1, op: max, select_last: false, indices_i64: false }",
        &["`axis_dim` must be at least 1"],
    );
    one_error(
        "TopK { src: a, dst: c, values: none, outer: 2, axis_dim: 4, k: 5, largest: true, indices_i64: false }",
        &["`k` 5 is larger than `axis_dim` 4"],
    );
    one_error("LayerNorm { x: a, g: b, b: none, out: c, rows: 2, h: 4, eps: nan }", &["`eps` must be a finite number"]);
    one_error("RmsNorm { x: a, g: b, out: c, rows: 2, h: 4, eps: -1e-5 }", &["`eps` must not be negative"]);
}

#[test]
fn gather_and_scatter_shapes_are_consistent() {
    let ge = |dims: &str, idx: &str, axis: usize| {
        format!(
            "GatherElements {{ data: a, indices: b, dst: c, data_dims: {dims}, index_dims: {idx}, axis: {axis}, elem_bytes: 4, index_dtype: i32 }}"
        )
    };
    one_error(&ge("[2, 4]", "[8]", 0), &["`index_dims` has 1 entries, but `data_dims` has 2"]);
    one_error(&ge("[2, 4]", "[2, 4]", 2), &["`axis` 2 is out of range for rank 2"]);
    one_error(&ge("[2, 4]", "[3, 4]", 1), &["`index_dims[0]` 3 is larger than `data_dims[0]` 2"]);
    one_error(&ge("[]", "[]", 0), &["`data_dims` is empty"]);
    // Only the axis may be longer than the data's (raw operands carry no
    // dtype, so i32 indices can sit in the f32 test buffers).
    clean("GatherElements { data: a, indices: @1024, dst: c, data_dims: [2, 4], index_dims: [2, 9], axis: 1, elem_bytes: 4, index_dtype: i32 }");
    one_error(&ge("[0, 18446744073709551615, 2]", "[0, 1, 1]", 0), &["computing with `data_dims` overflows"]);
    one_error(
        "GatherNd { data: a, indices: b, dst: c, batch: 1, lookups: 2, data_dims: [4], slice_len: 4, elem_bytes: 4, index_dtype: f32 }",
        &["`index_dtype` f32 is not supported: expected one of i64, i32"],
    );
    one_error(
        "GatherNd { data: a, indices: b, dst: c, batch: 1, lookups: 2, data_dims: [4], slice_len: 4, elem_bytes: 3, index_dtype: i32 }",
        &["element size 3"],
    );
    one_error(
        "ScatterElements { data: a, indices: b, updates: b, dst: c, data_dims: [8], index_dims: [8], axis: 0, reduction: add, dtype: f16, index_dtype: i32 }",
        &["`reduction` needs f32, f64, i32, i64 or bool data; f16 data takes `reduction: none` only"],
    );
    one_error(
        "ScatterNd { data: a, indices: b, updates: b, dst: c, lookups: 1, data_dims: [18446744073709551615, 2], slice_len: 1, reduction: none, dtype: f32, index_dtype: i32 }",
        &["computing with `data_dims` overflows"],
    );
    // `data` may be `dst` itself, never a part of it; `updates` never.
    clean("ScatterNd { data: y, indices: @1024, updates: a, dst: y, lookups: 2, data_dims: [8], slice_len: 4, reduction: max, dtype: f32, index_dtype: i32 }");
    some_error(
        "ScatterNd { data: y+4, indices: @1024, updates: a, dst: y, lookups: 2, data_dims: [8], slice_len: 4, reduction: max, dtype: f32, index_dtype: i32 }",
        &["overlap"],
    );
    some_error(
        "ScatterNd { data: a, indices: @1024, updates: y, dst: y, lookups: 2, data_dims: [8], slice_len: 4, reduction: max, dtype: f32, index_dtype: i32 }",
        &["overlap"],
    );
}

#[test]
fn grid_sample_shapes_are_consistent() {
    // `a` holds 256 f32: src 1*2*4*4 = 32, grid 1*3*5*2 = 30.
    let gs = |dims: &str| {
        format!(
            "GridSample {{ src: a, grid: b, dst: c, n: 1, c: 2, {dims}, mode: linear, padding: zeros, align_corners: false }}"
        )
    };
    clean(&gs("in_dims: [4, 4], out_dims: [3, 5]"));
    clean(&gs("in_dims: [16], out_dims: [7]"));
    clean(&gs("in_dims: [2, 4, 4], out_dims: [1, 3, 5]"));
    one_error(&gs("in_dims: [], out_dims: []"), &["`in_dims` has 0 entries; GridSample samples 1 to 3 spatial axes"]);
    one_error(
        &gs("in_dims: [1, 1, 2, 2], out_dims: [1, 1, 2, 2]"),
        &["`in_dims` has 4 entries; GridSample samples 1 to 3 spatial axes"],
    );
    one_error(&gs("in_dims: [4, 4], out_dims: [15]"), &["`out_dims` has 1 entries, but `in_dims` has 2"]);
    one_error(&gs("in_dims: [0, 4], out_dims: [3, 5]"), &["`in_dims[0]` is 0: the output has samples to read"]);
    // No output, nothing to read: an empty input axis is fine.
    clean(&gs("in_dims: [0, 4], out_dims: [0, 5]"));
    // The grid holds `rank` coordinates per output point: 3 * 50 * 2 > 256.
    some_error(&gs("in_dims: [4, 4], out_dims: [3, 50]"), &["`grid`", "buffer `b`"]);
    some_error(&gs("in_dims: [4, 4], out_dims: [1, 18446744073709551615]"), &["overflows"]);
    // Inputs never overlap the output.
    some_error(
        "GridSample { src: c, grid: b, dst: c, n: 1, c: 2, in_dims: [4, 4], out_dims: [4, 4], mode: cubic, padding: border, align_corners: true }",
        &["overlap"],
    );
}

#[test]
fn pad_shapes_and_modes_are_consistent() {
    let pad = |fields: &str| format!("Pad {{ src: a, value: none, dst: c, {fields}, elem_bytes: 4 }}");
    clean(&pad("dims: [2, 3, 4], before: [0, 1, 2], after: [0, 1, 2], mode: reflect"));
    clean(&pad("dims: [4], before: [9], after: [30], mode: wrap"));
    clean(&pad("dims: [1, 2], before: [0, 40], after: [3, 0], mode: edge"));
    clean("Pad { src: a, value: b+4, dst: c, dims: [8, 8], before: [1, 0], after: [2, 3], mode: constant, elem_bytes: 4 }");
    one_error(&pad("dims: [], before: [], after: [], mode: edge"), &["`dims` is empty"]);
    one_error(
        &pad("dims: [1, 1, 1, 1, 1, 1, 1, 1, 2], before: [0, 0, 0, 0, 0, 0, 0, 0, 1], after: [0, 0, 0, 0, 0, 0, 0, 0, 1], mode: edge"),
        &["`dims` has 9 entries; Pad takes 1 to 8 axes"],
    );
    one_error(
        &pad("dims: [2, 3], before: [1], after: [0, 0], mode: edge"),
        &["`before` has 1 entries, but `dims` has 2"],
    );
    one_error(
        &pad("dims: [2, 3], before: [1, 0], after: [0], mode: edge"),
        &["`after` has 1 entries, but `dims` has 2"],
    );
    one_error(
        "Pad { src: a, value: b, dst: c, dims: [4], before: [1], after: [1], mode: edge, elem_bytes: 4 }",
        &["`value` is read in `constant` mode only, and the mode is `edge`"],
    );
    one_error(&pad("dims: [0, 3], before: [1, 0], after: [0, 0], mode: edge"), &["`dims[0]` is 0: `edge` pads copy"]);
    // The constant mode fills an empty source's padding; an empty output reads nothing.
    clean(&pad("dims: [0, 3], before: [1, 0], after: [0, 0], mode: constant"));
    clean(&pad("dims: [0, 3], before: [0, 1], after: [0, 0], mode: wrap"));
    one_error(
        &pad("dims: [2, 3], before: [0, 3], after: [0, 0], mode: reflect"),
        &["`before[1]` is 3: `reflect` pads"],
    );
    one_error(&pad("dims: [2, 3], before: [0, 0], after: [2, 0], mode: reflect"), &["`after[0]` is 2: `reflect` pads"]);
    // Pads overrunning the destination, or the source: 4 * 65 f32 > 256.
    some_error(&pad("dims: [4, 64], before: [0, 0], after: [0, 1], mode: constant"), &["`dst`", "buffer `c`"]);
    some_error(&pad("dims: [4, 65], before: [0, 0], after: [0, 0], mode: edge"), &["`src`", "buffer `a`"]);
    one_error(
        &pad("dims: [2], before: [18446744073709551615], after: [1], mode: wrap"),
        &["computing with `after` overflows"],
    );
    one_error(&pad("dims: [2], before: [1], after: [1], mode: wrap").replace("elem_bytes: 4", "elem_bytes: 3"), &["3"]);
    // The output never overlaps the source.
    some_error(
        "Pad { src: c, value: none, dst: c, dims: [4], before: [1], after: [1], mode: constant, elem_bytes: 4 }",
        &["overlap"],
    );
}

#[test]
fn field_rules_are_reported_even_when_an_operand_does_not_resolve() {
    let errs = errors(&body(
        "Rope { x: nope, cos: b, sin: b, out: c, batch: 1, seq: 2, heads: 2, head_dim: 3, interleaved: false }",
    ));
    assert_eq!(errs, ["unknown buffer `nope`", "`head_dim` 3 is odd; rotary embedding rotates pairs"]);
}

#[test]
fn recurrent_rules() {
    const RNN: &str = "Recurrent { x: a, r: b, bias: none, p: none, h0: none, c0: none, y: none, y_h: c, y_c: none, \
                       cell: rnn, seq: 2, batch: 1, hidden: 4, dirs: 1, dir: 0, reverse: false, batch_major: false, \
                       clip: inf, act_f: tanh, act_g: identity, act_h: identity }";
    // `RNN` with some fields' values replaced.
    let with = |over: &[(&str, &str)]| {
        let mut text = RNN.to_string();
        for (field, value) in over {
            let start = text.find(&format!(" {field}: ")).expect("a field") + field.len() + 3;
            let end = start + text[start..].find([',', ' ']).expect("a value");
            text.replace_range(start..end, value);
        }
        text
    };
    clean(&with(&[]));
    clean(&with(&[("dirs", "2"), ("dir", "1"), ("reverse", "true"), ("clip", "0.5"), ("y", "y")]));
    one_error(&with(&[("dirs", "3")]), &["`dirs` is 3; it must be 1 or 2"]);
    one_error(&with(&[("dir", "1")]), &["`dir` is 1; it must be below `dirs` (1)"]);
    one_error(&with(&[("clip", "0.0")]), &["`clip` is 0; it must be positive"]);
    one_error(&with(&[("clip", "nan")]), &["`clip` is NaN"]);
    one_error(&with(&[("cell", "gru"), ("p", "a")]), &["`p` is for `cell: lstm` only"]);
    one_error(&with(&[("y_c", "y")]), &["`y_c` is for `cell: lstm` only"]);
    // `r` holds packed_len(17, 17) = 544 values: past `b`'s 256.
    some_error(&with(&[("hidden", "17")]), &["`r`", "buffer `b`"]);
    // The state may not overlap an output.
    some_error(&with(&[("h0", "c")]), &["overlap"]);
}

#[test]
fn a_bidirectional_output_needs_both_directions() {
    let bufs =
        "input x: f32[2, 1, 8] @ arena+0\ninput r: f32[64] @ arena+64\noutput y: f32[2, 2, 1, 4] @ arena+320\n\n";
    let thunk = |dir: usize| {
        format!(
            "Recurrent {{ x: x, r: r, bias: none, p: none, h0: none, c0: none, y: y, y_h: none, y_c: none, \
             cell: rnn, seq: 2, batch: 1, hidden: 4, dirs: 2, dir: {dir}, reverse: false, batch_major: false, \
             clip: inf, act_f: tanh, act_g: identity, act_h: identity }}\n"
        )
    };
    assert_clean(&format!("{bufs}{}{}", thunk(0), thunk(1)));
    assert_error(&format!("{bufs}{}", thunk(0)), &["`y`"]);
}
