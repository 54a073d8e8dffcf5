//! The reference pooling of one plane.

use std::ops::Range;

use super::{Pool2dShape, PoolKind};
use crate::kernels::conv::valid_outputs;
use crate::kernels::reduce::scalar::max_nan;

/// Kernel offsets `k < kernel` whose input index `o*stride + k - pad`
/// lies in `[0, in_len)`.
fn real_taps(o: usize, stride: usize, kernel: usize, pad: usize, in_len: usize) -> Range<usize> {
    let start = (o * stride) as isize - pad as isize;
    let lo = (-start).clamp(0, kernel as isize) as usize;
    let hi = (in_len as isize - start).clamp(0, kernel as isize) as usize;
    lo..hi.max(lo)
}

/// Window positions inside the padded input `[0, in_len + 2*pad)`.
fn padded_taps(o: usize, stride: usize, kernel: usize, pad: usize, in_len: usize) -> usize {
    (in_len + 2 * pad).saturating_sub(o * stride).min(kernel)
}

/// Pools one plane into `dst`, one output row at a time: the row is the
/// accumulator; each real window row and column offset `(ki, kj)` updates
/// the contiguous run of outputs it touches.
///
/// # Safety
///
/// `src` valid for reads of `h * w` f32, `dst` for writes of `h_out *
/// w_out` f32, not overlapping; `sw >= 1`.
#[inline(always)]
pub(crate) unsafe fn pool_plane(
    src: *const f32,
    dst: *mut f32,
    s: &Pool2dShape,
    kind: PoolKind,
    count_include_pad: bool,
) {
    // SAFETY: the caller's output plane; no other reference to it.
    let dst = unsafe { std::slice::from_raw_parts_mut(dst, s.h_out * s.w_out) };
    for (ho, acc) in dst.chunks_exact_mut(s.w_out).enumerate() {
        acc.fill(match kind {
            PoolKind::Max => f32::NEG_INFINITY,
            PoolKind::Mean => 0.0,
        });
        let rows = real_taps(ho, s.sh, s.kh, s.ph, s.h);
        for ki in rows.clone() {
            let hi = ho * s.sh + ki - s.ph;
            let in_row = src.wrapping_add(hi * s.w);
            for kj in 0..s.kw {
                let off = kj as isize - s.pw as isize;
                let cols = valid_outputs(s.w_out, s.sw, off, s.w);
                // Input index of output column 0; only `cols` are read.
                let base = in_row.wrapping_offset(off);
                let out = &mut acc[cols.clone()];
                if s.sw == 1 {
                    // SAFETY: columns `cols` map inside input row `hi`.
                    let xs = unsafe { std::slice::from_raw_parts(base.wrapping_add(cols.start), cols.len()) };
                    match kind {
                        PoolKind::Max => out.iter_mut().zip(xs).for_each(|(a, &x)| *a = max_nan(*a, x)),
                        PoolKind::Mean => out.iter_mut().zip(xs).for_each(|(a, &x)| *a += x),
                    }
                } else {
                    for (a, wo) in out.iter_mut().zip(cols.clone()) {
                        // SAFETY: as above, strided.
                        let x = unsafe { *base.wrapping_add(wo * s.sw) };
                        match kind {
                            PoolKind::Max => *a = max_nan(*a, x),
                            PoolKind::Mean => *a += x,
                        }
                    }
                }
            }
        }
        if kind == PoolKind::Mean {
            let rows_counted = if count_include_pad { padded_taps(ho, s.sh, s.kh, s.ph, s.h) } else { rows.len() };
            for (wo, a) in acc.iter_mut().enumerate() {
                let cols_counted = if count_include_pad {
                    padded_taps(wo, s.sw, s.kw, s.pw, s.w)
                } else {
                    real_taps(wo, s.sw, s.kw, s.pw, s.w).len()
                };
                let count = rows_counted * cols_counted;
                *a = if count > 0 { *a / count as f32 } else { 0.0 };
            }
        }
    }
}

/// The scalar plane kernel (the body above, baseline features).
///
/// # Safety
///
/// As [`pool_plane`].
pub(crate) unsafe fn scalar_pool_plane_f32(
    src: *const f32,
    dst: *mut f32,
    s: &Pool2dShape,
    kind: PoolKind,
    count_include_pad: bool,
) {
    // SAFETY: forwarded contract.
    unsafe { pool_plane(src, dst, s, kind, count_include_pad) }
}
