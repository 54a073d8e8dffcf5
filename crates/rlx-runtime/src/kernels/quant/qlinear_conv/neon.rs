//! `QLinearConv2D`'s NEON tile, for aarch64 with the dot-product extension:
//! the portable body's 16 pixels by one block of 16 output channels, its
//! sums computed 4 pixels at a time and requantized and stored on vectors.
//!
//! One-group: per tap and quad, the block's 64 filter bytes are 4 vectors
//! of 4 output channels by 4 input channels, the layout `sdot` wants, and
//! each pixel's word is broadcast: 16 `sdot` per quad for 4 pixels (16
//! accumulators). `sdot` multiplies i8 by i8, so the pixels go in shifted
//! (`x - 128`, one xor of the word) and each lane starts from `128 *` the
//! sum of its filter bytes (every tap and quad, padded slots included,
//! summed once per tile by `sdot` against ones): `sum (x - 128) w + 128
//! sum w` is the sum, exactly, in wrapping i32. Depthwise: per tap, the 16
//! lanes' weights (the first byte of each quad: `ld4`'s first vector)
//! and the pixel's 16 channels widened to i16, multiplied and added into
//! i32 by `smlal`.
//!
//! Without the dot-product extension (`tile_neon`) the one-group step is
//! plain NEON, 2 pixels at a time: `smull` / `smull2` of each filter
//! vector's halves by the shifted word, `sadalp` into pairs of i32, one
//! `addp` per vector at the end; the start sums the filter bytes by
//! `saddlp` twice. Not timed on hardware (QEMU emulates the instructions,
//! not their speed).
//!
//! The requantization takes `Requantize`'s f32 steps lane by lane
//! (`frintn` rounds half to even; `fmaxnm` returns the number for a NaN,
//! as `f32::max` does), so the bytes are the other bodies'.

use std::arch::aarch64::*;
use std::arch::asm;

use super::{Epilogue, Geometry, FILTER_STEP, TILE};
use rlx_core::qconv::QCONV_IN_QUAD;

/// Pixels per step, one-group or depthwise.
const STEP: usize = 4;

/// The sums of one tile: per pixel, the block's 16 channels.
type Sums = [[int32x4_t; 4]; TILE];

/// `acc[l] += sum over t of w[4 l + t] * x[t]` for a broadcast word `x`,
/// as i8 times i8 in i32 (`sdot` by element 0).
///
/// # Safety
/// The CPU has the dot-product extension (only called from functions
/// that enable it).
#[inline(always)]
unsafe fn sdot(acc: int32x4_t, w: int8x16_t, x: int8x16_t) -> int32x4_t {
    let mut acc = acc;
    // SAFETY: a register-only instruction the caller's CPU has.
    unsafe {
        asm!(
            "sdot {acc:v}.4s, {w:v}.16b, {x:v}.4b[0]",
            acc = inout(vreg) acc,
            w = in(vreg) w,
            x = in(vreg) x,
            options(pure, nomem, nostack, preserves_flags),
        );
    }
    acc
}

/// [`super::qlinear_conv::tile_portable`] on plain NEON.
///
/// # Safety
/// NEON available; as `tile_portable`.
#[target_feature(enable = "neon")]
pub(super) unsafe fn tile_neon(
    g: &Geometry,
    img: *const u8,
    filter: *const i8,
    e: &Epilogue,
    first: usize,
    out: *mut u8,
) {
    let count = (g.pixels - first).min(TILE);
    let offsets = g.pixel_offsets(first, count);
    let mut sums: Sums = [[vdupq_n_s32(0); 4]; TILE];
    // SAFETY: as in [`tile`].
    unsafe {
        if g.s.groups > 1 {
            for p in (0..count).step_by(STEP) {
                depthwise_step(g, img, filter, e, &offsets[p..p + STEP], &mut sums[p..p + STEP]);
            }
        } else {
            let start = shifted_start_neon(g, filter);
            for p in (0..count).step_by(NEON_STEP) {
                dense_step_neon(g, img, filter, start, &offsets[p..p + NEON_STEP], &mut sums[p..p + NEON_STEP]);
            }
        }
        store(g, e, &sums, first, count, out);
    }
}

/// Pixels per one-group step without `sdot` (16 accumulators).
const NEON_STEP: usize = 2;

/// [`shifted_start`] without `sdot`: each vector's 4-byte sums by two
/// pairwise widening adds.
///
/// # Safety
/// As [`tile_neon`].
#[target_feature(enable = "neon")]
unsafe fn shifted_start_neon(g: &Geometry, filter: *const i8) -> [int32x4_t; 4] {
    let mut sums = [vdupq_n_s32(0); 4];
    // SAFETY: the block's `kh * kw * quads` filter vectors (caller).
    unsafe {
        for step in 0..g.s.kh * g.s.kw * g.quads {
            let wq = filter.add(step * FILTER_STEP);
            for (v, sum) in sums.iter_mut().enumerate() {
                *sum = vpadalq_s16(*sum, vpaddlq_s8(vld1q_s8(wq.add(16 * v))));
            }
        }
    }
    sums.map(|sum| vshlq_n_s32::<7>(sum))
}

/// [`dense_step`] without `sdot`, `NEON_STEP` pixels.
///
/// # Safety
/// As [`tile_neon`]; `offsets` and `sums` hold `NEON_STEP` entries.
#[target_feature(enable = "neon")]
unsafe fn dense_step_neon(
    g: &Geometry,
    img: *const u8,
    filter: *const i8,
    start: [int32x4_t; 4],
    offsets: &[usize],
    sums: &mut [[int32x4_t; 4]],
) {
    let s = &g.s;
    // Per pixel and filter vector, the pair sums of its low and high lanes.
    let mut acc = [[[vdupq_n_s32(0); 2]; 4]; NEON_STEP];
    // SAFETY: as `dense_step`.
    unsafe {
        for ky in 0..s.kh {
            for kx in 0..s.kw {
                let tap = g.tap_offset(ky, kx);
                let weights = filter.add((ky * s.kw + kx) * g.quads * FILTER_STEP);
                let pixels: [*const u8; NEON_STEP] = std::array::from_fn(|r| img.add(offsets[r] + tap));
                for q in 0..g.quads {
                    let wq = weights.add(q * FILTER_STEP);
                    let x: [int8x16_t; NEON_STEP] = std::array::from_fn(|r| {
                        let word = pixels[r].add(q * QCONV_IN_QUAD).cast::<u32>().read_unaligned() ^ 0x8080_8080;
                        vreinterpretq_s8_u32(vdupq_n_u32(word))
                    });
                    for v in 0..4 {
                        let w = vld1q_s8(wq.add(16 * v));
                        for (acc, &x) in acc.iter_mut().zip(&x) {
                            acc[v][0] = vpadalq_s16(acc[v][0], vmull_s8(vget_low_s8(w), vget_low_s8(x)));
                            acc[v][1] = vpadalq_s16(acc[v][1], vmull_high_s8(w, x));
                        }
                    }
                }
            }
        }
    }
    for (sums, acc) in sums.iter_mut().zip(&acc) {
        *sums = std::array::from_fn(|v| vaddq_s32(start[v], vpaddq_s32(acc[v][0], acc[v][1])));
    }
}

/// [`super::qlinear_conv::tile_portable`] on NEON with `sdot`.
///
/// # Safety
/// NEON and the dot-product extension available; as `tile_portable`.
#[target_feature(enable = "neon,dotprod")]
pub(super) unsafe fn tile(g: &Geometry, img: *const u8, filter: *const i8, e: &Epilogue, first: usize, out: *mut u8) {
    let count = (g.pixels - first).min(TILE);
    // Pixels past `count` repeat the last one's offset: their sums are
    // computed from inside the plane and never stored.
    let offsets = g.pixel_offsets(first, count);
    let mut sums: Sums = [[vdupq_n_s32(0); 4]; TILE];
    // SAFETY: every read is inside the plane or the block's filter, as in
    // the portable body (caller).
    unsafe {
        if g.s.groups > 1 {
            for p in (0..count).step_by(STEP) {
                depthwise_step(g, img, filter, e, &offsets[p..p + STEP], &mut sums[p..p + STEP]);
            }
        } else {
            let start = shifted_start(g, filter);
            for p in (0..count).step_by(STEP) {
                dense_step(g, img, filter, start, &offsets[p..p + STEP], &mut sums[p..p + STEP]);
            }
        }
        store(g, e, &sums, first, count, out);
    }
}

/// `128 *` each lane's sum of the block's filter bytes: what the shifted
/// products leave out.
///
/// # Safety
/// As [`tile`].
#[target_feature(enable = "neon,dotprod")]
unsafe fn shifted_start(g: &Geometry, filter: *const i8) -> [int32x4_t; 4] {
    let mut sums = [vdupq_n_s32(0); 4];
    let ones = vdupq_n_s8(1);
    // SAFETY: the block's `kh * kw * quads` filter vectors (caller).
    unsafe {
        for step in 0..g.s.kh * g.s.kw * g.quads {
            let wq = filter.add(step * FILTER_STEP);
            for (v, sum) in sums.iter_mut().enumerate() {
                *sum = sdot(*sum, vld1q_s8(wq.add(16 * v)), ones);
            }
        }
    }
    sums.map(|sum| vshlq_n_s32::<7>(sum))
}

/// The sums of `STEP` one-group pixels at `offsets` into `sums`.
///
/// # Safety
/// As [`tile`]; `offsets` and `sums` hold `STEP` entries.
#[target_feature(enable = "neon,dotprod")]
unsafe fn dense_step(
    g: &Geometry,
    img: *const u8,
    filter: *const i8,
    start: [int32x4_t; 4],
    offsets: &[usize],
    sums: &mut [[int32x4_t; 4]],
) {
    let s = &g.s;
    let mut acc = [start; STEP];
    // SAFETY: the taps of every pixel and the block's filter vectors are
    // inside the plane and the filter (caller).
    unsafe {
        for ky in 0..s.kh {
            for kx in 0..s.kw {
                let tap = g.tap_offset(ky, kx);
                let weights = filter.add((ky * s.kw + kx) * g.quads * FILTER_STEP);
                let pixels: [*const u8; STEP] = std::array::from_fn(|r| img.add(offsets[r] + tap));
                for q in 0..g.quads {
                    let wq = weights.add(q * FILTER_STEP);
                    let wv: [int8x16_t; 4] = std::array::from_fn(|v| vld1q_s8(wq.add(16 * v)));
                    for (acc, pixel) in acc.iter_mut().zip(&pixels) {
                        let word = pixel.add(q * QCONV_IN_QUAD).cast::<u32>().read_unaligned() ^ 0x8080_8080;
                        let x = vreinterpretq_s8_u32(vdupq_n_u32(word));
                        for (acc, &w) in acc.iter_mut().zip(&wv) {
                            *acc = sdot(*acc, w, x);
                        }
                    }
                }
            }
        }
    }
    sums.copy_from_slice(&acc);
}

/// The sums of `STEP` depthwise pixels at `offsets` into `sums`.
///
/// # Safety
/// As [`tile`]; `offsets` and `sums` hold `STEP` entries.
#[target_feature(enable = "neon")]
unsafe fn depthwise_step(
    g: &Geometry,
    img: *const u8,
    filter: *const i8,
    e: &Epilogue,
    offsets: &[usize],
    sums: &mut [[int32x4_t; 4]],
) {
    let s = &g.s;
    let mut acc = [[vdupq_n_s32(0); 4]; STEP];
    // SAFETY: as `dense_step`; a pixel's block of 16 channels is inside
    // the plane (depthwise planes round the channels up to whole blocks).
    unsafe {
        for ky in 0..s.kh {
            for kx in 0..s.kw {
                let tap = g.tap_offset(ky, kx);
                // One quad per lane, the weight in its first byte.
                let w = vld4q_s8(filter.add((ky * s.kw + kx) * FILTER_STEP)).0;
                let (w_lo, w_hi) = (vmovl_s8(vget_low_s8(w)), vmovl_high_s8(w));
                for (acc, &offset) in acc.iter_mut().zip(offsets) {
                    let x = vld1q_u8(img.add(offset + tap + e.first_channel));
                    // At most 255: exact in i16.
                    let x_lo = vreinterpretq_s16_u16(vmovl_u8(vget_low_u8(x)));
                    let x_hi = vreinterpretq_s16_u16(vmovl_high_u8(x));
                    acc[0] = vmlal_s16(acc[0], vget_low_s16(x_lo), vget_low_s16(w_lo));
                    acc[1] = vmlal_high_s16(acc[1], x_lo, w_lo);
                    acc[2] = vmlal_s16(acc[2], vget_low_s16(x_hi), vget_low_s16(w_hi));
                    acc[3] = vmlal_high_s16(acc[3], x_hi, w_hi);
                }
            }
        }
    }
    sums.copy_from_slice(&acc);
}

/// The 16x16 byte transpose of 16 rows: four perfect shuffles (`zip1` /
/// `zip2` of rows `i` and `i + 8`), each rotating the 8-bit concatenation
/// of row and column index by one.
#[target_feature(enable = "neon")]
fn transpose16(mut rows: [uint8x16_t; 16]) -> [uint8x16_t; 16] {
    for _ in 0..4 {
        let mut next = rows;
        for i in 0..8 {
            next[2 * i] = vzip1q_u8(rows[i], rows[i + 8]);
            next[2 * i + 1] = vzip2q_u8(rows[i], rows[i + 8]);
        }
        rows = next;
    }
    rows
}

/// Requantizes the tile's sums (`Requantize`'s steps on 4 lanes) and
/// stores its `count` pixels of the block's real channels: per pixel when
/// the output is channels last, else per channel through the 16x16 byte
/// transpose.
///
/// # Safety
/// As [`tile`].
#[target_feature(enable = "neon")]
unsafe fn store(g: &Geometry, e: &Epilogue, sums: &Sums, first: usize, count: usize, out: *mut u8) {
    let s = &g.s;
    // SAFETY: the caller's extents.
    let (bias, scale) = unsafe { e.lane_params() };
    // SAFETY: local arrays of 16 lanes; the stores below stay inside the
    // tile's pixels and the block's real channels of the output (caller).
    unsafe {
        let bias: [int32x4_t; 4] = std::array::from_fn(|v| vld1q_s32(bias.as_ptr().add(4 * v)));
        let scale: [float32x4_t; 4] = std::array::from_fn(|v| vld1q_f32(scale.as_ptr().add(4 * v)));
        let (zero, lo, hi) = (vdupq_n_f32(e.zero), vdupq_n_f32(0.0), vdupq_n_f32(255.0));
        let rows: [uint8x16_t; TILE] = std::array::from_fn(|r| {
            if r >= count {
                return vdupq_n_u8(0);
            }
            let lanes: [uint16x4_t; 4] = std::array::from_fn(|v| {
                let scaled = vmulq_f32(vcvtq_f32_s32(vaddq_s32(sums[r][v], bias[v])), scale[v]);
                let saturated = vminnmq_f32(vmaxnmq_f32(vaddq_f32(vrndnq_f32(scaled), zero), lo), hi);
                // An integer in 0..=255: the conversion and narrowing are exact.
                vmovn_u32(vcvtq_u32_f32(saturated))
            });
            let low = vmovn_u16(vcombine_u16(lanes[0], lanes[1]));
            vcombine_u8(low, vmovn_u16(vcombine_u16(lanes[2], lanes[3])))
        });
        if g.out_nhwc {
            for (r, row) in rows.iter().enumerate().take(count) {
                let dst = out.add((first + r) * s.c_out + e.first_channel);
                store_bytes(dst, *row, e.lanes);
            }
        } else {
            for (lane, row) in transpose16(rows).iter().enumerate().take(e.lanes) {
                store_bytes(out.add((e.first_channel + lane) * g.pixels + first), *row, count);
            }
        }
    }
}

/// The first `len` (at most 16) bytes of `bytes` at `dst`.
///
/// # Safety
/// NEON available; `dst` writable for `len` bytes.
#[inline(always)]
unsafe fn store_bytes(dst: *mut u8, bytes: uint8x16_t, len: usize) {
    // SAFETY: `dst` holds `len` bytes (caller).
    unsafe {
        if len == 16 {
            vst1q_u8(dst, bytes);
        } else {
            let mut buffer = [0u8; 16];
            vst1q_u8(buffer.as_mut_ptr(), bytes);
            std::ptr::copy_nonoverlapping(buffer.as_ptr(), dst, len);
        }
    }
}
