//! The layouts of `QLinearConv2D`, the 8-bit convolution with its
//! requantization fused: the prepacked filter the importer writes and the
//! padded channels-last image the kernel builds in its scratch.
//!
//! The kernel's inner step multiplies four input channels of one pixel
//! (one 32-bit word of the channels-last image, broadcast) by a vector of
//! sixteen output channels' weights for those four input channels (64
//! bytes), adding into sixteen i32 lanes: one AVX-512 VNNI `vpdpbusd`
//! (u8 times i8). The filter is stored in exactly that order, so the
//! kernel reads it front to back:
//!
//! `[ceil(c_out / 16)][kh * kw][ceil(c_in / 4)][16 output lanes][4 input channels]`
//!
//! i8, zero where the output lane or the input channel does not exist.
//! A depthwise convolution packs its one input channel per group the same
//! way: one vector per block and tap, each lane's weight in its first
//! byte. The layout does not depend on the CPU.

use crate::blocked::PaddedPlane;
use crate::shapes::Conv2dShape;

/// Output channels per filter block: one vector of i32 lanes.
pub const QCONV_OUT_BLOCK: usize = 16;
/// Input channels per multiply-add step: one 32-bit word of u8.
pub const QCONV_IN_QUAD: usize = 4;

/// Bytes of a filter packed by [`pack_qconv_filter`] (`None` on overflow).
pub fn qconv_filter_len(c_out: usize, c_in: usize, kh: usize, kw: usize) -> Option<usize> {
    c_out
        .div_ceil(QCONV_OUT_BLOCK)
        .checked_mul(kh)?
        .checked_mul(kw)?
        .checked_mul(c_in.div_ceil(QCONV_IN_QUAD))?
        .checked_mul(QCONV_OUT_BLOCK * QCONV_IN_QUAD)
}

/// Packs an OIHW i8 filter `[c_out, c_in, kh, kw]` (one group) into the
/// layout above.
///
/// # Panics
///
/// When `w.len() != c_out * c_in * kh * kw`.
pub fn pack_qconv_filter(w: &[i8], c_out: usize, c_in: usize, kh: usize, kw: usize) -> Vec<i8> {
    assert_eq!(
        w.len(),
        c_out * c_in * kh * kw,
        "pack_qconv_filter: {} weights for [{c_out}, {c_in}, {kh}, {kw}]",
        w.len()
    );
    let quads = c_in.div_ceil(QCONV_IN_QUAD);
    let taps = kh * kw;
    let mut out = vec![0; qconv_filter_len(c_out, c_in, kh, kw).expect("a filter that exists has a packed size")];
    for co in 0..c_out {
        for ci in 0..c_in {
            for tap in 0..taps {
                let block = co / QCONV_OUT_BLOCK;
                let at = (((block * taps + tap) * quads + ci / QCONV_IN_QUAD) * QCONV_OUT_BLOCK + co % QCONV_OUT_BLOCK)
                    * QCONV_IN_QUAD
                    + ci % QCONV_IN_QUAD;
                out[at] = w[(co * c_in + ci) * taps + tap];
            }
        }
    }
    out
}

/// Bytes of a `[k, n]` product weight packed by [`pack_qgemm_weight`].
pub fn qgemm_weight_len(k: usize, n: usize) -> Option<usize> {
    qconv_filter_len(n, k, 1, 1)
}

/// Packs an i8 product weight `b` (`[k, n]`, row-major) for
/// `IntGemmPacked`: the 1x1 filter of its transpose, so a block holds 16
/// columns and a quad 4 consecutive k (`[ceil(n / 16)][ceil(k / 4)][16][4]`).
///
/// # Panics
///
/// When `b.len() != k * n`.
pub fn pack_qgemm_weight(b: &[i8], k: usize, n: usize) -> Vec<i8> {
    assert_eq!(b.len(), k * n, "pack_qgemm_weight: {} weights for [{k}, {n}]", b.len());
    let transposed: Vec<i8> = (0..n).flat_map(|j| (0..k).map(move |p| b[p * n + j])).collect();
    pack_qconv_filter(&transposed, n, k, 1, 1)
}

/// `sum over k of b[k, j]` per column of an i8 `[k, n]` weight: the
/// `w_sums` of `IntGemmPacked`.
pub fn qgemm_column_sums(b: &[i8], k: usize, n: usize) -> Vec<i32> {
    (0..n).map(|j| (0..k).map(|p| i32::from(b[p * n + j])).sum()).collect()
}

/// Channels per pixel of the channels-last image (the extra channels
/// hold 0): `c_in` rounded up to whole quads for one group, to whole
/// blocks of 16 for a depthwise convolution, whose kernel reads one
/// block's 16 channels of a pixel at once.
pub fn qconv_image_channels(c_in: usize, groups: usize) -> usize {
    image_channels_checked(c_in, groups).expect("validated shapes have a plane")
}

fn image_channels_checked(c_in: usize, groups: usize) -> Option<usize> {
    let unit = if groups == 1 { QCONV_IN_QUAD } else { QCONV_OUT_BLOCK };
    c_in.div_ceil(unit).checked_mul(unit)
}

/// Scratch bytes of a `QLinearConv2D`: one image's padded plane
/// ([`PaddedPlane`]) channels last, `x_pad` outside the input. `None` on
/// overflow.
pub fn qconv_scratch_bytes_checked(s: &Conv2dShape) -> Option<usize> {
    let plane = PaddedPlane::checked(s)?;
    plane.rows.checked_mul(plane.cols)?.checked_mul(image_channels_checked(s.c_in, s.groups)?)
}

/// [`qconv_scratch_bytes_checked`] of a shape the validator accepted.
pub fn qconv_scratch_bytes(s: &Conv2dShape) -> usize {
    qconv_scratch_bytes_checked(s).expect("validated shapes have a scratch size")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_product_weight_packs_as_the_filter_of_its_transpose() {
        // k = 6 (two quads, the second half empty), n = 18 (two blocks).
        let (k, n) = (6, 18);
        let b: Vec<i8> = (0..k * n).map(|i| (i as i32 * 37 % 255 - 127) as i8).collect();
        let packed = pack_qgemm_weight(&b, k, n);
        assert_eq!(Some(packed.len()), qgemm_weight_len(k, n));
        for p in 0..k {
            for j in 0..n {
                assert_eq!(packed[((j / 16 * 2 + p / 4) * 16 + j % 16) * 4 + p % 4], b[p * n + j], "k {p}, column {j}");
            }
        }
        let sums = qgemm_column_sums(&b, k, n);
        assert_eq!(sums[17], (0..k).map(|p| i32::from(b[p * n + 17])).sum::<i32>());
    }

    #[test]
    fn packing_puts_each_weight_where_the_kernel_reads_it() {
        // 17 output channels (two blocks), 5 input channels (two quads), 2x1 taps.
        let (c_out, c_in, kh, kw) = (17, 5, 2, 1);
        let w: Vec<i8> = (0..c_out * c_in * kh * kw).map(|i| (i % 251) as i8).collect();
        let packed = pack_qconv_filter(&w, c_out, c_in, kh, kw);
        assert_eq!(packed.len(), 2 * 2 * 2 * 64);
        // Output channel 16 (block 1, lane 0), input channel 4 (quad 1, slot 0), tap 1.
        let at = (((2 + 1) * 2 + 1) * 16) * 4;
        assert_eq!(packed[at], w[(16 * c_in + 4) * 2 + 1]);
        // Lane 1 of block 1 is past c_out: zero, as is slot 1 of quad 1.
        assert_eq!(packed[at + 4], 0);
        assert_eq!(packed[at + 1], 0);
        let nonzero = packed.iter().filter(|&&v| v != 0).count();
        assert_eq!(nonzero, w.iter().filter(|&&v| v != 0).count());
    }
}
