//! The pure-Rust backend: the `gemm` crate, run on the rlx thread pool.

use std::sync::atomic::{AtomicUsize, Ordering};

use gemm::{gemm, Parallelism};

pub(super) const NAME: &str = "pure-rust";

static THREADS: AtomicUsize = AtomicUsize::new(1);

/// `gemm` addresses matrices by row and column strides, so transposes are
/// just swapped strides. It computes `dst = alpha * dst + beta * lhs * rhs`
/// (its alpha/beta are BLAS's beta/alpha), reading `dst` only when asked.
///
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
    let stride = |x: usize| isize::try_from(x).expect("sgemm stride exceeds isize");
    // (column stride, row stride) of op(A) and op(B).
    let (a_cs, a_rs) = if ta { (stride(lda), 1) } else { (1, stride(lda)) };
    let (b_cs, b_rs) = if tb { (stride(ldb), 1) } else { (1, stride(ldb)) };
    let threads = THREADS.load(Ordering::Relaxed);
    // Addresses, so the closure can move to a pool thread.
    let (a, b, c) = (a as usize, b as usize, c as usize);
    let call = move || {
        let parallelism = if threads > 1 { Parallelism::Rayon(threads) } else { Parallelism::None };
        // SAFETY: the caller guarantees the extents and that `c` does not
        // overlap `a` or `b`.
        unsafe {
            gemm(
                m,
                n,
                k,
                c as *mut f32,
                1,
                stride(ldc),
                beta != 0.0,
                a as *const f32,
                a_cs,
                a_rs,
                b as *const f32,
                b_cs,
                b_rs,
                beta,
                alpha,
                false,
                false,
                false,
                parallelism,
            )
        }
    };
    if threads > 1 {
        // Run on the rlx pool so a process has one set of worker threads.
        crate::threads::install(call);
    } else {
        call();
    }
}

/// The `gemm` crate splits a product over blocks of `C` only, with one
/// kernel for every tile: the same bits at every thread count.
pub(super) fn bits_independent_of_threads() -> bool {
    true
}

pub(super) fn set_threads(n: usize) {
    THREADS.store(n.max(1), Ordering::Relaxed);
}

pub(super) fn threads() -> usize {
    THREADS.load(Ordering::Relaxed)
}
