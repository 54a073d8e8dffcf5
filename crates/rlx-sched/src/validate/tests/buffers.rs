//! The header and the buffer table.

use std::path::Path;

use super::*;
use crate::schedule::{Role, Segment};

const COPY_XY: &str = "input x: f32[4] @ arena+0\noutput y: f32[4] @ arena+64\n\nCopy { src: x, dst: y, len: 4 }\n";

fn with_header(arena: &str, body: &str) -> String {
    format!(
        "rlx-sched 1\nmodel t\narena {arena}\nmask_threshold 0.5\nmask_neg_inf -1000000000.0\nscore_skip 0.0\n\n{body}"
    )
}

fn header_errors(arena: &str, body: &str) -> Vec<String> {
    match check_in(&with_header(arena, body), Path::new(".")) {
        Ok(_) => panic!("expected errors"),
        Err(d) => d.0.iter().map(|d| d.message.clone()).collect(),
    }
}

#[test]
fn a_valid_schedule_is_built_in_file_order() {
    let c = assert_clean(
        "input x: f32[2, 4] @ arena+0\nscratch t: f32[8] @ arena+64\noutput y: f32[4] @ arena+128\n\n\
         Copy { src: x, dst: t, len: 8 }\nCopy { src: t+16, dst: y, len: 4 }\n",
    );
    let s = &c.schedule;
    assert_eq!(s.model, "t");
    assert_eq!((s.arena_size, s.arena_align), (4096, 64));
    assert_eq!(s.buffers.iter().map(|b| b.name.as_str()).collect::<Vec<_>>(), ["x", "t", "y"]);
    assert_eq!(s.buffers[0].role, Role::Input);
    assert_eq!(s.nodes.len(), 2);
    assert_eq!(s.nodes[1].line, 13);
    let ops = s.nodes[1].thunk.operands();
    // The view `t+16` is the buffer's offset plus 16, still naming `t`.
    assert_eq!((ops[0].1.segment, ops[0].1.offset, ops[0].1.buffer), (Segment::Arena, 80, Some(1)));
    assert_eq!((ops[1].1.offset, ops[1].1.buffer), (128, Some(2)));
    assert_eq!(s.params.mask_threshold, 0.5);
    assert!(s.weights.is_none());
    let src = format!("{}\n{}", header(4096), "input x: f32[2, 4] @ arena+0\nscratch t: f32[8] @ arena+64\noutput y: f32[4] @ arena+128\n\nCopy { src: x, dst: t, len: 8 }\nCopy { src: t+16, dst: y, len: 4 }\n");
    assert_eq!(s.source_sha256, crate::sha256_hex(src.as_bytes()));
}

#[test]
fn header_values_are_checked() {
    let errs = header_errors("4096 align 32", COPY_XY);
    assert!(errs.iter().any(|e| e.contains("alignment 32")), "{errs:?}");
    let errs = header_errors("4096 align 96", COPY_XY);
    assert!(errs.iter().any(|e| e.contains("alignment 96")), "{errs:?}");
    let errs = header_errors("18446744073709551615 align 64", COPY_XY);
    assert!(errs.iter().any(|e| e.contains("too large")), "{errs:?}");
    let errs = header_errors("0 align 64", COPY_XY);
    assert!(errs.iter().any(|e| e.contains("the arena is empty, but 2 buffers")), "{errs:?}");
    assert!(check_in(&with_header("4096 align 128", COPY_XY), Path::new(".")).is_ok());
}

#[test]
fn version_and_nan_parameters_are_errors() {
    let src = with_header("4096 align 64", COPY_XY).replace("mask_threshold 0.5", "mask_threshold nan");
    let mut ast = parse(&src).expect("parses");
    // The parser only reads version 1; the validator checks it too.
    ast.header.version.value = 2;
    let d = validate(&ast, &ValidateOptions::new(String::new(), Path::new("."))).unwrap_err();
    let msgs: Vec<_> = d.0.iter().map(|d| d.message.as_str()).collect();
    assert!(msgs.contains(&"unsupported format version 2"), "{msgs:?}");
    assert!(msgs.contains(&"`mask_threshold` is nan"), "{msgs:?}");
}

#[test]
fn names_are_unique() {
    let d = diagnostics("input x: f32[4] @ arena+0\nscratch x: f32[4] @ arena+64\noutput y: f32[4] @ arena+128\n\nCopy { src: x, dst: y, len: 4 }\n");
    let dup = d.iter().find(|d| d.message == "buffer `x` is declared twice").expect("duplicate reported");
    assert_eq!(dup.label.as_deref(), Some("first declared on line 8"));
}

#[test]
fn roles_live_in_their_segment() {
    assert_error("param w: f32[4] @ arena+0\n", &["`param` buffer `w` must live in the weights segment"]);
    assert_error("scratch s: f32[4] @ weights+0\n", &["scratch buffer `s` cannot live in the weights segment"]);
}

#[test]
fn weights_buffers_need_a_weights_line() {
    assert_one_error(
        "param w: f32[4] @ weights+0\nparam v: f32[4] @ weights+64\n",
        &["buffer `w` (and 1 more buffer) is in the weights segment", "no `weights` line"],
    );
}

#[test]
fn buffers_stay_inside_the_arena() {
    assert_one_error(
        "scratch s: f32[8] @ arena+4088\n",
        &["buffer `s` (arena bytes 4088..4120) ends past the arena (4096 bytes)"],
    );
    assert_one_error("scratch s: f32[1] @ arena+18446744073709551612\n", &["ends past the end of memory"]);
    assert_one_error("scratch s: f32[4611686018427387904, 4] @ arena+0\n", &["buffer `s` is too large"]);
    // A zero-sized buffer at the very end is fine.
    assert_clean("scratch s: f32[0] @ arena+4096\n");
}

#[test]
fn buffers_are_aligned_to_their_dtype() {
    assert_one_error(
        "scratch s: f32[4] @ arena+6\n",
        &["buffer `s` at arena offset 6 is not aligned to 4 bytes (f32)"],
    );
    assert_one_error("scratch s: f64[4] @ arena+4\n", &["not aligned to 8 bytes (f64)"]);
    assert_clean("scratch s: u8[4] @ arena+3\nscratch t: f16[4] @ arena+6\n");
}

#[test]
fn only_scratch_buffers_share_bytes() {
    assert_clean("scratch a: f32[8] @ arena+0\nscratch b: f32[8] @ arena+16\n");
    let d = diagnostics(
        "input x: f32[8] @ arena+0\nscratch a: f32[8] @ arena+16\noutput y: f32[4] @ arena+28\n\nCopy { src: x, dst: y, len: 4 }\n",
    );
    let msgs: Vec<_> = d.iter().filter(|d| d.is_error()).map(|d| d.message.as_str()).collect();
    assert_eq!(
        msgs,
        [
            "scratch buffer `a` overlaps input buffer `x` (arena bytes 0..32)",
            "output buffer `y` overlaps input buffer `x` (arena bytes 0..32)",
            "output buffer `y` overlaps scratch buffer `a` (arena bytes 16..48)",
        ]
    );
}

#[test]
fn an_arena_over_the_limit_is_a_warning() {
    let src = with_header("68719476736 align 64", COPY_XY);
    let c = check_in(&src, Path::new(".")).expect("valid");
    let w = warnings(&c);
    assert_eq!(w.len(), 1, "{w:?}");
    assert_eq!(
        w[0].message,
        "arena of 68719476736 bytes is larger than 4294967296 bytes: running the model needs that much memory at start-up"
    );
    assert!(w[0].hint.as_deref().is_some_and(|h| h.contains("--max-arena BYTES")));
    // At the limit, or under a raised one: no warning.
    let at_limit = with_header(&format!("{} align 64", super::super::Policy::DEFAULT_MAX_ARENA), COPY_XY);
    assert!(check_in(&at_limit, Path::new(".")).expect("valid").warnings.is_empty());
    let ast = parse(&src).expect("parses");
    let policy = super::super::Policy::default().with_max_arena(1 << 40);
    let c = validate(&ast, &ValidateOptions::new(String::new(), Path::new(".")).with_policy(policy)).expect("valid");
    assert!(c.warnings.is_empty(), "{:?}", c.warnings);
}
