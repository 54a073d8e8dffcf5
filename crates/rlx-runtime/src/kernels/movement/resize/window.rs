//! What one output index reads: the direct path's two taps, and the
//! weighted path's window and weights, each in f64 with the arithmetic of
//! ONNX's reference (`onnx.reference.ops.op_resize`), so that the weights
//! have its bits.

use rlx_core::shapes::ResizeShape;
use rlx_core::ResizeMode;

/// What output coordinate `x` reads on the direct path: `(i0, i1, w1)`
/// with the value `(1 - w1) * src[i0] + w1 * src[i1]` (nearest: `w1` is 0
/// and `i0 == i1`). Indices are clamped to the source, which is the
/// reference's edge rule. Always inlined into the direct path's loop,
/// which calls it per row and output index: as a call it cost 15% with
/// `inner = 1` (LLVM declines to inline it across modules on its own).
#[inline(always)]
pub(crate) fn taps(x: f64, in_len: usize, mode: ResizeMode) -> (usize, usize, f64) {
    let last = in_len as i64 - 1;
    let at = |i: i64| i.clamp(0, last) as usize;
    let floor = x.floor();
    let i = floor as i64;
    if x == floor {
        // An integral coordinate reads its own sample in every mode.
        return (at(i), at(i), 0.0);
    }
    let ratio = x - floor;
    let pick = |up: bool| if up { (at(i + 1), at(i + 1), 0.0) } else { (at(i), at(i), 0.0) };
    match mode {
        ResizeMode::Linear => (at(i), at(i + 1), ratio),
        ResizeMode::NearestRoundPreferFloor => pick(ratio > 0.5),
        ResizeMode::NearestRoundPreferCeil => pick(ratio >= 0.5),
        ResizeMode::NearestFloor => pick(false),
        ResizeMode::NearestCeil => pick(true),
        ResizeMode::Cubic => unreachable!("a cubic resize runs the weighted path"),
    }
}

/// The weighted path's window for output coordinate `x`: fills `w` (one
/// weight per tap) and returns the source index of the first tap, which
/// may lie outside the source (a tap there reads the edge sample, or with
/// `exclude_outside` has weight 0). `s` is the axis' scale in f64.
///
/// As in the reference, the sample below `x` is `floor(x)`, or `x - 1`
/// for an integral `x` (a ratio of 1 rather than 0), and the window of `n`
/// taps starts `n / 2 - 1` samples before it.
pub(crate) fn window(x: f64, in_len: usize, s: f64, p: &ResizeShape, w: &mut [f64]) -> i64 {
    let floor = x.floor();
    let below = if x == floor { floor - 1.0 } else { floor };
    let ratio = x - below;
    let start = below as i64 + 1 - (w.len() / 2) as i64;
    let a = f64::from(p.cubic_a);
    if p.antialias {
        antialias_weights(p.mode, ratio, s, a, w);
    } else {
        debug_assert!(p.mode == ResizeMode::Cubic && w.len() == 4, "only cubic runs weighted without antialias");
        cubic_weights(ratio, a, w);
    }
    if p.exclude_outside {
        for (k, wk) in w.iter_mut().enumerate() {
            let i = start + k as i64;
            if i < 0 || i >= in_len as i64 {
                *wk = 0.0;
            }
        }
        normalize(w);
    }
    start
}

/// ONNX's cubic convolution kernel (Keys, with coefficient `a`) at
/// distance `t`, written as the reference's antialias form writes it.
pub(crate) fn cubic_kernel(t: f64, a: f64) -> f64 {
    let x = t.abs();
    let (x2, x3) = (x * x, x * (x * x));
    if x <= 1.0 {
        (a + 2.0) * x3 - (a + 3.0) * x2 + 1.0
    } else if x < 2.0 {
        a * x3 - 5.0 * a * x2 + 8.0 * a * x - 4.0 * a
    } else {
        0.0
    }
}

/// The four weights of a plain cubic at `ratio` in `(0, 1]` (the taps at
/// distances `ratio + 1`, `ratio`, `1 - ratio`, `2 - ratio`), as the
/// reference's expanded polynomials compute them. Not normalized: they sum
/// to 1 up to rounding.
fn cubic_weights(ratio: f64, a: f64, w: &mut [f64]) {
    let (r1, q, q1) = (ratio + 1.0, 1.0 - ratio, (1.0 - ratio) + 1.0);
    w[0] = ((a * r1 - 5.0 * a) * r1 + 8.0 * a) * r1 - 4.0 * a;
    w[1] = ((a + 2.0) * ratio - (a + 3.0)) * ratio * ratio + 1.0;
    w[2] = ((a + 2.0) * q - (a + 3.0)) * q * q + 1.0;
    w[3] = ((a * q1 - 5.0 * a) * q1 + 8.0 * a) * q1 - 4.0 * a;
}

/// Antialiasing weights: the linear (triangle) or cubic kernel stretched
/// by `1 / min(s, 1)`, so a downscale averages over every source sample
/// its output covers, evaluated at each tap's distance from the
/// coordinate and normalized to sum 1. At `s >= 1` the plain kernel,
/// normalized.
fn antialias_weights(mode: ResizeMode, ratio: f64, s: f64, a: f64, w: &mut [f64]) {
    let scale = s.min(1.0);
    // The tap offsets from the sample below `x`: `1 - n/2 ..= n/2`.
    let first = 1 - (w.len() / 2) as i64;
    for (k, wk) in w.iter_mut().enumerate() {
        let i = (first + k as i64) as f64;
        *wk = if mode == ResizeMode::Cubic {
            cubic_kernel(scale * (i - ratio), a)
        } else {
            (1.0 - ((i - ratio) * scale).abs()).clamp(0.0, 1.0)
        };
    }
    normalize(w);
}

/// Divides the weights by their sum (taken in order, as the reference's
/// `sum`); a sum of 0 (every tap excluded) divides by 1, as the
/// reference's `exclude_outside` does.
fn normalize(w: &mut [f64]) {
    let total = w.iter().fold(0.0, |acc, &x| acc + x);
    let total = if total == 0.0 { 1.0 } else { total };
    for wk in w {
        *wk /= total;
    }
}
