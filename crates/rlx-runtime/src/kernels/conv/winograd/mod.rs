//! Winograd F(4x4, 3x3) convolution in the blocked channel layout
//! (NCHW16c, 3x3, stride 1, one group), the filter transformed by
//! [`rlx_core::winograd::transform_winograd_filter`]. The matrices and the
//! shapes it takes are in [`rlx_core::winograd`]; the design and its
//! numbers in `docs/kernels/conv-winograd.md`.
//!
//! Per image, two passes:
//!
//! 1. **Input transform** into scratch: for every 4x4 output tile and
//!    input block, the 6x6 patch under it (zeros outside the input),
//!    `V = B^T d B`, 16 channels per vector, stored `[36][c_in / 16]
//!    [tiles][16]` (point, input block, tile, lane).
//! 2. **Products and output transform**, one task per group of `r`
//!    consecutive tiles (row-major over the image) by `q` output blocks:
//!    for each of the 36 points, one register-blocked product `M[xi] =
//!    V[xi] U[xi]` (r tiles x q blocks of accumulators, the reduction over
//!    the real input channels in order), kept on the task's stack; then
//!    `Y = A^T M A + bias + residual` written straight into `out`, and the
//!    activation over the rows just written.
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

use std::mem::MaybeUninit;
use std::sync::OnceLock;

use rlx_core::blocked::{channel_blocks, CHANNEL_BLOCK};
use rlx_core::shapes::Conv2dShape;
use rlx_core::winograd::{winograd_tiles, WINOGRAD_PATCH as P, WINOGRAD_POINTS, WINOGRAD_TILE as T};
use rlx_core::ActKind;

use super::SendPtr;
use crate::kernels::activation::act_f32_slice;
use crate::threads::par_for;

const B: usize = CHANNEL_BLOCK;

/// The most accumulator blocks (`r * q`) any kernel's product holds: the
/// size of a task's products on its stack (36 x 28 x 64 bytes = 63 KiB).
const MAX_ACC: usize = 28;

/// Input patches per chunk of the parallel input transform.
const INPUT_CHUNK: usize = 32;

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

pub(crate) use {wino_in_1d, wino_input, wino_out_1d, wino_output};

/// One product call: `r` tiles by `q` output blocks at one point.
///
/// `m[(j * r + i) * 16 + lane]` (tile `i < r`, block `j < q`) is, from
/// +0.0, for `ci < c_in` ascending, `fma(v[(ci / 16) * v_block + i * 16 +
/// ci % 16], u[j * u_block + ci * 16 + lane], acc)`.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Gemm {
    pub r: usize,
    pub q: usize,
    pub c_in: usize,
    /// The transformed input of the first tile, input block 0.
    pub v: *const f32,
    /// Floats from one input block of `v` to the next.
    pub v_block: usize,
    /// The transformed filter of the first output block at this point.
    pub u: *const f32,
    /// Floats from one output block of `u` to the next (`c_in * 16`).
    pub u_block: usize,
    pub m: *mut f32,
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
/// `d[6 row + col]` the 16 lanes at `src[6 row + col]`, point `xi`'s 16
/// lanes stored at `dst + xi * dst_step`.
///
/// # Safety
///
/// Each `src` valid for 16 reads, `dst` for the 36 runs of 16 writes,
/// overlapping no source; the CPU has the kernel's instruction set.
pub(crate) type InputFn = unsafe fn(src: &[*const f32; WINOGRAD_POINTS], dst: *mut f32, dst_step: usize);

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

/// The kernels this CPU can run, best first; scalar is always last.
pub(crate) fn supported_kernels() -> Vec<Kernel> {
    #[allow(unused_mut)]
    let mut out = Vec::new();
    #[cfg(target_arch = "x86_64")]
    {
        if std::arch::is_x86_feature_detected!("avx512f") {
            out.push(x86::AVX512);
        }
        if std::arch::is_x86_feature_detected!("avx2") && std::arch::is_x86_feature_detected!("fma") {
            out.push(x86::AVX2);
        }
    }
    #[cfg(target_arch = "aarch64")]
    if std::arch::is_aarch64_feature_detected!("neon") {
        out.push(neon::NEON);
    }
    out.push(SCALAR);
    out
}

/// The best kernel, detected once per process.
fn kernel() -> &'static Kernel {
    static KERNEL: OnceLock<Kernel> = OnceLock::new();
    KERNEL.get_or_init(|| supported_kernels()[0])
}

/// Sixteen zeros: the lanes of a patch pixel outside the input.
static ZEROS: [f32; B] = [0.0; B];

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

/// How one image's work is cut.
#[derive(Clone, Copy, Debug)]
struct Plan {
    tile_rows: usize,
    tile_cols: usize,
    tiles: usize,
    /// Tile groups: `tiles / groups` tiles each, the first `extra` one
    /// more (at most the kernel's `max_r`).
    tile_groups: usize,
    /// Output blocks per block group (the last may have fewer).
    q: usize,
    block_groups: usize,
    in_blocks: usize,
    out_blocks: usize,
}

impl Plan {
    fn new(kernel: &Kernel, s: &Conv2dShape) -> Plan {
        let (tile_rows, tile_cols) = winograd_tiles(s);
        let tiles = tile_rows * tile_cols;
        let out_blocks = channel_blocks(s.c_out);
        let block_groups = out_blocks.div_ceil(kernel.max_q);
        Plan {
            tile_rows,
            tile_cols,
            tiles,
            tile_groups: tiles.div_ceil(kernel.max_r),
            q: out_blocks.div_ceil(block_groups),
            block_groups,
            in_blocks: channel_blocks(s.c_in),
            out_blocks,
        }
    }

    /// Tile group `g`: its first tile and its tile count.
    fn tile_group(&self, g: usize) -> (usize, usize) {
        let (base, extra) = (self.tiles / self.tile_groups, self.tiles % self.tile_groups);
        (g * base + g.min(extra), base + usize::from(g < extra))
    }

    /// Floats of one point of the transformed input.
    fn v_point(&self) -> usize {
        self.in_blocks * self.tiles * B
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
    let plan = Plan::new(kernel, s);
    let in_img = plan.in_blocks * s.h * s.w_in * B;
    let out_img = plan.out_blocks * s.h_out * s.w_out * B;
    let v = SendPtr(scratch);
    for img in 0..s.n {
        let x_img = SendPtr(x.wrapping_add(img * in_img).cast_mut());
        let units = plan.in_blocks * plan.tiles;
        let transform = |first: usize, count: usize| {
            for unit in first..first + count {
                // SAFETY: patch `unit` of the image's input (zeros outside
                // it) into its own lanes of the scratch.
                unsafe { input_unit(kernel, &plan, s, x_img.get(), v.get(), unit) };
            }
        };
        if par {
            par_for(units, INPUT_CHUNK, &transform);
        } else {
            transform(0, units);
        }
        let res = if residual.is_null() { residual } else { residual.wrapping_add(img * out_img) };
        let (res, out_img) = (SendPtr(res.cast_mut()), SendPtr(out.wrapping_add(img * out_img)));
        let (u, bias) = (SendPtr(u.cast_mut()), SendPtr(bias.cast_mut()));
        let work = |first: usize, count: usize| {
            for task in first..first + count {
                // SAFETY: the transformed input is complete and unchanged;
                // tasks write disjoint tiles x blocks of the output.
                unsafe {
                    run_task(kernel, &plan, s, v.get(), u.get(), bias.get(), res.get(), out_img.get(), act, task)
                };
            }
        };
        let tasks = plan.tile_groups * plan.block_groups;
        if par {
            par_for(tasks, 1, &work);
        } else {
            work(0, tasks);
        }
    }
}

/// The input transform of patch `unit = block * tiles + tile`.
///
/// # Safety
///
/// As [`run`]; `x` is the image's input, `v` the scratch.
unsafe fn input_unit(kernel: &Kernel, plan: &Plan, s: &Conv2dShape, x: *const f32, v: *mut f32, unit: usize) {
    let (blk, tile) = (unit / plan.tiles, unit % plan.tiles);
    let (ty, tx) = (tile / plan.tile_cols, tile % plan.tile_cols);
    let x_blk = x.wrapping_add(blk * s.h * s.w_in * B);
    let mut src = [ZEROS.as_ptr(); WINOGRAD_POINTS];
    for r in 0..P {
        let Some(y) = (ty * T + r).checked_sub(s.ph).filter(|&y| y < s.h) else { continue };
        for c in 0..P {
            if let Some(xc) = (tx * T + c).checked_sub(s.pw).filter(|&xc| xc < s.w_in) {
                src[r * P + c] = x_blk.wrapping_add((y * s.w_in + xc) * B);
            }
        }
    }
    // SAFETY: each source is an input pixel's block or the zeros; the
    // destination is this unit's 16 lanes at each point of the scratch.
    unsafe { (kernel.input)(&src, v.wrapping_add(unit * B), plan.v_point()) };
}

/// One task: block group `task / tile_groups` over tile group
/// `task % tile_groups` (block-group-major, so consecutive tasks share
/// their filter slice): the 36 products on the stack, the output
/// transform, then the activation over the rows the task wrote.
///
/// # Safety
///
/// As [`run`]; `v` is the image's complete transformed input, `res` and
/// `out` the image's residual (or null) and output.
#[allow(clippy::too_many_arguments)]
unsafe fn run_task(
    kernel: &Kernel,
    plan: &Plan,
    s: &Conv2dShape,
    v: *const f32,
    u: *const f32,
    bias: *const f32,
    res: *const f32,
    out: *mut f32,
    act: ActKind,
    task: usize,
) {
    let (bg, tg) = (task / plan.tile_groups, task % plan.tile_groups);
    let b0 = bg * plan.q;
    let q = plan.q.min(plan.out_blocks - b0);
    let (t0, r) = plan.tile_group(tg);
    let mut m = [MaybeUninit::<f32>::uninit(); WINOGRAD_POINTS * MAX_ACC * B];
    let m = m.as_mut_ptr().cast::<f32>();
    let m_step = r * q * B;
    let u_block = s.c_in * B;
    for xi in 0..WINOGRAD_POINTS {
        let g = Gemm {
            r,
            q,
            c_in: s.c_in,
            v: v.wrapping_add(xi * plan.v_point() + t0 * B),
            v_block: plan.tiles * B,
            u: u.wrapping_add((xi * plan.out_blocks + b0) * u_block),
            u_block,
            m: m.wrapping_add(xi * m_step),
        };
        // SAFETY: `r <= max_r`, `q <= max_q`; tiles `t0..t0 + r` and every
        // input block of the point exist in the scratch, blocks `b0..b0 +
        // q` in the filter, and `m` holds 36 x `r * q <= MAX_ACC` blocks.
        unsafe { (kernel.gemm)(&g) };
    }
    let out_block = s.h_out * s.w_out * B;
    let out_row = s.w_out * B;
    for j in 0..q {
        for i in 0..r {
            let tile = t0 + i;
            let (y0, x0) = ((tile / plan.tile_cols) * T, (tile % plan.tile_cols) * T);
            let at = (b0 + j) * out_block + y0 * out_row + x0 * B;
            let o = OutTile {
                m: m.wrapping_add((j * r + i) * B),
                m_step,
                bias: if bias.is_null() { bias } else { bias.wrapping_add((b0 + j) * B) },
                out: out.wrapping_add(at),
                res: if res.is_null() { res } else { res.wrapping_add(at) },
                out_row,
                rows: T.min(s.h_out - y0),
                cols: T.min(s.w_out - x0),
            };
            // SAFETY: the 36 products of tile `i`, block `j` were written
            // above; the tile's pixels inside the output, of block `b0 +
            // j`, are this task's.
            unsafe { (kernel.output)(&o) };
        }
    }
    if matches!(act, ActKind::Identity) {
        return;
    }
    // The task's tiles cover, in each tile row they touch, one run of
    // columns: the activation runs once per output row and block.
    let (first, last) = (t0, t0 + r - 1);
    for ty in first / plan.tile_cols..=last / plan.tile_cols {
        let c0 = if ty == first / plan.tile_cols { first % plan.tile_cols } else { 0 };
        let c1 = if ty == last / plan.tile_cols { last % plan.tile_cols } else { plan.tile_cols - 1 };
        let (x0, x1) = (c0 * T, ((c1 + 1) * T).min(s.w_out));
        for y in ty * T..((ty + 1) * T).min(s.h_out) {
            for j in 0..q {
                let o = out.wrapping_add((b0 + j) * out_block + y * out_row + x0 * B);
                // SAFETY: pixels `x0..x1` of row `y` of block `b0 + j`,
                // written by this task's output transforms just above.
                unsafe { act_f32_slice(act, o, o, (x1 - x0) * B, false) };
            }
        }
    }
}
