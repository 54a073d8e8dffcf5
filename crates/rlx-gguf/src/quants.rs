//! ggml's block layouts (`ggml-common.h`) and a scalar reference
//! dequantizer per type, matching `ggml-quants.c`'s `dequantize_row_*`
//! and the `gguf` Python package's `gguf.quants.dequantize` bit for bit
//! (the same f32 operations in the same order; `tests/dequantize.rs`).
//!
//! Each block type is a plain struct decoded from its bytes, so a later
//! kernel can read the blocks as stored instead of the f32 values.

use half::f16;

use crate::types::{GgmlType, QK_K};

fn half_at(b: &[u8], at: usize) -> f16 {
    f16::from_le_bytes([b[at], b[at + 1]])
}

/// A block whose bytes decode into `LEN` values.
pub trait Block: Sized {
    const LEN: usize;
    const BYTES: usize;
    /// Decodes a block from exactly `BYTES` bytes (the caller slices them).
    fn read(bytes: &[u8]) -> Self;
    /// Writes the block's `LEN` values into `out[..LEN]`.
    fn dequantize(&self, out: &mut [f32]);
}

/// 32 values `d * (q - 8)`, 4-bit `q`: the low nibbles are values 0..16,
/// the high nibbles 16..32.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct BlockQ4_0 {
    pub d: f16,
    pub qs: [u8; 16],
}

impl Block for BlockQ4_0 {
    const LEN: usize = 32;
    const BYTES: usize = 18;
    fn read(b: &[u8]) -> Self {
        let mut qs = [0; 16];
        qs.copy_from_slice(&b[2..18]);
        BlockQ4_0 { d: half_at(b, 0), qs }
    }
    fn dequantize(&self, out: &mut [f32]) {
        let d = self.d.to_f32();
        for (j, &q) in self.qs.iter().enumerate() {
            out[j] = d * ((q & 0x0F) as i32 - 8) as f32;
            out[j + 16] = d * ((q >> 4) as i32 - 8) as f32;
        }
    }
}

/// 32 values `d * q + m`, 4-bit `q`, nibbles as in [`BlockQ4_0`].
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct BlockQ4_1 {
    pub d: f16,
    pub m: f16,
    pub qs: [u8; 16],
}

impl Block for BlockQ4_1 {
    const LEN: usize = 32;
    const BYTES: usize = 20;
    fn read(b: &[u8]) -> Self {
        let mut qs = [0; 16];
        qs.copy_from_slice(&b[4..20]);
        BlockQ4_1 { d: half_at(b, 0), m: half_at(b, 2), qs }
    }
    fn dequantize(&self, out: &mut [f32]) {
        let (d, m) = (self.d.to_f32(), self.m.to_f32());
        for (j, &q) in self.qs.iter().enumerate() {
            out[j] = d * (q & 0x0F) as f32 + m;
            out[j + 16] = d * (q >> 4) as f32 + m;
        }
    }
}

/// 32 values `d * q`, 8-bit signed `q`.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct BlockQ8_0 {
    pub d: f16,
    pub qs: [i8; 32],
}

impl Block for BlockQ8_0 {
    const LEN: usize = 32;
    const BYTES: usize = 34;
    fn read(b: &[u8]) -> Self {
        let mut qs = [0; 32];
        for (q, &byte) in qs.iter_mut().zip(&b[2..34]) {
            *q = byte as i8;
        }
        BlockQ8_0 { d: half_at(b, 0), qs }
    }
    fn dequantize(&self, out: &mut [f32]) {
        let d = self.d.to_f32();
        for (o, &q) in out.iter_mut().zip(&self.qs) {
            *o = d * q as f32;
        }
    }
}

/// 256 values in 8 sub-blocks of 32: `d * sc[s] * q - dmin * m[s]`, 4-bit
/// `q`, 6-bit scales and mins packed in 12 bytes. Each 32 bytes of `qs`
/// hold two sub-blocks: the low nibbles one, the high nibbles the next.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct BlockQ4K {
    pub d: f16,
    pub dmin: f16,
    pub scales: [u8; 12],
    pub qs: [u8; QK_K / 2],
}

impl BlockQ4K {
    /// Scale and min of sub-block `j` (ggml's `get_scale_min_k4`): the
    /// first four are the low 6 bits of bytes 0..4 and 4..8; the last
    /// four take their low 4 bits from bytes 8..12 and their top 2 bits
    /// from the top bits of bytes 0..8.
    pub fn scale_min(&self, j: usize) -> (u8, u8) {
        let s = &self.scales;
        if j < 4 {
            (s[j] & 63, s[j + 4] & 63)
        } else {
            ((s[j + 4] & 0x0F) | ((s[j - 4] >> 6) << 4), (s[j + 4] >> 4) | ((s[j] >> 6) << 4))
        }
    }
}

impl Block for BlockQ4K {
    const LEN: usize = QK_K;
    const BYTES: usize = 144;
    fn read(b: &[u8]) -> Self {
        let mut scales = [0; 12];
        scales.copy_from_slice(&b[4..16]);
        let mut qs = [0; QK_K / 2];
        qs.copy_from_slice(&b[16..144]);
        BlockQ4K { d: half_at(b, 0), dmin: half_at(b, 2), scales, qs }
    }
    fn dequantize(&self, out: &mut [f32]) {
        let (d, dmin) = (self.d.to_f32(), self.dmin.to_f32());
        for (chunk, qs) in self.qs.chunks_exact(32).enumerate() {
            for (half, shift) in [(0, 0), (1, 4)] {
                let sub = 2 * chunk + half;
                let (sc, m) = self.scale_min(sub);
                let (scale, min) = (d * sc as f32, dmin * m as f32);
                for (l, &q) in qs.iter().enumerate() {
                    out[sub * 32 + l] = scale * ((q >> shift) & 0x0F) as f32 - min;
                }
            }
        }
    }
}

/// 256 values in 16 sub-blocks of 16: `d * scales[s] * (q - 32)`, 6-bit
/// `q` (low 4 bits in `ql`, high 2 in `qh`). Each half of 128 values
/// reads 64 bytes of `ql` (low nibbles: values 0..64, high: 64..128) and
/// 32 of `qh` (bits 0-1, 2-3, 4-5, 6-7: values 0..32, 32..64, ...).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct BlockQ6K {
    pub ql: [u8; QK_K / 2],
    pub qh: [u8; QK_K / 4],
    pub scales: [i8; QK_K / 16],
    pub d: f16,
}

impl Block for BlockQ6K {
    const LEN: usize = QK_K;
    const BYTES: usize = 210;
    fn read(b: &[u8]) -> Self {
        let mut ql = [0; QK_K / 2];
        ql.copy_from_slice(&b[..128]);
        let mut qh = [0; QK_K / 4];
        qh.copy_from_slice(&b[128..192]);
        let mut scales = [0; QK_K / 16];
        for (s, &byte) in scales.iter_mut().zip(&b[192..208]) {
            *s = byte as i8;
        }
        BlockQ6K { ql, qh, scales, d: half_at(b, 208) }
    }
    fn dequantize(&self, out: &mut [f32]) {
        let d = self.d.to_f32();
        for half in 0..2 {
            let (ql, qh) = (&self.ql[half * 64..][..64], &self.qh[half * 32..][..32]);
            for e in 0..128 {
                let low = (ql[e % 64] >> (4 * (e / 64))) & 0x0F;
                let high = (qh[e % 32] >> (2 * (e / 32))) & 0x03;
                let q = (low | (high << 4)) as i32 - 32;
                let i = half * 128 + e;
                out[i] = d * self.scales[i / 16] as f32 * q as f32;
            }
        }
    }
}

fn blocks<B: Block>(bytes: &[u8], out: &mut [f32]) {
    for (b, o) in bytes.chunks_exact(B::BYTES).zip(out.chunks_exact_mut(B::LEN)) {
        B::read(b).dequantize(o);
    }
}

/// Dequantizes `bytes`, whole blocks of type `ty`, into `out` (one value
/// per element). The caller sizes both (`GgmlType::tensor_bytes`); a
/// length mismatch is a bug, not bad input.
pub fn dequantize(ty: GgmlType, bytes: &[u8], out: &mut [f32]) {
    assert_eq!(bytes.len() / ty.block_bytes() * ty.block_len(), out.len(), "{ty}: bytes and values disagree");
    assert_eq!(bytes.len() % ty.block_bytes(), 0, "{ty}: not whole blocks");
    match ty {
        GgmlType::F32 => {
            for (o, b) in out.iter_mut().zip(bytes.chunks_exact(4)) {
                *o = f32::from_le_bytes([b[0], b[1], b[2], b[3]]);
            }
        }
        GgmlType::F16 => {
            for (o, b) in out.iter_mut().zip(bytes.chunks_exact(2)) {
                *o = f16::from_le_bytes([b[0], b[1]]).to_f32();
            }
        }
        GgmlType::Bf16 => {
            for (o, b) in out.iter_mut().zip(bytes.chunks_exact(2)) {
                *o = half::bf16::from_le_bytes([b[0], b[1]]).to_f32();
            }
        }
        GgmlType::Q4_0 => blocks::<BlockQ4_0>(bytes, out),
        GgmlType::Q4_1 => blocks::<BlockQ4_1>(bytes, out),
        GgmlType::Q8_0 => blocks::<BlockQ8_0>(bytes, out),
        GgmlType::Q4K => blocks::<BlockQ4K>(bytes, out),
        GgmlType::Q6K => blocks::<BlockQ6K>(bytes, out),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn block_sizes_are_ggmls() {
        // ggml-common.h's static_asserts.
        assert_eq!(BlockQ4_0::BYTES, 2 + 16);
        assert_eq!(BlockQ4_1::BYTES, 2 * 2 + 16);
        assert_eq!(BlockQ8_0::BYTES, 2 + 32);
        assert_eq!(BlockQ4K::BYTES, 2 * 2 + 12 + QK_K / 2);
        assert_eq!(BlockQ6K::BYTES, 2 + QK_K / 16 + 3 * QK_K / 4);
    }

    #[test]
    fn a_q8_0_block_is_scale_times_quant() {
        let mut b = vec![0u8; 34];
        b[..2].copy_from_slice(&f16::from_f32(0.5).to_le_bytes());
        for (i, q) in b[2..].iter_mut().enumerate() {
            *q = (i as i8 - 16) as u8;
        }
        let mut out = [0.0; 32];
        dequantize(GgmlType::Q8_0, &b, &mut out);
        assert_eq!(out[0], -8.0);
        assert_eq!(out[31], 7.5);
    }
}
