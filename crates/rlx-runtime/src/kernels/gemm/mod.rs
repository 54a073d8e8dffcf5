//! The GEMM family: f32 GEMM over the BLAS backend, GEMM with f16/bf16
//! weights, batched GEMM, GEMM with a bias + activation epilogue, and the
//! row-broadcast bias add.
//!
//! These are the thunk-level entries both the interpreter and generated
//! code call. GEMM entries assume `c` does not overlap their inputs; when
//! a schedule places them overlapping (`rlx_core::plan::gemm_needs_temp`),
//! the caller uses the `*_via` variant, which computes into scratch and
//! then copies to `c`. The vector kernels (bias add, axpy, half-precision
//! widening) have a scalar reference plus AVX2 and NEON variants, chosen
//! once per process.

#[cfg(target_arch = "x86_64")]
mod avx2;
mod half_weights;
#[cfg(target_arch = "aarch64")]
mod neon;
mod q8;
mod scalar;
#[cfg(test)]
mod tests;
mod tiled;

use rlx_core::ActKind;

use crate::blas;
use crate::kernels::variants::variants;
use crate::threads::par_for;

pub use half_weights::{half_weight_scratch_elems, HALF_WEIGHT_DIRECT_MAX_M};
pub use q8::{packed_gemm_q8, packed_gemm_q8_via};
pub use tiled::{pack_rows_f32, packed_gemm_f32, packed_gemm_f32_via, packed_gemm_row_bias_f32, tiled_gemm_isa};
pub(crate) use tiled::{
    pack_transposed_f32, packed_gemm_cols_f32, packed_gemm_row_bias_produced_f32, packed_gemm_strided_f32,
};

/// The vector kernels of one instruction set.
#[derive(Clone, Copy)]
struct Isa {
    bias_add_row: unsafe fn(*const f32, *const f32, *mut f32, usize),
    axpy: unsafe fn(*mut f32, f32, *const f32, usize),
    f16_to_f32: unsafe fn(*const u16, *mut f32, usize),
    bf16_to_f32: unsafe fn(*const u16, *mut f32, usize),
}

const SCALAR: Isa = Isa {
    bias_add_row: scalar::bias_add_row_f32,
    axpy: scalar::axpy_f32,
    f16_to_f32: scalar::f16_to_f32,
    bf16_to_f32: scalar::bf16_to_f32,
};

#[cfg(target_arch = "x86_64")]
const AVX2: Isa = Isa {
    bias_add_row: avx2::avx2_bias_add_row_f32,
    axpy: avx2::avx2_axpy_f32,
    f16_to_f32: avx2::avx2_f16_to_f32,
    bf16_to_f32: avx2::avx2_bf16_to_f32,
};

#[cfg(target_arch = "aarch64")]
const NEON: Isa = Isa {
    bias_add_row: neon::neon_bias_add_row_f32,
    axpy: neon::neon_axpy_f32,
    f16_to_f32: neon::neon_f16_to_f32,
    bf16_to_f32: neon::neon_bf16_to_f32,
};

variants! {
    /// The ISA variants, best first.
    static ISAS: Isa = [
        #[cfg(target_arch = "x86_64")]
        "avx2" if cpu::avx2_fma() && cpu::avx2_f16c() => AVX2,
        #[cfg(target_arch = "aarch64")]
        "neon" if cpu::neon() => NEON,
        "scalar" => SCALAR,
    ];
}

/// The best variant, detected once per process.
#[inline]
fn isa() -> &'static Isa {
    ISAS.best()
}

/// Rows of work per parallel chunk so that each holds about this many
/// elements: smaller chunks cost more in scheduling than they save.
const PAR_CHUNK_ELEMS: usize = 16 * 1024;

fn rows_per_chunk(cols: usize) -> usize {
    (PAR_CHUNK_ELEMS / cols.max(1)).max(1)
}

/// `c[m,n] = a[m,k] @ b[k,n]`, row-major and contiguous.
///
/// # Safety
///
/// `a` valid for `m*k` reads, `b` for `k*n`, `c` for `m*n` writes; `c`
/// must not overlap `a` or `b` (use [`sgemm_f32_via`]).
pub unsafe fn sgemm_f32(a: *const f32, b: *const f32, c: *mut f32, m: usize, k: usize, n: usize) {
    // SAFETY: contiguous operands: leading dims are the row lengths.
    unsafe { blas::sgemm(false, false, m, n, k, 1.0, a, k, b, n, 0.0, c, n) }
}

/// [`sgemm_f32`] through a temporary: computes into `scratch`, then copies
/// to `c`, so `c` may overlap `a` or `b` in any way.
///
/// # Safety
///
/// As [`sgemm_f32`] without the overlap rule, and `scratch` valid for
/// `m*n` writes, overlapping none of `a`, `b`, `c`.
pub unsafe fn sgemm_f32_via(
    scratch: *mut f32,
    a: *const f32,
    b: *const f32,
    c: *mut f32,
    m: usize,
    k: usize,
    n: usize,
) {
    // SAFETY: `scratch` is a separate buffer of `m*n` f32.
    unsafe {
        sgemm_f32(a, b, scratch, m, k, n);
        std::ptr::copy_nonoverlapping(scratch, c, m * n);
    }
}

/// `c[m,n] = op(a) @ op(b)`: `a` is stored `[k,m]` when `ta` (else
/// `[m,k]`), `b` is stored `[n,k]` when `tb` (else `[k,n]`).
///
/// # Safety
///
/// `a` valid for `m*k` reads, `b` for `k*n`, `c` for `m*n` writes; `c`
/// must not overlap `a` or `b` (use [`sgemm_t_f32_via`]).
pub unsafe fn sgemm_t_f32(a: *const f32, b: *const f32, c: *mut f32, m: usize, k: usize, n: usize, ta: bool, tb: bool) {
    let lda = if ta { m } else { k };
    let ldb = if tb { k } else { n };
    // SAFETY: leading dims are the stored row lengths of each layout.
    unsafe { blas::sgemm(ta, tb, m, n, k, 1.0, a, lda, b, ldb, 0.0, c, n) }
}

/// [`sgemm_t_f32`] through a temporary in `scratch`.
///
/// # Safety
///
/// As [`sgemm_t_f32`] without the overlap rule, and `scratch` valid for
/// `m*n` writes, overlapping none of `a`, `b`, `c`.
pub unsafe fn sgemm_t_f32_via(
    scratch: *mut f32,
    a: *const f32,
    b: *const f32,
    c: *mut f32,
    m: usize,
    k: usize,
    n: usize,
    ta: bool,
    tb: bool,
) {
    // SAFETY: `scratch` is a separate buffer of `m*n` f32.
    unsafe {
        sgemm_t_f32(a, b, scratch, m, k, n, ta, tb);
        std::ptr::copy_nonoverlapping(scratch, c, m * n);
    }
}

/// `c[m,n] = act(a[m,k] @ widen(B) + bias[n])` with the weight `B`
/// prepacked in 16-bit floats (`w`: `rlx_core::pack::packed_len(k, n)`
/// values, bfloat16 bits when `bf16`, else IEEE f16): the f16 / bf16
/// weights of `PackedGemmHalf`. Bits of [`packed_gemm_f32`] over the
/// widened weights; memory traffic is the 2-byte weights.
///
/// # Safety
///
/// `a` valid for `m*k` reads, `w` for `packed_len(k, n)` 16-bit reads,
/// `bias` (when given) for `n` reads, `c` for `m*n` writes; `c` must not
/// overlap `a`, `w` or `bias` (use [`packed_gemm_half_via`]).
pub unsafe fn packed_gemm_half(
    a: *const f32,
    w: *const u16,
    bias: Option<*const f32>,
    c: *mut f32,
    m: usize,
    k: usize,
    n: usize,
    act: ActKind,
    bf16: bool,
    par: bool,
) {
    let widen = if bf16 { isa().bf16_to_f32 } else { isa().f16_to_f32 };
    // SAFETY: forwarded contract.
    unsafe { tiled::packed_gemm_half((widen, bf16), a, w, bias, c, (m, k, n), act, par) }
}

/// [`packed_gemm_half`] through a temporary of `m*n` f32.
///
/// # Safety
///
/// As [`packed_gemm_half`] without the overlap rule, and `scratch` valid
/// for `m*n` writes, overlapping no operand.
pub unsafe fn packed_gemm_half_via(
    scratch: *mut f32,
    a: *const f32,
    w: *const u16,
    bias: Option<*const f32>,
    c: *mut f32,
    m: usize,
    k: usize,
    n: usize,
    act: ActKind,
    bf16: bool,
    par: bool,
) {
    // SAFETY: `scratch` is a separate buffer of `m*n` f32.
    unsafe {
        packed_gemm_half(a, w, bias, scratch, m, k, n, act, bf16, par);
        std::ptr::copy_nonoverlapping(scratch, c, m * n);
    }
}

/// `c[m,n] = a[m,k] @ widen(b[k,n])` with `b` stored as IEEE f16 bits.
///
/// With `m <= HALF_WEIGHT_DIRECT_MAX_M` the weights stream through a small
/// stack tile (no scratch; `par` splits column tiles). Larger `m` widens
/// all of `b` into `scratch` (`par` splits that) and runs the f32 GEMM.
///
/// # Safety
///
/// `a` valid for `m*k` reads, `b` for `k*n`, `c` for `m*n` writes;
/// `scratch` valid for `half_weight_scratch_elems(m, k, n)` f32 writes
/// (may dangle when that is 0); `c` must not overlap `a` or `b` (use
/// [`sgemm_f16w_via`]) and `scratch` must overlap nothing.
pub unsafe fn sgemm_f16w(
    a: *const f32,
    b: *const u16,
    c: *mut f32,
    m: usize,
    k: usize,
    n: usize,
    scratch: *mut f32,
    par: bool,
) {
    // SAFETY: forwarded contract.
    unsafe { half_weights::sgemm_half(isa().f16_to_f32, a, b, c, m, k, n, scratch, par) }
}

/// [`sgemm_f16w`] through a temporary: `scratch` holds `m*n` f32 of
/// output followed by the conversion space.
///
/// # Safety
///
/// As [`sgemm_f16w`] without the overlap rule, with `scratch` valid for
/// `m*n + half_weight_scratch_elems(m, k, n)` f32 writes.
pub unsafe fn sgemm_f16w_via(
    scratch: *mut f32,
    a: *const f32,
    b: *const u16,
    c: *mut f32,
    m: usize,
    k: usize,
    n: usize,
    par: bool,
) {
    // SAFETY: `scratch` splits into the output temporary and the rest.
    unsafe {
        sgemm_f16w(a, b, scratch, m, k, n, scratch.add(m * n), par);
        std::ptr::copy_nonoverlapping(scratch, c, m * n);
    }
}

/// `c[m,n] = a[m,k] @ widen(b[k,n])` with `b` stored as bfloat16 bits;
/// otherwise as [`sgemm_f16w`].
///
/// # Safety
///
/// As [`sgemm_f16w`].
pub unsafe fn sgemm_bf16w(
    a: *const f32,
    b: *const u16,
    c: *mut f32,
    m: usize,
    k: usize,
    n: usize,
    scratch: *mut f32,
    par: bool,
) {
    // SAFETY: forwarded contract.
    unsafe { half_weights::sgemm_half(isa().bf16_to_f32, a, b, c, m, k, n, scratch, par) }
}

/// [`sgemm_bf16w`] through a temporary; scratch layout as
/// [`sgemm_f16w_via`].
///
/// # Safety
///
/// As [`sgemm_f16w_via`].
pub unsafe fn sgemm_bf16w_via(
    scratch: *mut f32,
    a: *const f32,
    b: *const u16,
    c: *mut f32,
    m: usize,
    k: usize,
    n: usize,
    par: bool,
) {
    // SAFETY: `scratch` splits into the output temporary and the rest.
    unsafe {
        sgemm_bf16w(a, b, scratch, m, k, n, scratch.add(m * n), par);
        std::ptr::copy_nonoverlapping(scratch, c, m * n);
    }
}

/// `batch` independent `c_i[m,n] = a_i[m,k] @ b_i[k,n]` over consecutive
/// matrices; a broadcast operand (`a_bcast`/`b_bcast`) is one matrix used
/// by every batch (batch stride 0).
///
/// With `par`, batches run on the rlx pool with BLAS single-threaded
/// inside; otherwise one after another, each using BLAS's threads. Both
/// give the same bits, because the backends never split `k` over threads.
///
/// # Safety
///
/// `a` valid for `m*k` reads per stored matrix (1 when broadcast, else
/// `batch`), likewise `b` for `k*n`; `c` for `batch*m*n` writes and not
/// overlapping `a` or `b` (use [`batched_sgemm_f32_via`]).
pub unsafe fn batched_sgemm_f32(
    a: *const f32,
    b: *const f32,
    c: *mut f32,
    batch: usize,
    m: usize,
    k: usize,
    n: usize,
    a_bcast: bool,
    b_bcast: bool,
    par: bool,
) {
    if batch == 0 || m == 0 || n == 0 {
        return;
    }
    let a_stride = if a_bcast { 0 } else { m * k };
    let b_stride = if b_bcast { 0 } else { k * n };
    // Addresses, so the closure can run on pool threads.
    let (a, b, c) = (a as usize, b as usize, c as usize);
    let run = |start: usize, len: usize| {
        for i in start..start + len {
            // SAFETY: matrix `i` of each operand lies inside its extent,
            // and the `c` matrices of different batches are disjoint.
            unsafe {
                sgemm_f32(
                    (a as *const f32).add(i * a_stride),
                    (b as *const f32).add(i * b_stride),
                    (c as *mut f32).add(i * m * n),
                    m,
                    k,
                    n,
                )
            }
        }
    };
    if par && batch > 1 {
        blas::with_serial_blas(|| par_for(batch, 1, &run));
    } else {
        run(0, batch);
    }
}

/// [`batched_sgemm_f32`] through a temporary of `batch*m*n` f32.
///
/// # Safety
///
/// As [`batched_sgemm_f32`] without the overlap rule, and `scratch` valid
/// for `batch*m*n` writes, overlapping none of `a`, `b`, `c`.
pub unsafe fn batched_sgemm_f32_via(
    scratch: *mut f32,
    a: *const f32,
    b: *const f32,
    c: *mut f32,
    batch: usize,
    m: usize,
    k: usize,
    n: usize,
    a_bcast: bool,
    b_bcast: bool,
    par: bool,
) {
    // SAFETY: `scratch` is a separate buffer of `batch*m*n` f32.
    unsafe {
        batched_sgemm_f32(a, b, scratch, batch, m, k, n, a_bcast, b_bcast, par);
        std::ptr::copy_nonoverlapping(scratch, c, batch * m * n);
    }
}

/// `c[m,n] = act(a[m,k] @ w[k,n] + bias[n])`.
///
/// `c` is first filled with `bias` rows and the GEMM accumulates onto it
/// (`beta = 1`), which saves BLAS its separate pass zeroing `c`; the
/// activation then runs in place. `par` splits the bias fill and the
/// activation (the GEMM threads by itself).
///
/// # Safety
///
/// `a` valid for `m*k` reads, `w` for `k*n`, `bias` for `n`, `c` for `m*n`
/// writes; `c` must not overlap `a`, `w` or `bias` (use
/// [`fused_mm_bias_act_f32_via`]).
pub unsafe fn fused_mm_bias_act_f32(
    a: *const f32,
    w: *const f32,
    bias: *const f32,
    c: *mut f32,
    m: usize,
    k: usize,
    n: usize,
    act: ActKind,
    par: bool,
) {
    if m == 0 || n == 0 {
        return;
    }
    // SAFETY: forwarded extents; `c` overlaps nothing it reads.
    unsafe {
        fill_rows_f32(bias, c, m, n, par);
        blas::sgemm(false, false, m, n, k, 1.0, a, k, w, n, 1.0, c, n);
        if !matches!(act, ActKind::Identity) {
            apply_activation(act, c, m * n, par);
        }
    }
}

/// [`fused_mm_bias_act_f32`] through a temporary of `m*n` f32.
///
/// # Safety
///
/// As [`fused_mm_bias_act_f32`] without the overlap rule, and `scratch`
/// valid for `m*n` writes, overlapping no operand.
pub unsafe fn fused_mm_bias_act_f32_via(
    scratch: *mut f32,
    a: *const f32,
    w: *const f32,
    bias: *const f32,
    c: *mut f32,
    m: usize,
    k: usize,
    n: usize,
    act: ActKind,
    par: bool,
) {
    // SAFETY: `scratch` is a separate buffer of `m*n` f32.
    unsafe {
        fused_mm_bias_act_f32(a, w, bias, scratch, m, k, n, act, par);
        std::ptr::copy_nonoverlapping(scratch, c, m * n);
    }
}

/// The activation epilogue: the activation family's in-place kernel, so
/// a fused GEMM and a separate `ActivationInPlace` round identically.
///
/// # Safety
///
/// `data` valid for `len` reads and writes.
unsafe fn apply_activation(act: ActKind, data: *mut f32, len: usize, par: bool) {
    // SAFETY: forwarded contract.
    unsafe { crate::kernels::activation::act_in_place_f32(act, data, len, par) }
}

/// `c[i, ..] = bias` for every row `i < m`.
///
/// # Safety
///
/// `bias` valid for `n` reads, `c` for `m*n` writes, no overlap.
unsafe fn fill_rows_f32(bias: *const f32, c: *mut f32, m: usize, n: usize, par: bool) {
    let (bias, c) = (bias as usize, c as usize);
    let run = |start: usize, len: usize| {
        for i in start..start + len {
            // SAFETY: row `i` is inside `c`; `bias` is disjoint from it.
            unsafe { std::ptr::copy_nonoverlapping(bias as *const f32, (c as *mut f32).add(i * n), n) };
        }
    };
    if par {
        par_for(m, rows_per_chunk(n), &run);
    } else {
        run(0, m);
    }
}

/// `dst[r,j] = src[r,j] + bias[j]` over `rows x cols`; in place when
/// `dst == src`. `par` splits rows over the pool (same bits either way).
///
/// # Safety
///
/// `src` valid for `rows*cols` reads, `bias` for `cols`, `dst` for
/// `rows*cols` writes. `dst` may equal `src` exactly; otherwise no operand
/// overlaps another.
pub unsafe fn bias_add_f32(src: *const f32, bias: *const f32, dst: *mut f32, rows: usize, cols: usize, par: bool) {
    let row_kernel = isa().bias_add_row;
    let (src, bias, dst) = (src as usize, bias as usize, dst as usize);
    let run = |start: usize, len: usize| {
        for r in start..start + len {
            // SAFETY: row `r` is inside `src`/`dst`; the row kernel reads
            // each element before writing it, so exact aliasing is fine.
            unsafe {
                row_kernel((src as *const f32).add(r * cols), bias as *const f32, (dst as *mut f32).add(r * cols), cols)
            }
        }
    };
    if par {
        par_for(rows, rows_per_chunk(cols), &run);
    } else {
        run(0, rows);
    }
}

/// Widens `len` IEEE f16 values (given as bits) to f32: exact, NaNs
/// quieted with their payload kept (the F16C/`fcvtl` behaviour).
///
/// # Safety
///
/// `src` valid for `len` reads, `dst` for `len` writes; no overlap.
pub unsafe fn f16_to_f32(src: *const u16, dst: *mut f32, len: usize) {
    // SAFETY: forwarded contract.
    unsafe { (isa().f16_to_f32)(src, dst, len) }
}

/// Widens `len` bfloat16 values (given as bits) to f32: exact, NaN
/// payloads kept as they are.
///
/// # Safety
///
/// `src` valid for `len` reads, `dst` for `len` writes; no overlap.
pub unsafe fn bf16_to_f32(src: *const u16, dst: *mut f32, len: usize) {
    // SAFETY: forwarded contract.
    unsafe { (isa().bf16_to_f32)(src, dst, len) }
}
