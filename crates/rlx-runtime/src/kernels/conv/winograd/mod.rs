//! Winograd F(4x4, 3x3) convolution in the blocked channel layout
//! (NCHW16c, 3x3, stride 1, one group), the filter transformed by
//! [`rlx_core::winograd::transform_winograd_filter`]. The matrices and the
//! shapes it takes are in [`rlx_core::winograd`]; the design and its
//! numbers in `docs/kernels/conv-winograd.md`.
//!
//! Tiles (4x4 output pixels each) are numbered row-major over an image
//! and cut into groups of up to `max_r` consecutive ones; one task per
//! group, or, on images of few groups, per group and part of its output
//! blocks (`winograd_block_splits`) (per image, `par_for` over tasks):
//!
//! 1. **Input transform** of the group's tiles into the task's own part
//!    of the scratch: for each tile and input block, the 6x6 patch under
//!    it (zeros outside the input), `V = B^T d B`, 16 channels per vector,
//!    the patch's 36 points one contiguous run.
//! 2. For each group of `q` output blocks: per point, one register-blocked
//!    product `M[xi] = V[xi] U[xi]` (`r` tiles x `q` blocks of
//!    accumulators, the reduction over the real input channels in order),
//!    kept on the task's stack; then `Y = A^T M A + bias + residual`
//!    written straight into `out`, and the activation over the rows just
//!    written.
//!
//! The scratch holds one image's transformed input per part, so its size
//! depends on the shape only, not on the thread count: each task writes
//! its own part, and its products live on its own stack.
//!
//! **Bits.** Every lane takes the same operations in the same order on
//! every path: the transforms are one op sequence (the macros below),
//! expanded for each instruction set on its vector type, and each product
//! is one fused multiply-add chain from +0.0 over `ci` ascending. The
//! products by 2, 4 and 8 in the transforms are exact, so fused or not
//! they round alike; the products by 5 are always fused. So scalar,
//! AVX2+FMA, AVX-512 and NEON, any tiling and any thread count give the
//! same bits. The sum `Y + bias` is one add, then `+ residual` one more,
//! then `act` through the activation family's kernel: as a separate `Add`
//! and `Activation` would round.

#[cfg(target_arch = "aarch64")]
mod neon;
mod scalar;
#[cfg(test)]
mod tests;
#[cfg(target_arch = "x86_64")]
mod x86;

use crate::kernels::variants::variants;
use std::mem::MaybeUninit;

use rlx_core::blocked::{channel_blocks, CHANNEL_BLOCK};
use rlx_core::shapes::Conv2dShape;
use rlx_core::winograd::{
    winograd_block_splits, winograd_tiles, WINOGRAD_PATCH as P, WINOGRAD_POINTS, WINOGRAD_TILE as T,
};
use rlx_core::ActKind;

use super::SendPtr;

use crate::kernels::activation::act_f32_slice;
use crate::threads::par_for;

const B: usize = CHANNEL_BLOCK;

/// The most accumulator blocks (`r * q`) any kernel's product holds: the
/// size of a task's products on its stack (36 x 28 x 64 bytes = 63 KiB).
const MAX_ACC: usize = 28;

/// The fewest tiles a group split for threads may have (see
/// [`Plan::new`]).
const MIN_SPLIT_R: usize = 6;

/// The 1-D input transform `B^T d` of six values, as one expression of
/// `$add(a, b)`, `$sub(a, b)` and `$fma(a, b, c) = a * b + c` (one
/// rounding) with `$k = (4, -4, -5)` splatted. Depth 2 per output, and
/// every intermediate is bounded by `|B^T| |d|` (no cancellation inside),
/// which the error bound of the tests uses.
macro_rules! wino_in_1d {
    ($add:path, $sub:path, $fma:path, $k:expr, [$d0:expr, $d1:expr, $d2:expr, $d3:expr, $d4:expr, $d5:expr]) => {{
        let (d0, d1, d2, d3, d4, d5) = ($d0, $d1, $d2, $d3, $d4, $d5);
        let (four, m_four, m_five) = $k;
        // d4 - 4 d2 and d3 - 4 d1 (exact products).
        let a = $fma(m_four, d2, d4);
        let b = $fma(m_four, d1, d3);
        let c = $sub(d4, d2);
        let e = $sub(d3, d1);
        let e = $add(e, e);
        [
            $fma(four, d0, $fma(m_five, d2, d4)),
            $add(a, b),
            $sub(a, b),
            $add(c, e),
            $sub(c, e),
            $fma(four, d1, $fma(m_five, d3, d5)),
        ]
    }};
}

/// `V = B^T d B` of a 6x6 patch `$d` (`[[V; 6]; 6]`, `d[row][col]`): the
/// 1-D transform down each column, then along each row. `V[a][b]` is
/// point `6 a + b`.
macro_rules! wino_input {
    ($add:path, $sub:path, $fma:path, $k:expr, $d:expr) => {{
        let d = $d;
        let k = $k;
        let mut t = d;
        for c in 0..6 {
            let col = wino_in_1d!($add, $sub, $fma, k, [d[0][c], d[1][c], d[2][c], d[3][c], d[4][c], d[5][c]]);
            for (row, v) in t.iter_mut().zip(col) {
                row[c] = v;
            }
        }
        let mut v = t;
        for (out, r) in v.iter_mut().zip(&t) {
            *out = wino_in_1d!($add, $sub, $fma, k, [r[0], r[1], r[2], r[3], r[4], r[5]]);
        }
        v
    }};
}

/// The 1-D output transform `A^T m` of six values into four, `$k = (2, 4,
/// 8)` splatted (exact products). Depth at most 3, intermediates bounded by
/// `|A^T| |m|`.
macro_rules! wino_out_1d {
    ($add:path, $sub:path, $fma:path, $k:expr, [$m0:expr, $m1:expr, $m2:expr, $m3:expr, $m4:expr, $m5:expr]) => {{
        let (m0, m1, m2, m3, m4, m5) = ($m0, $m1, $m2, $m3, $m4, $m5);
        let (two, four, eight) = $k;
        let s12 = $add(m1, m2);
        let d12 = $sub(m1, m2);
        let s34 = $add(m3, m4);
        let d34 = $sub(m3, m4);
        [$add($add(m0, s12), s34), $fma(two, d34, d12), $fma(four, s34, s12), $add($fma(eight, d34, d12), m5)]
    }};
}

/// `Y = A^T m A` of a 6x6 tile of products `$m` (`[[V; 6]; 6]`): the 1-D
/// transform down each column, then along each of the four rows. `Y[i][j]`
/// is output pixel `(i, j)` of the tile.
macro_rules! wino_output {
    ($add:path, $sub:path, $fma:path, $k:expr, $m:expr) => {{
        let m = $m;
        let k = $k;
        let mut t = [m[0]; 4];
        for c in 0..6 {
            let col = wino_out_1d!($add, $sub, $fma, k, [m[0][c], m[1][c], m[2][c], m[3][c], m[4][c], m[5][c]]);
            for (row, v) in t.iter_mut().zip(col) {
                row[c] = v;
            }
        }
        let mut y = [[m[0][0]; 4]; 4];
        for (out, r) in y.iter_mut().zip(&t) {
            *out = wino_out_1d!($add, $sub, $fma, k, [r[0], r[1], r[2], r[3], r[4], r[5]]);
        }
        y
    }};
}

/// A 6x6 grid `[[$e; 6]; 6]` with `$k` the element's row-major index,
/// built element by element (no zero fill first).
macro_rules! grid6 {
    (|$k:ident| $e:expr) => {
        [
            grid6!(@row 0, $k, $e),
            grid6!(@row 6, $k, $e),
            grid6!(@row 12, $k, $e),
            grid6!(@row 18, $k, $e),
            grid6!(@row 24, $k, $e),
            grid6!(@row 30, $k, $e),
        ]
    };
    (@row $r:literal, $k:ident, $e:expr) => {
        [
            {
                let $k = $r;
                $e
            },
            {
                let $k = $r + 1;
                $e
            },
            {
                let $k = $r + 2;
                $e
            },
            {
                let $k = $r + 3;
                $e
            },
            {
                let $k = $r + 4;
                $e
            },
            {
                let $k = $r + 5;
                $e
            },
        ]
    };
}

pub(crate) use {grid6, wino_in_1d, wino_input, wino_out_1d, wino_output};

/// One product call: `r` tiles by `q` output blocks at one point.
///
/// `m[(j * r + i) * 16 + lane]` (tile `i < r`, block `j < q`) is, from
/// +0.0, for `ci < c_in` ascending, `fma(v[(ci / 16) * v_block + i * v_tile
/// + ci % 16], u[j * u_block + ci * 16 + lane], acc)`.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Gemm {
    pub r: usize,
    pub q: usize,
    pub c_in: usize,
    /// The transformed input of the first tile, input block 0.
    pub v: *const f32,
    /// Floats from one input block of `v` to the next.
    pub v_block: usize,
    /// Floats from one tile of `v` to the next.
    pub v_tile: usize,
    /// The transformed filter of the first output block at this point.
    pub u: *const f32,
    /// Floats from one output block of `u` to the next (`c_in * 16`).
    pub u_block: usize,
    pub m: *mut f32,
    /// Floats from each filter vector read to the one the next product
    /// reads in its place (the next point's, 256 KiB away for 256
    /// channels: a new stream the hardware prefetcher starts cold), to
    /// prefetch into L2 while this product computes; 0: none. A hint: it
    /// changes no value and is never dereferenced.
    pub prefetch: isize,
}

/// One tile's output transform for one output block.
///
/// For `i < rows`, `j < cols` (of the tile's 4 x 4), writes
/// `out[i * out_row + j * 16 + lane] = (Y[i][j] + bias[lane]) +
/// res[i * out_row + j * 16 + lane]`, `Y = A^T m A` on the 36 products
/// `m[xi * m_step + lane]`; without the `+ bias` when `bias` is null and
/// without `+ res` when `res` is null.
#[derive(Clone, Copy, Debug)]
pub(crate) struct OutTile {
    pub m: *const f32,
    pub m_step: usize,
    pub bias: *const f32,
    pub out: *mut f32,
    /// Null, or the residual at the offset of `out`.
    pub res: *const f32,
    pub out_row: usize,
    pub rows: usize,
    pub cols: usize,
}

/// A product microkernel.
///
/// # Safety
///
/// Every read and write of [`Gemm`]'s formula is inside valid memory,
/// `m` overlaps no input, `r <= max_r`, `q <= max_q` of the kernel, and
/// the CPU has the kernel's instruction set.
pub(crate) type GemmFn = unsafe fn(g: &Gemm);

/// An input transform: `V = B^T d B` of one channel block's 6x6 patch,
/// `d[row][col]` the 16 lanes at `src + row * src_row + col * 16`, point
/// `xi`'s 16 lanes stored at `dst + xi * dst_step`.
///
/// # Safety
///
/// `src` valid for the patch's reads, `dst` for the 36 runs of 16
/// writes, overlapping no source; the CPU has the kernel's instruction
/// set.
pub(crate) type InputFn = unsafe fn(src: *const f32, src_row: usize, dst: *mut f32, dst_step: usize);

/// An output transform (see [`OutTile`]).
///
/// # Safety
///
/// Every read and write of [`OutTile`]'s formula is inside valid memory,
/// `out` overlapping no input; `rows, cols <= 4`; the CPU has the
/// kernel's instruction set.
pub(crate) type OutputFn = unsafe fn(o: &OutTile);

/// One instruction set's kernels and the products it takes: `r` in
/// `1..=max_r` tiles by `q` in `1..=max_q` blocks.
#[derive(Clone, Copy)]
pub(crate) struct Kernel {
    /// For test messages and the timing.
    #[cfg_attr(not(test), allow(dead_code))]
    pub(crate) name: &'static str,
    pub(crate) max_r: usize,
    pub(crate) max_q: usize,
    pub(crate) gemm: GemmFn,
    pub(crate) input: InputFn,
    pub(crate) output: OutputFn,
}

const SCALAR: Kernel =
    Kernel { name: "scalar", max_r: 14, max_q: 2, gemm: scalar::gemm, input: scalar::input, output: scalar::output };

variants! {
    /// The kernels, best first.
    static KERNELS: Kernel = [
        #[cfg(target_arch = "x86_64")]
        "avx512" if cpu::avx512f() => x86::AVX512,
        #[cfg(target_arch = "x86_64")]
        "avx2" if cpu::avx2_fma() => x86::AVX2,
        #[cfg(target_arch = "aarch64")]
        "neon" if cpu::neon() => neon::NEON,
        "scalar" => SCALAR,
    ];
}

/// The kernels this CPU can run, best first; scalar is always last.
#[cfg(test)]
pub(crate) fn supported_kernels() -> Vec<Kernel> {
    KERNELS.supported().into_iter().map(|(_, k)| k).collect()
}

/// The best kernel, detected once per process.
#[inline]
fn kernel() -> &'static Kernel {
    KERNELS.best()
}

/// A Winograd F(4x4, 3x3) convolution of blocked tensors (one group),
/// bias, residual and `act` fused: `out = act((conv(x, w) + bias) +
/// residual)` per lane, the convolution rounded as the module docs say,
/// each `+` one f32 add (skipped when its operand is null) and `act`
/// rounded as the activation kernel, so the fusion gives the bits of a
/// separate `Add` and `Activation`. Padded input lanes are never read into
/// a real output (they may hold NaN); every lane of every output block is
/// written. `par` splits the work over the thread pool; same bits either
/// way, and on every instruction set. No allocation: the transformed
/// input lives in `scratch`, each task's products on its stack (63 KiB).
///
/// # Safety
///
/// - `rlx_core::winograd::winograd_applies(s)`;
/// - `x` valid for reads of `n * ceil(c_in / 16) * h * w_in * 16` f32
///   (the blocked input), `u` of
///   [`rlx_core::winograd::winograd_filter_len`] (from
///   [`rlx_core::winograd::transform_winograd_filter`]), `bias` null or
///   valid for `ceil(c_out / 16) * 16`, `residual` null or valid for
///   reads of `n * ceil(c_out / 16) * h_out * w_out * 16`;
/// - `out` valid for writes of `n * ceil(c_out / 16) * h_out * w_out * 16`
///   f32, overlapping no input (the residual included);
/// - `scratch` valid for writes of
///   [`rlx_core::winograd::winograd_scratch_bytes`] bytes, 4-byte
///   aligned, overlapping nothing else.
#[allow(clippy::too_many_arguments)]
pub unsafe fn conv2d_winograd_f32(
    x: *const f32,
    u: *const f32,
    bias: *const f32,
    residual: *const f32,
    out: *mut f32,
    s: &Conv2dShape,
    act: ActKind,
    scratch: *mut f32,
    par: bool,
) {
    // SAFETY: forwarded contract; `kernel()` is one this CPU runs.
    unsafe { run(kernel(), x, u, bias, residual, out, s, act, scratch, par) }
}

/// How one image's work is cut: tasks are (tile group, part of the
/// output block groups).
#[derive(Clone, Copy, Debug)]
struct Plan {
    tile_cols: usize,
    tiles: usize,
    /// Tile groups: `tiles / groups` tiles each, the first `tiles %
    /// groups` one more (at most the kernel's `max_r`).
    groups: usize,
    /// Parts of the block groups ([`winograd_block_splits`]).
    splits: usize,
    /// Output blocks per block group (the last may have fewer).
    q: usize,
    block_groups: usize,
    in_blocks: usize,
    out_blocks: usize,
}

impl Plan {
    fn new(kernel: &Kernel, s: &Conv2dShape, par: bool) -> Plan {
        let (tile_rows, tile_cols) = winograd_tiles(s);
        let tiles = tile_rows * tile_cols;
        let out_blocks = channel_blocks(s.c_out);
        let block_groups = out_blocks.div_ceil(kernel.max_q);
        let splits = winograd_block_splits(s);
        // The fewest groups of at most `max_r` tiles; split, a count the
        // threads share evenly: `par_for` cuts `n` items into `min(4 t, n)`
        // chunks, so a multiple of `t` up to `4 t`, then of `4 t` (56 x 56
        // on 2 threads: 16 groups of 12-13 tiles, not 14 of 14 in 7
        // chunks of 2; 28 x 28: 4 of 12-13). Each group reads the whole
        // filter, so none gets fewer than `MIN_SPLIT_R` tiles: smaller
        // images split their output blocks instead (`splits`).
        let fewest = tiles.div_ceil(kernel.max_r);
        let mut groups = fewest;
        if par && splits == 1 {
            let threads = crate::threads::num_threads().max(1);
            groups = groups.next_multiple_of(threads);
            if groups > 4 * threads {
                groups = groups.next_multiple_of(4 * threads);
            }
            groups = groups.min((tiles / MIN_SPLIT_R).max(fewest));
        }
        Plan {
            tile_cols,
            tiles,
            groups,
            splits,
            q: out_blocks.div_ceil(block_groups),
            block_groups,
            in_blocks: channel_blocks(s.c_in),
            out_blocks,
        }
    }

    /// Part `p` of the block groups: `first..end`.
    fn part(&self, p: usize) -> std::ops::Range<usize> {
        let (base, extra) = (self.block_groups / self.splits, self.block_groups % self.splits);
        let first = p * base + p.min(extra);
        first..first + base + usize::from(p < extra)
    }

    /// Tile group `g`: its first tile and its tile count.
    fn group(&self, g: usize) -> (usize, usize) {
        let (base, extra) = (self.tiles / self.groups, self.tiles % self.groups);
        (g * base + g.min(extra), base + usize::from(g < extra))
    }
}

/// [`conv2d_winograd_f32`] with a given kernel (the tests run each).
///
/// # Safety
///
/// As [`conv2d_winograd_f32`], and the CPU has `kernel`'s instruction set.
#[allow(clippy::too_many_arguments)]
pub(crate) unsafe fn run(
    kernel: &Kernel,
    x: *const f32,
    u: *const f32,
    bias: *const f32,
    residual: *const f32,
    out: *mut f32,
    s: &Conv2dShape,
    act: ActKind,
    scratch: *mut f32,
    par: bool,
) {
    debug_assert!(rlx_core::winograd::winograd_applies(s), "conv2d_winograd_f32 does not take {s:?}");
    debug_assert!(kernel.max_r * kernel.max_q <= MAX_ACC);
    if s.n == 0 || s.c_out == 0 || s.h_out == 0 || s.w_out == 0 {
        return;
    }
    let plan = Plan::new(kernel, s, par);
    let in_img = plan.in_blocks * s.h * s.w_in * B;
    let out_img = plan.out_blocks * s.h_out * s.w_out * B;
    for img in 0..s.n {
        let res = if residual.is_null() { residual } else { residual.wrapping_add(img * out_img) };
        let io = Io {
            x: SendPtr(x.wrapping_add(img * in_img).cast_mut()),
            v: SendPtr(scratch),
            u: SendPtr(u.cast_mut()),
            bias: SendPtr(bias.cast_mut()),
            res: SendPtr(res.cast_mut()),
            out: SendPtr(out.wrapping_add(img * out_img)),
        };
        let work = |first: usize, count: usize| {
            for task in first..first + count {
                // SAFETY: tasks own disjoint parts of the scratch and of
                // the output; the rest is read only.
                unsafe { run_task(kernel, &plan, s, &io, act, task) };
            }
        };
        let tasks = plan.groups * plan.splits;
        if par {
            par_for(tasks, 1, &work);
        } else {
            work(0, tasks);
        }
    }
}

/// One image's buffers, as [`conv2d_winograd_f32`] takes them, shared by
/// the tasks of one call: they write disjoint parts of the scratch and the
/// output (`run_task`) and only read the rest.
#[derive(Clone, Copy)]
struct Io {
    x: SendPtr<f32>,
    v: SendPtr<f32>,
    u: SendPtr<f32>,
    bias: SendPtr<f32>,
    res: SendPtr<f32>,
    out: SendPtr<f32>,
}

/// Task `group * splits + part`: tile group `t0..t0 + r`, block groups
/// `plan.part(part)`. The input transform of the group's tiles into the
/// task's own part of the scratch (`[c_in / 16][r][36][16]` from float
/// `(part * tiles + t0) * 36 * ceil(c_in / 16) * 16`: each patch's 36
/// points one contiguous run), then, for each group of `q` output blocks,
/// the 36 products on the stack, the output transform and the activation
/// over the rows written.
///
/// # Safety
///
/// As [`run`]; `io` holds the image's buffers.
unsafe fn run_task(kernel: &Kernel, plan: &Plan, s: &Conv2dShape, io: &Io, act: ActKind, task: usize) {
    let (group, part) = (task / plan.splits, task % plan.splits);
    let block_groups = plan.part(part);
    if block_groups.is_empty() {
        return;
    }
    let (t0, r) = plan.group(group);
    let v = io.v.get().wrapping_add((part * plan.tiles + t0) * WINOGRAD_POINTS * plan.in_blocks * B);
    let v_tile = WINOGRAD_POINTS * B;
    for blk in 0..plan.in_blocks {
        for i in 0..r {
            // SAFETY: tile `t0 + i` of input block `blk`, into this task's
            // part of the scratch.
            unsafe { input_patch(kernel, plan, s, io.x.get(), v.wrapping_add((blk * r + i) * v_tile), blk, t0 + i) };
        }
    }
    let mut m = [MaybeUninit::<f32>::uninit(); WINOGRAD_POINTS * MAX_ACC * B];
    let m = m.as_mut_ptr().cast::<f32>();
    let u_block = s.c_in * B;
    let out_block = s.h_out * s.w_out * B;
    let out_row = s.w_out * B;
    for bg in block_groups {
        let b0 = bg * plan.q;
        let q = plan.q.min(plan.out_blocks - b0);
        let m_step = r * q * B;
        for xi in 0..WINOGRAD_POINTS {
            // The next product's filter: the next point's, or after the last
            // point the next block group's first.
            let prefetch = if xi + 1 < WINOGRAD_POINTS {
                (plan.out_blocks * u_block) as isize
            } else if bg + 1 < plan.block_groups {
                (plan.q * u_block) as isize - (xi * plan.out_blocks * u_block) as isize
            } else {
                0
            };
            let g = Gemm {
                r,
                q,
                c_in: s.c_in,
                v: v.wrapping_add(xi * B),
                v_block: r * v_tile,
                v_tile,
                u: io.u.get().wrapping_add((xi * plan.out_blocks + b0) * u_block),
                u_block,
                m: m.wrapping_add(xi * m_step),
                prefetch,
            };
            // SAFETY: `r <= max_r`, `q <= max_q`; the group's transformed
            // input was written above, blocks `b0..b0 + q` exist in the
            // filter, and `m` holds 36 x `r * q <= MAX_ACC` blocks.
            unsafe { (kernel.gemm)(&g) };
        }
        for j in 0..q {
            for i in 0..r {
                let tile = t0 + i;
                let (y0, x0) = ((tile / plan.tile_cols) * T, (tile % plan.tile_cols) * T);
                let at = (b0 + j) * out_block + y0 * out_row + x0 * B;
                let o = OutTile {
                    m: m.wrapping_add((j * r + i) * B),
                    m_step,
                    bias: if io.bias.get().is_null() {
                        io.bias.get()
                    } else {
                        io.bias.get().wrapping_add((b0 + j) * B)
                    },
                    out: io.out.get().wrapping_add(at),
                    res: if io.res.get().is_null() { io.res.get() } else { io.res.get().wrapping_add(at) },
                    out_row,
                    rows: T.min(s.h_out - y0),
                    cols: T.min(s.w_out - x0),
                };
                // SAFETY: the 36 products of tile `i`, block `j` were
                // written above; the tile's pixels inside the output, of
                // block `b0 + j`, are this group's.
                unsafe { (kernel.output)(&o) };
            }
        }
        if !matches!(act, ActKind::Identity) {
            // SAFETY: blocks `b0..b0 + q` of the group's tiles, written
            // just above.
            unsafe { activate(plan, s, io.out.get().wrapping_add(b0 * out_block), q, t0, r, act) };
        }
    }
}

/// The input transform of tile `tile`, input block `blk`, into the 36
/// runs of 16 floats at `dst`. A patch inside the input is read in place;
/// one that crosses its edge is first copied, zero-padded, to the stack.
///
/// # Safety
///
/// As [`run`]; `x` is the image's input, `dst` valid for 36 x 16 writes.
unsafe fn input_patch(
    kernel: &Kernel,
    plan: &Plan,
    s: &Conv2dShape,
    x: *const f32,
    dst: *mut f32,
    blk: usize,
    tile: usize,
) {
    let (y0, x0) = ((tile / plan.tile_cols) * T, (tile % plan.tile_cols) * T);
    let x_blk = x.wrapping_add(blk * s.h * s.w_in * B);
    // Patch rows and columns inside the input: `r0..r1`, `c0..c1`.
    let (r0, c0) = (s.ph.saturating_sub(y0), s.pw.saturating_sub(x0));
    let r1 = (s.h + s.ph).saturating_sub(y0).min(P);
    let c1 = (s.w_in + s.pw).saturating_sub(x0).min(P);
    if (r0, c0, r1, c1) == (0, 0, P, P) {
        let src = x_blk.wrapping_add(((y0 - s.ph) * s.w_in + x0 - s.pw) * B);
        // SAFETY: the patch lies inside the input block.
        unsafe { (kernel.input)(src, s.w_in * B, dst, B) };
        return;
    }
    let mut patch = [0.0f32; WINOGRAD_POINTS * B];
    if c0 < c1 {
        for r in r0..r1 {
            let src = x_blk.wrapping_add(((y0 + r - s.ph) * s.w_in + x0 + c0 - s.pw) * B);
            // SAFETY: columns `c0..c1` of patch row `r` are input pixels of
            // one row; the stack patch holds them.
            unsafe { std::ptr::copy_nonoverlapping(src, patch.as_mut_ptr().add((r * P + c0) * B), (c1 - c0) * B) };
        }
    }
    // SAFETY: the stack patch, rows of 6 pixels.
    unsafe { (kernel.input)(patch.as_ptr(), P * B, dst, B) };
}

/// Applies `act` to the pixels of tiles `t0..t0 + r` in `q` blocks from
/// `out` (the first block's plane): in each tile row they touch, the tiles
/// cover one run of columns, one call per output row and block.
///
/// # Safety
///
/// `out` valid for `q` planes of the output, the tiles' pixels written.
unsafe fn activate(plan: &Plan, s: &Conv2dShape, out: *mut f32, q: usize, t0: usize, r: usize, act: ActKind) {
    let (first, last) = (t0, t0 + r - 1);
    for ty in first / plan.tile_cols..=last / plan.tile_cols {
        let c0 = if ty == first / plan.tile_cols { first % plan.tile_cols } else { 0 };
        let c1 = if ty == last / plan.tile_cols { last % plan.tile_cols } else { plan.tile_cols - 1 };
        let (x0, x1) = (c0 * T, ((c1 + 1) * T).min(s.w_out));
        for y in ty * T..((ty + 1) * T).min(s.h_out) {
            for j in 0..q {
                let o = out.wrapping_add(((j * s.h_out + y) * s.w_out + x0) * B);
                // SAFETY: pixels `x0..x1` of row `y` of block `j`.
                unsafe { act_f32_slice(act, o, o, (x1 - x0) * B, false) };
            }
        }
    }
}
