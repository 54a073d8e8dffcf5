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
//! Points go in blocks (their tap tables first, then every channel's run
//! of outputs), blocks split over threads when `par`; each point's value
//! is computed the same way in any block on any thread, so the bits do
//! not change. One instance per tap count and rank keeps the blend's loops
//! fixed.

pub mod scalar;

#[cfg(test)]
mod tests;

use rlx_core::{GridSampleMode, GridSamplePadding};

use super::movement::SharedPtr;
use crate::threads::par_for;
use scalar::{bounds, cubic_weights, denormalize, reflect};

/// Points whose tap tables are computed together: each channel then
/// reads one plane and writes one run of outputs for the whole block,
/// rather than jumping a plane per point (a block's tables are at most
/// 32 x 3 x 4 taps, 9 KiB of stack).
const BLOCK: usize = 32;

/// One tap along an axis: the offset of its sample in the plane (index
/// times the axis' stride), its weight, and whether it reads the input
/// (under `zeros` padding a tap outside reads 0).
#[derive(Clone, Copy, Debug, PartialEq)]
struct Tap {
    offset: usize,
    weight: f64,
    inside: bool,
}

impl Tap {
    /// What a table holds before its point's taps are computed.
    const NONE: Tap = Tap { offset: 0, weight: 0.0, inside: false };
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

/// The `K` taps of a finite position `x` on an axis of `len` samples
/// `stride` apart: 1 for `nearest` (`x` itself, integral), 2 for `linear`,
/// 4 for `cubic`.
fn axis_taps<const K: usize>(
    x: f32,
    len: usize,
    stride: usize,
    padding: GridSamplePadding,
    align_corners: bool,
) -> [Tap; K] {
    let floor = f64::from(x.floor());
    let t = f64::from(x) - floor;
    let (first, weights) = match K {
        1 => (f64::from(x), [1.0, 0.0, 0.0, 0.0]),
        2 => (floor, [1.0 - t, t, 0.0, 0.0]),
        _ => (floor - 1.0, cubic_weights(t)),
    };
    std::array::from_fn(|k| {
        let index = sample_index(first + k as f64, len, padding, align_corners);
        Tap { offset: index.unwrap_or(0) * stride, weight: weights[k], inside: index.is_some() }
    })
}

/// `sum(tap.weight * value(tap))` over an axis' taps, from the first term
/// on; a tap outside reads 0.
#[inline(always)]
fn weighted<const K: usize>(taps: &[Tap; K], mut value: impl FnMut(usize) -> f64) -> f64 {
    let (first, rest) = (&taps[0], &taps[1..]);
    let mut acc = first.weight * if first.inside { value(first.offset) } else { 0.0 };
    for tap in rest {
        acc += tap.weight * if tap.inside { value(tap.offset) } else { 0.0 };
    }
    acc
}

/// The value of one plane at a point with taps `axes` (outermost first):
/// sums along the innermost axis, then outward.
///
/// # Safety
/// `plane` readable at every offset the taps can sum to (each axis' taps
/// index its own axis of the plane).
#[inline(always)]
unsafe fn blend<const K: usize, const R: usize>(plane: *const f32, axes: &[[Tap; K]; R]) -> f32 {
    // SAFETY: the caller's contract; each offset is an index below its
    // axis' length times that axis' stride.
    let at = |o: usize| f64::from(unsafe { *plane.add(o) });
    let v = match R {
        1 => weighted(&axes[0], at),
        2 => weighted(&axes[0], |o0| weighted(&axes[1], |o1| at(o0 + o1))),
        _ => weighted(&axes[0], |o0| weighted(&axes[1], |o1| weighted(&axes[2], |o2| at(o0 + o1 + o2)))),
    };
    v as f32
}

/// The operands and fields of one call.
struct Job<'a> {
    src: SharedPtr<f32>,
    grid: SharedPtr<f32>,
    dst: SharedPtr<f32>,
    n: usize,
    c: usize,
    in_dims: &'a [usize],
    points: usize,
    mode: GridSampleMode,
    padding: GridSamplePadding,
    align_corners: bool,
    par: bool,
}

/// The call with `K` taps per axis over `R` axes.
///
/// # Safety
/// As [`grid_sample_f32`], with `R == in_dims.len()` and `K` the mode's.
unsafe fn sample<const K: usize, const R: usize>(job: &Job<'_>) {
    let Job { src, grid, dst, n, c, in_dims, points, mode, padding, align_corners, par } = *job;
    let plane: usize = in_dims.iter().product();
    let mut strides = [1usize; R];
    for a in (0..R - 1).rev() {
        strides[a] = strides[a + 1] * in_dims[a + 1];
    }
    let blocks = points.div_ceil(BLOCK);
    let work = |first: usize, count: usize| {
        for task in first..first + count {
            let (b, p0) = (task / blocks, task % blocks * BLOCK);
            let len = BLOCK.min(points - p0);
            let mut tables = [[[Tap::NONE; K]; R]; BLOCK];
            let mut finite = [true; BLOCK];
            for (i, (axes, finite)) in tables.iter_mut().zip(&mut finite).take(len).enumerate() {
                let point = b * points + p0 + i;
                for (a, axis) in axes.iter_mut().enumerate() {
                    // SAFETY: `point < n * points`, so its coordinate `R - 1
                    // - a` is inside `grid`.
                    let g = unsafe { *grid.get().add(point * R + R - 1 - a) };
                    let x = coordinate(g, in_dims[a], mode, padding, align_corners);
                    *finite &= x.is_finite();
                    if *finite {
                        *axis = axis_taps(x, in_dims[a], strides[a], padding, align_corners);
                    }
                }
            }
            for ch in 0..c {
                let plane_at = (b * c + ch) * plane;
                let out_at = (b * c + ch) * points + p0;
                for (i, (axes, &finite)) in tables.iter().zip(&finite).take(len).enumerate() {
                    // SAFETY: plane `b * c + ch` is inside `src` and every
                    // tap offset inside the plane; output `out_at + i` is
                    // inside `dst`, and this block's task is the only one
                    // writing points `p0..p0 + len` of batch `b`.
                    unsafe {
                        let v = if finite { blend(src.get().add(plane_at), axes) } else { f32::NAN };
                        *dst.get().add(out_at + i) = v;
                    }
                }
            }
        }
    };
    if par {
        par_for(n * blocks, 1, &work);
    } else {
        work(0, n * blocks);
    }
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
    let points: usize = out_dims.iter().product();
    if n == 0 || c == 0 || points == 0 {
        return;
    }
    let (src, grid, dst) = (SharedPtr(src.cast_mut()), SharedPtr(grid.cast_mut()), SharedPtr(dst));
    let job = Job { src, grid, dst, n, c, in_dims, points, mode, padding, align_corners, par };
    // One instance per tap count and rank, so the blend's loops unroll.
    macro_rules! by_rank {
        ($k:literal) => {
            match in_dims.len() {
                1 => sample::<$k, 1>(&job),
                2 => sample::<$k, 2>(&job),
                _ => sample::<$k, 3>(&job),
            }
        };
    }
    // SAFETY: the caller's contract; the rank picks `R`, the mode `K`.
    unsafe {
        match mode {
            GridSampleMode::Nearest => by_rank!(1),
            GridSampleMode::Linear => by_rank!(2),
            GridSampleMode::Cubic => by_rank!(4),
        }
    }
}
