//! Row softmax: `dst[r, j] = exp(src[r, j] - max_r) / sum_j exp(src[r, j] - max_r)`.
//!
//! Numerically stable (the row maximum is subtracted before `exp`). Edge
//! cases, identical in every variant:
//! - a row whose maximum is `-inf` (every entry `-inf`, a fully masked
//!   attention row) becomes all zeros rather than NaN;
//! - a NaN anywhere in a row makes the whole row NaN (it reaches the sum);
//! - a `+inf` entry makes the row NaN (`inf - inf`), as in PyTorch.
//!
//! Every variant normalises by multiplying with `1 / sum`. The SIMD
//! variants use a polynomial `exp` (see [`EXP_MAX_REL_ERR`]) and sum in
//! lanes, so they differ from the scalar reference by rounding only (the
//! AVX-512 one gives the AVX2 bits: 16 lanes of the same `exp`, summed in
//! the AVX2 order); the
//! variant is chosen once per process, so the interpreter and generated
//! code on one machine agree bit for bit.

pub(crate) mod scalar;

#[cfg(target_arch = "x86_64")]
pub(crate) mod avx2;
#[cfg(target_arch = "x86_64")]
mod avx512;
#[cfg(target_arch = "aarch64")]
pub(crate) mod neon;

#[cfg(test)]
mod tests;

use crate::kernels::variants::variants;

/// Largest relative error of the SIMD `exp` against the exact value, for
/// inputs whose result is a normal f32 (`x >= -87.33654`); below that the
/// SIMD `exp` returns exactly 0 (the true value is under 1.2e-38). The
/// method is Cody-Waite range reduction to `|r| <= ln2/2` and a degree-7
/// polynomial with the Cephes `expf` coefficients; a dense sweep of the
/// whole range (in the tests) measures 8.2e-8, and the bound keeps a
/// margin for inputs the sweep does not hit.
pub const EXP_MAX_REL_ERR: f32 = 2.0e-7;

/// One row: `(src, dst, len)`; `dst` may equal `src`.
pub(crate) type RowFn = unsafe fn(*const f32, *mut f32, usize);

variants! {
    /// The row kernels, best first.
    pub(crate) static ROW_KERNELS: RowFn = [
        #[cfg(target_arch = "x86_64")]
        "avx512" if cpu::avx512f() => avx512::avx512_softmax_row_f32,
        #[cfg(target_arch = "x86_64")]
        "avx2" if cpu::avx2_fma() => avx2::avx2_softmax_row_f32,
        #[cfg(target_arch = "aarch64")]
        "neon" if cpu::neon() => neon::neon_softmax_row_f32,
        "scalar" => scalar::scalar_softmax_row_f32,
    ];
}

/// The row kernel for this CPU, chosen on first use.
#[inline]
pub(crate) fn row_kernel() -> RowFn {
    *ROW_KERNELS.best()
}

/// Rows per parallel chunk: enough work per task to pay for the fork.
fn rows_per_chunk(cols: usize) -> usize {
    (rlx_core::plan::PAR_MIN_ELEMS / 4 / cols.max(1)).max(1)
}

/// Softmax of each of `rows` rows of `cols` f32.
///
/// `par` (decided by the caller with `rlx_core::plan::parallel(rows *
/// cols)`) splits rows over the thread pool; each row is computed the same
/// way either way, so the result is bit-identical.
///
/// # Safety
///
/// `src` must be valid for reads and `dst` for writes of `rows * cols`
/// f32. They may be exactly the same range (in-place softmax) but must
/// not otherwise overlap.
pub unsafe fn softmax_f32(src: *const f32, dst: *mut f32, rows: usize, cols: usize, par: bool) {
    if rows == 0 || cols == 0 {
        return;
    }
    let kernel = row_kernel();
    let (src_addr, dst_addr) = (src as usize, dst as usize);
    let run = |start: usize, len: usize| {
        for r in start..start + len {
            let off = r * cols;
            // SAFETY: row `r` lies inside both extents; the row kernel
            // accepts `dst == src` and works through raw pointers.
            unsafe { kernel((src_addr as *const f32).add(off), (dst_addr as *mut f32).add(off), cols) };
        }
    };
    if par {
        crate::threads::par_for(rows, rows_per_chunk(cols), &run);
    } else {
        run(0, rows);
    }
}
