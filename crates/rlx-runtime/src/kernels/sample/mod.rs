//! Sampling at run-time coordinates: ONNX `GridSample` over 1 to 3
//! spatial axes.
//!
//! Each output point's coordinates go through the spec's steps per axis
//! ([`scalar`] holds the formulas): normalised to source positions in f32
//! as ONNX's reference computes them, rounded ties-to-even for `nearest`,
//! then when outside the padding bounds clamped (`border`) or reflected
//! (`reflection`). The taps around the position (1, 2 or 4 per axis) take
//! their weights in f64 and their samples through the padding rule once
//! more (`zeros`: a tap outside reads 0). The taps depend on the point
//! only, so they are computed once per point and reused for every
//! channel. Sums run axis by axis, innermost first, each from its first
//! term, in f64, and round once to f32.
//!
//! No read leaves the input whatever the grid holds: a tap index is
//! compared (or clamped) in f64 before it becomes an offset. A coordinate
//! that is not finite after the padding rule (NaN, or an infinity under
//! `zeros` or `reflection` padding, where ONNX's reference raises) makes
//! its point NaN in every channel.
//!
//! Output points split over threads when `par`; each point's value is
//! computed the same way on any thread, so the bits do not change.

pub mod scalar;

#[cfg(test)]
mod tests;

use rlx_core::{GridSampleMode, GridSamplePadding};

use super::movement::SharedPtr;
use crate::threads::par_for;
use scalar::{bounds, cubic_weights, denormalize, reflect};

/// The axes the entry pads every rank to.
const AXES: usize = 3;

/// Points per task when split over threads: a few tap tables' worth of
/// work, so claiming a chunk costs little against it.
const PAR_POINTS: usize = 64;

/// One tap along an axis: the offset of its sample in the plane (index
/// times the axis' stride), its weight, and whether it reads the input
/// (under `zeros` padding a tap outside reads 0).
#[derive(Clone, Copy, Debug, PartialEq)]
struct Tap {
    offset: usize,
    weight: f64,
    inside: bool,
}

/// The taps of one axis of one point: `taps[..count]`.
#[derive(Clone, Copy, Debug, PartialEq)]
struct AxisTaps {
    taps: [Tap; 4],
    count: usize,
}

impl AxisTaps {
    /// The one tap of an axis of length 1 added to reach [`AXES`]: the
    /// product of its weight 1 with a sum is that sum, bit for bit.
    const UNIT: AxisTaps = AxisTaps { taps: [Tap { offset: 0, weight: 1.0, inside: true }; 4], count: 1 };
}

/// The sample at integer position `i` of an axis of `len` under
/// `padding`: its index, or `None` when it reads zero.
fn sample_index(i: f64, len: usize, padding: GridSamplePadding, align_corners: bool) -> Option<usize> {
    let last = len as f64 - 1.0;
    match padding {
        GridSamplePadding::Zeros => (0.0..=last).contains(&i).then_some(i as usize),
        GridSamplePadding::Border => Some(i.clamp(0.0, last) as usize),
        GridSamplePadding::Reflection => {
            let (lo, hi) = bounds(len, align_corners);
            // An integer reflects onto an integer inside; the clamp only
            // guards magnitudes past f64's integers.
            Some(reflect(i, lo, hi).trunc().clamp(0.0, last) as usize)
        }
    }
}

/// The position normalised coordinate `g` samples on an axis of `len`,
/// after the spec's rounding (`nearest`) and padding rules.
fn coordinate(g: f32, len: usize, mode: GridSampleMode, padding: GridSamplePadding, align_corners: bool) -> f32 {
    let mut x = denormalize(g, len, align_corners);
    if mode == GridSampleMode::Nearest {
        x = x.round_ties_even();
    }
    let (lo, hi) = bounds(len, align_corners);
    if f64::from(x) >= lo && f64::from(x) <= hi {
        return x;
    }
    match padding {
        GridSamplePadding::Zeros => x,
        GridSamplePadding::Border => x.clamp(0.0, len as f32 - 1.0),
        GridSamplePadding::Reflection => reflect(f64::from(x), lo, hi) as f32,
    }
}

/// The taps of a finite position `x` on an axis of `len` samples `stride`
/// apart.
fn axis_taps(
    x: f32,
    len: usize,
    stride: usize,
    mode: GridSampleMode,
    padding: GridSamplePadding,
    align_corners: bool,
) -> AxisTaps {
    let floor = f64::from(x.floor());
    let t = f64::from(x) - floor;
    let (first, weights, count) = match mode {
        GridSampleMode::Nearest => (f64::from(x), [1.0, 0.0, 0.0, 0.0], 1),
        GridSampleMode::Linear => (floor, [1.0 - t, t, 0.0, 0.0], 2),
        GridSampleMode::Cubic => (floor - 1.0, cubic_weights(t), 4),
    };
    let mut out = AxisTaps::UNIT;
    out.count = count;
    for (k, tap) in out.taps[..count].iter_mut().enumerate() {
        let index = sample_index(first + k as f64, len, padding, align_corners);
        *tap = Tap { offset: index.unwrap_or(0) * stride, weight: weights[k], inside: index.is_some() };
    }
    out
}

/// `sum(tap.weight * value(tap))` over an axis' taps, from the first term
/// on; a tap outside reads 0.
#[inline(always)]
fn weighted(axis: &AxisTaps, mut value: impl FnMut(usize) -> f64) -> f64 {
    let term =
        |tap: &Tap, value: &mut dyn FnMut(usize) -> f64| tap.weight * if tap.inside { value(tap.offset) } else { 0.0 };
    let mut acc = term(&axis.taps[0], &mut value);
    for tap in &axis.taps[1..axis.count] {
        acc += term(tap, &mut value);
    }
    acc
}

/// The value of one plane at a point with taps `axes` (outermost first).
///
/// # Safety
/// `plane` readable at every offset the taps can sum to (each axis' taps
/// index its own axis of the plane).
#[inline(always)]
unsafe fn blend(plane: *const f32, axes: &[AxisTaps; AXES]) -> f32 {
    let v = weighted(&axes[0], |o0| {
        weighted(&axes[1], |o1| {
            // SAFETY: the caller's contract; each offset is an index below
            // its axis' length times that axis' stride.
            weighted(&axes[2], |o2| f64::from(unsafe { *plane.add(o0 + o1 + o2) }))
        })
    });
    v as f32
}

/// `GridSample`: `dst` `[n, c, out_dims...]` holds `src` `[n, c,
/// in_dims...]` read at the points of `grid` `[n, out_dims..., rank]`
/// (normalised coordinates, last axis first), by `mode` with `padding`
/// (rules in the module docs).
///
/// # Safety
/// `in_dims` and `out_dims` of one rank from 1 to 3, every `in_dims` entry
/// at least 1 unless the output is empty; `src` readable for `n * c *
/// product(in_dims)` f32, `grid` for `n * product(out_dims) * rank`, `dst`
/// writable for `n * c * product(out_dims)` and overlapping neither.
#[allow(clippy::too_many_arguments)]
pub unsafe fn grid_sample_f32(
    src: *const f32,
    grid: *const f32,
    dst: *mut f32,
    n: usize,
    c: usize,
    in_dims: &[usize],
    out_dims: &[usize],
    mode: GridSampleMode,
    padding: GridSamplePadding,
    align_corners: bool,
    par: bool,
) {
    let rank = in_dims.len();
    let points: usize = out_dims.iter().product();
    if n == 0 || c == 0 || points == 0 {
        return;
    }
    let plane: usize = in_dims.iter().product();
    // Leading axes of length 1 pad the rank to three.
    let lead = AXES - rank;
    let mut strides = [1usize; AXES];
    for a in (0..rank - 1).rev() {
        strides[lead + a] = strides[lead + a + 1] * in_dims[a + 1];
    }
    let (src, grid, dst) = (SharedPtr(src.cast_mut()), SharedPtr(grid.cast_mut()), SharedPtr(dst));
    let work = |first: usize, count: usize| {
        for point in first..first + count {
            let (b, p) = (point / points, point % points);
            let mut axes = [AxisTaps::UNIT; AXES];
            let mut finite = true;
            for (a, &len) in in_dims.iter().enumerate() {
                // SAFETY: `point * rank + rank - 1 - a` is inside `grid`
                // (`point < n * points`).
                let g = unsafe { *grid.get().add(point * rank + rank - 1 - a) };
                let x = coordinate(g, len, mode, padding, align_corners);
                finite &= x.is_finite();
                if finite {
                    axes[lead + a] = axis_taps(x, len, strides[lead + a], mode, padding, align_corners);
                }
            }
            for ch in 0..c {
                let plane_at = (b * c + ch) * plane;
                // SAFETY: plane `b * c + ch` is inside `src`, and every
                // tap offset inside the plane; output `(b * c + ch) *
                // points + p` is inside `dst` and written by this point's
                // task only.
                unsafe {
                    let v = if finite { blend(src.get().add(plane_at), &axes) } else { f32::NAN };
                    *dst.get().add((b * c + ch) * points + p) = v;
                }
            }
        }
    };
    if par {
        par_for(n * points, PAR_POINTS, &work);
    } else {
        work(0, n * points);
    }
}
