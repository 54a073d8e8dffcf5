//! Normalisations over rows of f32: `LayerNorm`, `RmsNorm`, the fused
//! residual variants, and per-channel `BatchNormInference`.
//!
//! Row statistics are two-pass in f32: the mean first, then the mean of
//! squared deviations (robust when values sit far from zero). Both sums
//! use one fixed order on every ISA, described in `scalar.rs`: 32
//! accumulator lanes, folded to 8, reduced by a fixed tree, with a
//! sequential tail; no fused multiply-add anywhere. Scalar, AVX2 and NEON
//! are therefore bit-identical, and so are the serial and parallel forms
//! (rows are independent). The AVX2 and NEON primitives are one body over
//! `kernels::lanes::Lanes` (`simd.rs`), each instruction set a thin
//! `#[target_feature]` entry.
//!
//! Aliasing: `out` may equal `x` exactly (and `res` for the fused kinds);
//! kernels work through raw pointers and read each element before writing
//! it. The fused kinds write `x + res + bias` into `out` first and
//! normalise `out` in place, so they write nothing but `out` and need no
//! scratch.

mod batch;
mod scalar;

#[cfg(any(target_arch = "x86_64", target_arch = "aarch64"))]
mod simd;

#[cfg(test)]
mod tests;

pub use batch::batch_norm_inference_f32;

use crate::kernels::variants::variants;
use crate::threads::par_for;

/// Elements per parallel chunk: below this a row block is not worth a task.
const PAR_CHUNK: usize = 16 * 1024;

/// The row primitives of one ISA; the row logic above them is shared, so
/// every ISA computes the same statistics the same way.
#[derive(Clone, Copy)]
pub(crate) struct RowOps {
    sum: unsafe fn(*const f32, usize) -> f32,
    sum_sq_dev: unsafe fn(*const f32, usize, f32) -> f32,
    add: unsafe fn(*const f32, *const f32, Option<*const f32>, *mut f32, usize),
    normalize: unsafe fn(*const f32, f32, f32, *const f32, Option<*const f32>, *mut f32, usize),
}

pub(crate) const SCALAR: RowOps =
    RowOps { sum: scalar::sum, sum_sq_dev: scalar::sum_sq_dev, add: scalar::add, normalize: scalar::normalize };

#[cfg(target_arch = "x86_64")]
pub(crate) const AVX2: RowOps = RowOps {
    sum: simd::avx2::avx2_sum,
    sum_sq_dev: simd::avx2::avx2_sum_sq_dev,
    add: simd::avx2::avx2_add,
    normalize: simd::avx2::avx2_normalize,
};

#[cfg(target_arch = "aarch64")]
pub(crate) const NEON: RowOps = RowOps {
    sum: simd::neon::neon_sum,
    sum_sq_dev: simd::neon::neon_sum_sq_dev,
    add: simd::neon::neon_add,
    normalize: simd::neon::neon_normalize,
};

variants! {
    /// The row primitives, best first.
    pub(crate) static ROW_OPS: RowOps = [
        #[cfg(target_arch = "x86_64")]
        "avx2" if cpu::avx2_fma() => AVX2,
        #[cfg(target_arch = "aarch64")]
        "neon" if cpu::neon() => NEON,
        "scalar" => SCALAR,
    ];
}

/// The primitives for this CPU, chosen once.
#[inline]
fn ops() -> &'static RowOps {
    ROW_OPS.best()
}

/// Pointers of one norm call, shareable with `par_for` workers.
#[derive(Clone, Copy)]
pub(crate) struct NormArgs {
    pub x: *const f32,
    /// The residual of the fused kinds, else `None`.
    pub res: Option<*const f32>,
    /// The bias added to `x + res` by the fused kinds.
    pub bias: Option<*const f32>,
    pub g: *const f32,
    pub b: Option<*const f32>,
    pub out: *mut f32,
}

// SAFETY: workers read the inputs and write disjoint rows of `out`; the
// `par_for` joins before the kernel returns.
unsafe impl Send for NormArgs {}
// SAFETY: `&NormArgs` only exposes the pointers by copy; the workers' use
// is the read-only / disjoint-row access described above.
unsafe impl Sync for NormArgs {}

/// Which statistics a row is normalised by.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub(crate) enum Stats {
    /// Mean and variance (`LayerNorm`).
    MeanVar,
    /// Mean of squares, no centring (`RmsNorm`).
    MeanSquare,
}

/// One row: the optional residual add into `out`, then the statistics and
/// the normalisation.
///
/// # Safety
/// As [`norm_rows`], for row `r`.
unsafe fn norm_row(ops: &RowOps, a: NormArgs, stats: Stats, r: usize, h: usize, eps: f32) {
    let (x, out) = (a.x.wrapping_add(r * h), a.out.wrapping_add(r * h));
    // SAFETY: row `r` of every operand is in bounds by the contract; the
    // primitives allow `out` to equal their inputs exactly.
    unsafe {
        let src = match a.res {
            Some(res) => {
                (ops.add)(x, res.add(r * h), a.bias, out, h);
                out.cast_const()
            }
            None => x,
        };
        let n = h as f32;
        let (mean, scale) = match stats {
            Stats::MeanVar => {
                let mean = (ops.sum)(src, h) / n;
                let var = (ops.sum_sq_dev)(src, h, mean) / n;
                (mean, 1.0 / (var + eps).sqrt())
            }
            Stats::MeanSquare => {
                let ms = (ops.sum_sq_dev)(src, h, 0.0) / n;
                (0.0, 1.0 / (ms + eps).sqrt())
            }
        };
        (ops.normalize)(src, mean, scale, a.g, a.b, out, h);
    }
}

/// Normalises `rows` rows of `h` with the given primitives; parallel over
/// rows with `par`.
///
/// # Safety
/// `x`, `res` and `out` valid for `rows * h` f32, `bias`, `g`, `b` for
/// `h`; `out` equals `x` or `res` exactly or overlaps nothing.
pub(crate) unsafe fn norm_rows(ops: &RowOps, a: NormArgs, stats: Stats, rows: usize, h: usize, eps: f32, par: bool) {
    if rows == 0 || h == 0 {
        return;
    }
    let block = |start: usize, len: usize| {
        for r in start..start + len {
            // SAFETY: forwarded contract, `r < rows`.
            unsafe { norm_row(ops, a, stats, r, h, eps) };
        }
    };
    if par {
        par_for(rows, (PAR_CHUNK / h).max(1), &block);
    } else {
        block(0, rows);
    }
}

/// `LayerNorm`: `out[r, :] = (x[r, :] - mean) / sqrt(var + eps) * g + b`
/// over `rows` rows of `h`, computed as `((x - mean) * rstd) * g + b` with
/// `rstd = 1 / sqrt(var + eps)`; `b: None` means no shift. Parallel over
/// rows with `par`.
///
/// # Safety
/// `x` readable and `out` writable for `rows * h` f32; `g` (and `b`)
/// readable for `h`; `out` equals `x` exactly or overlaps no input.
pub unsafe fn layer_norm_f32(
    x: *const f32,
    g: *const f32,
    b: Option<*const f32>,
    out: *mut f32,
    rows: usize,
    h: usize,
    eps: f32,
    par: bool,
) {
    let a = NormArgs { x, res: None, bias: None, g, b, out };
    // SAFETY: forwarded contract.
    unsafe { norm_rows(ops(), a, Stats::MeanVar, rows, h, eps, par) }
}

/// `RmsNorm`: `out[r, :] = x[r, :] / sqrt(mean(x^2) + eps) * g`, computed
/// as `(x * rinv) * g`. Parallel over rows with `par`.
///
/// # Safety
/// `x` readable and `out` writable for `rows * h` f32; `g` readable for
/// `h`; `out` equals `x` exactly or overlaps no input.
pub unsafe fn rms_norm_f32(x: *const f32, g: *const f32, out: *mut f32, rows: usize, h: usize, eps: f32, par: bool) {
    let a = NormArgs { x, res: None, bias: None, g, b: None, out };
    // SAFETY: forwarded contract.
    unsafe { norm_rows(ops(), a, Stats::MeanSquare, rows, h, eps, par) }
}

/// `FusedResidualLN`: `LayerNorm((x + res) + bias)` with gain `g` and shift
/// `b`; `bias: None` adds nothing. Only `out` is written (it holds the sum
/// between the passes). Parallel over rows with `par`.
///
/// # Safety
/// `x`, `res` readable and `out` writable for `rows * h` f32; `bias`, `g`,
/// `b` readable for `h`; `out` equals `x` or `res` exactly, or overlaps no
/// input.
pub unsafe fn fused_residual_ln_f32(
    x: *const f32,
    res: *const f32,
    bias: Option<*const f32>,
    g: *const f32,
    b: *const f32,
    out: *mut f32,
    rows: usize,
    h: usize,
    eps: f32,
    par: bool,
) {
    let a = NormArgs { x, res: Some(res), bias, g, b: Some(b), out };
    // SAFETY: forwarded contract.
    unsafe { norm_rows(ops(), a, Stats::MeanVar, rows, h, eps, par) }
}

/// `FusedResidualRmsNorm`: `RmsNorm((x + res) + bias) * g + b`; `bias` and
/// `b` may be `None`. Only `out` is written. Parallel over rows with `par`.
///
/// # Safety
/// `x`, `res` readable and `out` writable for `rows * h` f32; `bias`, `g`,
/// `b` readable for `h`; `out` equals `x` or `res` exactly, or overlaps no
/// input.
pub unsafe fn fused_residual_rms_norm_f32(
    x: *const f32,
    res: *const f32,
    bias: Option<*const f32>,
    g: *const f32,
    b: Option<*const f32>,
    out: *mut f32,
    rows: usize,
    h: usize,
    eps: f32,
    par: bool,
) {
    let a = NormArgs { x, res: Some(res), bias, g, b, out };
    // SAFETY: forwarded contract.
    unsafe { norm_rows(ops(), a, Stats::MeanSquare, rows, h, eps, par) }
}
