//! `QLinearConv2D`'s AVX2 tile, for x86-64 without AVX-512 VNNI: the
//! portable body's 16 pixels by one block of 16 output channels, its sums
//! computed a few pixels at a time and requantized and stored on vectors.
//!
//! One-group: per tap and quad, the block's 64 filter bytes are widened to
//! four vectors of i16 (4 output channels by 4 input channels each) and
//! each pixel's word is broadcast and widened to i16 by one shuffle;
//! `vpmaddwd` adds pairs of products into i32 (exact: `255 * 128 * 2`
//! fits), 2 pixels at a time (8 accumulators, 4 filter vectors and the
//! broadcast: 13 of the 16 registers), and one `vphaddd` per 8 channels
//! folds the pairs at the end. Depthwise: per tap, the 16 lanes' weights
//! (the first byte of each lane's quad) sign-extended to i32, the pixel's
//! 16 channels zero-extended to i32, and `vpmaddwd` of the two is the
//! product (the high halves meet zeros), 4 pixels at a time.
//!
//! With AVX-VNNI (the VEX `vpdpbusd` on ymm: Alder Lake and later client
//! cores, without AVX-512) the same tile multiplies without widening: per
//! tap and quad, two filter vectors (8 channels by 4 input channels each)
//! times each pixel's broadcast word, 4 pixels at a time (8 accumulators);
//! depthwise, the pixel's channels zero-extended to one per i32 lane meet
//! the filter words as they are (their three unused bytes meet zeros).
//!
//! All of it is wrapping i32 and `Requantize`'s f32 steps lane by lane, so
//! the bytes are the other bodies'.

use std::arch::x86_64::*;

use super::{x86::transpose16, x86::Bytes16, Epilogue, Geometry, FILTER_STEP, TILE};
use rlx_core::qconv::{QCONV_IN_QUAD, QCONV_OUT_BLOCK};

/// Pixels per one-group step (the module's comment).
const DENSE_STEP: usize = 2;
/// Pixels per depthwise step.
const DEPTHWISE_STEP: usize = 4;

/// The sums of one tile: per pixel, the block's 16 channels.
type Sums = [[i32; QCONV_OUT_BLOCK]; TILE];

/// Pixels per one-group or depthwise step with AVX-VNNI.
const VNNI_STEP: usize = 4;

/// [`super::qlinear_conv::tile_portable`] on AVX2.
///
/// # Safety
/// AVX2 available; as `tile_portable`.
#[target_feature(enable = "avx2")]
pub(super) unsafe fn tile(g: &Geometry, img: *const u8, filter: *const i8, e: &Epilogue, first: usize, out: *mut u8) {
    // SAFETY: the caller's contract.
    unsafe { tile_with::<false>(g, img, filter, e, first, out) }
}

/// [`tile`] with AVX-VNNI.
///
/// # Safety
/// AVX2 and AVX-VNNI available; as `tile_portable`.
#[target_feature(enable = "avx2,avxvnni")]
pub(super) unsafe fn tile_avx_vnni(
    g: &Geometry,
    img: *const u8,
    filter: *const i8,
    e: &Epilogue,
    first: usize,
    out: *mut u8,
) {
    // SAFETY: the caller's contract.
    unsafe { tile_with::<true>(g, img, filter, e, first, out) }
}

/// The tile, its steps with `vpdpbusd` when `VNNI`.
///
/// # Safety
/// AVX2 (and AVX-VNNI when `VNNI`) available; as `tile_portable`.
#[inline(always)]
unsafe fn tile_with<const VNNI: bool>(
    g: &Geometry,
    img: *const u8,
    filter: *const i8,
    e: &Epilogue,
    first: usize,
    out: *mut u8,
) {
    let count = (g.pixels - first).min(TILE);
    // Pixels past `count` repeat the last one's offset: their sums are
    // computed from inside the plane and never stored.
    let offsets = g.pixel_offsets(first, count);
    let mut sums: Sums = [[0; QCONV_OUT_BLOCK]; TILE];
    // SAFETY: every read is inside the plane or the block's filter, as in
    // the portable body (caller).
    unsafe {
        match (g.s.groups > 1, VNNI) {
            (true, false) => {
                for p in (0..count).step_by(DEPTHWISE_STEP) {
                    let (o, s) = (&offsets[p..p + DEPTHWISE_STEP], &mut sums[p..p + DEPTHWISE_STEP]);
                    depthwise_step(g, img, filter, e, o, s);
                }
            }
            (false, false) => {
                for p in (0..count).step_by(DENSE_STEP) {
                    dense_step(g, img, filter, &offsets[p..p + DENSE_STEP], &mut sums[p..p + DENSE_STEP]);
                }
            }
            (depthwise, true) => {
                for p in (0..count).step_by(VNNI_STEP) {
                    let (o, s) = (&offsets[p..p + VNNI_STEP], &mut sums[p..p + VNNI_STEP]);
                    vnni_step(g, img, filter, e, depthwise, o, s);
                }
            }
        }
        store(g, e, &sums, first, count, out);
    }
}

/// The sums of `DENSE_STEP` one-group pixels at `offsets` into `sums`.
///
/// # Safety
/// As [`tile`]; `offsets` and `sums` hold `DENSE_STEP` entries.
#[target_feature(enable = "avx2")]
unsafe fn dense_step(g: &Geometry, img: *const u8, filter: *const i8, offsets: &[usize], sums: &mut [[i32; 16]]) {
    let s = &g.s;
    // Each of a word's 4 bytes to an i16, in both 128-bit halves.
    let widen = _mm256_setr_epi8(
        0, -1, 1, -1, 2, -1, 3, -1, 0, -1, 1, -1, 2, -1, 3, -1, 0, -1, 1, -1, 2, -1, 3, -1, 0, -1, 1, -1, 2, -1, 3, -1,
    );
    let mut acc = [[_mm256_setzero_si256(); 4]; DENSE_STEP];
    // SAFETY: the taps of every pixel and the block's filter vectors are
    // inside the plane and the filter (caller).
    unsafe {
        for ky in 0..s.kh {
            for kx in 0..s.kw {
                let tap = g.tap_offset(ky, kx);
                let weights = filter.add((ky * s.kw + kx) * g.quads * FILTER_STEP);
                let pixels: [*const u8; DENSE_STEP] = std::array::from_fn(|r| img.add(offsets[r] + tap));
                for q in 0..g.quads {
                    let wq = weights.add(q * FILTER_STEP);
                    let wv: [__m256i; 4] =
                        std::array::from_fn(|v| _mm256_cvtepi8_epi16(_mm_loadu_si128(wq.add(16 * v).cast())));
                    for (acc, pixel) in acc.iter_mut().zip(&pixels) {
                        let word = pixel.add(q * QCONV_IN_QUAD).cast::<i32>().read_unaligned();
                        let x = _mm256_shuffle_epi8(_mm256_set1_epi32(word), widen);
                        for (acc, &w) in acc.iter_mut().zip(&wv) {
                            *acc = _mm256_add_epi32(*acc, _mm256_madd_epi16(w, x));
                        }
                    }
                }
            }
        }
        // Vector `v` holds channels `4 v..4 v + 4` as pairs of partial sums:
        // `vphaddd` folds two vectors' pairs (in 128-bit halves: channels
        // 0 1 4 5 | 2 3 6 7) and the permute restores the order.
        for (acc, sums) in acc.iter().zip(sums) {
            for half in 0..2 {
                let folded = _mm256_hadd_epi32(acc[2 * half], acc[2 * half + 1]);
                let ordered = _mm256_permute4x64_epi64::<0b11_01_10_00>(folded);
                _mm256_storeu_si256(sums.as_mut_ptr().add(8 * half).cast(), ordered);
            }
        }
    }
}

/// The sums of `VNNI_STEP` pixels at `offsets` into `sums` with
/// `vpdpbusd`, one-group or `depthwise`.
///
/// # Safety
/// AVX-VNNI available; as [`tile`]; `offsets` and `sums` hold `VNNI_STEP`
/// entries.
#[target_feature(enable = "avx2,avxvnni")]
unsafe fn vnni_step(
    g: &Geometry,
    img: *const u8,
    filter: *const i8,
    e: &Epilogue,
    depthwise: bool,
    offsets: &[usize],
    sums: &mut [[i32; 16]],
) {
    let s = &g.s;
    let mut acc = [[_mm256_setzero_si256(); 2]; VNNI_STEP];
    // SAFETY: as `dense_step` and `depthwise_step`.
    unsafe {
        for ky in 0..s.kh {
            for kx in 0..s.kw {
                let tap = g.tap_offset(ky, kx);
                let weights = filter.add((ky * s.kw + kx) * g.quads * FILTER_STEP);
                let pixels: [*const u8; VNNI_STEP] = std::array::from_fn(|r| img.add(offsets[r] + tap));
                for q in 0..g.quads {
                    let wq = weights.add(q * FILTER_STEP);
                    let w = [_mm256_loadu_si256(wq.cast()), _mm256_loadu_si256(wq.add(32).cast())];
                    for (acc, pixel) in acc.iter_mut().zip(&pixels) {
                        if depthwise {
                            let channels = pixel.add(e.first_channel);
                            for (h, acc) in acc.iter_mut().enumerate() {
                                let x = _mm256_cvtepu8_epi32(_mm_loadl_epi64(channels.add(8 * h).cast()));
                                *acc = _mm256_dpbusd_avx_epi32(*acc, x, w[h]);
                            }
                        } else {
                            let word = pixel.add(q * QCONV_IN_QUAD).cast::<i32>().read_unaligned();
                            let x = _mm256_set1_epi32(word);
                            acc[0] = _mm256_dpbusd_avx_epi32(acc[0], x, w[0]);
                            acc[1] = _mm256_dpbusd_avx_epi32(acc[1], x, w[1]);
                        }
                    }
                }
            }
        }
        for (acc, sums) in acc.iter().zip(sums) {
            for (h, &acc) in acc.iter().enumerate() {
                _mm256_storeu_si256(sums.as_mut_ptr().add(8 * h).cast(), acc);
            }
        }
    }
}

/// The sums of `DEPTHWISE_STEP` depthwise pixels at `offsets` into `sums`.
///
/// # Safety
/// As [`tile`]; `offsets` and `sums` hold `DEPTHWISE_STEP` entries.
#[target_feature(enable = "avx2")]
unsafe fn depthwise_step(
    g: &Geometry,
    img: *const u8,
    filter: *const i8,
    e: &Epilogue,
    offsets: &[usize],
    sums: &mut [[i32; 16]],
) {
    let s = &g.s;
    let mut acc = [[_mm256_setzero_si256(); 2]; DEPTHWISE_STEP];
    // SAFETY: as `dense_step`; a pixel's block of 16 channels is inside
    // the plane (depthwise planes round the channels up to whole blocks).
    unsafe {
        for ky in 0..s.kh {
            for kx in 0..s.kw {
                let tap = g.tap_offset(ky, kx);
                // One quad per lane, the weight in its first byte: each
                // 32-bit word sign-extended from its low byte.
                let weights = filter.add((ky * s.kw + kx) * FILTER_STEP);
                let w: [__m256i; 2] = std::array::from_fn(|h| {
                    let words = _mm256_loadu_si256(weights.add(32 * h).cast());
                    _mm256_srai_epi32::<24>(_mm256_slli_epi32::<24>(words))
                });
                for (acc, &offset) in acc.iter_mut().zip(offsets) {
                    let channels = img.add(offset + tap + e.first_channel);
                    for (h, acc) in acc.iter_mut().enumerate() {
                        let x = _mm256_cvtepu8_epi32(_mm_loadl_epi64(channels.add(8 * h).cast()));
                        *acc = _mm256_add_epi32(*acc, _mm256_madd_epi16(x, w[h]));
                    }
                }
            }
        }
        for (acc, sums) in acc.iter().zip(sums) {
            for (h, &acc) in acc.iter().enumerate() {
                _mm256_storeu_si256(sums.as_mut_ptr().add(8 * h).cast(), acc);
            }
        }
    }
}

/// Requantizes the tile's sums (`Requantize`'s steps on 8 lanes) and
/// stores its `count` pixels of the block's real channels: per pixel when
/// the output is channels last, else per channel through the 16x16 byte
/// transpose.
///
/// # Safety
/// As [`tile`].
#[target_feature(enable = "avx2")]
unsafe fn store(g: &Geometry, e: &Epilogue, sums: &Sums, first: usize, count: usize, out: *mut u8) {
    let s = &g.s;
    // SAFETY: the caller's extents.
    let (bias, scale) = unsafe { e.lane_params() };
    // SAFETY: local arrays of 16 lanes; the stores below stay inside the
    // tile's pixels and the block's real channels of the output (caller).
    unsafe {
        let bias: [__m256i; 2] = std::array::from_fn(|h| _mm256_loadu_si256(bias.as_ptr().add(8 * h).cast()));
        let scale: [__m256; 2] = std::array::from_fn(|h| _mm256_loadu_ps(scale.as_ptr().add(8 * h)));
        let (zero, lo, hi) = (_mm256_set1_ps(e.zero), _mm256_setzero_ps(), _mm256_set1_ps(255.0));
        let rows: [Bytes16; TILE] = std::array::from_fn(|r| {
            if r >= count {
                return _mm_setzero_si128();
            }
            let lanes: [__m256i; 2] = std::array::from_fn(|h| {
                let sum = _mm256_add_epi32(_mm256_loadu_si256(sums[r].as_ptr().add(8 * h).cast()), bias[h]);
                let scaled = _mm256_mul_ps(_mm256_cvtepi32_ps(sum), scale[h]);
                let rounded = _mm256_round_ps::<{ _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC }>(scaled);
                // `vmaxps` returns its second operand for a NaN: 0, as
                // `f32::max` does.
                let saturated = _mm256_min_ps(_mm256_max_ps(_mm256_add_ps(rounded, zero), lo), hi);
                _mm256_cvtps_epi32(saturated)
            });
            // Integers in 0..=255: the saturating packs are exact; the
            // permute undoes the packs' 128-bit interleave.
            let words = _mm256_permute4x64_epi64::<0b11_01_10_00>(_mm256_packs_epi32(lanes[0], lanes[1]));
            _mm_packus_epi16(_mm256_castsi256_si128(words), _mm256_extracti128_si256::<1>(words))
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
/// `dst` writable for `len` bytes.
#[inline(always)]
unsafe fn store_bytes(dst: *mut u8, bytes: Bytes16, len: usize) {
    // SAFETY: `dst` holds `len` bytes (caller); SSE2 is part of x86-64.
    unsafe {
        if len == 16 {
            _mm_storeu_si128(dst.cast(), bytes);
        } else {
            let mut buffer = [0u8; 16];
            _mm_storeu_si128(buffer.as_mut_ptr().cast(), bytes);
            std::ptr::copy_nonoverlapping(buffer.as_ptr(), dst, len);
        }
    }
}
