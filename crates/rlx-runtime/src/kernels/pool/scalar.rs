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

/// Window columns a stack table holds; wider windows compute each range.
const MAX_TABLE_KW: usize = 32;

/// Pools one plane into `dst`, one output row at a time: the row is the
/// accumulator; each real window row and column offset `(ki, kj)` updates
/// the contiguous run of outputs it touches (strided inputs at `sw > 1`).
/// A plane with one output (a global pooling) is one pass over its window.
/// Both take the real elements of each window in `(ki, kj)` order.
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
    let init = match kind {
        PoolKind::Max => f32::NEG_INFINITY,
        PoolKind::Mean => 0.0,
    };
    if s.h_out == 1 && s.w_out == 1 {
        let rows = real_taps(0, s.sh, s.kh, s.ph, s.h);
        let cols = real_taps(0, s.sw, s.kw, s.pw, s.w);
        let mut acc = init;
        for ki in rows.clone() {
            let start = (ki - s.ph) * s.w + cols.start - s.pw;
            // SAFETY: the window's real elements of input row `ki - ph`.
            let xs = unsafe { std::slice::from_raw_parts(src.add(start), cols.len()) };
            acc = match kind {
                PoolKind::Max => xs.iter().fold(acc, |a, &x| max_nan(a, x)),
                PoolKind::Mean => xs.iter().fold(acc, |a, &x| a + x),
            };
        }
        dst[0] = acc;
        if kind == PoolKind::Mean {
            finish_mean_row(&mut dst[..1], 0, s, rows.len(), count_include_pad);
        }
        return;
    }
    // The outputs each window column touches depend only on `kj`.
    let mut table = [(0usize, 0usize); MAX_TABLE_KW];
    let tabled = s.kw <= MAX_TABLE_KW;
    if tabled {
        for (kj, r) in table[..s.kw].iter_mut().enumerate() {
            let v = valid_outputs(s.w_out, s.sw, kj as isize - s.pw as isize, s.w);
            *r = (v.start, v.end);
        }
    }
    let cols_of = |kj: usize| {
        if tabled {
            table[kj].0..table[kj].1
        } else {
            valid_outputs(s.w_out, s.sw, kj as isize - s.pw as isize, s.w)
        }
    };
    // A strided row is split into its `sw` phases (phase `p` holds columns
    // `p, p + sw, ...`) once per input row it is read from, so each window
    // column reads one phase contiguously and the update vectorises as at
    // `sw == 1` (a strided update was one scalar max per element).
    let mut phases = [0f32; PHASED_ROW];
    let phased = s.sw > 1 && s.w <= PHASED_ROW;
    let phase_len = s.w.div_ceil(s.sw);
    for (ho, acc) in dst.chunks_exact_mut(s.w_out).enumerate() {
        acc.fill(init);
        let rows = real_taps(ho, s.sh, s.kh, s.ph, s.h);
        for ki in rows.clone() {
            let hi = ho * s.sh + ki - s.ph;
            let in_row = src.wrapping_add(hi * s.w);
            if phased {
                // SAFETY: input row `hi` is inside the plane.
                let row = unsafe { std::slice::from_raw_parts(in_row, s.w) };
                split_phases(row, s.sw, phase_len, &mut phases);
            }
            for kj in 0..s.kw {
                let cols = cols_of(kj);
                if cols.is_empty() {
                    continue;
                }
                let out = &mut acc[cols.clone()];
                // Input column of output `wo`: `wo * sw + kj - pw`.
                let first = cols.start * s.sw + kj - s.pw;
                if s.sw == 1 {
                    // SAFETY: columns `cols` of input row `hi`, shifted by
                    // `kj - pw`, map inside the row.
                    let xs = unsafe { std::slice::from_raw_parts(in_row.add(first), cols.len()) };
                    update(kind, out, xs);
                } else if phased {
                    let at = (first % s.sw) * phase_len + first / s.sw;
                    update(kind, out, &phases[at..at + cols.len()]);
                } else {
                    for (a, wo) in out.iter_mut().zip(cols.clone()) {
                        // SAFETY: column `wo * sw + kj - pw` of row `hi`, inside.
                        let x = unsafe { *in_row.add(wo * s.sw + kj - s.pw) };
                        update(kind, std::slice::from_mut(a), &[x]);
                    }
                }
            }
        }
        if kind == PoolKind::Mean {
            finish_mean_row(acc, ho, s, rows.len(), count_include_pad);
        }
    }
}

/// The widest input row split into phases on the stack (8 KiB); a wider
/// strided row is read element by element.
const PHASED_ROW: usize = 2048;

/// Writes phase `p` of `row` (columns `p, p + sw, ...`) at `phase_len * p`
/// of `phases`; stride 2 as pairs, which LLVM vectorises.
#[inline(always)]
fn split_phases(row: &[f32], sw: usize, phase_len: usize, phases: &mut [f32]) {
    if sw == 2 {
        let (even, odd) = phases.split_at_mut(phase_len);
        let pairs = row.chunks_exact(2);
        if let [last] = pairs.remainder() {
            even[row.len() / 2] = *last;
        }
        for ((e, o), pair) in even.iter_mut().zip(odd.iter_mut()).zip(pairs) {
            (*e, *o) = (pair[0], pair[1]);
        }
        return;
    }
    for (p, phase) in phases.chunks_mut(phase_len).take(sw).enumerate() {
        for (slot, &x) in phase.iter_mut().zip(row[p.min(row.len())..].iter().step_by(sw)) {
            *slot = x;
        }
    }
}

/// Adds one window offset's inputs `xs` into the outputs `out` they touch.
#[inline(always)]
fn update(kind: PoolKind, out: &mut [f32], xs: &[f32]) {
    match kind {
        PoolKind::Max => out.iter_mut().zip(xs).for_each(|(a, &x)| *a = max_nan(*a, x)),
        PoolKind::Mean => out.iter_mut().zip(xs).for_each(|(a, &x)| *a += x),
    }
}

/// Divides a mean row's sums by their counts.
fn finish_mean_row(acc: &mut [f32], ho: usize, s: &Pool2dShape, real_rows: usize, count_include_pad: bool) {
    let rows_counted = if count_include_pad { padded_taps(ho, s.sh, s.kh, s.ph, s.h) } else { real_rows };
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
