//! The reference: ONNX `GridSample` as its specification computes it, one
//! output element at a time on slices, interpolating axis after axis by
//! recursion over the rank, every tap's position and padding worked out
//! per element (the entry walks tap tables computed once per point
//! instead; the tests compare the two bit for bit).
//!
//! The per-axis arithmetic both share is here too, each function the
//! spec's formula: [`denormalize`] (in f32, as ONNX's reference computes
//! it, so a coordinate falls on the same side of every rounding and
//! flooring decision), [`bounds`], [`reflect`] (in f64, as the reference)
//! and [`cubic_weights`].

use rlx_core::{GridSampleMode, GridSamplePadding};

/// Keys' cubic convolution parameter, as ONNX and PyTorch take it.
const CUBIC_A: f64 = -0.75;

/// The source position, in samples, of normalised coordinate `g` on an
/// axis of `len` samples: `-1` and `1` are the corner samples' centres
/// with `align_corners`, their outer edges otherwise. In f32, operation
/// for operation as ONNX's reference.
pub fn denormalize(g: f32, len: usize, align_corners: bool) -> f32 {
    if align_corners {
        (g + 1.0) / 2.0 * len.saturating_sub(1) as f32
    } else {
        ((g + 1.0) * len as f32 - 1.0) / 2.0
    }
}

/// The interval a coordinate is padded into: the corner samples' centres
/// with `align_corners`, their outer edges otherwise.
pub fn bounds(len: usize, align_corners: bool) -> (f64, f64) {
    if align_corners {
        (0.0, len as f64 - 1.0)
    } else {
        (-0.5, len as f64 - 0.5)
    }
}

/// `x` mirrored at `lo` and `hi` until it lies between them (ONNX's
/// reference: the whole ranges it travels past are counted, and their
/// parity says from which edge the rest is measured). A zero range (one
/// sample with `align_corners`, where the reference divides by zero) maps
/// every outside `x` to `lo`, as PyTorch does; a non-finite `x` gives NaN.
pub fn reflect(x: f64, lo: f64, hi: f64) -> f64 {
    let range = hi - lo;
    let outside = x < lo || x > hi;
    if outside && range == 0.0 {
        return lo;
    }
    if x < lo {
        let dx = lo - x;
        let flips = (dx / range).trunc();
        let r = dx - flips * range;
        if flips % 2.0 == 0.0 {
            lo + r
        } else {
            hi - r
        }
    } else if x > hi {
        let dx = x - hi;
        let flips = (dx / range).trunc();
        let r = dx - flips * range;
        if flips % 2.0 == 0.0 {
            hi - r
        } else {
            lo + r
        }
    } else {
        x
    }
}

/// The weights of the samples at `floor(x) - 1 ..= floor(x) + 2` for a
/// point `t = x - floor(x)` past `floor(x)` (Keys' kernel with
/// `a = -0.75`, in f64).
pub fn cubic_weights(t: f64) -> [f64; 4] {
    let a = CUBIC_A;
    // The kernel on |d| <= 1 and on 1 < |d| < 2.
    let near = |d: f64| ((a + 2.0) * d - (a + 3.0)) * d * d + 1.0;
    let far = |d: f64| ((a * d - 5.0 * a) * d + 8.0 * a) * d - 4.0 * a;
    [far(t + 1.0), near(t), near(1.0 - t), far(2.0 - t)]
}

/// The sample position `i` (an integer) reads under `padding`, or `None`
/// when it reads zero.
fn pixel(i: f64, len: usize, padding: GridSamplePadding, align_corners: bool) -> Option<usize> {
    let last = len as f64 - 1.0;
    match padding {
        GridSamplePadding::Zeros => (i >= 0.0 && i <= last).then_some(i as usize),
        GridSamplePadding::Border => Some(i.clamp(0.0, last) as usize),
        GridSamplePadding::Reflection => {
            let (lo, hi) = bounds(len, align_corners);
            // An integer reflects onto an integer; the clamp only guards
            // magnitudes past f64's integers.
            Some(reflect(i, lo, hi).trunc().clamp(0.0, last) as usize)
        }
    }
}

/// The point's coordinates after the spec's padding rule: rounded (ties
/// to even) for `nearest`, then, when outside [`bounds`], clamped to the
/// samples (`border`) or reflected into the bounds (`reflection`).
fn padded(x: f32, len: usize, mode: GridSampleMode, padding: GridSamplePadding, align_corners: bool) -> f32 {
    let x = if mode == GridSampleMode::Nearest { x.round_ties_even() } else { x };
    let (lo, hi) = bounds(len, align_corners);
    let outside = f64::from(x) < lo || f64::from(x) > hi;
    match padding {
        GridSamplePadding::Border if outside => x.clamp(0.0, len as f32 - 1.0),
        GridSamplePadding::Reflection if outside => reflect(f64::from(x), lo, hi) as f32,
        _ => x,
    }
}

/// The value of `data` (`dims`, row-major) at the point `xs`: along the
/// first axis, the weighted sum of the taps around `xs[0]`, each the same
/// interpolation over the remaining axes of its row (zero for a row
/// outside). Sums start from the first term.
fn interpolate(
    data: &[f32],
    dims: &[usize],
    xs: &[f32],
    mode: GridSampleMode,
    padding: GridSamplePadding,
    align_corners: bool,
) -> f64 {
    let (len, inner) = (dims[0], dims[1..].iter().product::<usize>());
    let x = xs[0];
    let floor = f64::from(x.floor());
    let t = f64::from(x) - floor;
    let (first, weights) = match mode {
        GridSampleMode::Nearest => (f64::from(x), vec![1.0]),
        GridSampleMode::Linear => (floor, vec![1.0 - t, t]),
        GridSampleMode::Cubic => (floor - 1.0, cubic_weights(t).to_vec()),
    };
    let mut acc = None;
    for (k, w) in weights.iter().enumerate() {
        let v = match pixel(first + k as f64, len, padding, align_corners) {
            None => 0.0,
            Some(i) if dims.len() == 1 => f64::from(data[i]),
            Some(i) => {
                interpolate(&data[i * inner..(i + 1) * inner], &dims[1..], &xs[1..], mode, padding, align_corners)
            }
        };
        acc = Some(acc.map_or(w * v, |a| a + w * v));
    }
    acc.expect("at least one tap")
}

/// `GridSample` of `src` `[n, c, in_dims...]` at the points of `grid` `[n,
/// out_dims..., rank]` (coordinates last axis first), `[n, c,
/// out_dims...]` out. A point with a coordinate that is not finite after
/// padding is NaN in every channel.
#[allow(clippy::too_many_arguments)]
pub fn grid_sample(
    src: &[f32],
    grid: &[f32],
    n: usize,
    c: usize,
    in_dims: &[usize],
    out_dims: &[usize],
    mode: GridSampleMode,
    padding: GridSamplePadding,
    align_corners: bool,
) -> Vec<f32> {
    let rank = in_dims.len();
    let (plane, points) = (in_dims.iter().product::<usize>(), out_dims.iter().product::<usize>());
    let mut out = Vec::with_capacity(n * c * points);
    for b in 0..n {
        for ch in 0..c {
            let data = &src[(b * c + ch) * plane..(b * c + ch + 1) * plane];
            for p in 0..points {
                let g = &grid[(b * points + p) * rank..(b * points + p + 1) * rank];
                let xs: Vec<f32> = (0..rank)
                    .map(|a| {
                        let x = denormalize(g[rank - 1 - a], in_dims[a], align_corners);
                        padded(x, in_dims[a], mode, padding, align_corners)
                    })
                    .collect();
                let v = if xs.iter().all(|x| x.is_finite()) {
                    interpolate(data, in_dims, &xs, mode, padding, align_corners) as f32
                } else {
                    f32::NAN
                };
                out.push(v);
            }
        }
    }
    out
}
