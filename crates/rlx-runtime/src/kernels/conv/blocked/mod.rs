//! Direct convolution in the blocked channel layout (NCHW16c, one group):
//! no patch matrix, no GEMM, the filter read as packed by
//! [`rlx_core::blocked::pack_conv_filter`].
//!
//! Each image's input is copied once into the zero-padded plane of
//! [`PaddedPlane`] in scratch (or read in place when it already is that
//! plane), so a microkernel never checks bounds. A microkernel call (a
//! [`Tile`]) keeps `r` output pixels of one output row by `q` output
//! blocks in registers and walks the reduction in the order that defines
//! the bits: input channel, kernel row, kernel column, one fused
//! multiply-add of a broadcast input value by a vector of 16 output
//! channels' weights each. That is the order of the NCHW product paths,
//! so both layouts, every microkernel (scalar, AVX2+FMA, AVX-512, NEON),
//! every tiling and every thread count give the same bits. A residual
//! and a clamp activation (ReLU, Clip) finish in registers before the
//! store; any other activation then runs on each finished row segment
//! through the activation family's kernel. Either way each rounds as a
//! separate `Add` and `Activation`.
//!
//! Rows split into tiles of nearly equal width (a 7-pixel row is one
//! 7-pixel tile, not 6 + 1; rows that narrow run two at a time). A
//! stride-1 convolution with one-column windows whose plane rows are as
//! wide as its output rows (a pointwise one read in place) runs on the
//! plane as one long row, so tiles cross row ends. Threads split an image into tasks of one group
//! of output blocks (the blocks one tile covers) by a band of rows.

#[cfg(target_arch = "aarch64")]
mod neon;
mod scalar;
#[cfg(test)]
mod tests;
#[cfg(target_arch = "x86_64")]
mod x86;

use crate::kernels::variants::variants;
use std::mem::MaybeUninit;

use rlx_core::blocked::{blocked_grouped, channel_blocks, PaddedPlane, CHANNEL_BLOCK, HALF_FILTER_SLICE_BYTES};
use rlx_core::shapes::Conv2dShape;
use rlx_core::ActKind;

use super::SendPtr;
use crate::kernels::activation::{act_f32_slice, as_clamp};
use crate::kernels::prefetch::prefetch_l2;
use crate::threads::par_for;

const B: usize = CHANNEL_BLOCK;

/// Pixels per segment of a plane run as one long row: a multiple of every
/// tile width the kernels prefer, short enough to split over threads.
const FLAT_SEGMENT: usize = 96;

/// Filter bytes of one pass over input channels for one group of output
/// blocks: passes keep it in L1 while it serves every tile of a task (a
/// 512-channel 3x3 group of three blocks is 885 KiB, more than L2 with
/// the input: streamed from L3 once per row without passes). A pass
/// boundary only stores and reloads the accumulators: same bits.
const PASS_BYTES: usize = 24 * 1024;

/// One microkernel call: `r` output pixels (`r / rows` on each of `rows`
/// output rows) by `q` output blocks.
///
/// Output pixel `i < r` (row `y = i / (r / rows)`, column
/// `c = i % (r / rows)`) of block `j < q` is the 16 values at
/// `out + j * out_block + y * out_row + c * 16`, each lane starting from its bias (or
/// +0.0, or its own value when `load`) and taking, for `ci < c_in`, `ki < kh`, `kj < kw` in that order,
/// `fma(x[(ci / 16) * x_block + y * x_row + c * x_step + ki * x_dh + kj * x_dw + (ci % 16) * x_lane],
/// w[j * w_block + ((ci * kh + ki) * kw + kj) * 16 + lane], acc)`.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Tile {
    pub r: usize,
    pub q: usize,
    /// Output rows: 1, or 2 (when the kernel's `pair_r` allows).
    pub rows: usize,
    /// Floats from one row's windows to the next's (`sh * pitch * 16`).
    pub x_row: usize,
    /// Floats from one output row to the next (`w_out * 16`).
    pub out_row: usize,
    pub c_in: usize,
    pub kh: usize,
    pub kw: usize,
    /// The top-left tap of pixel 0's window, input block 0.
    pub x: *const f32,
    /// Floats from one input block to the next.
    pub x_block: usize,
    /// Floats from one input channel of a block to the next: 1 in the
    /// blocked layout, a plane for an NCHW input.
    pub x_lane: usize,
    /// Floats from one pixel's window to the next (`sw * 16`).
    pub x_step: usize,
    /// Floats from one kernel row to the next (`dh * pitch * 16`).
    pub x_dh: usize,
    /// Floats from one kernel column to the next (`dw * 16`).
    pub x_dw: usize,
    /// The packed filter of the first output block.
    pub w: *const f32,
    /// Floats from one output block's filter to the next.
    pub w_block: usize,
    /// Null, or the first output block's 16 biases.
    pub bias: *const f32,
    /// Start from the outputs instead (a later pass over input channels).
    pub load: bool,
    pub out: *mut f32,
    /// Floats from one output block to the next.
    pub out_block: usize,
    /// Null, or values laid out as the outputs (`residual + offset` for
    /// `out + offset`), added to the finished accumulators before `clamp`
    /// (the last pass only).
    pub residual: *const f32,
    /// An activation applied before the store as `math::clip(v, lo, hi)`
    /// (see `activation::as_clamp`; the last pass only).
    pub clamp: Option<(f32, f32)>,
    /// Floats from each weight vector the tile reads to the one the next
    /// pass (or the next group) reads in its place, to prefetch into L2
    /// while this pass computes; 0: no prefetch. A hint only: it changes
    /// no value, and an address past the filter is never dereferenced.
    /// The pass's tiles share the work: this one prefetches for its input
    /// channels `prefetch_from..prefetch_to` (of the pass's `c_in`).
    pub prefetch: isize,
    pub prefetch_from: usize,
    pub prefetch_to: usize,
}

/// A microkernel.
///
/// # Safety
///
/// Every read and write of [`Tile`]'s formula is inside valid memory,
/// outputs overlap no input, `(r, q)` is one the kernel takes (see
/// [`Kernel`]), and the CPU has the kernel's instruction set.
pub(crate) type Microkernel = unsafe fn(t: &Tile);

/// One instruction set's microkernel and the tiles it takes: one row of
/// `r` in `1..=max_r` pixels by `q` in `1..=q_for(r)` blocks, or two rows
/// of `r / 2 <= pair_r` pixels by `q <= pair_q(r)` blocks.
#[derive(Clone, Copy)]
pub(crate) struct Kernel {
    /// For test messages and the timing.
    #[cfg_attr(not(test), allow(dead_code))]
    pub(crate) name: &'static str,
    pub(crate) max_r: usize,
    /// Accumulator blocks (`r * q`) a tile may hold.
    pub(crate) max_acc: usize,
    pub(crate) max_q: usize,
    /// The widest row a two-row tile takes (0: none). Rows of 7 (ResNet's
    /// last stage) as one-row tiles of 7 x 3 blocks load one weight vector
    /// per 7 multiply-adds; as two-row tiles of 14 x 2, per 14.
    pub(crate) pair_r: usize,
    /// Accumulator blocks a two-row tile may hold.
    pub(crate) pair_acc: usize,
    pub(crate) micro: Microkernel,
    /// The kernel for convolutions of at most 8 output channels, whose one
    /// block is half padding: it multiplies only the lower 8 lanes (a
    /// first layer of 6 filters does 2.7x the work otherwise).
    pub(crate) half: Option<&'static Kernel>,
    /// For a half kernel: the kernel for windows one float apart (an NCHW
    /// input at stride 1), which packs two pixels' 8 channels into one
    /// vector and so halves the multiply-adds again.
    pub(crate) unit_step: Option<&'static Kernel>,
}

impl Kernel {
    /// The most output blocks a tile of `r` pixels takes.
    pub(crate) fn q_for(&self, r: usize) -> usize {
        (self.max_acc / r.max(1)).clamp(1, self.max_q)
    }

    /// The most output blocks a two-row tile of `r` pixels takes.
    pub(crate) fn pair_q(&self, r: usize) -> usize {
        (self.pair_acc / r.max(1)).clamp(1, self.max_q)
    }
}

const SCALAR: Kernel = Kernel {
    name: "scalar",
    max_r: 12,
    max_acc: 24,
    max_q: 4,
    pair_r: 7,
    pair_acc: 28,
    micro: scalar::micro,
    half: None,
    unit_step: None,
};

variants! {
    /// The microkernels, best first.
    static KERNELS: Kernel = [
        #[cfg(target_arch = "x86_64")]
        "avx512" if cpu::avx512vl() => x86::AVX512,
        // The 8-lane AVX-512 kernel needs VL (every AVX-512 CPU but Knights
        // Landing has it); without, the AVX2 one serves at most 8 channels.
        #[cfg(target_arch = "x86_64")]
        "avx512" if cpu::avx512f() => Kernel { half: Some(&x86::HALF_AVX2), ..x86::AVX512 },
        #[cfg(target_arch = "x86_64")]
        "avx2" if cpu::avx2_fma() => x86::AVX2,
        #[cfg(target_arch = "aarch64")]
        "neon" if cpu::neon() => neon::NEON,
        "scalar" => SCALAR,
    ];
}

/// The microkernels this CPU can run, best first, scalar last, as
/// `(name, kernel)`.
#[cfg(test)]
pub(crate) fn supported_variants() -> Vec<(&'static str, Kernel)> {
    // Without VL both AVX-512 entries are usable; the tests run the one
    // the kernels would.
    let mut out: Vec<(&'static str, Kernel)> = Vec::new();
    for (name, k) in KERNELS.supported() {
        if !out.iter().any(|(o, _)| *o == name) {
            out.push((name, k));
        }
    }
    out
}

/// The microkernels of [`supported_variants`].
#[cfg(test)]
pub(crate) fn supported_kernels() -> Vec<Kernel> {
    supported_variants().into_iter().map(|(_, k)| k).collect()
}

/// The best microkernel, detected once per process.
#[inline]
fn kernel() -> &'static Kernel {
    KERNELS.best()
}

/// A direct convolution of blocked tensors (one group), bias and `act`
/// fused: `out[img, co, y, x] = act(acc)`, `acc` starting from `bias[co]`
/// (+0.0 when `bias` is null) and taking, for the real input channels
/// `ci` ascending, then `ki < kh`, then `kj < kw`, one
/// `fma(xpad[img, ci, y*sh + ki*dh, x*sw + kj*dw], w[co, ci, ki, kj], acc)`
/// with `xpad` the input zero-padded by `ph`/`pw`: bit-identical to
/// [`super::conv2d_f32`]'s product paths on the same data in NCHW.
/// A non-null `residual` (blocked, shaped as `out`) is then added, one
/// f32 add per value, and `act` rounds as the activation kernel: the bits
/// of a separate `Add` and `Activation`. Padded input lanes are never
/// read into a real output; every lane of every output block is written.
/// `par` splits the work over the thread pool; same bits either way. No
/// allocation.
///
/// # Safety
///
/// - `s.groups == 1`;
/// - `x` valid for reads of `n * ceil(c_in / 16) * h * w_in * 16` f32
///   (the blocked input), `w` of
///   [`rlx_core::blocked::conv_filter_len`] (packed by
///   [`rlx_core::blocked::pack_conv_filter`]), `bias` null or valid for
///   `ceil(c_out / 16) * 16`;
/// - `out` valid for writes of `n * ceil(c_out / 16) * h_out * w_out * 16`
///   f32, overlapping no input;
/// - `scratch` valid for writes of
///   [`rlx_core::blocked::conv_blocked_scratch_bytes`] bytes, 4-byte
///   aligned, overlapping nothing else (null allowed when that is 0).
#[allow(clippy::too_many_arguments)]
pub unsafe fn conv2d_blocked_f32(
    x: *const f32,
    w: *const f32,
    bias: *const f32,
    residual: *const f32,
    out: *mut f32,
    s: &Conv2dShape,
    act: ActKind,
    scratch: *mut f32,
    par: bool,
) {
    // SAFETY: forwarded contract; `kernel()` is one this CPU runs.
    unsafe { run(kernel(), Input::Blocked, x, Filter::F32(w), bias, residual, out, s, act, scratch, par) }
}

/// [`conv2d_blocked_f32`] from an NCHW input (`x` `[n, c_in, h, w_in]`):
/// a network's first layer reads its image as it comes (3 channels would
/// fill 3 of 16 lanes of a blocked copy), same bits.
///
/// # Safety
///
/// As [`conv2d_blocked_f32`] with `x` valid for reads of `n * c_in * h *
/// w_in` f32.
#[allow(clippy::too_many_arguments)]
pub unsafe fn conv2d_nchw_blocked_f32(
    x: *const f32,
    w: *const f32,
    bias: *const f32,
    residual: *const f32,
    out: *mut f32,
    s: &Conv2dShape,
    act: ActKind,
    scratch: *mut f32,
    par: bool,
) {
    // SAFETY: forwarded contract; `kernel()` is one this CPU runs.
    unsafe { run(kernel(), Input::Nchw, x, Filter::F32(w), bias, residual, out, s, act, scratch, par) }
}

/// [`conv2d_blocked_f32`] (or [`conv2d_nchw_blocked_f32`] with `x_nchw`)
/// with the packed filter stored in 16-bit floats: `w` holds f16 bits, or
/// bf16 bits with `bf16`. Each pass's slice of the filter is widened into
/// a stack buffer right before the pass's tiles read it, so memory traffic
/// is the 2-byte filter and the bits are those of [`conv2d_blocked_f32`]
/// over the widened filter.
///
/// # Safety
///
/// As [`conv2d_blocked_f32`] (or [`conv2d_nchw_blocked_f32`]) with `w`
/// valid for `conv_filter_len` 16-bit reads, and
/// [`rlx_core::blocked::half_filter_fits`] true of the shape.
#[allow(clippy::too_many_arguments)]
pub unsafe fn conv2d_blocked_half(
    x: *const f32,
    w: *const u16,
    bias: *const f32,
    residual: *const f32,
    out: *mut f32,
    s: &Conv2dShape,
    act: ActKind,
    bf16: bool,
    x_nchw: bool,
    scratch: *mut f32,
    par: bool,
) {
    let input = if x_nchw { Input::Nchw } else { Input::Blocked };
    let filter = Filter::Half(w, if bf16 { widen_bf16 } else { widen_f16 });
    // SAFETY: forwarded contract; `kernel()` is one this CPU runs.
    unsafe { run(kernel(), input, x, filter, bias, residual, out, s, act, scratch, par) }
}

/// Widens `len` 16-bit floats at `src` into f32 at `dst`.
type Widen = unsafe fn(*const u16, *mut f32, usize);

/// # Safety
///
/// `src` valid for `len` reads of f16 bits, `dst` for `len` f32 writes.
unsafe fn widen_f16(src: *const u16, dst: *mut f32, len: usize) {
    // SAFETY: forwarded contract (`f16` is `u16`-sized bits).
    unsafe { crate::kernels::cast::cast_f16_to_f32(src.cast(), dst, len) }
}

/// # Safety
///
/// `src` valid for `len` reads of bf16 bits, `dst` for `len` f32 writes.
unsafe fn widen_bf16(src: *const u16, dst: *mut f32, len: usize) {
    // SAFETY: forwarded contract (`bf16` is `u16`-sized bits).
    unsafe { crate::kernels::cast::cast_bf16_to_f32(src.cast(), dst, len) }
}

/// Where a convolution's packed filter is, and in which type.
#[derive(Clone, Copy)]
pub(crate) enum Filter {
    F32(*const f32),
    /// 16-bit floats, widened a pass at a time.
    Half(*const u16, Widen),
}

impl Filter {
    /// The filter `elems` weights further on.
    fn offset(self, elems: usize) -> Filter {
        match self {
            Filter::F32(w) => Filter::F32(w.wrapping_add(elems)),
            Filter::Half(w, widen) => Filter::Half(w.wrapping_add(elems), widen),
        }
    }
}

// SAFETY: the filter is only read, by every task alike.
unsafe impl Send for Filter {}
// SAFETY: as above.
unsafe impl Sync for Filter {}

/// A pass's filter slice widened from 16 bits, 64-byte aligned.
#[repr(C, align(64))]
struct HalfSlice([f32; HALF_FILTER_SLICE_BYTES / 4]);

/// The layout of a convolution's input (its output is always blocked).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Input {
    Blocked,
    Nchw,
}

impl Input {
    /// Floats per pixel of one channel block.
    fn pixel(self) -> usize {
        match self {
            Input::Blocked => B,
            Input::Nchw => 1,
        }
    }
}

/// How one image's work is cut: output rows (or segments of the plane run
/// as one row), tiles, output block groups.
#[derive(Clone, Copy, Debug)]
struct Plan {
    /// Input pixels per padded row (the input's own when read in place).
    pitch: usize,
    /// Floats per input block of the plane read.
    x_block: usize,
    /// See [`Tile::x_lane`].
    x_lane: usize,
    /// Floats per input pixel of one block.
    pixel: usize,
    /// Whether the plane runs as one long row (1x1 columns, stride 1, input
    /// pitch == `w_out`).
    flat: bool,
    /// Output rows per segment: 2 when the rows are narrow enough for
    /// two-row tiles, else 1.
    pair: bool,
    /// Segments: output rows (or row pairs), or `FLAT_SEGMENT`-pixel runs
    /// when flat.
    segments: usize,
    /// Output blocks per group (one tile's `q`).
    q: usize,
    groups: usize,
    /// Segments per task.
    band: usize,
    bands: usize,
    /// Task order: band-major (consecutive tasks, one thread's share, cover
    /// a band of rows for every block group) or group-major.
    band_major: bool,
    /// Input channels per pass (a multiple of 16 unless it is all).
    pass_c: usize,
}

impl Plan {
    /// With `half`, a tile's filter slice for its smallest pass fits the
    /// widening buffer ([`HALF_FILTER_SLICE_BYTES`]), and so does every pass.
    fn new(kernel: &Kernel, input: Input, s: &Conv2dShape, par: bool, half: bool) -> Plan {
        let plane = PaddedPlane::of(s);
        let (rows, pitch) = if plane.reads_input_in_place(s) { (s.h, s.w_in) } else { (plane.rows, plane.cols) };
        // An NCHW plane's pixels are single floats: no long-row tiles.
        let flat = input == Input::Blocked && s.kw == 1 && s.sw == 1 && s.sh == 1 && pitch == s.w_out;
        let pixels = s.h_out * s.w_out;
        let seg_len = if flat { FLAT_SEGMENT.min(pixels) } else { s.w_out };
        // The widest tile, then as many blocks per tile as it has room for,
        // spread evenly over the groups (4 blocks as 2 + 2, not 3 + 1).
        let r = seg_len.div_ceil(seg_len.div_ceil(kernel.max_r));
        let pair = !flat && s.h_out >= 2 && r <= kernel.pair_r;
        let segments = match (flat, pair) {
            (true, _) => pixels.div_ceil(FLAT_SEGMENT),
            (false, true) => s.h_out.div_ceil(2),
            (false, false) => s.h_out,
        };
        let q_max = if pair { kernel.pair_q(2 * r) } else { kernel.q_for(r) };
        // The smallest pass's bytes per output block (f32 once widened).
        let block_pass = s.c_in.clamp(1, B) * s.kh * s.kw * B * 4;
        let q_max = if half { q_max.min(HALF_FILTER_SLICE_BYTES / block_pass).max(1) } else { q_max };
        let blocks = channel_blocks(s.c_out);
        let groups = blocks.div_ceil(q_max.min(blocks));
        let q = blocks.div_ceil(groups);
        // At least 32 tasks per thread (as many as there are segments), so
        // uneven tasks still balance and the last ones are short: with 4
        // per thread the depthwise CNN's layers ran 1.6-1.8x faster on two
        // threads than on one, with 32 (and 16 chunks per thread in
        // `par_for`) 1.7-1.9x.
        // A 16-bit filter is widened once per task and pass, for the
        // band's tiles: 8 tasks per thread, so that the bands are longer
        // (ResNet's 7x7x512 layers: one band instead of two).
        let per_thread = if half { 8 } else { 32 };
        let want = if par { per_thread * crate::threads::num_threads() } else { 1 };
        let bands = want.div_ceil(groups).clamp(1, segments);
        let band = segments.div_ceil(bands);
        let per_channel = (q * s.kh * s.kw * B * 4).max(1);
        let pass_c = (PASS_BYTES / per_channel / B * B).max(B);
        // A widened pass fits its buffer (at least one block: `q` above).
        let pass_c = if half { pass_c.min((HALF_FILTER_SLICE_BYTES / per_channel / B * B).max(B)) } else { pass_c };
        let pass_c = if pass_c >= s.c_in {
            s.c_in.max(1)
        } else {
            // Even passes: 96 channels as 48 + 48, not 64 + 32.
            s.c_in.div_ceil(s.c_in.div_ceil(pass_c)).next_multiple_of(B)
        };
        let bands = segments.div_ceil(band);
        // Each thread runs a contiguous share of the tasks (`par_for`).
        // Band-major, a thread reads the input rows of its bands and all
        // of the filter; group-major, all of the input and its groups'
        // filters. Read the larger one once: a pointwise convolution
        // over a wide plane then works on the pixels the thread itself
        // wrote in the layer before, not on half of each block from the
        // other core's cache.
        let (plane_len, filter_len) = (s.c_in * s.h * s.w_in, s.c_in * s.kh * s.kw * blocks * B);
        let band_major = plane_len > filter_len;
        let (x_block, x_lane) = match input {
            Input::Blocked => (rows * pitch * B, 1),
            Input::Nchw => (B * rows * pitch, rows * pitch),
        };
        Plan {
            pitch,
            x_block,
            x_lane,
            pixel: input.pixel(),
            flat,
            pair,
            segments,
            q,
            groups,
            band,
            bands,
            band_major,
            pass_c,
        }
    }

    /// Segment `i`: its first output pixel (plane index), its pixels per
    /// row, its rows, and its first window's input pixel (plane index).
    fn segment(&self, s: &Conv2dShape, i: usize) -> (usize, usize, usize, usize) {
        if self.flat {
            let p0 = i * FLAT_SEGMENT;
            (p0, FLAT_SEGMENT.min(s.h_out * s.w_out - p0), 1, p0)
        } else if self.pair {
            let y = 2 * i;
            (y * s.w_out, s.w_out, (s.h_out - y).min(2), y * s.sh * self.pitch)
        } else {
            (i * s.w_out, s.w_out, 1, i * s.sh * self.pitch)
        }
    }
}

/// [`conv2d_blocked_f32`] with a given microkernel (the tests run each).
///
/// # Safety
///
/// As [`conv2d_blocked_f32`], and the CPU has `kernel`'s instruction set.
#[allow(clippy::too_many_arguments)]
pub(crate) unsafe fn run(
    kernel: &Kernel,
    input: Input,
    x: *const f32,
    w: Filter,
    bias: *const f32,
    residual: *const f32,
    out: *mut f32,
    s: &Conv2dShape,
    act: ActKind,
    scratch: *mut f32,
    par: bool,
) {
    debug_assert!(s.groups == 1 || blocked_grouped(s), "conv2d_blocked_f32 takes one group or groups of whole blocks");
    if s.n == 0 || s.c_out == 0 || s.h_out == 0 || s.w_out == 0 {
        return;
    }
    // Each group is a one-group convolution over its own blocks: the
    // plan is one group's, and the tasks of every group share one
    // parallel loop.
    let groups = s.groups.max(1);
    let g = &Conv2dShape { c_in: s.c_in / groups, c_out: s.c_out / groups, groups: 1, ..*s };
    let kernel = match kernel.half {
        Some(half) if g.c_out <= B / 2 => match half.unit_step {
            Some(pairs) if input == Input::Nchw && s.sw == 1 => pairs,
            _ => half,
        },
        _ => kernel,
    };
    let plan = Plan::new(kernel, input, g, par, matches!(w, Filter::Half(..)));
    let in_place = PaddedPlane::of(s).reads_input_in_place(s);
    let in_img = match input {
        Input::Blocked => channel_blocks(s.c_in) * s.h * s.w_in * B,
        Input::Nchw => s.c_in * s.h * s.w_in,
    };
    let out_img = channel_blocks(s.c_out) * s.h_out * s.w_out * B;
    for img in 0..s.n {
        let x_img = x.wrapping_add(img * in_img);
        let src = if in_place {
            x_img
        } else {
            // SAFETY: image `img` of the input; the scratch holds one
            // padded image.
            unsafe { pad_image(x_img, s, input, scratch, par) };
            scratch.cast_const()
        };
        let (src, out_img, res_img) = (
            SendPtr(src.cast_mut()),
            SendPtr(out.wrapping_add(img * out_img)),
            SendPtr(if residual.is_null() {
                residual.cast_mut()
            } else {
                residual.wrapping_add(img * out_img).cast_mut()
            }),
        );
        let bias = SendPtr(bias.cast_mut());
        let per_group = plan.groups * plan.bands;
        // One group's input blocks, output blocks and packed filter.
        let (in_step, out_step) =
            (channel_blocks(g.c_in) * plan.x_block, channel_blocks(g.c_out) * g.h_out * g.w_out * B);
        let w_step = g.c_out * g.c_in * g.kh * g.kw;
        let work = |first: usize, count: usize| {
            for task in first..first + count {
                let (group, task) = (task / per_group, task % per_group);
                let io = (
                    src.get().cast_const().wrapping_add(group * in_step),
                    res_img.get().cast_const().wrapping_add(if res_img.get().is_null() { 0 } else { group * out_step }),
                    out_img.get().wrapping_add(group * out_step),
                );
                let bias = if bias.get().is_null() { bias.get() } else { bias.get().wrapping_add(group * g.c_out) };
                // SAFETY: the plane is complete and unchanged; tasks write
                // disjoint blocks x segments of the image's output (a
                // group's tasks its own blocks).
                unsafe { run_task(kernel, &plan, g, io, w.offset(group * w_step), bias, act, task) }
            }
        };
        let tasks = groups * per_group;
        if par {
            par_for(tasks, 1, &work);
        } else {
            work(0, tasks);
        }
    }
}

/// One task: a group of output blocks over a band of segments, in the
/// plan's order (group-major: consecutive tasks reuse the group's filter;
/// band-major: the band's input rows); an activation that is not a clamp
/// runs on each segment right after its tiles, while it is in L1. A 16-bit
/// filter is widened a pass at a time into a buffer on this stack.
///
/// # Safety
///
/// As [`run`]; `(x, residual, out)` are the image's plane (`plan.pitch`,
/// `plan.x_block`), residual (or null) and output.
#[allow(clippy::too_many_arguments)]
unsafe fn run_task(
    kernel: &Kernel,
    plan: &Plan,
    s: &Conv2dShape,
    io: (*const f32, *const f32, *mut f32),
    filter: Filter,
    bias: *const f32,
    act: ActKind,
    task: usize,
) {
    let (group, band) =
        if plan.band_major { (task % plan.groups, task / plan.groups) } else { (task / plan.bands, task % plan.bands) };
    let b0 = group * plan.q;
    let q = plan.q.min(channel_blocks(s.c_out) - b0);
    let taps = s.kh * s.kw;
    let w_block = s.c_in * taps * B;
    match filter {
        // SAFETY: forwarded contract; each pass's slice is inside the
        // filter (blocks `b0..b0 + q`, channels `c0..c0 + c_in`).
        Filter::F32(w) => unsafe {
            run_passes(kernel, plan, s, io, bias, act, (group, band), |c0, _| {
                (w.wrapping_add(b0 * w_block + c0 * taps * B), w_block, true)
            })
        },
        // SAFETY: as above for the 16-bit filter; each pass widens all of
        // its slice into the buffer before the tiles read it, and the
        // plan keeps `q` blocks of a pass's `c_in` channels inside it.
        Filter::Half(w, widen) => unsafe {
            let mut buf = MaybeUninit::<HalfSlice>::uninit();
            let dst = buf.as_mut_ptr().cast::<f32>();
            run_passes(kernel, plan, s, io, bias, act, (group, band), |c0, c_in| {
                let len = c_in * taps * B;
                debug_assert!(q * len * 4 <= HALF_FILTER_SLICE_BYTES);
                for j in 0..q {
                    widen(w.add((b0 + j) * w_block + c0 * taps * B), dst.add(j * len), len);
                }
                // The slice the next widening reads, into L2 while this
                // pass's tiles compute (the next pass's, else the next
                // group's first): a filter larger than the caches then
                // does not stall each pass on memory.
                let (next_c0, next_b0) = if c0 + c_in < s.c_in { (c0 + c_in, b0) } else { (0, b0 + plan.q) };
                let next_len = plan.pass_c.min(s.c_in - next_c0) * taps * B;
                for j in 0..q {
                    let first = w.wrapping_add((next_b0 + j) * w_block + next_c0 * taps * B);
                    for line in (0..next_len).step_by(32) {
                        prefetch_l2(first.wrapping_add(line).cast());
                    }
                }
                (dst.cast_const(), len, false)
            })
        },
    }
}

/// The passes of [`run_task`] over input channels, each pass's filter
/// slice from `slice(c0, c_in)`: the first output block's weights, the
/// floats from one block's to the next, and whether it lies in the whole
/// filter (so the next pass's slice may be prefetched).
///
/// # Safety
///
/// As [`run_task`], and every slice holds its pass's weights in the
/// packed order.
#[allow(clippy::too_many_arguments)]
unsafe fn run_passes(
    kernel: &Kernel,
    plan: &Plan,
    s: &Conv2dShape,
    (x, residual, out): (*const f32, *const f32, *mut f32),
    bias: *const f32,
    act: ActKind,
    (group, band): (usize, usize),
    mut slice: impl FnMut(usize, usize) -> (*const f32, usize, bool),
) {
    let blocks = channel_blocks(s.c_out);
    let b0 = group * plan.q;
    let q = plan.q.min(blocks - b0);
    let w_block = s.c_in * s.kh * s.kw * B;
    let out_block = s.h_out * s.w_out * B;
    let segs = band * plan.band..((band + 1) * plan.band).min(plan.segments);
    let taps = s.kh * s.kw;
    let clamp = as_clamp(act);
    // Pass over input channels `c0..c0 + pass_c`, every segment, before the
    // next pass; at least one pass, so `c_in == 0` still writes the bias.
    let mut c0 = 0;
    loop {
        let c_in = plan.pass_c.min(s.c_in - c0);
        let last = c0 + c_in == s.c_in;
        let (w_pass, pass_block, in_filter) = slice(c0, c_in);
        // Where the filter read after this pass starts, relative to this
        // pass's: the next pass of this group, or the next group's first
        // pass when the next task is that group's (one thread's run, or
        // band-major tasks).
        let next_slice = if !in_filter {
            0
        } else if !last {
            (c_in * taps * B) as isize
        } else if group + 1 < plan.groups && (plan.band_major || plan.bands == 1) {
            (plan.q * w_block) as isize - (c0 * taps * B) as isize
        } else {
            0
        };
        // The pass's tiles, so that each prefetches its share of the next
        // slice: the whole pass's time for the lines to arrive.
        let pass_tiles: usize = segs.clone().map(|seg| plan.segment(s, seg).1.div_ceil(kernel.max_r)).sum();
        let mut tile_index = 0;
        for seg in segs.clone() {
            let (o0, len, rows, i0) = plan.segment(s, seg);
            // Tiles of nearly equal width: `len / tiles`, the first `extra`
            // one wider.
            let tiles = len.div_ceil(kernel.max_r);
            let (base, extra) = (len / tiles, len % tiles);
            let mut x0 = 0;
            for t in 0..tiles {
                let r = base + usize::from(t < extra);
                let tile = Tile {
                    r: r * rows,
                    q,
                    rows,
                    x_row: s.sh * plan.pitch * plan.pixel,
                    out_row: s.w_out * B,
                    c_in,
                    kh: s.kh,
                    kw: s.kw,
                    x: x.wrapping_add((c0 / B) * plan.x_block + (i0 + x0 * s.sw) * plan.pixel),
                    x_block: plan.x_block,
                    x_lane: plan.x_lane,
                    x_step: s.sw * plan.pixel,
                    x_dh: s.dh * plan.pitch * plan.pixel,
                    x_dw: s.dw * plan.pixel,
                    w: w_pass,
                    w_block: pass_block,
                    bias: if bias.is_null() { bias } else { bias.wrapping_add(b0 * B) },
                    load: c0 > 0,
                    out: out.wrapping_add(b0 * out_block + (o0 + x0) * B),
                    out_block,
                    residual: if last && !residual.is_null() {
                        residual.wrapping_add(b0 * out_block + (o0 + x0) * B)
                    } else {
                        std::ptr::null()
                    },
                    clamp: if last { clamp } else { None },
                    prefetch: next_slice,
                    prefetch_from: tile_index * c_in / pass_tiles,
                    prefetch_to: (tile_index + 1) * c_in / pass_tiles,
                };
                tile_index += 1;
                // SAFETY: `r <= max_r` and `q <= q_for(r)`, or `r <= pair_r`
                // and `q <= pair_q(2r)` (the plan's `q` is for the widest
                // tile, a pair if any; `pair_q(2r) <= q_for(r)`); the padded plane holds every
                // window of the segment, the filter and bias blocks
                // `b0..b0 + q` and channels `c0..c0 + c_in` exist (`c0` a
                // multiple of 16), and the outputs are this task's,
                // written by the previous pass when `load`.
                unsafe { (kernel.micro)(&tile) };
                x0 += r;
            }
            if last && clamp.is_none() && act != ActKind::Identity {
                let first = out.wrapping_add(b0 * out_block + o0 * B);
                for j in 0..q {
                    // SAFETY: block `j` of the segment just finished (residual
                    // added), inside the task's outputs.
                    unsafe {
                        act_f32_slice(act, first.add(j * out_block), first.add(j * out_block), rows * len * B, false)
                    };
                }
            }
        }
        c0 += c_in;
        if last {
            break;
        }
    }
}

/// Copies one image's input into the zero-padded plane at `plane`: per
/// block every lane (padded lanes stay unread), or per channel for an
/// NCHW input.
///
/// # Safety
///
/// `x` valid for one input image, `plane` for
/// `conv_blocked_scratch_bytes(s)` bytes of writes, not overlapping.
unsafe fn pad_image(x: *const f32, s: &Conv2dShape, input: Input, plane: *mut f32, par: bool) {
    let p = PaddedPlane::of(s);
    // Planes of 16 floats per pixel (blocks), or of one (channels).
    let planes = match input {
        Input::Blocked => channel_blocks(s.c_in),
        Input::Nchw => s.c_in,
    };
    let pixel = input.pixel();
    let lines = planes * p.rows;
    // Columns `pw..pw + copied` hold the input row; zeros around them.
    let left = s.pw.min(p.cols);
    let copied = s.w_in.min(p.cols - left);
    let (x, plane) = (SendPtr(x.cast_mut()), SendPtr(plane));
    let run = |first: usize, count: usize| {
        for line in first..first + count {
            let (blk, row) = (line / p.rows, line % p.rows);
            let dst = plane.get().wrapping_add(line * p.cols * pixel);
            // SAFETY: padded row `row` of plane `blk` (`cols * pixel` values,
            // written by this iteration only) and, when it is an input
            // row, that row of the input.
            unsafe {
                match row.checked_sub(s.ph).filter(|&r| r < s.h) {
                    Some(r) => {
                        std::ptr::write_bytes(dst, 0, left * pixel);
                        let src = x.get().add((blk * s.h + r) * s.w_in * pixel);
                        std::ptr::copy_nonoverlapping(src, dst.add(left * pixel), copied * pixel);
                        std::ptr::write_bytes(dst.add((left + copied) * pixel), 0, (p.cols - left - copied) * pixel);
                    }
                    None => std::ptr::write_bytes(dst, 0, p.cols * pixel),
                }
            }
        }
    };
    if par {
        par_for(lines, (4096 / (p.cols * pixel).max(1)).max(1), &run);
    } else {
        run(0, lines);
    }
}
