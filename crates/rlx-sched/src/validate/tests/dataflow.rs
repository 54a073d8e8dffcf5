//! Read-before-write and output coverage.

use super::*;
use crate::diag::Severity;

const BUFS: &str = "input x: f32[8] @ arena+0\nscratch s: f32[8] @ arena+64\nscratch t: f32[8] @ arena+128\n\
                    output y: f32[8] @ arena+192\n\n";

#[test]
fn reading_what_a_later_thunk_writes_is_an_error() {
    let d = diagnostics(&format!("{BUFS}Copy {{ src: s, dst: y, len: 8 }}\nCopy {{ src: x, dst: s, len: 8 }}\n"));
    assert_eq!(d.len(), 1, "{d:#?}");
    assert_eq!(d[0].message, "`src` reads arena bytes 64..96 before anything writes them");
    assert_eq!(
        d[0].hint.as_deref(),
        Some("the thunk on line 14 writes them later, so the first run reads zeros and later runs read stale data")
    );
}

#[test]
fn updating_unwritten_bytes_in_place_is_an_error() {
    let d = diagnostics(&format!(
        "{BUFS}Activation {{ src: s, dst: s, len: 8, act: relu }}\nCopy {{ src: s, dst: y, len: 8 }}\n"
    ));
    assert_eq!(d.len(), 1, "{d:#?}");
    assert_eq!(d[0].message, "`src` reads arena bytes 64..96 before anything writes them");
    assert!(d[0].hint.as_deref().is_some_and(|h| h.starts_with("this thunk writes them")));
}

#[test]
fn reading_bytes_nothing_writes_is_a_warning() {
    let c = check(&format!("{BUFS}BinaryFull {{ lhs: x, rhs: t, dst: y, len: 8, lhs_len: 8, rhs_len: 8, op: add, out_dims_bcast: [], bcast_lhs_strides: [], bcast_rhs_strides: [], elem_bytes: 4 }}\n"))
        .expect("a warning does not fail validation");
    let w = warnings(&c);
    assert_eq!(w.len(), 1);
    assert_eq!(w[0].severity, Severity::Warning);
    assert_eq!(w[0].message, "`rhs` reads arena bytes 128..160, which nothing ever writes");
}

#[test]
fn partly_written_reads_report_the_first_gap_and_the_total() {
    // Rows 0 and 2 of t are written; reading all of it misses rows 1 and 3.
    let body = format!(
        "{BUFS}Narrow {{ src: x, dst: t, outer: 2, src_stride: 4, dst_stride: 4, inner: 2, elem_bytes: 4 }}\n\
         Copy {{ src: t, dst: y, len: 8 }}\n"
    );
    let c = check(&body).expect("valid with a warning");
    let w = warnings(&c);
    assert_eq!(w.len(), 1);
    assert_eq!(w[0].message, "`src` reads arena bytes 136..144 (16 bytes in all), which nothing ever writes");
    // A strided read of the written rows only is clean.
    assert_clean(&format!(
        "{BUFS}Narrow {{ src: x, dst: t, outer: 2, src_stride: 4, dst_stride: 4, inner: 2, elem_bytes: 4 }}\n\
         Narrow {{ src: t, dst: y, outer: 2, src_stride: 4, dst_stride: 2, inner: 2, elem_bytes: 4 }}\n\
         Copy {{ src: x+16, dst: y+16, len: 4 }}\n"
    ));
}

#[test]
fn outputs_must_be_fully_written() {
    assert_one_error(
        &format!("{BUFS}Copy {{ src: x, dst: y, len: 6 }}\n"),
        &["output `y` is not fully written: no thunk writes arena bytes 216..224 of its 32 bytes"],
    );
    // Inputs do not count: a thunk must write the output.
    assert_one_error(
        "input x: f32[8] @ arena+0\noutput y: f32[8] @ arena+64\n\nNop {}\n",
        &["output `y` is not fully written", "arena bytes 64..96"],
    );
    // KV-cache appends write rows pos..pos+new_len of each batch only.
    assert_one_error(
        "input x: f32[4] @ arena+0\noutput cache: f32[2, 4] @ arena+64\n\n\
         KvAppend { src: x, cache: cache, batch: 2, new_len: 1, max_len: 2, row: 2, pos: 1, elem_bytes: 4 }\n",
        &["no thunk writes arena bytes 64..72 (16 bytes in all) of its 32 bytes"],
    );
}

#[test]
fn dataflow_waits_for_valid_accesses() {
    // An out-of-bounds writer is reported, and its reader is not blamed.
    let errs = errors(&format!("{BUFS}Copy {{ src: @0, dst: s, len: 999 }}\nCopy {{ src: s, dst: y, len: 8 }}\n"));
    assert_eq!(errs, ["`dst` writes 3996 bytes, but buffer `s` has 32"]);
}

#[test]
fn huge_strided_accesses_stay_cheap() {
    // A million single-byte rows: bounded work, no hang.
    let body = "input x: u8[2000000] @ arena+0\noutput y: u8[2000000] @ arena+2000000\n\n\
                Narrow { src: x, dst: y, outer: 1000000, src_stride: 2, dst_stride: 2, inner: 1, elem_bytes: 1 }\n\
                Narrow { src: x+1, dst: y+1, outer: 1000000, src_stride: 2, dst_stride: 2, inner: 1, elem_bytes: 1 }\n";
    let src = format!("{}\n{body}", header(4_000_000));
    let start = std::time::Instant::now();
    let r = check_in(&src, Path::new("."));
    assert!(r.is_ok(), "{:?}", r.err());
    assert!(start.elapsed().as_secs() < 5, "took {:?}", start.elapsed());
}

#[test]
fn a_schedule_without_outputs_is_a_warning() {
    let c = check("input x: f32[4] @ arena+0\nscratch y: f32[4] @ arena+64\n\nCopy { src: x, dst: y, len: 4 }\n")
        .expect("valid");
    let w = warnings(&c);
    assert_eq!(w.len(), 1, "{w:?}");
    assert_eq!(w[0].message, "the schedule has no output buffer: nothing its thunks compute can be read");
    assert!(w[0].hint.as_deref().is_some_and(|h| h.starts_with("declare what the model computes")));
}

/// `state` persists between runs: a thunk may read it before any thunk of
/// the run wrote it (zeros on the first run, the last run's data after),
/// no other buffer may overlap it, and it lives in the arena.
#[test]
fn state_is_defined_before_the_run_and_owns_its_bytes() {
    let step = "input pos: i64[1] @ arena+0\ninput k: f32[4] @ arena+64\nstate cache: f32[8, 4] @ arena+128\n\
                output y: f32[8, 4] @ arena+256\n\n\
                KvWrite { src: k, cache: cache, pos: pos, new_len: 1, max_len: 8, row: 4, elem_bytes: 4 }\n\
                Copy { src: cache, dst: y, len: 32 }\n";
    let checked = assert_clean(step);
    assert!(warnings(&checked).is_empty(), "no read-never-written warning for state");
    assert_one_error(
        "state cache: f32[8] @ arena+0\nscratch s: f32[8] @ arena+16\noutput y: f32[8] @ arena+64\n\n\
         Copy { src: cache, dst: y, len: 8 }\n",
        &["scratch buffer `s` overlaps state buffer `cache`"],
    );
    assert_error(
        "state cache: f32[8] @ weights+0\noutput y: f32[8] @ arena+64\n\nCopy { src: cache, dst: y, len: 8 }\n",
        &["state buffer `cache` cannot live in the weights segment"],
    );
}

#[test]
fn a_step_longer_than_its_cache_is_an_error() {
    assert_one_error(
        "input pos: i64[1] @ arena+0\ninput k: f32[12] @ arena+64\nstate cache: f32[2, 4] @ arena+128\n\
         output y: f32[2, 4] @ arena+256\n\n\
         KvWrite { src: k, cache: cache, pos: pos, new_len: 3, max_len: 2, row: 4, elem_bytes: 4 }\n\
         Copy { src: cache, dst: y, len: 8 }\n",
        &["a step of 3 positions does not fit in a cache of `max_len` 2"],
    );
}
