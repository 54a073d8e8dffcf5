//! The blocked channel layout (NCHW16c) of convolution chains and its
//! prepacked filters.
//!
//! An NCHW tensor `[n, c, h, w]` is stored blocked as `[n, cb, h, w, 16]`
//! with `cb = ceil(c / 16)`: channel `ch` of pixel `(y, x)` sits at
//! `((img * cb + ch / 16) * h + y) * w + x) * 16 + ch % 16`. One pixel's 16
//! channels are one AVX-512 vector (two AVX2, four NEON ones), so a
//! convolution's inner loop multiplies a broadcast input value by a vector
//! of 16 output channels' weights, a depthwise convolution or a pooling
//! multiplies or compares whole vectors, and no row is ever too short for
//! the vector width (NCHW rows of a 7x7 plane are).
//!
//! **Padded lanes.** When `c % 16 != 0`, the last block's lanes past `c`
//! hold unspecified values. No kernel lets them reach a real lane:
//! convolutions reduce over the real input channels only, and every other
//! blocked kernel works lane by lane (`Reorder` into the layout writes
//! zeros there).
//!
//! The importer chooses the layout (`docs/onnx.md`), and `Reorder` thunks
//! convert at the edges of a blocked region. Filters are packed once, by
//! the importer, into the order the kernels read them (below); the layout
//! does not depend on the CPU.

use crate::shapes::Conv2dShape;

/// Channels per block: one AVX-512 vector, the GEMM's panel width.
pub const CHANNEL_BLOCK: usize = 16;

/// Blocks holding `c` channels.
pub const fn channel_blocks(c: usize) -> usize {
    c.div_ceil(CHANNEL_BLOCK)
}

/// Elements of a blocked `[n, c, h, w]` tensor (`hw = h * w`), padded lanes
/// included (`None` on overflow).
pub fn blocked_len(n: usize, c: usize, hw: usize) -> Option<usize> {
    n.checked_mul(channel_blocks(c))?.checked_mul(hw)?.checked_mul(CHANNEL_BLOCK)
}

/// Whether the blocked direct kernel runs `s` as a grouped convolution:
/// more than one group, not depthwise, and every group's input and output
/// channels whole blocks. Each group is then a one-group convolution over
/// its own blocks, and its filter packed as [`pack_conv_filter`] of `[c_out,
/// c_in / groups, kh, kw]` is the groups' packed filters one after another
/// (an output block never spans two groups).
pub fn blocked_grouped(s: &Conv2dShape) -> bool {
    let g = s.groups;
    g > 1
        && !(g == s.c_in && g == s.c_out)
        && s.c_in.is_multiple_of(g)
        && s.c_out.is_multiple_of(g)
        && (s.c_in / g).is_multiple_of(CHANNEL_BLOCK)
        && (s.c_out / g).is_multiple_of(CHANNEL_BLOCK)
}

/// Elements of a filter packed by [`pack_conv_filter`] (`None` on overflow).
pub fn conv_filter_len(c_out: usize, c_in: usize, kh: usize, kw: usize) -> Option<usize> {
    channel_blocks(c_out).checked_mul(c_in)?.checked_mul(kh)?.checked_mul(kw)?.checked_mul(CHANNEL_BLOCK)
}

/// Bytes of the stack buffer a `BlockedConv2DHalf` widens one pass's
/// filter slice into (output blocks of a tile x input channels of a pass
/// x taps x 16 lanes, in f32).
pub const HALF_FILTER_SLICE_BYTES: usize = 64 * 1024;

/// Whether a filter of `c_in` input channels and a `kh x kw` window can be
/// read in 16-bit floats by `BlockedConv2DHalf`: the smallest pass (one
/// output block, one input block or all of `c_in` when fewer) fits
/// [`HALF_FILTER_SLICE_BYTES`]. Windows up to 8x8 always do.
pub fn half_filter_fits(c_in: usize, kh: usize, kw: usize) -> bool {
    let slice = c_in.clamp(1, CHANNEL_BLOCK).checked_mul(kh).and_then(|v| v.checked_mul(kw));
    slice.and_then(|v| v.checked_mul(CHANNEL_BLOCK * 4)).is_some_and(|b| b <= HALF_FILTER_SLICE_BYTES)
}

/// Packs an OIHW filter `[c_out, c_in, kh, kw]` (one group) as
/// `[c_out / 16][c_in][kh][kw][16 output lanes]`, output blocks rounded up
/// and padded with zeros: for one output block, the weights of one input
/// channel at one tap are one vector, in the order the reduction walks
/// them (input channel, then tap: the order of the NCHW product paths, so
/// both layouts give the same bits).
///
/// # Panics
///
/// When `w.len() != c_out * c_in * kh * kw`.
pub fn pack_conv_filter(w: &[f32], c_out: usize, c_in: usize, kh: usize, kw: usize) -> Vec<f32> {
    assert_eq!(
        w.len(),
        c_out * c_in * kh * kw,
        "pack_conv_filter: {} weights for [{c_out}, {c_in}, {kh}, {kw}]",
        w.len()
    );
    let taps = c_in * kh * kw;
    let mut out = vec![0.0; conv_filter_len(c_out, c_in, kh, kw).expect("a filter that exists has a packed size")];
    for co in 0..c_out {
        for (t, &v) in w[co * taps..(co + 1) * taps].iter().enumerate() {
            out[((co / CHANNEL_BLOCK) * taps + t) * CHANNEL_BLOCK + co % CHANNEL_BLOCK] = v;
        }
    }
    out
}

/// Elements of a depthwise filter packed by [`pack_depthwise_filter`].
pub fn depthwise_filter_len(c: usize, kh: usize, kw: usize) -> Option<usize> {
    channel_blocks(c).checked_mul(kh)?.checked_mul(kw)?.checked_mul(CHANNEL_BLOCK)
}

/// Packs a depthwise filter `[c, 1, kh, kw]` as `[c / 16][kh][kw][16]`,
/// zero padded: one vector per block and tap.
///
/// # Panics
///
/// When `w.len() != c * kh * kw`.
pub fn pack_depthwise_filter(w: &[f32], c: usize, kh: usize, kw: usize) -> Vec<f32> {
    assert_eq!(w.len(), c * kh * kw, "pack_depthwise_filter: {} weights for [{c}, 1, {kh}, {kw}]", w.len());
    let mut out = vec![0.0; depthwise_filter_len(c, kh, kw).expect("a filter that exists has a packed size")];
    for ch in 0..c {
        for tap in 0..kh * kw {
            out[((ch / CHANNEL_BLOCK) * kh * kw + tap) * CHANNEL_BLOCK + ch % CHANNEL_BLOCK] = w[ch * kh * kw + tap];
        }
    }
    out
}

/// A per-channel vector (a bias) padded with zeros to whole blocks.
pub fn pad_channels(v: &[f32]) -> Vec<f32> {
    let mut out = v.to_vec();
    out.resize(channel_blocks(v.len()) * CHANNEL_BLOCK, 0.0);
    out
}

/// The zero-padded input plane a blocked convolution reads: every pixel a
/// window can touch, so the kernel has no bounds checks. Padded row `r`
/// holds input row `r - ph` (zeros outside `0..h`), likewise columns.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PaddedPlane {
    /// Rows: `(h_out - 1) * sh + (kh - 1) * dh + 1`.
    pub rows: usize,
    /// Columns: `(w_out - 1) * sw + (kw - 1) * dw + 1`.
    pub cols: usize,
}

impl PaddedPlane {
    /// The plane of `s` (an empty output reads nothing: 0 x 0); `None` on
    /// overflow.
    pub fn checked(s: &Conv2dShape) -> Option<PaddedPlane> {
        if s.h_out == 0 || s.w_out == 0 || s.kh == 0 || s.kw == 0 {
            return Some(PaddedPlane { rows: 0, cols: 0 });
        }
        let extent = |out: usize, stride: usize, kernel: usize, dilation: usize| {
            (out - 1).checked_mul(stride)?.checked_add((kernel - 1).checked_mul(dilation)?)?.checked_add(1)
        };
        Some(PaddedPlane { rows: extent(s.h_out, s.sh, s.kh, s.dh)?, cols: extent(s.w_out, s.sw, s.kw, s.dw)? })
    }

    /// [`PaddedPlane::checked`] of a shape the validator accepted.
    pub fn of(s: &Conv2dShape) -> PaddedPlane {
        Self::checked(s).expect("validated shapes have a padded plane")
    }

    /// Whether the input itself is that plane's top-left part: no padding,
    /// and every pixel read is inside it. The kernel then reads the input
    /// in place, at its own row pitch.
    pub fn reads_input_in_place(&self, s: &Conv2dShape) -> bool {
        s.ph == 0 && s.pw == 0 && self.rows <= s.h && self.cols <= s.w_in
    }
}

/// Scratch bytes of a blocked convolution (direct or depthwise): one
/// image's padded input (`c_in` blocks of the [`PaddedPlane`]), or nothing
/// when it reads the input in place. `None` on overflow.
pub fn conv_blocked_scratch_bytes_checked(s: &Conv2dShape) -> Option<usize> {
    let plane = PaddedPlane::checked(s)?;
    if plane.reads_input_in_place(s) {
        return Some(0);
    }
    channel_blocks(s.c_in)
        .checked_mul(plane.rows)?
        .checked_mul(plane.cols)?
        .checked_mul(CHANNEL_BLOCK * std::mem::size_of::<f32>())
}

/// [`conv_blocked_scratch_bytes_checked`] of a shape the validator accepted.
pub fn conv_blocked_scratch_bytes(s: &Conv2dShape) -> usize {
    conv_blocked_scratch_bytes_checked(s).expect("validated shapes have a scratch size")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn half_filters_fit_windows_up_to_eight_by_eight() {
        assert!(half_filter_fits(512, 3, 3));
        assert!(half_filter_fits(64, 8, 8));
        assert!(!half_filter_fits(64, 9, 8));
        // Fewer than 16 input channels make a smaller pass.
        assert!(half_filter_fits(3, 11, 11));
        assert!(!half_filter_fits(9, 11, 11));
        assert!(half_filter_fits(0, 1, 1));
        assert!(!half_filter_fits(16, usize::MAX, 2));
    }

    #[test]
    fn filter_packing_puts_each_weight_at_its_block_tap_and_lane() {
        let (c_out, c_in, kh, kw) = (18, 3, 2, 3);
        let w: Vec<f32> = (0..c_out * c_in * kh * kw).map(|i| i as f32 + 1.0).collect();
        let packed = pack_conv_filter(&w, c_out, c_in, kh, kw);
        assert_eq!(packed.len(), 2 * c_in * kh * kw * 16);
        // co 17 is output block 1 lane 1; ci 2, tap (1, 2).
        let at = ((c_in * kh * kw) + (2 * kh + 1) * kw + 2) * 16 + 1;
        assert_eq!(packed[at], w[((17 * c_in + 2) * kh + 1) * kw + 2]);
        let real = packed.iter().filter(|&&v| v != 0.0).count();
        assert_eq!(real, w.len(), "every weight once, padding zero");
    }

    #[test]
    fn depthwise_packing_and_bias_padding() {
        let w: Vec<f32> = (0..17 * 4).map(|i| i as f32 + 1.0).collect();
        let packed = pack_depthwise_filter(&w, 17, 2, 2);
        assert_eq!(packed.len(), 2 * 4 * 16);
        assert_eq!(packed[(4 + 3) * 16], w[16 * 4 + 3]);
        assert_eq!(pad_channels(&[1.0; 17]).len(), 32);
        assert_eq!(blocked_len(2, 17, 5), Some(2 * 2 * 5 * 16));
    }

    #[test]
    fn padded_plane_covers_every_window() {
        let s = Conv2dShape {
            n: 1,
            c_in: 16,
            h: 7,
            w_in: 7,
            c_out: 16,
            h_out: 4,
            w_out: 4,
            kh: 3,
            kw: 3,
            sh: 2,
            sw: 2,
            ph: 1,
            pw: 1,
            dh: 1,
            dw: 1,
            groups: 1,
        };
        let plane = PaddedPlane::of(&s);
        assert_eq!((plane.rows, plane.cols), (9, 9));
        assert!(!plane.reads_input_in_place(&s));
        assert_eq!(conv_blocked_scratch_bytes(&s), 9 * 9 * 16 * 4);
        let pointwise = Conv2dShape { kh: 1, kw: 1, sh: 1, sw: 1, ph: 0, pw: 0, h_out: 7, w_out: 7, ..s };
        assert_eq!(conv_blocked_scratch_bytes(&pointwise), 0);
    }
}
