//! The OpenBLAS backend: `cblas_sgemm` from the statically linked
//! `libopenblas.a` (see `build.rs`).

use std::ffi::{c_char, c_int, CStr};
use std::sync::Once;

use cblas_sys::{cblas_sgemm, CBLAS_LAYOUT, CBLAS_TRANSPOSE};

pub(super) const NAME: &str = "openblas";

// Thread control is OpenBLAS-specific, so cblas-sys does not declare it.
extern "C" {
    fn openblas_set_num_threads(num_threads: c_int);
    fn openblas_get_num_threads() -> c_int;
    fn openblas_get_corename() -> *const c_char;
    // The DYNAMIC_ARCH build's kernel selection (`driver/others/dynamic.c`).
    fn gotoblas_dynamic_init();
    fn gotoblas_dynamic_quit();
}

/// The kernel set OpenBLAS selected, as `openblas_get_corename` says.
pub(super) fn core_name() -> String {
    // SAFETY: OpenBLAS returns a static NUL-terminated string.
    unsafe { CStr::from_ptr(openblas_get_corename()) }.to_string_lossy().into_owned()
}

/// A kernel set for a CPU this OpenBLAS does not know, from the features
/// it has. Debian's 0.3.21 runs Sapphire/Emerald Rapids on `Prescott`, its
/// SSE3 fallback, and AMD's Zen 5 (family 26) on `Haswell`'s AVX2 set:
/// slowly, and with bits that change with the thread count (threads split
/// the product into other edge tiles, which those kernels sum in another
/// order; the AVX-512 sets do not). So a CPU with AVX-512 gets `SkylakeX`
/// unless OpenBLAS chose an AVX-512 set itself, and one with AVX2 and FMA
/// gets `Haswell` instead of the fallback. `None` when OpenBLAS's choice
/// stands or the user set `OPENBLAS_CORETYPE`.
fn better_core(current: &str) -> Option<&'static str> {
    if std::env::var_os("OPENBLAS_CORETYPE").is_some() {
        return None;
    }
    #[cfg(target_arch = "x86_64")]
    {
        use crate::isa::Level;
        use std::arch::is_x86_feature_detected as has;
        match crate::isa::cap() {
            Some(Level::Avx2) if has!("avx2") && has!("fma") => return Some("Haswell"),
            Some(Level::Avx2) | Some(Level::Scalar) => return Some("Prescott"),
            _ => {}
        }
        let avx512 = has!("avx512f") && has!("avx512bw") && has!("avx512dq") && has!("avx512vl");
        if avx512 && !AVX512_CORES.contains(&current) {
            return Some("SkylakeX");
        }
        if current == "Prescott" && has!("avx2") && has!("fma") {
            return Some("Haswell");
        }
    }
    None
}

/// OpenBLAS 0.3.21's kernel sets that use AVX-512.
pub(super) const AVX512_CORES: [&str; 3] = ["SkylakeX", "Cooperlake", "SapphireRapids"];

/// Replaces OpenBLAS's fallback kernel set (see [`better_core`]) once,
/// before the first product: OpenBLAS reads `OPENBLAS_CORETYPE` when it
/// selects, so the variable is set for that one re-selection.
fn select_core() {
    static ONCE: Once = Once::new();
    ONCE.call_once(|| {
        let Some(core) = better_core(&core_name()) else { return };
        // SAFETY: no OpenBLAS product has run yet (this precedes the
        // first, under `Once`), so nothing uses the kernel table being
        // replaced; the environment is written before any thread of ours
        // reads it (`Once` blocks every other caller until done).
        unsafe {
            gotoblas_dynamic_quit();
            std::env::set_var("OPENBLAS_CORETYPE", core);
            gotoblas_dynamic_init();
            std::env::remove_var("OPENBLAS_CORETYPE");
        }
    });
}

/// Whether a product's bits are the same at every thread count: true of
/// the AVX-512 kernel sets; OpenBLAS's AVX2 sets (`Haswell`, `Zen`, which
/// `OPENBLAS_CORETYPE` may force) sum the edge tiles of another split in
/// another order (measured: 1,401 of 30,720 elements of a 192x160x300
/// product differ between 1 and 2 threads).
pub(super) fn bits_independent_of_threads() -> bool {
    select_core();
    AVX512_CORES.contains(&core_name().as_str())
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
    select_core();
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

#[cfg(test)]
mod tests {
    use super::*;

    /// On a CPU with AVX2, the first product leaves OpenBLAS on a real
    /// kernel set, not its SSE3 fallback; with AVX-512, on an AVX-512 set.
    #[test]
    fn products_never_run_on_the_fallback_kernels_of_an_avx2_cpu() {
        let (a, b, mut c) = ([1.0f32; 4], [2.0f32; 4], [0.0f32; 4]);
        // SAFETY: 2x2 matrices.
        unsafe { sgemm(false, false, 2, 2, 2, 1.0, a.as_ptr(), 2, b.as_ptr(), 2, 0.0, c.as_mut_ptr(), 2) };
        assert_eq!(c, [4.0; 4]);
        #[cfg(target_arch = "x86_64")]
        if std::env::var_os("OPENBLAS_CORETYPE").is_none() && crate::isa::cap().is_none() {
            use std::arch::is_x86_feature_detected as has;
            if has!("avx2") {
                assert_ne!(core_name(), "Prescott");
            }
            if has!("avx512f") && has!("avx512bw") && has!("avx512dq") && has!("avx512vl") {
                assert!(AVX512_CORES.contains(&core_name().as_str()), "{}", core_name());
            }
        }
    }
}
