//! The C library's two halves agree: the status values the generated
//! header declares (`rlx_codegen::c_api::STATUSES`) are the ones the
//! runtime returns (`rlx_runtime::capi::Status`). The library itself is
//! tested end to end in `xtask/src/build_lib/tests.rs`.

use rlx_runtime::capi::Status;

#[test]
fn the_header_statuses_are_the_runtimes() {
    let runtime: Vec<(&str, i32)> = Status::ALL.iter().map(|s| (s.c_suffix(), *s as i32)).collect();
    assert_eq!(runtime, rlx_codegen::c_api::STATUSES);
}
