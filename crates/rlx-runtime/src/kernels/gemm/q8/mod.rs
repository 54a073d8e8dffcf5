//! Products with 8-bit weights (`PackedGemmQ8`): ggml's Q8_0 blocks in
//! the panel layout of `rlx_core::q8`, kept 8-bit in the weights file and
//! in memory. A kernel widens 16 (AVX-512) or 8 (AVX2) `i8` of a panel
//! row to f32 in registers right before the multiply-adds, so a weight
//! costs one byte of memory traffic (and a scale per 32): a decode step
//! streams a quarter of the f32 product's bytes.
//!
//! The order of the sums is the scalar reference's (`scalar.rs`), which
//! every variant matches bit for bit: per output element, its bias (or
//! 0); then per block of 32 steps of `k`, in order, a block sum started at
//! 0 with one FMA `a[p] * q[p]` per step in order, added to the element
//! with one FMA `s * d` by the block's scale. Then the activation.
//!
//! Work is split into tasks of four panels (64 columns) by up to
//! [`ROW_CHUNK`] rows; a task keeps its partial sums in an L1 tile and
//! walks `k` in passes of [`PASS_BLOCKS`] blocks, running the kernel over
//! its row pairs within a pass, so a pass's 18 KiB of weights stays in L1
//! for the rows after the first.

mod scalar;
#[cfg(test)]
mod tests;
#[cfg(target_arch = "x86_64")]
mod x86;

use rlx_core::pack::PANEL;
use rlx_core::q8::{BLOCK, BLOCK_BYTES};
use rlx_core::ActKind;

use crate::kernels::variants::variants;
use crate::threads::par_for;

/// Panels of one task.
const GROUP_PANELS: usize = 4;
/// Columns of one task, and the row stride of its tile.
const GROUP: usize = GROUP_PANELS * PANEL;
/// Rows of one task.
const ROW_CHUNK: usize = 16;
/// Blocks of `k` per pass: 256 steps, 18 KiB of a task's weights.
const PASS_BLOCKS: usize = 8;

/// One kernel call: `rows` rows of `a` (stride `lda`, at the pass's
/// first step) times `blocks` blocks of `panels` full panels of `b`
/// (block 0 of panel `q` at `b + q * panel_stride` bytes) added to the
/// `rows x panels*16` tile `c` (stride [`GROUP`]), which holds the partial
/// sums so far.
#[derive(Clone, Copy)]
pub(crate) struct Q8Tile {
    rows: usize,
    panels: usize,
    blocks: usize,
    a: *const f32,
    lda: usize,
    b: *const u8,
    panel_stride: usize,
    c: *mut f32,
}

/// A kernel over one tile.
///
/// # Safety
///
/// `rows` (1 to the variant's `max_rows`) rows of `blocks * 32` reads at
/// `a` (stride `lda`), `blocks * BLOCK_BYTES` bytes of each of `panels`
/// (1 to 4) panels at `b`, `rows` rows of `panels * 16` reads and writes
/// at `c` (stride [`GROUP`]); the CPU has the variant's instruction set.
pub(crate) type Q8Kernel = unsafe fn(t: &Q8Tile);

/// A kernel and the most rows it takes per call.
#[derive(Clone, Copy)]
pub(crate) struct Q8Variant {
    max_rows: usize,
    kernel: Q8Kernel,
}

variants! {
    /// The Q8 kernels, best first, the scalar reference last.
    static KERNELS: Q8Variant = [
        #[cfg(target_arch = "x86_64")]
        "avx512" if cpu::avx512f() => Q8Variant { max_rows: 2, kernel: x86::avx512 },
        #[cfg(target_arch = "x86_64")]
        "avx2" if cpu::avx2_fma() => Q8Variant { max_rows: 2, kernel: x86::avx2 },
        "scalar" => Q8Variant { max_rows: 2, kernel: scalar::kernel },
    ];
}

/// `c[m,n] = act(a[m,k] @ dequant(B) + bias[n])` with `B` in the Q8
/// layout of `rlx_core::q8` (`w`: `q8_len(k, n)` bytes): the weights of
/// `PackedGemmQ8`.
///
/// # Safety
///
/// `k` a multiple of 32; `a` valid for `m*k` reads, `w` for `q8_len(k,
/// n)` byte reads, `bias` (when given) for `n` reads, `c` for `m*n`
/// writes; `c` must not overlap `a`, `w` or `bias` (use
/// [`packed_gemm_q8_via`]).
#[allow(clippy::too_many_arguments)]
pub unsafe fn packed_gemm_q8(
    a: *const f32,
    w: *const u8,
    bias: Option<*const f32>,
    c: *mut f32,
    m: usize,
    k: usize,
    n: usize,
    act: ActKind,
    par: bool,
) {
    // SAFETY: forwarded contract.
    unsafe { run(*KERNELS.best(), a, w, bias, c, (m, k, n), act, par) }
}

/// [`packed_gemm_q8`] through a temporary of `m*n` f32.
///
/// # Safety
///
/// As [`packed_gemm_q8`] without the overlap rule, and `scratch` valid for
/// `m*n` writes, overlapping no operand.
#[allow(clippy::too_many_arguments)]
pub unsafe fn packed_gemm_q8_via(
    scratch: *mut f32,
    a: *const f32,
    w: *const u8,
    bias: Option<*const f32>,
    c: *mut f32,
    m: usize,
    k: usize,
    n: usize,
    act: ActKind,
    par: bool,
) {
    // SAFETY: `scratch` is a separate buffer of `m*n` f32.
    unsafe {
        packed_gemm_q8(a, w, bias, scratch, m, k, n, act, par);
        std::ptr::copy_nonoverlapping(scratch, c, m * n);
    }
}

/// The product on one variant.
///
/// # Safety
///
/// As [`packed_gemm_q8`], and the CPU runs `v`.
#[allow(clippy::too_many_arguments)]
unsafe fn run(
    v: Q8Variant,
    a: *const f32,
    w: *const u8,
    bias: Option<*const f32>,
    c: *mut f32,
    (m, k, n): (usize, usize, usize),
    act: ActKind,
    par: bool,
) {
    if m == 0 || n == 0 {
        return;
    }
    let blocks = k / BLOCK;
    let panel_stride = blocks * BLOCK_BYTES;
    let (a, w, c) = (a as usize, w as usize, c as usize);
    let bias = bias.map(|b| b as usize);
    let groups = n.div_ceil(GROUP);
    let chunks = m.div_ceil(ROW_CHUNK);
    let work = |first: usize, count: usize| {
        for task in first..first + count {
            let (g, chunk) = (task / chunks, task % chunks);
            let (j0, i0) = (g * GROUP, chunk * ROW_CHUNK);
            let cols = GROUP.min(n - j0);
            let rows = ROW_CHUNK.min(m - i0);
            let panels = cols.div_ceil(PANEL);
            let mut tile = [0.0f32; ROW_CHUNK * GROUP];
            // SAFETY: columns `j0..j0 + cols` of the bias and of rows
            // `i0..i0 + rows` of `c`, those rows of `a`, panels `j0 /
            // PANEL ..` of `w` (full panels, `blocks` blocks each): the
            // caller's extents; the tile holds the padding columns.
            unsafe {
                if let Some(b) = bias {
                    for r in 0..rows {
                        std::ptr::copy_nonoverlapping(
                            (b as *const f32).add(j0),
                            tile.as_mut_ptr().add(r * GROUP),
                            cols,
                        );
                    }
                }
                let mut b0 = 0;
                while b0 < blocks {
                    let nb = PASS_BLOCKS.min(blocks - b0);
                    let mut r = 0;
                    while r < rows {
                        let t = Q8Tile {
                            rows: v.max_rows.min(rows - r),
                            panels,
                            blocks: nb,
                            a: (a as *const f32).add((i0 + r) * k + b0 * BLOCK),
                            lda: k,
                            b: (w as *const u8).add((j0 / PANEL) * panel_stride + b0 * BLOCK_BYTES),
                            panel_stride,
                            c: tile.as_mut_ptr().add(r * GROUP),
                        };
                        (v.kernel)(&t);
                        r += t.rows;
                    }
                    b0 += nb;
                }
                for r in 0..rows {
                    let row = (c as *mut f32).add((i0 + r) * n + j0);
                    std::ptr::copy_nonoverlapping(tile.as_ptr().add(r * GROUP), row, cols);
                    if !matches!(act, ActKind::Identity) {
                        crate::kernels::activation::act_f32_slice(act, row, row, cols, false);
                    }
                }
            }
        }
    };
    if par {
        par_for(groups * chunks, 1, &work);
    } else {
        work(0, groups * chunks);
    }
}
