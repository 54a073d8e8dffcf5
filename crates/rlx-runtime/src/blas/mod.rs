//! Single-precision GEMM over the BLAS backend chosen at build time.
//!
//! Two backends exist, selected by cargo feature: `openblas` (the default;
//! OpenBLAS linked statically, see `build.rs` and docs/blas.md) and
//! `pure-rust` (the `gemm` crate). Exactly one is active: with both
//! features on, OpenBLAS wins. Everything above this module calls
//! [`sgemm`] and never a backend directly, so switching backends changes
//! no other code.
//!
//! The backends round differently (their blocking differs), so results
//! are reproducible for a given backend, CPU and BLAS thread count, not
//! across them. Both split threads over blocks of `C` only, never over
//! `k`, which is why tests find them bit-identical across thread counts.

#[cfg(not(any(feature = "openblas", feature = "pure-rust")))]
compile_error!("rlx-runtime needs a BLAS backend: enable the `openblas` feature (the default) or `pure-rust`");

#[cfg(feature = "openblas")]
mod openblas;
#[cfg(feature = "openblas")]
use openblas as backend;

#[cfg(all(feature = "pure-rust", not(feature = "openblas")))]
mod pure;
#[cfg(all(feature = "pure-rust", not(feature = "openblas")))]
use pure as backend;

#[cfg(test)]
mod tests;

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Mutex, Once};

/// `C = alpha * op(A) * op(B) + beta * C` on row-major matrices.
///
/// `op(A)` is `m x k`: `A` is stored `[m, lda]` (`lda >= k`), or `[k, lda]`
/// (`lda >= m`) when `ta`. `op(B)` is `k x n`: `B` is stored `[k, ldb]`
/// (`ldb >= n`), or `[n, ldb]` (`ldb >= k`) when `tb`. `C` is `[m, ldc]`
/// (`ldc >= n`). With `m == 0` or `n == 0` nothing happens; with `k == 0`,
/// `C = beta * C`. As in BLAS, `beta == 0` overwrites `C` without reading
/// it, so NaNs already in `C` do not propagate.
///
/// # Safety
///
/// `a`, `b` and `c` must be valid for the extents above (`c` for writes),
/// and `c` must not overlap `a` or `b` (use a temporary: the callers'
/// plan decides that with `rlx_core::plan`).
///
/// # Panics
///
/// With OpenBLAS, when a dimension or leading dimension exceeds the C
/// `int` range (2^31 - 1): CBLAS cannot express it.
pub unsafe fn sgemm(
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
    if m == 0 || n == 0 {
        return;
    }
    debug_assert!(ldc >= n, "ldc {ldc} < n {n}");
    if k == 0 {
        // BLAS would reject the zero leading dimensions this shape
        // implies; the answer needs no backend anyway.
        // SAFETY: `c` is valid for `m` rows of `ldc` with `n` used.
        unsafe { scale_rows(c, m, n, ldc, beta) };
        return;
    }
    debug_assert!(lda >= if ta { m } else { k }, "lda {lda} too small");
    debug_assert!(ldb >= if tb { k } else { n }, "ldb {ldb} too small");
    apply_default_threads();
    // SAFETY: forwarded contract; dims are non-zero.
    unsafe { backend::sgemm(ta, tb, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc) }
}

/// `C[.., ..n] *= beta` row by row, with `beta == 0` writing zeros.
///
/// # Safety
///
/// `c` must be valid for writes of `m` rows of stride `ldc` with `n` used.
unsafe fn scale_rows(c: *mut f32, m: usize, n: usize, ldc: usize, beta: f32) {
    for i in 0..m {
        // SAFETY: row `i` lies inside the caller's extent; one `&mut`.
        let row = unsafe { std::slice::from_raw_parts_mut(c.add(i * ldc), n) };
        if beta == 0.0 {
            row.fill(0.0);
        } else if beta != 1.0 {
            row.iter_mut().for_each(|x| *x *= beta);
        }
    }
}

/// The active backend's name: `"openblas"` or `"pure-rust"`.
pub fn backend_name() -> &'static str {
    backend::NAME
}

/// Whether [`sgemm`]'s bits are the same at every thread count: always
/// for the pure-Rust backend; for OpenBLAS, on its AVX-512 kernel sets
/// only (`docs/blas.md`, "Threads and determinism").
pub fn bits_independent_of_threads() -> bool {
    backend::bits_independent_of_threads()
}

/// Whether the BLAS thread count was set explicitly, so the lazy default
/// (the rlx pool's size) must not override it.
static EXPLICIT_THREADS: AtomicBool = AtomicBool::new(false);
static DEFAULT_THREADS: Once = Once::new();

/// Threads BLAS may use per call. Results are deterministic for a given
/// count. Until this is called, the count follows
/// [`crate::threads::num_threads`] (so `RLX_NUM_THREADS` covers BLAS too).
pub fn set_blas_threads(n: usize) {
    EXPLICIT_THREADS.store(true, Ordering::Relaxed);
    let n = n.max(1);
    let mut serial = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    if serial.depth > 0 {
        // A serial section is running: apply the count when it ends.
        serial.saved = n;
    } else {
        backend::set_threads(n);
    }
}

/// Threads BLAS currently uses per call.
pub fn blas_threads() -> usize {
    apply_default_threads();
    backend::threads()
}

fn apply_default_threads() {
    DEFAULT_THREADS.call_once(|| {
        if !EXPLICIT_THREADS.load(Ordering::Relaxed) {
            backend::set_threads(crate::threads::num_threads().max(1));
        }
    });
}

/// Serial sections in flight and the thread count to restore after them.
struct Serial {
    depth: usize,
    saved: usize,
}

static SERIAL: Mutex<Serial> = Mutex::new(Serial { depth: 0, saved: 1 });

/// Runs `f` with BLAS limited to one thread per call, for callers that
/// parallelise over independent GEMMs themselves (batched GEMM): nested
/// BLAS threads would only oversubscribe the cores. Sections may nest and
/// overlap across threads; the count is restored when the last one ends.
pub(crate) fn with_serial_blas<R>(f: impl FnOnce() -> R) -> R {
    apply_default_threads();
    {
        let mut s = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
        if s.depth == 0 {
            s.saved = backend::threads();
            backend::set_threads(1);
        }
        s.depth += 1;
    }
    // Restores the count even if `f` unwinds.
    struct Exit;
    impl Drop for Exit {
        fn drop(&mut self) {
            let mut s = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
            s.depth -= 1;
            if s.depth == 0 {
                backend::set_threads(s.saved);
            }
        }
    }
    let _exit = Exit;
    f()
}
