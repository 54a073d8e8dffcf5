//! The project's own f32 GEMM: `c = act(a @ B + bias)` by register-tiled
//! microkernels, with the bias and activation fused.
//!
//! `B` is always in the panel layout of [`rlx_core::pack`]: a weight the
//! importer prepacked (`PackedGemm`, nothing packed at run time), or a
//! convolution's patches, which its unfolding writes in that layout
//! directly ([`pack_rows_f32`] for a 1x1 convolution's input). The bias
//! runs along the columns (a product's bias) or the rows (a convolution's
//! output channels, its weight being the left operand).
//!
//! The work is a grid of tiles: `mr` rows of `a` (12 for AVX-512, 6 for
//! AVX2 and NEON: enough independent accumulators to hide the FMA latency)
//! by [`PANEL`] columns. A microkernel keeps one tile's accumulators in
//! registers over a pass of up to [`KC`] steps of `k`, so the `B` slice it
//! streams (16 KiB) stays in L1 while it serves every row strip of a task.
//!
//! Every element is its bias (or 0) followed by one fused multiply-add per
//! `p` in increasing order: `acc = fma(a[i,p], B[p,j], acc)`. Each
//! microkernel (scalar, AVX2+FMA, AVX-512, NEON) does exactly that, so all
//! of them and every thread count give the same bits, and the scalar one
//! is the reference the tests hold the others to. The activation then runs
//! on each task's finished tiles while they are in cache, through the
//! activation family's kernel, so it rounds as a separate `Activation`.
//!
//! Threads split the tile grid into tasks of [`TASK_ROWS`] row strips x
//! [`TASK_PANELS`] panels; never `k`.

#[cfg(target_arch = "x86_64")]
mod half_gemv;
#[cfg(target_arch = "aarch64")]
mod neon;
mod scalar;
#[cfg(test)]
mod tests;
#[cfg(target_arch = "x86_64")]
mod x86;

use rlx_core::pack::PANEL;
use rlx_core::ActKind;
use std::ops::Range;

use crate::kernels::variants::variants;
use crate::threads::par_for;

/// The most rows of `a` any microkernel takes per call.
pub(crate) const MAX_MR: usize = 12;
/// `k` per pass over a tile: a 16 KiB slice of 16 columns, half of L1.
pub const KC: usize = 256;
/// Steps of `k` per pass over a widened slice read once (see
/// [`packed_gemm_half`]).
const SHORT_PASS: usize = 64;
/// Row strips per parallel task.
const TASK_ROWS: usize = 4;
/// Panels per parallel task.
const TASK_PANELS: usize = 4;

/// Where a tile's accumulators start.
#[derive(Clone, Copy, Debug)]
pub(crate) enum Init {
    /// Zero.
    Zero,
    /// The tile's own `c` (a later pass over `k`).
    Load,
    /// `bias[j]` for column `j` of the tile.
    ColBias(*const f32),
    /// `bias[r]` for row `r` of the tile.
    RowBias(*const f32),
}

/// One microkernel call: `rows <= mr` rows by `cols <= PANEL` columns of
/// `c`, over `kc` steps of `k`:
/// `c[r, j] = fma(a[r*lda + p], b[p*PANEL + j], acc)` for `p < kc`, from
/// `init`. `b` is a slice of a panel: `kc` rows of `PANEL` values, padded
/// past `cols`.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Tile {
    pub rows: usize,
    pub cols: usize,
    pub kc: usize,
    pub a: *const f32,
    pub lda: usize,
    pub b: *const f32,
    /// Elements from one panel to the next (`k * PANEL`), for wide kernels.
    pub panel_stride: usize,
    pub c: *mut f32,
    pub ldc: usize,
    pub init: Init,
    /// Elements from each vector of `B` the tile reads to the one the
    /// next slice of the task reads in its place, to prefetch into L2
    /// while this slice computes; 0: none. The tile prefetches for its
    /// steps `p` in `prefetch_from..prefetch_to` only: the strips of a
    /// slice share it. A hint: it changes no value and is never
    /// dereferenced.
    pub prefetch: isize,
    pub prefetch_from: usize,
    pub prefetch_to: usize,
}

/// A microkernel.
///
/// # Safety
///
/// For the tile `t`: `a` valid for `rows` rows of `kc` reads at stride
/// `lda`; `b` for `kc * PANEL` reads; `c` for `rows` rows of `cols` reads and writes at
/// stride `ldc`; a bias for `cols` (column) or `rows` (row) reads; and the
/// CPU has the kernel's instruction set.
pub(crate) type Microkernel = unsafe fn(t: &Tile);

/// One instruction set's microkernel.
#[derive(Clone, Copy)]
pub(crate) struct Kernel {
    pub(crate) name: &'static str,
    /// Rows per call (at most [`MAX_MR`]).
    pub(crate) mr: usize,
    pub(crate) micro: Microkernel,
    /// The kernel for strips of one or two rows (a GEMV).
    pub(crate) wide: Option<Wide>,
    /// A kernel over two full panels at once (`Tile::cols == 2 * PANEL`,
    /// panel 1 at `b + panel_stride`), up to `mr` rows: twice the
    /// accumulators, so each load of `a` feeds two multiply-adds.
    pub(crate) pair: Option<Microkernel>,
}

/// A kernel over several panels at once for strips of at most `rows`
/// rows: a single row has too few accumulators per panel to hide the FMA
/// latency (one panel's `k` steps are one dependent chain), so it takes
/// up to `panels` panels' chains side by side.
///
/// Its microkernel takes `rows <= Wide::rows` and `cols` in `1..=panels *
/// PANEL`: it reads `cols.div_ceil(PANEL)` panels (panel `q` at `b + q *
/// panel_stride`, the last one maybe partial: padded in `B`, so read in
/// full) and stores `cols` columns.
#[derive(Clone, Copy)]
pub(crate) struct Wide {
    pub(crate) rows: usize,
    pub(crate) panels: usize,
    pub(crate) micro: Microkernel,
}

/// The most panels a [`Wide`] kernel takes.
pub(crate) const MAX_WIDE_PANELS: usize = 8;
/// The most rows a [`Wide`] kernel takes.
const MAX_WIDE_ROWS: usize = 2;

const SCALAR: Kernel = Kernel { name: "scalar", mr: scalar::MR, micro: scalar::micro, wide: None, pair: None };

variants! {
    /// The microkernels, best first.
    static KERNELS: Kernel = [
        #[cfg(target_arch = "x86_64")]
        "avx512" if cpu::avx512f() => Kernel {
            name: "avx512",
            mr: x86::MR_AVX512,
            micro: x86::micro_avx512,
            wide: Some(Wide { rows: 2, panels: 8, micro: x86::wide_avx512 }),
            pair: Some(x86::pair_avx512),
        },
        #[cfg(target_arch = "x86_64")]
        "avx2" if cpu::avx2_fma() => Kernel {
            name: "avx2",
            mr: x86::MR_AVX2,
            micro: x86::micro_avx2,
            wide: Some(Wide { rows: 1, panels: 4, micro: x86::wide_avx2 }),
            pair: None,
        },
        #[cfg(target_arch = "aarch64")]
        "neon" if cpu::neon() => Kernel {
            name: "neon",
            mr: neon::MR_NEON,
            micro: neon::micro_neon,
            wide: Some(Wide { rows: 1, panels: 4, micro: neon::wide_neon }),
            pair: None,
        },
        "scalar" => SCALAR,
    ];
}

/// The best microkernel, detected once per process.
#[inline]
fn kernel() -> &'static Kernel {
    KERNELS.best()
}

/// The name of the microkernel this process uses (for benchmarks).
pub fn tiled_gemm_isa() -> &'static str {
    kernel().name
}

/// Which way the bias runs.
#[derive(Clone, Copy, Debug)]
pub(crate) enum Bias {
    None,
    /// One value per column of `c`.
    Cols(*const f32),
    /// One value per row of `c`.
    Rows(*const f32),
}

/// One GEMM: `c[m, n] (stride ldc) = act(a[m, k] (stride lda) @ B + bias)`
/// with `B` packed (`packed_len(k, n)` values at `b`).
#[derive(Clone, Copy, Debug)]
pub(crate) struct Gemm {
    pub m: usize,
    pub k: usize,
    pub n: usize,
    pub a: *const f32,
    pub lda: usize,
    pub b: *const f32,
    pub c: *mut f32,
    pub ldc: usize,
    pub bias: Bias,
    pub act: ActKind,
}

// SAFETY: a `Gemm` is a description of extents its caller vouched for;
// tasks on different threads write disjoint tiles of `c` and only read the
// rest.
unsafe impl Sync for Gemm {}

/// `c[m,n] = act(a[m,k] @ B + bias[n])` with `B` packed (`w`).
///
/// `bias` is optional. `par` splits the tile grid over the rlx pool (the
/// lowering decides it from the shape); the bits are the same either way.
///
/// # Safety
///
/// `a` valid for `m*k` reads, `w` for `rlx_core::pack::packed_len(k, n)`
/// reads, `bias` (when given) valid for `n` reads, `c` for `m*n` writes;
/// `c` must not overlap `a`, `w` or `bias` (use [`packed_gemm_f32_via`]).
pub unsafe fn packed_gemm_f32(
    a: *const f32,
    w: *const f32,
    bias: Option<*const f32>,
    c: *mut f32,
    m: usize,
    k: usize,
    n: usize,
    act: ActKind,
    par: bool,
) {
    let bias = bias.map_or(Bias::None, Bias::Cols);
    let g = Gemm { m, k, n, a, lda: k, b: w, c, ldc: n, bias, act };
    // SAFETY: forwarded contract.
    unsafe { run(kernel(), &g, par) }
}

/// [`packed_gemm_f32`] through a temporary of `m*n` f32.
///
/// # Safety
///
/// As [`packed_gemm_f32`] without the overlap rule, and `scratch` valid
/// for `m*n` writes, overlapping no operand.
pub unsafe fn packed_gemm_f32_via(
    scratch: *mut f32,
    a: *const f32,
    w: *const f32,
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
        packed_gemm_f32(a, w, bias, scratch, m, k, n, act, par);
        std::ptr::copy_nonoverlapping(scratch, c, m * n);
    }
}

/// Widens `len` 16-bit floats (f16 or bf16 bits) at `src` into f32 at `dst`.
pub(crate) type Widen = unsafe fn(*const u16, *mut f32, usize);

/// `c[m,n] = act(a[m,k] @ widen(B) + bias[n])` with `B` packed in 16-bit
/// floats (`w`: `packed_len(k, n)` f16 or bf16 values, the layout of
/// [`rlx_core::pack`]). Each pass's slice of `B` is widened into the
/// task's stack buffer right before the microkernels read it, so memory
/// traffic is the 2-byte weights and the bits are those of
/// [`packed_gemm_f32`] over the widened weights.
///
/// # Safety
///
/// As [`packed_gemm_f32`] with `w` valid for `packed_len(k, n)` 16-bit
/// reads, and `widen` a conversion kernel this CPU runs.
pub(crate) unsafe fn packed_gemm_half(
    (widen, bf16): (Widen, bool),
    a: *const f32,
    w: *const u16,
    bias: Option<*const f32>,
    c: *mut f32,
    (m, k, n): (usize, usize, usize),
    act: ActKind,
    par: bool,
) {
    // One or two rows: a kernel that widens in registers, at memory speed.
    #[cfg(target_arch = "x86_64")]
    if let Some((_, kernel)) = half_gemv::kernel_for(m, bf16) {
        // SAFETY: forwarded contract; the kernel is for `m` rows.
        return unsafe { half_gemv::gemv(kernel, a, w, bias, c, (m, k, n), act, par) };
    }
    #[cfg(not(target_arch = "x86_64"))]
    let _ = bf16;
    let w_addr = w as usize;
    // Panels `cols.start / PANEL ..` of the range, rows `p0..p0 + kc` of
    // each: a contiguous run of `kc * PANEL` values per panel.
    let produce = move |p0: usize, kc: usize, cols: Range<usize>, dst: *mut f32| {
        let first = cols.start / PANEL;
        for q in 0..cols.len().div_ceil(PANEL) {
            // SAFETY: panel `first + q` exists (`cols` is inside `n`), its
            // rows `p0..p0 + kc` are inside it, and `dst` holds
            // `TASK_PANELS` panel slices of `kc` rows.
            unsafe {
                let src = (w_addr as *const u16).add((first + q) * k * PANEL + p0 * PANEL);
                widen(src, dst.add(q * kc * PANEL), kc * PANEL);
            }
        }
    };
    let bias = bias.map_or(Bias::None, Bias::Cols);
    let g = Gemm { m, k, n, a, lda: k, b: std::ptr::null(), c, ldc: n, bias, act };
    // A strip that reads each widened slice once (a decode step's product)
    // widens 64 steps of `k` at a time: four panels' slice is then 16 KiB
    // and stays in L1 between the widening and the microkernel, where a
    // full 64 KiB pass would go through L2 twice per weight.
    let pass = if m <= kernel().wide.map_or(1, |w| w.rows) { SHORT_PASS } else { KC };
    // SAFETY: forwarded contract; `produce` writes every value of each
    // slice's panels (packed panels are full width).
    unsafe { run_produced_passes(kernel(), &g, &produce, pass, par) }
}

/// `c[m,n] = a[m,k] @ B + bias[i]` with `B` (`k x n`) packed at `b`, `a`
/// and `c` row-major at strides `lda` and `ldc`, and the bias (optional)
/// one value per row, as a convolution's output channels have it. Bits as
/// [`packed_gemm_f32`].
///
/// # Safety
///
/// `a` valid for `m` rows of `k` reads at stride `lda`, `b` for
/// `packed_len(k, n)` reads, `bias` (when given) for `m` reads, `c` for
/// `m` rows of `n` writes at stride `ldc`, overlapping no input.
pub unsafe fn packed_gemm_row_bias_f32(
    a: *const f32,
    lda: usize,
    b: *const f32,
    bias: Option<*const f32>,
    c: *mut f32,
    ldc: usize,
    (m, k, n): (usize, usize, usize),
    par: bool,
) {
    let bias = bias.map_or(Bias::None, Bias::Rows);
    let g = Gemm { m, k, n, a, lda, b, c, ldc, bias, act: ActKind::Identity };
    // SAFETY: forwarded contract.
    unsafe { run(kernel(), &g, par) }
}

/// [`packed_gemm_row_bias_f32`], then `act` (as [`packed_gemm_f32`]'s), with `B` stored nowhere: `produce` writes
/// each pass's slice just before the microkernels read it (see
/// [`run_produced`]). Same bits.
///
/// # Safety
///
/// As [`packed_gemm_row_bias_f32`] without the rule for `b`, and
/// [`run_produced`]'s contract for `produce`.
pub(crate) unsafe fn packed_gemm_row_bias_produced_f32(
    a: *const f32,
    lda: usize,
    produce: Producer<'_>,
    bias: Option<*const f32>,
    c: *mut f32,
    ldc: usize,
    (m, k, n): (usize, usize, usize),
    act: ActKind,
    par: bool,
) {
    let bias = bias.map_or(Bias::None, Bias::Rows);
    let g = Gemm { m, k, n, a, lda, b: std::ptr::null(), c, ldc, bias, act };
    // SAFETY: forwarded contract.
    unsafe { run_produced(kernel(), &g, produce, par) }
}

/// `c[m,n] (stride ldc) = a[m,k] (stride lda) @ B` with `B` packed at `b`,
/// on the calling thread (attention runs one head per thread).
///
/// # Safety
///
/// `a` valid for `m` rows of `k` reads at stride `lda`, `b` for
/// `packed_len(k, n)` reads, `c` for `m` rows of `n` writes at stride
/// `ldc`, overlapping no input.
pub(crate) unsafe fn packed_gemm_strided_f32(
    a: *const f32,
    lda: usize,
    b: *const f32,
    c: *mut f32,
    ldc: usize,
    (m, k, n): (usize, usize, usize),
) {
    let g = Gemm { m, k, n, a, lda, b, c, ldc, bias: Bias::None, act: ActKind::Identity };
    // SAFETY: forwarded contract.
    unsafe { run(kernel(), &g, false) }
}

/// `c[m,n] (stride ldc) = a[m,k] (stride lda) @ B + bias[n]` with `B`
/// packed at `b` and the bias optional: a recurrent cell's product of one
/// step, which fills some of the gate columns of wider rows. Bits as
/// [`packed_gemm_f32`].
///
/// # Safety
///
/// `a` valid for `m` rows of `k` reads at stride `lda`, `b` for
/// `packed_len(k, n)` reads, `bias` (when given) for `n` reads, `c` for
/// `m` rows of `n` writes at stride `ldc`, overlapping no input.
pub(crate) unsafe fn packed_gemm_cols_f32(
    a: *const f32,
    lda: usize,
    b: *const f32,
    bias: Option<*const f32>,
    c: *mut f32,
    ldc: usize,
    (m, k, n): (usize, usize, usize),
    par: bool,
) {
    let bias = bias.map_or(Bias::None, Bias::Cols);
    let g = Gemm { m, k, n, a, lda, b, c, ldc, bias, act: ActKind::Identity };
    // SAFETY: forwarded contract.
    unsafe { run(kernel(), &g, par) }
}

/// Packs the transpose of `src` (`n` rows of `k` values at stride `ld`,
/// so `B[p, j] = src[j * ld + p]` is `k x n`) into the panel layout at
/// `dst`. Serial.
///
/// # Safety
///
/// `src` valid for `n` rows of `k` reads at stride `ld`, `dst` for
/// `packed_len(k, n)` writes, not overlapping.
pub(crate) unsafe fn pack_transposed_f32(src: *const f32, ld: usize, k: usize, n: usize, dst: *mut f32) {
    for j0 in (0..n).step_by(PANEL) {
        let cols = PANEL.min(n - j0);
        // SAFETY: panel `j0 / PANEL` of `dst` and rows `j0..j0 + cols` of
        // `src`, inside the caller's extents.
        unsafe {
            let panel = dst.add(j0 * k);
            for c in 0..PANEL {
                if c < cols {
                    let row = src.add((j0 + c) * ld);
                    for p in 0..k {
                        *panel.add(p * PANEL + c) = *row.add(p);
                    }
                } else {
                    for p in 0..k {
                        *panel.add(p * PANEL + c) = 0.0;
                    }
                }
            }
        }
    }
}

/// Runs `g` with a given microkernel (the tests run each).
///
/// # Safety
///
/// As [`gemm`], and the CPU has `kernel`'s instruction set.
pub(crate) unsafe fn run(kernel: &Kernel, g: &Gemm, par: bool) {
    if g.m == 0 || g.n == 0 {
        return;
    }
    // Strips of equal height (at most `mr`): 16 rows as 8 + 8, not
    // 12 + 4, so no strip has too few accumulators to hide the latency.
    let strips = g.m.div_ceil(kernel.mr);
    let mr = g.m.div_ceil(strips);
    let row_tasks = strips.div_ceil(TASK_ROWS);
    // A GEMV-like product's task is one call of the wide kernel.
    let task_panels = kernel.wide.filter(|w| mr <= w.rows).map_or(TASK_PANELS, |w| w.panels);
    let tasks = row_tasks * g.n.div_ceil(PANEL).div_ceil(task_panels);
    // Panel-group major: consecutive tasks (one thread's share) reuse the
    // same columns of `B` from L2 and walk down `a`.
    let work = |first: usize, count: usize| {
        for task in first..first + count {
            let (pg, rg) = (task / row_tasks, task % row_tasks);
            let i_start = rg * TASK_ROWS * mr;
            let j_start = pg * task_panels * PANEL;
            let rows = i_start..(i_start + TASK_ROWS * mr).min(g.m);
            let cols = j_start..(j_start + task_panels * PANEL).min(g.n);
            // SAFETY: the task's tiles lie inside `g`'s extents, and
            // different tasks write disjoint tiles of `c`.
            unsafe { run_task(kernel, g, mr, rows, cols, None) }
        }
    };
    if par {
        par_for(tasks, 1, &work);
    } else {
        work(0, tasks);
    }
}

/// Writes the slice of `B` a pass reads: rows `p0..p0 + kc` of the
/// panels covering columns `cols` (`cols.start` a multiple of [`PANEL`]),
/// to `dst` in the panel layout of a `kc`-row matrix (panel `q` of the
/// range at `dst + q * kc * PANEL`), every value of every panel written,
/// columns past `cols.end` included (as anything finite: they are never
/// stored). Calls for different tasks run at once.
pub(crate) type Producer<'a> = &'a (dyn Fn(usize, usize, Range<usize>, *mut f32) + Sync);

/// The values of one pass's slice of a produced `B`: 64 KiB, on the
/// stack of the thread running the task.
const LOCAL_B: usize = KC * TASK_PANELS * PANEL;

/// Runs `g` whose `B` is not stored anywhere (`g.b` is unused): `produce`
/// writes each pass's slice to a buffer on the task's stack right before
/// the microkernels read it, so a convolution's patches go from its input
/// to the registers through L1 instead of through a patch matrix in
/// memory. A task is a group of [`TASK_PANELS`] panels by a group of row
/// strips; rows are split only when there are too few column groups for
/// the threads (each row group then produces its slices again, a copy
/// that is small next to the product). Same bits as [`run`].
///
/// # Safety
///
/// As [`run`] without the rule for `b`, and `produce` must write what
/// [`Producer`] says, reading only memory nothing writes meanwhile.
pub(crate) unsafe fn run_produced(kernel: &Kernel, g: &Gemm, produce: Producer<'_>, par: bool) {
    // SAFETY: forwarded contract.
    unsafe { run_produced_passes(kernel, g, produce, KC, par) }
}

/// [`run_produced`] with passes of at most `pass` (1 to [`KC`]) steps of
/// `k`: shorter passes keep a slice small enough for L1 when it is read
/// once (a product of one or two rows). Same bits.
///
/// # Safety
///
/// As [`run_produced`].
pub(crate) unsafe fn run_produced_passes(kernel: &Kernel, g: &Gemm, produce: Producer<'_>, pass: usize, par: bool) {
    if g.m == 0 || g.n == 0 {
        return;
    }
    let pass = pass.clamp(1, KC);
    let strips = g.m.div_ceil(kernel.mr);
    let mr = g.m.div_ceil(strips);
    let col_tasks = g.n.div_ceil(PANEL).div_ceil(TASK_PANELS);
    // At least four tasks per thread, so an uneven last column group
    // (196 columns are 64 + 64 + 64 + 4) does not leave a thread idle.
    let row_groups = if par { (4 * crate::threads::num_threads()).div_ceil(col_tasks).clamp(1, strips) } else { 1 };
    let strips_per_task = strips.div_ceil(row_groups);
    let row_tasks = strips.div_ceil(strips_per_task);
    let work = |first: usize, count: usize| {
        for task in first..first + count {
            let (cg, rg) = (task / row_tasks, task % row_tasks);
            let i_start = rg * strips_per_task * mr;
            let j_start = cg * TASK_PANELS * PANEL;
            let rows = i_start..(i_start + strips_per_task * mr).min(g.m);
            let cols = j_start..(j_start + TASK_PANELS * PANEL).min(g.n);
            // SAFETY: the task's tiles lie inside `g`'s extents; tasks
            // write disjoint tiles of `c`.
            unsafe { run_task(kernel, g, mr, rows, cols, Some((produce, pass))) }
        }
    };
    if par {
        par_for(row_tasks * col_tasks, 1, &work);
    } else {
        work(0, row_tasks * col_tasks);
    }
}

/// The tiles (strips of `mr <= kernel.mr` rows) of one task, rows `rows`
/// by columns `cols`: every `k` pass (each slice of `B` produced first
/// when `produce` is given), then the activation.
///
/// # Safety
///
/// As [`run`] / [`run_produced`].
unsafe fn run_task(
    kernel: &Kernel,
    g: &Gemm,
    mr: usize,
    rows: Range<usize>,
    cols: Range<usize>,
    produce: Option<(Producer<'_>, usize)>,
) {
    let (i_start, i_end) = (rows.start, rows.end);
    let (j_start, j_end) = (cols.start, cols.end);
    // A produced `B`'s pass slice; written in full before each read.
    let mut local = std::mem::MaybeUninit::<[f32; LOCAL_B]>::uninit();
    let mut p0 = 0;
    // A produced `B`'s passes may be shorter than `KC` (see
    // `run_produced`); the FMA order per element is the same either way.
    let pass = produce.map_or(KC, |(_, pass)| pass);
    loop {
        let kc = pass.min(g.k - p0);
        if let Some((produce, _)) = produce {
            produce(p0, kc, cols.clone(), local.as_mut_ptr().cast());
        }
        // A GEMV-like strip takes wide calls over all of the task's panels
        // instead of one call per panel.
        let wide = kernel.wide.filter(|w| mr <= w.rows);
        let mut j0 = j_start;
        while j0 < j_end {
            // The widest kernel that fits: the wide one, a pair of full
            // panels, else one (maybe narrow) panel.
            let (micro, step) = match (wide, kernel.pair) {
                (Some(w), _) => (w.micro, w.panels * PANEL),
                (None, Some(f)) if j_end - j0 >= 2 * PANEL => (f, 2 * PANEL),
                _ => (kernel.micro, PANEL),
            };
            let (b, panel_stride) = match produce {
                // Panel `(j0 - j_start) / PANEL` of the pass slice.
                Some(_) => (local.as_ptr().cast::<f32>().wrapping_add((j0 - j_start) * kc), kc * PANEL),
                // SAFETY: panel `j0 / PANEL`, rows `p0..p0 + kc`, inside `B`.
                None => (unsafe { g.b.add(j0 * g.k + p0 * PANEL) }, g.k * PANEL),
            };
            // A stored `B` may come from memory (weights past the last-level
            // cache): the slice's strips prefetch the slice read next, the
            // task's next panels or its next pass, each strip a share of
            // the steps, so the lines arrive while this slice computes.
            let prefetch = if produce.is_some() {
                0
            } else if j0 + step < j_end {
                (step * g.k) as isize
            } else if p0 + kc < g.k {
                (j_start * g.k + (p0 + kc) * PANEL) as isize - (j0 * g.k + p0 * PANEL) as isize
            } else {
                0
            };
            let strips = (i_end - i_start).div_ceil(mr);
            for (strip, i0) in (i_start..i_end).step_by(mr).enumerate() {
                let init = match (p0, g.bias) {
                    (0, Bias::None) => Init::Zero,
                    // The bias covers the tile's columns / rows.
                    (0, Bias::Cols(bias)) => Init::ColBias(bias.wrapping_add(j0)),
                    (0, Bias::Rows(bias)) => Init::RowBias(bias.wrapping_add(i0)),
                    _ => Init::Load,
                };
                let tile = Tile {
                    rows: mr.min(g.m - i0),
                    cols: step.min(j_end - j0),
                    kc,
                    // SAFETY: row `i0`, column `p0` of `a`.
                    a: unsafe { g.a.add(i0 * g.lda + p0) },
                    lda: g.lda,
                    b,
                    panel_stride,
                    // SAFETY: row `i0`, column `j0` of `c`.
                    c: unsafe { g.c.add(i0 * g.ldc + j0) },
                    ldc: g.ldc,
                    init,
                    prefetch,
                    prefetch_from: strip * kc / strips,
                    prefetch_to: (strip + 1) * kc / strips,
                };
                // SAFETY: the tile is inside the extents (see above); a
                // pair spans two full panels.
                unsafe { micro(&tile) };
            }
            j0 += step;
        }
        p0 += kc;
        if p0 >= g.k {
            break;
        }
    }
    if !matches!(g.act, ActKind::Identity) {
        for i in i_start..i_end {
            // SAFETY: row `i`, columns `j_start..j_end` of `c`, just
            // written by this task.
            unsafe {
                let row = g.c.add(i * g.ldc + j_start);
                crate::kernels::activation::act_f32_slice(g.act, row, row, j_end - j_start, false);
            }
        }
    }
}

/// Packs `src` (`k` rows of `n` values at stride `ld`) into the panel
/// layout at `dst` (`packed_len(k, n)` values), as
/// [`rlx_core::pack::pack_b`] does at import time; `par` splits rows.
///
/// # Safety
///
/// `src` valid for `k` rows of `n` reads at stride `ld`, `dst` for
/// `packed_len(k, n)` writes, not overlapping.
pub unsafe fn pack_rows_f32(src: *const f32, ld: usize, k: usize, n: usize, dst: *mut f32, par: bool) {
    let (src, dst) = (src as usize, dst as usize);
    let full = n / PANEL;
    let tail = n - full * PANEL;
    // Row by row: reads are sequential, and each panel row written is one
    // whole cache line.
    let work = |first: usize, count: usize| {
        for p in first..first + count {
            // SAFETY: row `p` of `src` (`n` values) and row `p` of every
            // panel of `dst`, written only by this iteration.
            unsafe {
                let from = (src as *const f32).add(p * ld);
                let to = (dst as *mut f32).add(p * PANEL);
                for panel in 0..full {
                    let row: [f32; PANEL] = from.add(panel * PANEL).cast::<[f32; PANEL]>().read_unaligned();
                    to.add(panel * PANEL * k).cast::<[f32; PANEL]>().write_unaligned(row);
                }
                if tail > 0 {
                    let mut row = [0.0f32; PANEL];
                    std::ptr::copy_nonoverlapping(from.add(full * PANEL), row.as_mut_ptr(), tail);
                    to.add(full * PANEL * k).cast::<[f32; PANEL]>().write_unaligned(row);
                }
            }
        }
    };
    if par {
        par_for(k, (4096 / n.max(1)).max(1), &work);
    } else {
        work(0, k);
    }
}

/// Runs a full-width microkernel on a tile of fewer than [`PANEL`]
/// columns through local copies of its `c` and column bias, so no kernel
/// touches memory past column `cols` (the panel itself is padded).
///
/// # Safety
///
/// As [`Microkernel`], with `t.rows <= MAX_MR`; `full` must handle
/// `cols == PANEL`.
pub(crate) unsafe fn narrow_tile(full: Microkernel, t: &Tile) {
    // SAFETY: forwarded contract; `MAX_MR` rows of one panel fit.
    unsafe { through_local::<{ MAX_MR * PANEL }, PANEL>(full, t, PANEL) }
}

/// Runs a wide kernel's tile whose last panel is partial (`t.cols` not a
/// multiple of [`PANEL`]) as full panels over local copies of `c` and the
/// column bias; `B` is padded to whole panels, so it is read in place.
///
/// # Safety
///
/// As [`Wide`]'s microkernel with `t.rows <= MAX_WIDE_ROWS` and `t.cols <=
/// MAX_WIDE_PANELS * PANEL`; `full` must handle `cols ==
/// t.cols.div_ceil(PANEL) * PANEL`.
pub(crate) unsafe fn narrow_wide(full: Microkernel, t: &Tile) {
    const WIDTH: usize = MAX_WIDE_PANELS * PANEL;
    // SAFETY: forwarded contract; `MAX_WIDE_ROWS` rows of `WIDTH` fit.
    unsafe { through_local::<{ MAX_WIDE_ROWS * WIDTH }, WIDTH>(full, t, t.cols.div_ceil(PANEL) * PANEL) }
}

/// Runs `full` on `t` widened to `cols` columns, over a local copy of its
/// `c` (rows `WIDTH` apart, `LEN` values) and column bias, then copies
/// `t.cols` columns back: only the caller's `rows x cols` of `c` and
/// `cols` (or `rows`) bias values are read or written.
///
/// # Safety
///
/// As `full`'s contract for the widened tile, with `t.rows * WIDTH <= LEN`
/// and `t.cols <= cols <= WIDTH`.
unsafe fn through_local<const LEN: usize, const WIDTH: usize>(full: Microkernel, t: &Tile, cols: usize) {
    let mut c_tile = [0.0f32; LEN];
    let mut bias_tile = [0.0f32; WIDTH];
    // SAFETY: the caller's extents (see above); the local arrays hold
    // `rows` rows of `WIDTH` and `WIDTH` bias values.
    unsafe {
        let init = match t.init {
            Init::Load => {
                for r in 0..t.rows {
                    std::ptr::copy_nonoverlapping(t.c.add(r * t.ldc), c_tile.as_mut_ptr().add(r * WIDTH), t.cols);
                }
                Init::Load
            }
            Init::ColBias(bias) => {
                std::ptr::copy_nonoverlapping(bias, bias_tile.as_mut_ptr(), t.cols);
                Init::ColBias(bias_tile.as_ptr())
            }
            other => other,
        };
        let local = Tile { cols, c: c_tile.as_mut_ptr(), ldc: WIDTH, init, ..*t };
        full(&local);
        for r in 0..t.rows {
            std::ptr::copy_nonoverlapping(c_tile.as_ptr().add(r * WIDTH), t.c.add(r * t.ldc), t.cols);
        }
    }
}
