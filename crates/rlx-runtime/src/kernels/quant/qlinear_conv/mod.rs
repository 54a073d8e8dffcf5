//! `QLinearConv2D`: the 8-bit convolution with its requantization fused,
//! on a filter the importer packed (`rlx_core::qconv`).
//!
//! Per image, the input is first written channels last into the padded
//! plane every window can touch (`x_pad` outside the input, 0 in the
//! channels that round `c_in` up to whole quads), so a window tap of an
//! output pixel is one address and the inner step reads four input
//! channels as one 32-bit word. Then tiles of output pixels times blocks
//! of 16 output channels (12 pixels times 2 blocks on AVX-512 VNNI, 16
//! times 1 in the other bodies: AVX-VNNI and AVX2 in
//! `avx2.rs`, NEON in `neon.rs`, the portable
//! one here; `quant/shared.rs` picks one per process): per tap and quad of input channels, one
//! 64-byte filter vector per block times each pixel's broadcast word,
//! added into 16 i32 lanes (`vpdpbusd`, u8 times i8), then the
//! requantization in registers and a 16x16 byte transpose into the NCHW
//! output. No im2col, no i32 intermediate tensor.
//!
//! Between two such convolutions the importer keeps the activations
//! channels last (`x_nhwc`, `out_nhwc`): the producer stores each pixel's
//! 16 channels as they come out of the registers, and the consumer copies
//! rows into its plane, or reads the input in place when it needs no
//! padding (a 1x1 convolution).
//!
//! The sums are exact in wrapping i32 and the requantization takes
//! `Requantize`'s f32 steps lane by lane, so every path, thread count and
//! the reference give the same bits.

use rlx_core::blocked::PaddedPlane;
use rlx_core::qconv::{qconv_image_channels, QCONV_IN_QUAD, QCONV_OUT_BLOCK};

#[cfg(target_arch = "x86_64")]
mod avx2;
#[cfg(target_arch = "aarch64")]
mod neon;
mod scalar;
#[cfg(test)]
mod tests;

pub use scalar::qlinear_conv2d_reference;

use super::requantize::requantize_one;
use super::shared::Body;
use crate::kernels::conv::Conv2dShape;
use crate::kernels::reduce::SendPtr;

/// Output pixels per tile: one 16x16 byte transpose at the store.
pub(super) const TILE: usize = 16;
/// Bytes of one filter vector: 16 output lanes of 4 input channels.
pub(super) const FILTER_STEP: usize = QCONV_OUT_BLOCK * QCONV_IN_QUAD;

/// `QLinearConv2D`: `out[b, oc, oy, ox] =
/// saturate(round_half_even(f32(sum + bias[oc]) * scale[oc]) + zero)`
/// with `sum` over the window and the
/// input channels of `xp * w[oc, ic, ky, kx]` in wrapping i32, `xp` being
/// `x` inside the image and `x_pad` outside. `bias` null adds 0, `scale`
/// has 1 (`scale_len`) or `c_out` elements, `zero` null is 0. `x` is
/// NCHW, or NHWC with `x_nhwc`; `out` NCHW, or NHWC with `out_nhwc`.
/// `par` splits the tiles over the pool.
///
/// # Safety
///
/// `x` readable for `n * c_in * h * w_in` bytes, `w` for
/// `qconv::qconv_filter_len(c_out, c_in, kh, kw)`, `bias` (unless null)
/// for `c_out` i32, `scale` for `scale_len` f32, `zero` (unless null) for
/// one byte; `out` writable for `n * c_out * h_out * w_out` bytes,
/// overlapping no input; `scratch` writable for
/// `qconv::qconv_scratch_bytes(s)` bytes, overlapping nothing. `s` is a
/// validated one-group shape and `x_pad <= 255`.
#[allow(clippy::too_many_arguments)]
pub unsafe fn qlinear_conv2d(
    scratch: *mut u8,
    x: *const u8,
    w: *const i8,
    bias: *const i32,
    scale: *const f32,
    zero: *const u8,
    out: *mut u8,
    s: &Conv2dShape,
    x_pad: usize,
    scale_len: usize,
    x_nhwc: bool,
    out_nhwc: bool,
    par: bool,
) {
    // SAFETY: the caller's contract.
    unsafe {
        convolve(scratch, x, w, bias, scale, zero, out, s, x_pad, scale_len, (x_nhwc, out_nhwc), par, Body::detect())
    }
}

/// [`qlinear_conv2d`] on the body `body`: the tests compare every body
/// this CPU runs.
///
/// # Safety
/// As [`qlinear_conv2d`]; `body` runs on this CPU.
#[cfg(test)]
#[allow(clippy::too_many_arguments)]
pub(super) unsafe fn qlinear_conv2d_body(
    body: Body,
    scratch: *mut u8,
    x: *const u8,
    w: *const i8,
    bias: *const i32,
    scale: *const f32,
    zero: *const u8,
    out: *mut u8,
    s: &Conv2dShape,
    x_pad: usize,
    scale_len: usize,
    x_nhwc: bool,
    out_nhwc: bool,
    par: bool,
) {
    // SAFETY: the caller's contract.
    unsafe { convolve(scratch, x, w, bias, scale, zero, out, s, x_pad, scale_len, (x_nhwc, out_nhwc), par, body) }
}

/// [`qlinear_conv2d`] with the tile body `body`.
///
/// # Safety
/// As [`qlinear_conv2d`]; `body` runs on this CPU.
#[allow(clippy::too_many_arguments)]
unsafe fn convolve(
    scratch: *mut u8,
    x: *const u8,
    w: *const i8,
    bias: *const i32,
    scale: *const f32,
    zero: *const u8,
    out: *mut u8,
    s: &Conv2dShape,
    x_pad: usize,
    scale_len: usize,
    layouts: (bool, bool),
    par: bool,
    body: Body,
) {
    let pixels = s.h_out * s.w_out;
    if s.n == 0 || s.c_out == 0 || pixels == 0 {
        return;
    }
    let (x_nhwc, out_nhwc) = layouts;
    let plane = PaddedPlane::of(s);
    let channels = qconv_image_channels(s.c_in, s.groups);
    // A channels-last input with whole quads (blocks) that needs no
    // padding is the plane itself, read in place at its own row pitch.
    let in_place = x_nhwc && channels == s.c_in && plane.reads_input_in_place(s);
    let pitch = if in_place { s.w_in } else { plane.cols };
    #[cfg(target_arch = "x86_64")]
    let depthwise = s.groups > 1;
    let quads = s.c_in_g().div_ceil(QCONV_IN_QUAD);
    // SAFETY: a non-null zero point is readable (caller).
    let zero = if zero.is_null() { 0.0 } else { f32::from(unsafe { *zero }) };
    let blocks = s.c_out.div_ceil(QCONV_OUT_BLOCK);
    let (rows, per_group) = tile_shape(body);
    let (groups, tiles) = (blocks.div_ceil(per_group), pixels.div_ceil(rows));
    let block_bytes = s.kh * s.kw * quads * FILTER_STEP;
    let geometry = Geometry { s: *s, plane_cols: pitch, channels, quads, pixels, block_bytes, out_nhwc };
    let tile_major = s.c_in * s.h * s.w_in > blocks * block_bytes;
    let o = SendPtr(out);
    let (wp, bp, sp) = (SendPtr(w.cast_mut()), SendPtr(bias.cast_mut()), SendPtr(scale.cast_mut()));
    for b in 0..s.n {
        // SAFETY: image `b` of `x` and the scratch: inside the caller's extents.
        let x_img = x.wrapping_add(b * s.c_in * s.h * s.w_in);
        let img = if in_place {
            SendPtr(x_img.cast_mut())
        } else {
            // SAFETY: image `b` of `x` and the scratch: inside the
            // caller's extents.
            unsafe { fill_plane(scratch, x_img, s, plane, channels, x_pad as u8, x_nhwc, par) };
            SendPtr(scratch)
        };
        let out_img = SendPtr(o.get().wrapping_add(b * s.c_out * pixels));
        let run = |start: usize, len: usize| {
            for unit in start..start + len {
                // Group-major: a task's tiles share one group's filters.
                // Tile-major when the image outweighs the filter (a
                // depthwise one, a narrow pointwise one): a thread's
                // contiguous share of the units is then a band of whole
                // pixels, every channel of them, so two threads never write
                // the same channels-last output line, and each reads the
                // plane rows its own `fill_plane` share wrote.
                let (group, tile) =
                    if tile_major { (unit % groups, unit / groups) } else { (unit / tiles, unit % tiles) };
                let first_block = group * per_group;
                let epilogue = |block: usize| Epilogue {
                    bias: bp.get(),
                    scale: sp.get(),
                    scale_len,
                    zero,
                    first_channel: block * QCONV_OUT_BLOCK,
                    lanes: (s.c_out - block * QCONV_OUT_BLOCK).min(QCONV_OUT_BLOCK),
                };
                let filter = wp.get().wrapping_add(first_block * block_bytes);
                let (g, im, first, dst) = (&geometry, img.get(), tile * rows, out_img.get());
                // SAFETY: the plane was filled above; the group's filter
                // blocks, the epilogues' channels and the tile's pixels are
                // inside the caller's extents; each unit writes its own
                // outputs; `body` was detected on this CPU.
                unsafe {
                    match body {
                        #[cfg(target_arch = "x86_64")]
                        Body::Vnni if first_block + 1 < blocks => {
                            let e = [epilogue(first_block), epilogue(first_block + 1)];
                            if depthwise {
                                x86::tile_vnni::<VNNI_ROWS, 2, true>(g, im, filter, e, first, dst)
                            } else {
                                x86::tile_vnni::<VNNI_ROWS, 2, false>(g, im, filter, e, first, dst)
                            }
                        }
                        #[cfg(target_arch = "x86_64")]
                        Body::Vnni if depthwise => {
                            x86::tile_vnni::<VNNI_ROWS, 1, true>(g, im, filter, [epilogue(first_block)], first, dst)
                        }
                        #[cfg(target_arch = "x86_64")]
                        Body::Vnni => {
                            x86::tile_vnni::<VNNI_ROWS, 1, false>(g, im, filter, [epilogue(first_block)], first, dst)
                        }
                        #[cfg(target_arch = "x86_64")]
                        Body::Avx2 => avx2::tile(g, im, filter, &epilogue(first_block), first, dst),
                        #[cfg(target_arch = "x86_64")]
                        Body::AvxVnni => avx2::tile_avx_vnni(g, im, filter, &epilogue(first_block), first, dst),
                        #[cfg(target_arch = "aarch64")]
                        Body::Dot => neon::tile(g, im, filter, &epilogue(first_block), first, dst),
                        #[cfg(target_arch = "aarch64")]
                        Body::Neon => neon::tile_neon(g, im, filter, &epilogue(first_block), first, dst),
                        Body::Portable => tile_portable(g, im, filter, &epilogue(first_block), first, dst),
                    }
                }
            }
        };
        let units = groups * tiles;
        // About 64K multiply-adds per task at least.
        let per_unit = rows * per_group * QCONV_OUT_BLOCK * s.kh * s.kw * quads * QCONV_IN_QUAD;
        let min = (64 * 1024 / per_unit.max(1)).max(1);
        if par {
            crate::threads::par_for(units, min, &run);
        } else {
            run(0, units);
        }
    }
}

/// Output pixels per AVX-512 VNNI tile: 12 pixels times 2 blocks are 24
/// accumulators, two filter vectors and a broadcast (of 32 registers),
/// and each broadcast word feeds two multiply-adds.
#[cfg(target_arch = "x86_64")]
const VNNI_ROWS: usize = 12;

/// Output pixels and filter blocks per tile of `body`.
fn tile_shape(body: Body) -> (usize, usize) {
    match body {
        #[cfg(target_arch = "x86_64")]
        Body::Vnni => (VNNI_ROWS, 2),
        _ => (TILE, 1),
    }
}

/// What a tile needs of the shape.
pub(super) struct Geometry {
    pub(super) s: Conv2dShape,
    plane_cols: usize,
    /// Channels per pixel of the plane.
    channels: usize,
    /// Quads of one group's input channels (1 when depthwise).
    pub(super) quads: usize,
    /// Output pixels per channel.
    pub(super) pixels: usize,
    /// Bytes of one block's packed filter.
    #[cfg_attr(not(target_arch = "x86_64"), allow(dead_code))]
    block_bytes: usize,
    /// Whether the output is channels last.
    pub(super) out_nhwc: bool,
}

impl Geometry {
    /// Byte offsets in the plane of the first tap of `count` pixels from
    /// `first`; the rest of the tile repeats the last one.
    pub(super) fn pixel_offsets(&self, first: usize, count: usize) -> [usize; TILE] {
        let s = &self.s;
        let mut offsets = [0; TILE];
        // One division, then a walk along the row (a division per pixel
        // cost as much as a depthwise tile's products).
        let (mut oy, mut ox) = (first / s.w_out, first % s.w_out);
        for (r, off) in offsets.iter_mut().enumerate() {
            *off = (oy * s.sh * self.plane_cols + ox * s.sw) * self.channels;
            if r + 1 < count {
                ox += 1;
                if ox == s.w_out {
                    (oy, ox) = (oy + 1, 0);
                }
            }
        }
        offsets
    }

    /// Byte offset of tap `(ky, kx)` from a pixel's first tap.
    pub(super) fn tap_offset(&self, ky: usize, kx: usize) -> usize {
        (ky * self.s.dh * self.plane_cols + kx * self.s.dw) * self.channels
    }
}

/// The requantization of one block of output channels.
pub(super) struct Epilogue {
    bias: *const i32,
    scale: *const f32,
    scale_len: usize,
    pub(super) zero: f32,
    pub(super) first_channel: usize,
    /// Real channels in the block (the rest are not stored).
    pub(super) lanes: usize,
}

impl Epilogue {
    /// Bias and scale of lane `lane`.
    ///
    /// # Safety
    /// `lane < self.lanes`, and the caller's extents of `qlinear_conv2d`.
    pub(super) unsafe fn params(&self, lane: usize) -> (i32, f32) {
        let c = self.first_channel + lane;
        // SAFETY: channel `c < c_out` (caller).
        unsafe {
            let bias = if self.bias.is_null() { 0 } else { *self.bias.add(c) };
            (bias, *self.scale.add(if self.scale_len == 1 { 0 } else { c }))
        }
    }

    /// Every lane's bias and scale, 0 past the block's real channels (the
    /// vector epilogues' operands).
    ///
    /// # Safety
    /// The caller's extents of `qlinear_conv2d`.
    #[cfg_attr(not(any(target_arch = "x86_64", target_arch = "aarch64")), allow(dead_code))]
    pub(super) unsafe fn lane_params(&self) -> ([i32; QCONV_OUT_BLOCK], [f32; QCONV_OUT_BLOCK]) {
        let (mut bias, mut scale) = ([0; QCONV_OUT_BLOCK], [0.0; QCONV_OUT_BLOCK]);
        for lane in 0..self.lanes {
            // SAFETY: `lane` is a real channel of the block (caller).
            (bias[lane], scale[lane]) = unsafe { self.params(lane) };
        }
        (bias, scale)
    }
}

/// Tile `first..first + 16` (clipped to the plane's pixels) of one block,
/// one lane at a time.
///
/// # Safety
/// `img` is the filled plane, `filter` the block's packed filter, `out`
/// the image's output; `first < g.pixels`.
pub(super) unsafe fn tile_portable(
    g: &Geometry,
    img: *const u8,
    filter: *const i8,
    e: &Epilogue,
    first: usize,
    out: *mut u8,
) {
    let s = &g.s;
    let count = (g.pixels - first).min(TILE);
    let offsets = g.pixel_offsets(first, count);
    let quads = g.quads;
    // A depthwise lane reads its own channel, a one-group lane all of them.
    let depthwise = s.groups > 1;
    let mut acc = [[0i32; QCONV_OUT_BLOCK]; TILE];
    // SAFETY: every read is inside the plane (its rows and columns cover
    // every window) or the block's filter (`kh * kw * quads` vectors).
    unsafe {
        for ky in 0..s.kh {
            for kx in 0..s.kw {
                let tap = g.tap_offset(ky, kx);
                let weights = filter.add((ky * s.kw + kx) * quads * FILTER_STEP);
                for q in 0..quads {
                    let wq = std::slice::from_raw_parts(weights.add(q * FILTER_STEP), FILTER_STEP);
                    for (row, &off) in acc.iter_mut().zip(&offsets).take(count) {
                        let pixel = img.add(off + tap);
                        for (lane, a) in row.iter_mut().enumerate() {
                            let wl = &wq[lane * QCONV_IN_QUAD..(lane + 1) * QCONV_IN_QUAD];
                            let dot = if depthwise {
                                i32::from(*pixel.add(e.first_channel + lane)) * i32::from(wl[0])
                            } else {
                                let xq = std::slice::from_raw_parts(pixel.add(q * QCONV_IN_QUAD), QCONV_IN_QUAD);
                                xq.iter().zip(wl).map(|(&xv, &wv)| i32::from(xv) * i32::from(wv)).sum()
                            };
                            *a = a.wrapping_add(dot);
                        }
                    }
                }
            }
        }
        for lane in 0..e.lanes {
            let (bias, scale) = e.params(lane);
            let channel = e.first_channel + lane;
            for (r, row) in acc.iter().enumerate().take(count) {
                let at = if g.out_nhwc { (first + r) * s.c_out + channel } else { channel * g.pixels + first + r };
                *out.add(at) = requantize_one::<u8>(row[lane], bias, scale, e.zero);
            }
        }
    }
}

/// Starts of 16-wide squares covering `0..len` (`len >= 16`), the last
/// one ending at `len`.
#[cfg(target_arch = "x86_64")]
fn square_starts(len: usize) -> impl Iterator<Item = usize> {
    (0..len / 16 * 16).step_by(16).chain((!len.is_multiple_of(16)).then(|| len - 16))
}

/// Writes one image's padded plane channels last: `x_pad` at positions
/// outside the input, 0 in the channels past `c_in`, from `x` NCHW (or
/// NHWC with `x_nhwc`).
///
/// # Safety
/// `x` readable for one image, `dst` writable for the plane
/// (`rows * cols * channels` bytes).
unsafe fn fill_plane(
    dst: *mut u8,
    x: *const u8,
    s: &Conv2dShape,
    plane: PaddedPlane,
    channels: usize,
    pad: u8,
    x_nhwc: bool,
    par: bool,
) {
    if channels == 0 {
        // No input channels: the sums are 0 and the plane is empty.
        return;
    }
    let (d, src) = (SendPtr(dst), SendPtr(x.cast_mut()));
    let cols = plane.cols;
    let row_bytes = cols * channels;
    // Input columns inside the plane: plane column `pw + ix`.
    let inside = s.w_in.min(cols.saturating_sub(s.pw));
    #[cfg(target_arch = "x86_64")]
    let image_end = x as usize + s.c_in * s.h * s.w_in;
    let run = |start: usize, len: usize| {
        for r in start..start + len {
            // SAFETY: row `r` of the plane and, when inside, row `iy` of
            // every input channel: inside the caller's extents.
            unsafe {
                let row = std::slice::from_raw_parts_mut(d.get().add(r * row_bytes), row_bytes);
                let iy = r.wrapping_sub(s.ph);
                let image_row = iy < s.h && inside > 0;
                let first = s.pw * channels;
                // The padding: whole-row fills, and per pixel only for the
                // border pixels of a padding value under extra channels
                // (a call per pixel of the row would cost more than the
                // transpose).
                let (left, right) = if image_row { (first, first + inside * channels) } else { (row_bytes, row_bytes) };
                if channels == s.c_in {
                    row[..left].fill(pad);
                    row[right..].fill(pad);
                } else {
                    row.fill(0);
                    if pad != 0 {
                        let (head, rest) = row.split_at_mut(right);
                        for pixel in head[..left].chunks_exact_mut(channels).chain(rest.chunks_exact_mut(channels)) {
                            pixel[..s.c_in].fill(pad);
                        }
                    }
                }
                if !image_row {
                    continue;
                }
                if x_nhwc {
                    // Channels last already: the row's pixels, whole when
                    // the plane has no extra channels.
                    let from = src.get().add(iy * s.w_in * s.c_in);
                    let to = row.as_mut_ptr().add(first);
                    if channels == s.c_in {
                        std::ptr::copy_nonoverlapping(from, to, inside * channels);
                    } else {
                        for ix in 0..inside {
                            std::ptr::copy_nonoverlapping(from.add(ix * s.c_in), to.add(ix * channels), s.c_in);
                        }
                    }
                    continue;
                }
                let line = |c: usize| src.get().add((c * s.h + iy) * s.w_in);
                // With at least 16 channels, 16x16 squares by one byte
                // transpose each: the last square of a row or of the
                // channels overlaps the one before it when the count is
                // not a multiple of 16 (writing the same values twice), and
                // a row narrower than 16 goes through a zero-padded copy.
                // Fewer channels (a network's image) one byte at a time.
                #[cfg(target_arch = "x86_64")]
                if s.c_in >= 16 {
                    let row_ptr = row.as_mut_ptr();
                    for c in square_starts(s.c_in) {
                        let store = |ix: usize, count: usize, square: [x86::Bytes16; 16]| {
                            for (j, pixel) in x86::transpose16(square).into_iter().enumerate().take(count) {
                                row_ptr
                                    .add(first + (ix + j) * channels + c)
                                    .cast::<x86::Bytes16>()
                                    .write_unaligned(pixel);
                            }
                        };
                        if inside >= 16 {
                            for ix in square_starts(inside) {
                                store(
                                    ix,
                                    16,
                                    std::array::from_fn(|i| {
                                        line(c + i).add(ix).cast::<x86::Bytes16>().read_unaligned()
                                    }),
                                );
                            }
                        } else {
                            // 16 bytes from the line (the next row's
                            // bytes past `inside` are never stored) unless
                            // they would pass the image's end: a copy of
                            // short stores read back as one load would
                            // stall on store forwarding.
                            let square = std::array::from_fn(|i| {
                                let from = line(c + i);
                                if from as usize + 16 <= image_end {
                                    from.cast::<x86::Bytes16>().read_unaligned()
                                } else {
                                    let mut bytes = [0u8; 16];
                                    std::ptr::copy_nonoverlapping(from, bytes.as_mut_ptr(), inside);
                                    bytes.as_ptr().cast::<x86::Bytes16>().read_unaligned()
                                }
                            });
                            store(0, inside, square);
                        }
                    }
                    continue;
                }
                for c in 0..s.c_in {
                    let values = std::slice::from_raw_parts(line(c), inside);
                    for (ix, &v) in values.iter().enumerate() {
                        *row.get_unchecked_mut(first + ix * channels + c) = v;
                    }
                }
            }
        }
    };
    let min = (64 * 1024 / row_bytes.max(1)).max(1);
    if par {
        crate::threads::par_for(plane.rows, min, &run);
    } else {
        run(0, plane.rows);
    }
}

#[cfg(target_arch = "x86_64")]
pub(super) mod x86 {
    use std::arch::x86_64::*;

    use super::{Epilogue, Geometry, FILTER_STEP, QCONV_IN_QUAD};

    /// 16 bytes.
    pub(in crate::kernels::quant) type Bytes16 = __m128i;

    /// The transpose of a 16x16 byte matrix held as 16 rows (SSE2, which
    /// every x86-64 has): four perfect shuffles of the rows, each
    /// rotating the 8-bit concatenation of row and column index by one.
    #[inline(always)]
    pub(in crate::kernels::quant) fn transpose16(mut rows: [Bytes16; 16]) -> [Bytes16; 16] {
        for _ in 0..4 {
            let mut next = rows;
            for i in 0..8 {
                // SAFETY: SSE2 is part of x86-64.
                unsafe {
                    next[2 * i] = _mm_unpacklo_epi8(rows[i], rows[i + 8]);
                    next[2 * i + 1] = _mm_unpackhi_epi8(rows[i], rows[i + 8]);
                }
            }
            rows = next;
        }
        rows
    }

    /// [`super::tile_portable`] on AVX-512 VNNI for `R` pixels and `J`
    /// consecutive filter blocks: `R * J` accumulators of 16 lanes, one
    /// `vpdpbusd` per pixel, block and quad, the requantization on whole
    /// vectors, then per block a 16x16 byte transpose to NCHW rows.
    ///
    /// # Safety
    /// AVX-512 F, BW, VL and VNNI available; as [`super::tile_portable`],
    /// `filter` the first of `J` blocks, `R <= 16`.
    #[target_feature(enable = "avx512f,avx512bw,avx512vl,avx512vnni")]
    pub(super) unsafe fn tile_vnni<const R: usize, const J: usize, const DEPTHWISE: bool>(
        g: &Geometry,
        img: *const u8,
        filter: *const i8,
        epilogues: [Epilogue; J],
        first: usize,
        out: *mut u8,
    ) {
        let s = &g.s;
        let count = (g.pixels - first).min(R);
        let offsets = g.pixel_offsets(first, count);
        let quads = g.quads;
        let mut acc = [[_mm512_setzero_si512(); J]; R];
        // SAFETY: as the portable body: every read is inside the plane or
        // the group's filter blocks (pixels past `count` repeat the last).
        unsafe {
            for ky in 0..s.kh {
                for kx in 0..s.kw {
                    let tap = g.tap_offset(ky, kx);
                    let weights = filter.add((ky * s.kw + kx) * quads * FILTER_STEP);
                    let pixels: [*const u8; R] = std::array::from_fn(|r| img.add(offsets[r] + tap));
                    for q in 0..quads {
                        let wv: [__m512i; J] = std::array::from_fn(|j| {
                            _mm512_loadu_si512(weights.add(j * g.block_bytes + q * FILTER_STEP).cast())
                        });
                        for r in 0..R {
                            if DEPTHWISE {
                                // The block's 16 channels of the pixel, one
                                // per lane in the low byte; the filter has
                                // each lane's weight in its low byte.
                                for j in 0..J {
                                    let bytes = _mm_loadu_si128(pixels[r].add(epilogues[j].first_channel).cast());
                                    let x = _mm512_cvtepu8_epi32(bytes);
                                    acc[r][j] = _mm512_dpbusd_epi32(acc[r][j], x, wv[j]);
                                }
                            } else {
                                let word = pixels[r].add(q * QCONV_IN_QUAD).cast::<i32>().read_unaligned();
                                let x = _mm512_set1_epi32(word);
                                for j in 0..J {
                                    acc[r][j] = _mm512_dpbusd_epi32(acc[r][j], x, wv[j]);
                                }
                            }
                        }
                    }
                }
            }
            let pixels: __mmask16 = if count == 16 { 0xffff } else { (1u16 << count) - 1 };
            for (j, e) in epilogues.iter().enumerate() {
                let lanes: __mmask16 = if e.lanes == 16 { 0xffff } else { (1u16 << e.lanes) - 1 };
                let bias = if e.bias.is_null() {
                    _mm512_setzero_si512()
                } else {
                    _mm512_maskz_loadu_epi32(lanes, e.bias.add(e.first_channel))
                };
                let scale = if e.scale_len == 1 {
                    _mm512_set1_ps(*e.scale)
                } else {
                    _mm512_maskz_loadu_ps(lanes, e.scale.add(e.first_channel))
                };
                let (zero, lo, hi) = (_mm512_set1_ps(e.zero), _mm512_set1_ps(0.0), _mm512_set1_ps(255.0));
                // Requantize's steps: wrapping add, one conversion, one
                // product, ties to even, the zero point, saturation.
                let rows: [Bytes16; 16] = std::array::from_fn(|r| {
                    if r >= R {
                        return _mm_setzero_si128();
                    }
                    let scaled = _mm512_mul_ps(_mm512_cvtepi32_ps(_mm512_add_epi32(acc[r][j], bias)), scale);
                    let rounded = _mm512_roundscale_ps::<{ _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC }>(scaled);
                    let saturated = _mm512_min_ps(_mm512_max_ps(_mm512_add_ps(rounded, zero), lo), hi);
                    _mm512_cvtepi32_epi8(_mm512_cvtps_epi32(saturated))
                });
                // Row r holds pixel r's 16 channels: stored as they are
                // channels last, else transposed (row `lane` then holds
                // channel `lane`'s pixels).
                if g.out_nhwc {
                    for (r, row) in rows.iter().enumerate().take(count) {
                        let dst = out.add((first + r) * s.c_out + e.first_channel);
                        _mm_mask_storeu_epi8(dst.cast(), lanes, *row);
                    }
                } else {
                    for (lane, row) in transpose16(rows).iter().enumerate().take(e.lanes) {
                        let dst = out.add((e.first_channel + lane) * g.pixels + first);
                        _mm_mask_storeu_epi8(dst.cast(), pixels, *row);
                    }
                }
            }
        }
    }
}
