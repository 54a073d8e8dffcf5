//! The 8-bit weight layout of `PackedGemmQ8`: ggml's Q8_0 blocks
//! (32 consecutive values of one column along `k`, one scale each, value
//! `d * q` with `q` an i8) rearranged into panels for streaming.
//!
//! Layout of a `k x n` matrix (`k` a multiple of [`BLOCK`]):
//! `ceil(n / PANEL)` panels one after another; a panel holds its
//! `k / BLOCK` blocks in order of `k`, and a block is [`PANEL`] scales
//! (f32, little-endian, one per column) followed by [`BLOCK`] rows of
//! [`PANEL`] `i8` (row `p` of the block is step `p` of `k` for the
//! panel's 16 columns). Columns past `n` have scale 0 and `q` 0. A
//! kernel reading a panel row by row sees one block's scales right
//! before its 512 bytes of values, and every panel is one contiguous
//! stream.
//!
//! The scales are f32 (ggml stores f16): 64 bytes per 512 of values, so
//! 1.125 bytes per weight where ggml has 1.0625, and no conversion in the
//! kernel. An f16 scale widens exactly, so a Q8_0 tensor maps to this
//! layout without changing a value.

use crate::pack::PANEL;

/// Values of `k` per block, one scale each (ggml's `QK8_0`).
pub const BLOCK: usize = 32;

/// Bytes of one block of one panel: the scales, then the values.
pub const BLOCK_BYTES: usize = PANEL * 4 + BLOCK * PANEL;

/// Bytes of the Q8 form of a `k x n` matrix (`None` on overflow, or when
/// `k` is not a multiple of [`BLOCK`]).
pub fn q8_len(k: usize, n: usize) -> Option<usize> {
    if !k.is_multiple_of(BLOCK) {
        return None;
    }
    n.div_ceil(PANEL).checked_mul(k / BLOCK)?.checked_mul(BLOCK_BYTES)
}

/// ggml's reference quantization of one block (`quantize_row_q8_0_ref`):
/// `d = max|x| / 127` rounded to f16, `q = round(x / d)` (half away from
/// zero) computed with the unrounded `d`. Returns the scale as stored
/// (the f16 value, widened) and the values.
pub fn quantize_block(x: &[f32; BLOCK]) -> (f32, [i8; BLOCK]) {
    let amax = x.iter().fold(0.0f32, |m, v| m.max(v.abs()));
    let d = amax / 127.0;
    let id = if d != 0.0 { 1.0 / d } else { 0.0 };
    let mut q = [0i8; BLOCK];
    for (q, &v) in q.iter_mut().zip(x) {
        // In range by construction: |v * id| <= 127 up to one rounding,
        // and `as` saturates.
        *q = (v * id).round() as i8;
    }
    (f16_round(d), q)
}

/// `x` rounded to the nearest f16 (ties to even) and widened back, as
/// ggml's `GGML_FP32_TO_FP16` then `GGML_FP16_TO_FP32` do. No dependency:
/// this crate has none.
pub fn f16_round(x: f32) -> f32 {
    f16_to_f32(f32_to_f16(x))
}

/// The f16 bits nearest `x` (ties to even; overflow to infinity).
pub fn f32_to_f16(x: f32) -> u16 {
    let bits = x.to_bits();
    let sign = ((bits >> 16) & 0x8000) as u16;
    let exp = ((bits >> 23) & 0xff) as i32;
    let man = bits & 0x7f_ffff;
    if exp == 0xff {
        // Infinity, or a quiet NaN.
        return sign | 0x7c00 | if man != 0 { 0x200 } else { 0 };
    }
    let e = exp - 127 + 15;
    if e >= 0x1f {
        return sign | 0x7c00;
    }
    if e <= 0 {
        // Subnormal f16 (or zero): shift the full significand into place.
        if e < -10 {
            return sign;
        }
        let full = man | 0x80_0000;
        let shift = (14 - e) as u32;
        let half = 1u32 << (shift - 1);
        let rest = full & ((1u32 << shift) - 1);
        let mut out = full >> shift;
        if rest > half || (rest == half && out & 1 == 1) {
            out += 1;
        }
        return sign | out as u16;
    }
    let mut out = ((e as u32) << 10) | (man >> 13);
    let rest = man & 0x1fff;
    if rest > 0x1000 || (rest == 0x1000 && out & 1 == 1) {
        // A carry into the exponent is the correct rounding (up to infinity).
        out += 1;
    }
    sign | out as u16
}

/// The f32 value of f16 bits (exact).
pub fn f16_to_f32(h: u16) -> f32 {
    let sign = ((h as u32) & 0x8000) << 16;
    let exp = ((h >> 10) & 0x1f) as u32;
    let man = (h & 0x3ff) as u32;
    let bits = match (exp, man) {
        (0, 0) => sign,
        (0, _) => {
            // Subnormal: value man * 2^-24, exact in f32.
            let v = man as f32 * f32::from_bits(0x3380_0000);
            return if sign != 0 { -v } else { v };
        }
        (0x1f, _) => sign | 0x7f80_0000 | (man << 13),
        _ => sign | ((exp + 127 - 15) << 23) | (man << 13),
    };
    f32::from_bits(bits)
}

/// Writes the Q8 form of a matrix given as its blocks: `block(j, b)` is
/// the scale and values of column `j`, steps `b * BLOCK ..` of `k`.
///
/// # Panics
///
/// When `k` is not a multiple of [`BLOCK`] or the size overflows (callers
/// check [`q8_len`] first).
pub fn pack_q8_blocks(k: usize, n: usize, block: impl Fn(usize, usize) -> (f32, [i8; BLOCK])) -> Vec<u8> {
    let len = q8_len(k, n).expect("pack_q8_blocks: k is a multiple of BLOCK and the size fits");
    let mut out = vec![0u8; len];
    let blocks = k / BLOCK;
    for (p, panel) in out.chunks_exact_mut(blocks.max(1) * BLOCK_BYTES).enumerate().take(n.div_ceil(PANEL)) {
        for (b, dst) in panel.chunks_exact_mut(BLOCK_BYTES).enumerate().take(blocks) {
            let (scales, values) = dst.split_at_mut(PANEL * 4);
            for c in 0..PANEL {
                let j = p * PANEL + c;
                if j >= n {
                    break;
                }
                let (d, q) = block(j, b);
                scales[c * 4..c * 4 + 4].copy_from_slice(&d.to_le_bytes());
                for (row, &v) in q.iter().enumerate() {
                    values[row * PANEL + c] = v as u8;
                }
            }
        }
    }
    out
}

/// Quantizes `b` (row-major `[k, n]`, or `[n, k]` when `transposed`) with
/// [`quantize_block`] into the Q8 form.
///
/// # Panics
///
/// As [`pack_q8_blocks`], and when `b.len() != k * n`.
pub fn quantize_q8(b: &[f32], k: usize, n: usize, transposed: bool) -> Vec<u8> {
    assert_eq!(b.len(), k * n, "quantize_q8: {} values for a {k} x {n} matrix", b.len());
    pack_q8_blocks(k, n, |j, blk| {
        let x: [f32; BLOCK] = std::array::from_fn(|i| {
            let p = blk * BLOCK + i;
            if transposed {
                b[j * k + p]
            } else {
                b[p * n + j]
            }
        });
        quantize_block(&x)
    })
}

/// The values the Q8 form stands for (`d * q` in f32, row-major `[k,
/// n]`), for tests and tools.
///
/// # Panics
///
/// When `packed` is shorter than [`q8_len`].
pub fn dequantize_q8(packed: &[u8], k: usize, n: usize) -> Vec<f32> {
    let blocks = k / BLOCK;
    let mut out = vec![0.0f32; k * n];
    for j in 0..n {
        let (p, c) = (j / PANEL, j % PANEL);
        for b in 0..blocks {
            let at = (p * blocks + b) * BLOCK_BYTES;
            let d = f32::from_le_bytes(packed[at + c * 4..at + c * 4 + 4].try_into().expect("4 bytes"));
            for row in 0..BLOCK {
                let q = packed[at + PANEL * 4 + row * PANEL + c] as i8;
                out[(b * BLOCK + row) * n + j] = d * q as f32;
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn f16_rounding_matches_the_format_on_edges() {
        // Exact values, ties to even, subnormals, overflow.
        assert_eq!(f32_to_f16(1.0), 0x3c00);
        assert_eq!(f32_to_f16(-2.0), 0xc000);
        assert_eq!(f32_to_f16(65504.0), 0x7bff);
        assert_eq!(f32_to_f16(65520.0), 0x7c00);
        assert_eq!(f32_to_f16(1.0 + f32::EPSILON * 4096.0), 0x3c00);
        assert_eq!(f32_to_f16(1.0 + 3.0 * f32::EPSILON * 4096.0), 0x3c02);
        assert_eq!(f32_to_f16(f32::from_bits(0x3380_0000)), 0x0001);
        assert_eq!(f32_to_f16(f32::from_bits(0x3300_0000)), 0x0000);
        assert_eq!(f32_to_f16(0.0), 0);
        for h in (0..0x7c00u16).step_by(7) {
            assert_eq!(f32_to_f16(f16_to_f32(h)), h, "{h:#x}");
        }
    }

    #[test]
    fn quantization_keeps_the_extreme_value_at_127() {
        let x: [f32; BLOCK] = std::array::from_fn(|i| 1.0 - i as f32 * 0.05);
        let (d, q) = quantize_block(&x);
        assert_eq!(q[0], 127);
        assert_eq!(d, f16_round(1.0 / 127.0));
        let (d, q) = quantize_block(&[0.0; BLOCK]);
        assert_eq!((d, q), (0.0, [0; BLOCK]));
    }

    #[test]
    fn packing_round_trips_through_dequantize() {
        for (k, n) in [(32, 1), (64, 17), (96, 33), (0, 5)] {
            let b: Vec<f32> = (0..k * n).map(|i| ((i * 37 % 101) as f32 - 50.0) / 8.0).collect();
            let packed = quantize_q8(&b, k, n, false);
            assert_eq!(Some(packed.len()), q8_len(k, n));
            let back = dequantize_q8(&packed, k, n);
            for (x, y) in b.iter().zip(&back) {
                // Half a step of a block scale of at most 50/8/127, plus
                // the f16 rounding of the scale (relative 2^-11) times
                // |q| <= 127.
                let d = 6.25 / 127.0;
                assert!((x - y).abs() <= d * (0.5 + 127.0 / 2048.0), "{x} {y}");
            }
            // The transposed storage of the same matrix packs the same.
            let bt: Vec<f32> = (0..n * k).map(|i| b[(i % k) * n + i / k]).collect();
            assert_eq!(quantize_q8(&bt, k, n, true), packed);
        }
        assert_eq!(q8_len(33, 4), None);
    }
}
