//! Winograd F(4x4, 3x3) convolution in the blocked channel layout: its
//! transformed filter, its scratch and the rule that picks it.
//!
//! A 3x3, stride-1 convolution computes each 4x4 output tile from the
//! 6x6 input patch under it (Lavin & Gray, "Fast Algorithms for
//! Convolutional Neural Networks", 2016), with the points 0, 1, -1, 2, -2
//! and infinity:
//!
//! `Y = A^T [ sum over ci of (G g G^T) ⊙ (B^T d B) ] A`
//!
//! ```text
//!        [ 4  0 -5  0  1  0 ]        [  1/4     0     0 ]
//!        [ 0 -4 -4  1  1  0 ]        [ -1/6  -1/6  -1/6 ]       [ 1  1  1  1  1  0 ]
//! B^T =  [ 0  4 -4 -1  1  0 ]   G =  [ -1/6   1/6  -1/6 ]  A^T = [ 0  1 -1  2 -2  0 ]
//!        [ 0 -2 -1  2  1  0 ]        [ 1/24  1/12   1/6 ]       [ 0  1  1  4  4  0 ]
//!        [ 0  2 -1 -2  1  0 ]        [ 1/24 -1/12   1/6 ]       [ 0  1 -1  8 -8  1 ]
//!        [ 0  4  0 -5  0  1 ]        [    0     0     1 ]
//! ```
//!
//! `d` is a 6x6 input patch of one channel, `g` the 3x3 filter of one
//! (output, input) channel pair, and the 36 products (one per point
//! `xi = 6 * row + col` of the 6x6 transformed tile) are summed over input
//! channels: 36 matrix products of (tiles x c_in) by (c_in x c_out), 36
//! multiplies per 16 outputs instead of 144. The filter transform `U = G g
//! G^T` runs once, here, at import time; the input and output transforms
//! run in the kernel (`rlx_runtime::kernels::conv::conv2d_winograd_f32`,
//! `docs/kernels/conv-winograd.md`).

use crate::blocked::{channel_blocks, CHANNEL_BLOCK};
use crate::shapes::Conv2dShape;

/// Output pixels per tile side.
pub const WINOGRAD_TILE: usize = 4;

/// Input pixels per patch side: a tile plus the window's 2 extra.
pub const WINOGRAD_PATCH: usize = WINOGRAD_TILE + 2;

/// Points of the transformed tile: one product per point.
pub const WINOGRAD_POINTS: usize = WINOGRAD_PATCH * WINOGRAD_PATCH;

/// `24 G`, integers, so that `576 U = (24 G) g (24 G)^T` is exact in f64
/// for all but extreme exponent spreads, and `U` is rounded to f32 after a
/// single division.
const G24: [[f64; 3]; WINOGRAD_PATCH] =
    [[6.0, 0.0, 0.0], [-4.0, -4.0, -4.0], [-4.0, 4.0, -4.0], [1.0, 2.0, 4.0], [1.0, -2.0, 4.0], [0.0, 0.0, 24.0]];

/// Elements of a filter transformed by [`transform_winograd_filter`]:
/// `36 * ceil(c_out / 16) * c_in * 16` (`None` on overflow).
pub fn winograd_filter_len(c_out: usize, c_in: usize) -> Option<usize> {
    WINOGRAD_POINTS.checked_mul(channel_blocks(c_out))?.checked_mul(c_in)?.checked_mul(CHANNEL_BLOCK)
}

/// Transforms an OIHW filter `[c_out, c_in, 3, 3]` into `U = G g G^T` per
/// (output, input) channel pair, laid out `[36][c_out / 16][c_in][16]`
/// (point, output block, input channel, output lane), output blocks
/// rounded up and padded with zeros: for one point and output block, the
/// transformed weights of one input channel are one vector, in the order
/// the kernel's reduction walks them. Computed in f64 (as `(24 G) g (24
/// G)^T / 576`) and rounded once to f32.
///
/// # Panics
///
/// When `w.len() != c_out * c_in * 9`.
pub fn transform_winograd_filter(w: &[f32], c_out: usize, c_in: usize) -> Vec<f32> {
    assert_eq!(w.len(), c_out * c_in * 9, "transform_winograd_filter: {} weights for [{c_out}, {c_in}, 3, 3]", w.len());
    let blocks = channel_blocks(c_out);
    let mut out = vec![0.0; winograd_filter_len(c_out, c_in).expect("a filter that exists has a transformed size")];
    for co in 0..c_out {
        for ci in 0..c_in {
            let g = &w[(co * c_in + ci) * 9..][..9];
            // t = (24 G) g: 6 x 3.
            let mut t = [[0.0f64; 3]; WINOGRAD_PATCH];
            for (row, gr) in t.iter_mut().zip(&G24) {
                for (c, v) in row.iter_mut().enumerate() {
                    *v = (0..3).map(|k| gr[k] * g[k * 3 + c] as f64).sum();
                }
            }
            for (a, ta) in t.iter().enumerate() {
                for (b, gb) in G24.iter().enumerate() {
                    let u: f64 = (0..3).map(|k| ta[k] * gb[k]).sum();
                    let xi = a * WINOGRAD_PATCH + b;
                    let at = ((xi * blocks + co / CHANNEL_BLOCK) * c_in + ci) * CHANNEL_BLOCK + co % CHANNEL_BLOCK;
                    out[at] = (u / 576.0) as f32;
                }
            }
        }
    }
    out
}

/// Output tiles of one image: `(ceil(h_out / 4), ceil(w_out / 4))`.
pub fn winograd_tiles(s: &Conv2dShape) -> (usize, usize) {
    (s.h_out.div_ceil(WINOGRAD_TILE), s.w_out.div_ceil(WINOGRAD_TILE))
}

/// Into how many parts the kernel splits each group of tiles' output
/// blocks (each part one task with its own copy of the group's
/// transformed input): enough for about 4 tasks when an image has fewer
/// than 4 groups of 14 tiles (a 12x12 output is one group; alone, one
/// thread would run it), at most one part per 2 output blocks. A
/// function of the shape only, as the scratch it sizes.
pub fn winograd_block_splits(s: &Conv2dShape) -> usize {
    let (rows, cols) = winograd_tiles(s);
    // Saturating: the validator asks before it knows the sizes are sane
    // (an overflowing shape then fails the scratch size, not here).
    let groups = rows.saturating_mul(cols).div_ceil(SPLIT_GROUP_TILES).max(1);
    if groups >= SPLIT_TASKS {
        return 1;
    }
    SPLIT_TASKS.div_ceil(groups).min(channel_blocks(s.c_out).div_ceil(2)).max(1)
}

/// See [`winograd_block_splits`]: the widest kernel's tile group.
const SPLIT_GROUP_TILES: usize = 14;

/// See [`winograd_block_splits`].
const SPLIT_TASKS: usize = 4;

/// Scratch bytes of [`winograd_applies`] shapes: one image's transformed
/// input per block split ([`winograd_block_splits`]), `splits * 36 *
/// ceil(c_in / 16) * tiles * 16` f32 with `tiles = ceil(h_out / 4) *
/// ceil(w_out / 4)`. A function of the shape only: the same scratch
/// serves any thread count (each task writes its own part and keeps its
/// products on its own stack). `None` on overflow.
pub fn winograd_scratch_bytes_checked(s: &Conv2dShape) -> Option<usize> {
    let (rows, cols) = winograd_tiles(s);
    winograd_block_splits(s)
        .checked_mul(WINOGRAD_POINTS)?
        .checked_mul(channel_blocks(s.c_in))?
        .checked_mul(rows)?
        .checked_mul(cols)?
        .checked_mul(CHANNEL_BLOCK * std::mem::size_of::<f32>())
}

/// [`winograd_scratch_bytes_checked`] of a shape the validator accepted.
pub fn winograd_scratch_bytes(s: &Conv2dShape) -> usize {
    winograd_scratch_bytes_checked(s).expect("validated shapes have a scratch size")
}

/// Whether the Winograd kernel computes `s`: a 3x3 window, stride 1, no
/// dilation, one group, a non-empty output, leading padding at most 2 per
/// side and trailing padding (what `h_out` / `w_out` imply) at most 2,
/// i.e. `h_out <= h + ph` and `w_out <= w_in + pw`. Less trailing padding
/// (an output cropped short of the input) is fine; so is any size, partial
/// edge tiles included. Larger pads would only add windows of zeros:
/// the direct kernel serves them.
pub fn winograd_applies(s: &Conv2dShape) -> bool {
    s.kh == 3
        && s.kw == 3
        && s.sh == 1
        && s.sw == 1
        && s.dh == 1
        && s.dw == 1
        && s.groups == 1
        && s.h_out >= 1
        && s.w_out >= 1
        && s.ph <= 2
        && s.pw <= 2
        // Saturating: the validator asks this of any written shape.
        && s.h_out <= s.h.saturating_add(s.ph)
        && s.w_out <= s.w_in.saturating_add(s.pw)
        && winograd_filter_len(s.c_out, s.c_in).is_some()
        && winograd_scratch_bytes_checked(s).is_some()
}

/// Whether the importer should run `s` with Winograd rather than the
/// direct blocked kernel: it applies, the output has at least
/// [`PAYS_MIN_PIXELS`] pixels, at least 3/5 of the pixels its tiles
/// compute are real (partial edge tiles compute up to 15 that are
/// dropped), and both channel counts are at least [`PAYS_MIN_CHANNELS`].
///
/// Measured against the direct kernel (`docs/kernels/conv-winograd.md`),
/// at 1 and 2 threads, with filter and input in cache and from memory:
/// every such shape timed is faster in all four (ResNet's 56x56x64 and
/// 28x28x128 about 3.2 to 3.4 times warm, 2.5 to 2.7 cold; 12x12 to
/// 14x14 up to 512 channels 1.1 to 2.9 times). A 7x7 output (49 pixels,
/// 4 tiles) is faster only warm: its whole transformed filter, 4 times
/// the direct one, is read for 4 tiles, and from memory that loses (0.8
/// to 0.9 times). 3 input channels lose (the transforms work on whole
/// 16-lane blocks for 3 real ones); 8 -> 8 still wins. A function of the
/// shape only: the schedule does not know the thread count.
pub fn winograd_pays(s: &Conv2dShape) -> bool {
    let (rows, cols) = winograd_tiles(s);
    let pixels = s.h_out.saturating_mul(s.w_out);
    winograd_applies(s)
        && pixels >= PAYS_MIN_PIXELS
        && pixels.saturating_mul(5) >= (rows * cols * WINOGRAD_TILE * WINOGRAD_TILE).saturating_mul(3)
        && s.c_in >= PAYS_MIN_CHANNELS
        && s.c_out >= PAYS_MIN_CHANNELS
}

/// See [`winograd_pays`]: a 12x12 output.
pub const PAYS_MIN_PIXELS: usize = 144;

/// See [`winograd_pays`].
pub const PAYS_MIN_CHANNELS: usize = 8;

#[cfg(test)]
mod tests {
    use super::*;

    /// The matrices of the module docs, in f64.
    const BT: [[f64; 6]; 6] = [
        [4.0, 0.0, -5.0, 0.0, 1.0, 0.0],
        [0.0, -4.0, -4.0, 1.0, 1.0, 0.0],
        [0.0, 4.0, -4.0, -1.0, 1.0, 0.0],
        [0.0, -2.0, -1.0, 2.0, 1.0, 0.0],
        [0.0, 2.0, -1.0, -2.0, 1.0, 0.0],
        [0.0, 4.0, 0.0, -5.0, 0.0, 1.0],
    ];
    const AT: [[f64; 6]; 4] = [
        [1.0, 1.0, 1.0, 1.0, 1.0, 0.0],
        [0.0, 1.0, -1.0, 2.0, -2.0, 0.0],
        [0.0, 1.0, 1.0, 4.0, 4.0, 0.0],
        [0.0, 1.0, -1.0, 8.0, -8.0, 1.0],
    ];

    /// Deterministic values in [-1, 1) with varied exponents.
    fn values(n: usize, seed: u64) -> Vec<f32> {
        let mut state = seed.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
        (0..n)
            .map(|_| {
                state = state.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
                let unit = (state >> 40) as f32 / (1u64 << 24) as f32 * 2.0 - 1.0;
                unit * 2f32.powi((state >> 20) as i32 % 8 - 5)
            })
            .collect()
    }

    fn u_at(u: &[f32], c_out: usize, c_in: usize, xi: usize, co: usize, ci: usize) -> f32 {
        u[((xi * channel_blocks(c_out) + co / 16) * c_in + ci) * 16 + co % 16]
    }

    #[test]
    fn transformed_filter_reproduces_the_correlation() {
        // A^T [(G g G^T) ⊙ (B^T d B)] A is the 4x4 correlation of d and g:
        // the matrices and the transform agree (with f32-rounded U, so to
        // a few ulp of the terms).
        let (c_out, c_in) = (3, 2);
        let w = values(c_out * c_in * 9, 1);
        let u = transform_winograd_filter(&w, c_out, c_in);
        let d: Vec<f64> = values(36, 2).iter().map(|&v| v as f64).collect();
        let mut v = [[0.0f64; 6]; 6];
        for (a, row) in v.iter_mut().enumerate() {
            for (b, x) in row.iter_mut().enumerate() {
                *x = (0..6)
                    .flat_map(|r| (0..6).map(move |c| (r, c)))
                    .map(|(r, c)| BT[a][r] * d[r * 6 + c] * BT[b][c])
                    .sum();
            }
        }
        for co in 0..c_out {
            for ci in 0..c_in {
                for y in 0..4 {
                    for x in 0..4 {
                        let mut got = 0.0;
                        let mut scale = 0.0;
                        for a in 0..6 {
                            for b in 0..6 {
                                let m = u_at(&u, c_out, c_in, a * 6 + b, co, ci) as f64 * v[a][b];
                                got += AT[y][a] * m * AT[x][b];
                                scale += (AT[y][a] * m * AT[x][b]).abs();
                            }
                        }
                        let mut want = 0.0;
                        for ki in 0..3 {
                            for kj in 0..3 {
                                want += d[(y + ki) * 6 + x + kj] * w[(co * c_in + ci) * 9 + ki * 3 + kj] as f64;
                            }
                        }
                        // U rounded once: relative error u per term.
                        let tol = scale * f32::EPSILON as f64;
                        assert!((got - want).abs() <= tol, "co {co} ci {ci} ({y}, {x}): {got} vs {want}");
                    }
                }
            }
        }
    }

    #[test]
    fn filter_layout_and_padding() {
        let (c_out, c_in) = (18, 3);
        let w = values(c_out * c_in * 9, 3);
        let u = transform_winograd_filter(&w, c_out, c_in);
        assert_eq!(u.len(), 36 * 2 * c_in * 16);
        assert_eq!(Some(u.len()), winograd_filter_len(c_out, c_in));
        // The corner point (0, 0) is g[0][0] / 16; (5, 5) is g[2][2];
        // (0, 5) is g[0][2] / 4: exact.
        for co in 0..c_out {
            for ci in 0..c_in {
                let g = &w[(co * c_in + ci) * 9..][..9];
                assert_eq!(u_at(&u, c_out, c_in, 0, co, ci), g[0] / 16.0);
                assert_eq!(u_at(&u, c_out, c_in, 35, co, ci), g[8]);
                assert_eq!(u_at(&u, c_out, c_in, 5, co, ci), g[2] / 4.0);
            }
        }
        // Output lanes 18..32 of block 1 are zero at every point.
        for xi in 0..36 {
            for ci in 0..c_in {
                for co in 18..32 {
                    assert_eq!(u_at(&u, c_out, c_in, xi, co, ci), 0.0);
                }
            }
        }
    }

    #[test]
    fn filter_transform_is_rounded_once() {
        // Point (1, 1) is (sum of g) / 36: the f32 nearest the exact value.
        let w: Vec<f32> = values(9, 4);
        let u = transform_winograd_filter(&w, 1, 1);
        let exact: f64 = w.iter().map(|&v| v as f64).sum::<f64>() / 36.0;
        assert_eq!(u_at(&u, 1, 1, 7, 0, 0), exact as f32);
    }

    #[test]
    #[should_panic(expected = "transform_winograd_filter")]
    fn wrong_filter_length_panics() {
        transform_winograd_filter(&[0.0; 8], 1, 1);
    }

    fn same3(c: usize, hw: usize) -> Conv2dShape {
        Conv2dShape {
            n: 1,
            c_in: c,
            h: hw,
            w_in: hw,
            c_out: c,
            h_out: hw,
            w_out: hw,
            kh: 3,
            kw: 3,
            sh: 1,
            sw: 1,
            ph: 1,
            pw: 1,
            dh: 1,
            dw: 1,
            groups: 1,
        }
    }

    #[test]
    fn applies_and_scratch() {
        let s = same3(64, 56);
        assert!(winograd_applies(&s));
        assert_eq!(winograd_tiles(&s), (14, 14));
        assert_eq!(winograd_block_splits(&s), 1);
        assert_eq!(winograd_scratch_bytes(&s), 36 * 4 * 196 * 16 * 4);
        // Partial tiles: 7 -> 2; 2 output blocks: one split.
        assert_eq!(winograd_block_splits(&same3(17, 7)), 1);
        assert_eq!(winograd_scratch_bytes(&same3(17, 7)), 36 * 2 * 4 * 16 * 4);
        // 16 tiles, 2 groups: 2 splits; 4 tiles: 4 splits.
        assert_eq!(winograd_block_splits(&same3(256, 14)), 2);
        assert_eq!(winograd_scratch_bytes(&same3(256, 14)), 2 * 36 * 16 * 16 * 16 * 4);
        assert_eq!(winograd_block_splits(&same3(512, 7)), 4);
        assert_eq!(winograd_block_splits(&same3(64, 28)), 1);
        assert!(!winograd_applies(&Conv2dShape { sh: 2, h_out: 28, ..s }));
        assert!(!winograd_applies(&Conv2dShape { kh: 1, kw: 1, ph: 0, pw: 0, ..s }));
        assert!(!winograd_applies(&Conv2dShape { dh: 2, ..s }));
        assert!(!winograd_applies(&Conv2dShape { groups: 2, ..s }));
        assert!(!winograd_applies(&Conv2dShape { h_out: 0, ..s }));
        assert!(!winograd_applies(&Conv2dShape { ph: 3, ..s }));
        // Trailing padding 2 applies, 3 does not; cropping does.
        assert!(winograd_applies(&Conv2dShape { ph: 0, h_out: 56, ..s }));
        assert!(winograd_applies(&Conv2dShape { ph: 2, h_out: 58, ..s }));
        assert!(!winograd_applies(&Conv2dShape { ph: 2, h_out: 59, ..s }));
        assert!(winograd_applies(&Conv2dShape { h_out: 5, ..s }));
        assert!(winograd_scratch_bytes_checked(&Conv2dShape { c_in: usize::MAX, ..s }).is_none());
    }

    #[test]
    fn pays_on_resnet_stages_with_enough_tiles() {
        assert!(winograd_pays(&same3(64, 56)));
        assert!(winograd_pays(&same3(128, 28)));
        assert!(winograd_pays(&same3(256, 14)));
        assert!(winograd_pays(&same3(512, 14)));
        assert!(winograd_pays(&same3(64, 12)));
        assert!(winograd_pays(&same3(16, 13)));
        assert!(winograd_pays(&same3(8, 56)));
        assert!(!winograd_pays(&same3(512, 7)));
        assert!(!winograd_pays(&same3(64, 7)));
        assert!(!winograd_pays(&same3(64, 11)));
        assert!(!winograd_pays(&same3(4, 56)));
        assert!(!winograd_pays(&Conv2dShape { c_in: 3, ..same3(64, 56) }));
        assert!(!winograd_pays(&Conv2dShape { sh: 2, sw: 2, h_out: 28, w_out: 28, ..same3(64, 56) }));
        // One output row in a tile row: 1/4 of the computed pixels.
        let row = Conv2dShape { h: 1, h_out: 1, w_in: 400, w_out: 400, ..same3(64, 56) };
        assert!(winograd_applies(&row) && !winograd_pays(&row));
    }

    #[test]
    fn applies_takes_any_written_shape_without_overflow() {
        // Found by the validator's mutation test: a width of `usize::MAX`.
        let s = Conv2dShape::winograd(1, 2, (4, usize::MAX), 2, (4, 4), (1, 1));
        assert!(winograd_applies(&s));
        let s = Conv2dShape::winograd(1, 2, (usize::MAX, 4), 2, (4, 4), (2, 2));
        assert!(winograd_applies(&s));
    }
}
