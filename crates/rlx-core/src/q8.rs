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
//! layout without changing a value. The quantizer that fills it is the
//! importer's (`rlx_onnx::quantize`).

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
    fn packing_round_trips_through_dequantize() {
        for (k, n) in [(32, 1), (64, 17), (96, 33), (0, 5)] {
            let block = |j: usize, b: usize| -> (f32, [i8; BLOCK]) {
                let d = (j + 1) as f32 / 64.0 * if b.is_multiple_of(2) { 1.0 } else { -0.5 };
                (d, std::array::from_fn(|i| ((i * 37 + j * 11 + b * 5) % 255) as i8))
            };
            let packed = pack_q8_blocks(k, n, block);
            assert_eq!(Some(packed.len()), q8_len(k, n));
            let back = dequantize_q8(&packed, k, n);
            for p in 0..k {
                for j in 0..n {
                    let (d, q) = block(j, p / BLOCK);
                    assert_eq!(back[p * n + j], d * q[p % BLOCK] as f32, "k {k} n {n} at {p},{j}");
                }
            }
        }
        assert_eq!(q8_len(33, 4), None);
    }
}
