//! Parser details the golden files do not show: spans, lines, comments,
//! and the forms that mean the same thing.

use super::*;
use crate::ast::Target;
use crate::fields::FieldSyntax;
use crate::thunk::Thunk;
use crate::thunk::{self as kinds, LayerNorm};

const HEADER: &str =
    "rlx-sched 1\nmodel m\narena 256 align 64\nmask_threshold 0.5\nmask_neg_inf -1e9\nscore_skip 0.0\n";

fn ok(src: &str) -> Ast {
    parse(src).unwrap_or_else(|d| panic!("{}", d.render("t", src)))
}

fn messages(src: &str) -> Vec<String> {
    parse(src).expect_err("should fail").0.into_iter().map(|d| d.message).collect()
}

#[test]
fn spans_and_lines_point_at_the_text() {
    let src = format!("{HEADER}input   x: f32[2, 3] @ arena+64\n\nCopy {{ src: x+4, dst: @128, len: 2 }}\n");
    let ast = ok(&src);
    let b = &ast.buffers[0];
    assert_eq!(b.line, 7);
    assert_eq!(&src[b.name.span.range()], "x");
    assert_eq!(&src[b.dtype.span.range()], "f32");
    assert_eq!(&src[b.shape.span.range()], "[2, 3]");
    assert_eq!(&src[b.offset.span.range()], "64");
    assert_eq!(&src[b.span.range()], "input   x: f32[2, 3] @ arena+64");
    let t = &ast.thunks[0];
    assert_eq!(t.line, 9);
    assert_eq!(&src[t.kind_span.range()], "Copy");
    assert_eq!(&src[t.span.range()], "Copy { src: x+4, dst: @128, len: 2 }");
    assert_eq!(&src[t.field_span("src").range()], "x+4");
    assert_eq!(&src[t.field_span("len").range()], "2");
    let Thunk::Copy(kinds::Copy { src: s, dst, len }) = &t.thunk else { panic!("not a Copy") };
    assert_eq!(s.target, Target::Buffer { name: "x".into(), offset: 4 });
    assert_eq!(&src[s.span.range()], "x+4");
    assert_eq!(dst.target, Target::Raw { offset: 128 });
    assert_eq!(*len, 2);
    assert_eq!(&src[ast.header.mask_neg_inf.span.range()], "-1e9");
    assert_eq!(ast.header.mask_neg_inf.value, -1e9);
}

#[test]
fn equivalent_spellings_parse_alike() {
    let a = ok(&format!("{HEADER}Copy {{ src: x, dst: y, len: 2 }}\n"));
    let b = ok(&format!("{HEADER}Copy{{len:2,dst:y , src : x+0,}}   \r\n"));
    assert_eq!(a.thunks[0].thunk.to_fields(), b.thunks[0].thunk.to_fields());
    assert_eq!(crate::print(&a), crate::print(&b));
}

#[test]
fn comments_attach_to_the_item_below() {
    let src = format!(
        "// top\n{HEADER}// about x\ninput   x: f32[1] @ arena+0 // trailing\n// about nop\n\nNop {{}}\n// end\n"
    );
    let ast = ok(&src);
    assert_eq!(ast.header.leading_comments, ["top"]);
    assert_eq!(ast.buffers[0].leading_comments, ["about x", "trailing"]);
    assert_eq!(ast.thunks[0].leading_comments, ["about nop"]);
    assert_eq!(ast.trailing_comments, ["end"]);
}

#[test]
fn weights_line_is_optional_and_checked() {
    let sha = "0".repeat(64);
    let src = HEADER.replace("mask_threshold", &format!("weights \"w.safetensors\" sha256 \"{sha}\"\nmask_threshold"));
    let w = ok(&src).header.weights.expect("weights line");
    assert_eq!(w.path.value, "w.safetensors");
    assert_eq!(w.sha256.value, sha);
    assert!(ok(HEADER).header.weights.is_none());
    let upper = src.replace(&sha, &"A".repeat(64));
    assert_eq!(messages(&upper), [messages::SHA256_FORM]);
}

#[test]
fn every_bad_line_is_reported() {
    let src = format!("{HEADER}Copy {{ src: x }}\n$\nNop {{}}\nSgem {{}}\n");
    let m = messages(&src);
    assert_eq!(m.len(), 3, "{m:?}");
    assert!(m[0].contains("missing field"));
    assert!(m[1].contains('$'));
    assert!(m[2].contains("Sgem"));
}

#[test]
fn reserved_words() {
    for w in ["none", "true", "false", "inf", "nan", "in0", "in12"] {
        assert!(is_reserved(w), "{w}");
    }
    for w in ["in", "inx", "input", "in1x", "none_", "nan2", "Inf"] {
        assert!(!is_reserved(w), "{w}");
    }
}

#[test]
fn optional_operands_take_none() {
    let src = format!("{HEADER}LayerNorm {{ x: a, g: b, b: none, out: c, rows: 1, h: 4, eps: 1e-5 }}\n");
    let Thunk::LayerNorm(LayerNorm { b, .. }) = &ok(&src).thunks[0].thunk else { panic!("not a LayerNorm") };
    assert!(b.is_none());
}

#[test]
fn header_keyword_errors() {
    let no_model = HEADER.replace("model m\n", "");
    assert_eq!(messages(&no_model), ["missing header line `model`"]);
    let twice = format!("{HEADER}score_skip 1.0\n");
    assert_eq!(messages(&twice), ["duplicate header line `score_skip`"]);
    let v2 = HEADER.replace("rlx-sched 1", "rlx-sched 2");
    assert_eq!(messages(&v2), ["unsupported format version `2`"]);
}
