//! Test helpers shared by the blocked-layout kernel suites (direct,
//! depthwise, Winograd): conversions between NCHW and NCHW16c, and bits.

use rlx_core::blocked::{channel_blocks, CHANNEL_BLOCK as B};

/// NCHW `[n, c, hw]` as blocked `[n, ceil(c / 16), hw, 16]`, padded lanes
/// set to `fill`.
pub(crate) fn to_blocked(v: &[f32], n: usize, c: usize, hw: usize, fill: f32) -> Vec<f32> {
    let cb = channel_blocks(c);
    let mut out = vec![fill; n * cb * hw * B];
    for img in 0..n {
        for ch in 0..c {
            for p in 0..hw {
                out[((img * cb + ch / B) * hw + p) * B + ch % B] = v[(img * c + ch) * hw + p];
            }
        }
    }
    out
}

/// The real channels of a blocked tensor, as NCHW.
pub(crate) fn from_blocked(v: &[f32], n: usize, c: usize, hw: usize) -> Vec<f32> {
    let cb = channel_blocks(c);
    let mut out = vec![0.0; n * c * hw];
    for img in 0..n {
        for ch in 0..c {
            for p in 0..hw {
                out[(img * c + ch) * hw + p] = v[((img * cb + ch / B) * hw + p) * B + ch % B];
            }
        }
    }
    out
}

/// The bit patterns of `v`, for exact comparisons.
pub(crate) fn bits(v: &[f32]) -> Vec<u32> {
    v.iter().map(|x| x.to_bits()).collect()
}
