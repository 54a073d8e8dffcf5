//! GEMM with f16 or bf16 weights: `c = a @ widen(b)`.
//!
//! Two paths, chosen by `m` alone (so the code generator can choose at gen
//! time and the interpreter agrees):
//! - few rows (`m <= HALF_WEIGHT_DIRECT_MAX_M`, decoding-style GEMV): the
//!   weights are read once, a row tile at a time widened into a stack
//!   buffer and accumulated into `c` with fused multiply-adds. Memory
//!   traffic is the 2-byte weights only, which is what bounds this case.
//! - more rows: widening costs `k*n` against `m*k*n` for the product, so
//!   widen all of `b` into scratch and run the blocked f32 GEMM at full
//!   speed.

use super::{isa, par_for, rows_per_chunk};
use crate::blas;

// The path limit and the scratch it implies are plan decisions (the code
// generator sizes scratch with them), so they live in `rlx_core::plan`.
pub use rlx_core::plan::{half_weight_scratch_elems, HALF_WEIGHT_DIRECT_MAX_M};

/// Output columns per tile of the streaming path: a 1 KiB stack buffer,
/// and `m x TILE` of `c` (at most 8 KiB) stays in L1 while `k` runs.
const TILE: usize = 256;

type Widen = unsafe fn(*const u16, *mut f32, usize);

/// # Safety
///
/// As `super::sgemm_f16w`, with `widen` a conversion kernel.
pub(super) unsafe fn sgemm_half(
    widen: Widen,
    a: *const f32,
    b: *const u16,
    c: *mut f32,
    m: usize,
    k: usize,
    n: usize,
    scratch: *mut f32,
    par: bool,
) {
    if m == 0 || n == 0 {
        return;
    }
    // SAFETY: forwarded contract; the streaming path needs no scratch.
    unsafe {
        if m <= HALF_WEIGHT_DIRECT_MAX_M {
            stream(widen, a, b, c, m, k, n, par);
        } else {
            widen_matrix(widen, b, scratch, k, n, par);
            blas::sgemm(false, false, m, n, k, 1.0, a, k, scratch, n, 0.0, c, n);
        }
    }
}

/// The streaming path: for each column tile, `c[i, tile] = sum_p a[i,p] *
/// widen(b[p, tile])`, accumulated in order of `p` with one rounding per
/// step. Tiles are independent, so `par` splits them without changing a bit.
///
/// # Safety
///
/// As `sgemm_half`.
unsafe fn stream(widen: Widen, a: *const f32, b: *const u16, c: *mut f32, m: usize, k: usize, n: usize, par: bool) {
    let axpy = isa().axpy;
    let (a, b, c) = (a as usize, b as usize, c as usize);
    let run = |first: usize, count: usize| {
        let mut tile = [0.0f32; TILE];
        for t in first..first + count {
            let j0 = t * TILE;
            let width = TILE.min(n - j0);
            let (a, b, c) = (a as *const f32, b as *const u16, c as *mut f32);
            // SAFETY: columns `j0..j0 + width` of every row lie inside
            // `b` and `c`; `tile` holds `width <= TILE` values; tiles of
            // different calls are disjoint columns of `c`.
            unsafe {
                for i in 0..m {
                    std::ptr::write_bytes(c.add(i * n + j0), 0, width);
                }
                for p in 0..k {
                    widen(b.add(p * n + j0), tile.as_mut_ptr(), width);
                    for i in 0..m {
                        axpy(c.add(i * n + j0), *a.add(i * k + p), tile.as_ptr(), width);
                    }
                }
            }
        }
    };
    let tiles = n.div_ceil(TILE);
    if par {
        par_for(tiles, 1, &run);
    } else {
        run(0, tiles);
    }
}

/// Widens all `k x n` weights into `dst`, rows split over the pool with `par`.
///
/// # Safety
///
/// `src` valid for `k*n` reads, `dst` for `k*n` writes; no overlap.
unsafe fn widen_matrix(widen: Widen, src: *const u16, dst: *mut f32, k: usize, n: usize, par: bool) {
    let (src, dst) = (src as usize, dst as usize);
    let run = |first: usize, count: usize| {
        // SAFETY: rows `first..first + count` are inside both buffers.
        unsafe { widen((src as *const u16).add(first * n), (dst as *mut f32).add(first * n), count * n) }
    };
    if par {
        par_for(k, rows_per_chunk(n), &run);
    } else {
        run(0, k);
    }
}
