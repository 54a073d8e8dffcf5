//! The OpenBLAS backend: `cblas_sgemm` from the statically linked
//! `libopenblas.a` (see `build.rs`).

use std::ffi::c_int;

use cblas_sys::{cblas_sgemm, CBLAS_LAYOUT, CBLAS_TRANSPOSE};

pub(super) const NAME: &str = "openblas";

// Thread control is OpenBLAS-specific, so cblas-sys does not declare it.
extern "C" {
    fn openblas_set_num_threads(num_threads: c_int);
    fn openblas_get_num_threads() -> c_int;
}

/// A dimension as the C `int` CBLAS takes.
fn dim(x: usize, what: &str) -> c_int {
    c_int::try_from(x).unwrap_or_else(|_| panic!("sgemm {what} = {x} exceeds the BLAS int range"))
}

fn trans(t: bool) -> CBLAS_TRANSPOSE {
    if t {
        CBLAS_TRANSPOSE::CblasTrans
    } else {
        CBLAS_TRANSPOSE::CblasNoTrans
    }
}

/// # Safety
///
/// As [`super::sgemm`], with `m`, `n`, `k` non-zero.
pub(super) unsafe fn sgemm(
    ta: bool,
    tb: bool,
    m: usize,
    n: usize,
    k: usize,
    alpha: f32,
    a: *const f32,
    lda: usize,
    b: *const f32,
    ldb: usize,
    beta: f32,
    c: *mut f32,
    ldc: usize,
) {
    // SAFETY: the caller guarantees the extents; OpenBLAS reads `a`/`b`
    // and writes `c` within them.
    unsafe {
        cblas_sgemm(
            CBLAS_LAYOUT::CblasRowMajor,
            trans(ta),
            trans(tb),
            dim(m, "m"),
            dim(n, "n"),
            dim(k, "k"),
            alpha,
            a,
            dim(lda, "lda"),
            b,
            dim(ldb, "ldb"),
            beta,
            c,
            dim(ldc, "ldc"),
        )
    }
}

pub(super) fn set_threads(n: usize) {
    let n = c_int::try_from(n).unwrap_or(c_int::MAX);
    // SAFETY: plain FFI call with a positive count.
    unsafe { openblas_set_num_threads(n) }
}

pub(super) fn threads() -> usize {
    // SAFETY: plain FFI query.
    let n = unsafe { openblas_get_num_threads() };
    usize::try_from(n).unwrap_or(1).max(1)
}
