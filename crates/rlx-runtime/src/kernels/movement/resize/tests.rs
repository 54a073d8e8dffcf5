//! The coordinate formulas and rounding rules on hand-computed values, and
//! both paths against a per-element f64 reference over awkward shapes
//! (length 1 in and out, tails of 7 and 17, up- and downsampling).

use rlx_core::plan::{resize_axis_scale, resize_scratch_bytes, resize_weighted};
use rlx_core::{ResizeCoord, ResizeMode};

use super::window::cubic_kernel;
use super::*;

/// A shape with the defaults of every field the test does not set.
fn shape(outer: usize, in_len: usize, out_len: usize, inner: usize, mode: ResizeMode) -> ResizeShape {
    ResizeShape {
        outer,
        in_len,
        out_len,
        inner,
        scale: out_len as f32 / in_len as f32,
        by_size: true,
        mode,
        coord: ResizeCoord::HalfPixel,
        cubic_a: -0.75,
        exclude_outside: false,
        antialias: false,
        roi_start: 0.0,
        roi_end: 1.0,
        extrapolation: 0.0,
    }
}

fn axis(in_len: usize, out_len: usize, scale: f32, coord: ResizeCoord) -> Axis {
    Axis::new(&ResizeShape { scale, by_size: false, coord, ..shape(1, in_len, out_len, 1, ResizeMode::Linear) })
}

/// Runs the kernel with a scratch of the planned size.
fn run(p: &ResizeShape, src: &[f32], par: bool) -> Vec<f32> {
    let mut out = vec![f32::NAN; p.outer * p.out_len * p.inner];
    let mut scratch = vec![0.0f64; resize_scratch_bytes(p) / 8];
    // SAFETY: buffers of the documented extents, an 8-aligned scratch of
    // the planned size.
    unsafe { resize_f32(src.as_ptr(), out.as_mut_ptr(), p, scratch.as_mut_ptr(), par) };
    out
}

fn data(len: usize) -> Vec<f32> {
    (0..len).map(|i| ((i * 37) % 23) as f32 * 0.5 - 3.0).collect()
}

#[test]
fn coordinates_follow_the_onnx_formulas() {
    // Upsampling 4 -> 8 (scale 2).
    assert_eq!(axis(4, 8, 2.0, ResizeCoord::HalfPixel).source(0), -0.25);
    assert_eq!(axis(4, 8, 2.0, ResizeCoord::Asymmetric).source(3), 1.5);
    assert_eq!(axis(4, 8, 2.0, ResizeCoord::AlignCorners).source(7), 3.0);
    assert_eq!(axis(4, 1, 0.25, ResizeCoord::PytorchHalfPixel).source(0), -0.5);
    assert_eq!(axis(4, 1, 0.25, ResizeCoord::AlignCorners).source(0), 0.0);
    // scale 0.6 of 5: width 3.0000001, out 3: the symmetric offset is tiny.
    let x = axis(5, 3, 0.6, ResizeCoord::HalfPixelSymmetric).source(1);
    let plain = axis(5, 3, 0.6, ResizeCoord::HalfPixel).source(1);
    assert!((x - plain).abs() < 1e-6 && x != plain);
}

#[test]
fn crop_coordinates_stretch_the_roi_and_extrapolate_outside() {
    // 5 -> 3 over roi [0.25, 0.75] of 4 = in_len - 1: x = 1, 2, 3.
    let crop = |start: f32, end: f32, out_len: usize| {
        let p = ResizeShape {
            coord: ResizeCoord::TfCropAndResize,
            roi_start: start,
            roi_end: end,
            ..shape(1, 5, out_len, 1, ResizeMode::Linear)
        };
        Axis::new(&p)
    };
    let a = crop(0.25, 0.75, 3);
    assert_eq!((0..3).map(|o| a.source(o)).collect::<Vec<_>>(), [1.0, 2.0, 3.0]);
    assert!(!a.extrapolated(0.0) && !a.extrapolated(4.0));
    assert!(a.extrapolated(-1e-9) && a.extrapolated(4.000001));
    // An output width of 1 samples the middle of the roi.
    assert_eq!(crop(0.25, 0.75, 1).source(0), 2.0);
    // roi [-0.5, 1.5]: x = -2, 1, 4, 7; the first and last extrapolate.
    let b = crop(-0.5, 1.5, 4);
    let xs: Vec<f64> = (0..4).map(|o| b.source(o)).collect();
    assert_eq!(xs, [-2.0, 0.6666666666666665, 3.333333333333333, 6.0]);
    assert_eq!(xs.iter().map(|&x| b.extrapolated(x)).collect::<Vec<_>>(), [true, false, false, true]);
    // Other coordinate modes never extrapolate.
    assert!(!axis(4, 8, 2.0, ResizeCoord::HalfPixel).extrapolated(-0.25));
}

#[test]
fn a_size_scale_is_the_exact_ratio() {
    // 6 -> 4: f32(2/3) is above 2/3, so o = 2 would map to 2.9999999
    // (floor 2) instead of the spec's 3.
    let exact =
        Axis::new(&ResizeShape { coord: ResizeCoord::Asymmetric, ..shape(1, 6, 4, 1, ResizeMode::NearestFloor) });
    assert_eq!(taps(exact.source(2), 6, ResizeMode::NearestFloor), (3, 3, 0.0));
    let rounded = axis(6, 4, 4.0 / 6.0, ResizeCoord::Asymmetric);
    assert_eq!(taps(rounded.source(2), 6, ResizeMode::NearestFloor), (2, 2, 0.0));
}

#[test]
fn taps_round_as_the_modes_say_and_clamp_to_the_edges() {
    assert_eq!(taps(1.5, 4, ResizeMode::NearestRoundPreferFloor), (1, 1, 0.0));
    assert_eq!(taps(1.5, 4, ResizeMode::NearestRoundPreferCeil), (2, 2, 0.0));
    assert_eq!(taps(1.2, 4, ResizeMode::NearestCeil), (2, 2, 0.0));
    assert_eq!(taps(1.8, 4, ResizeMode::NearestFloor), (1, 1, 0.0));
    assert_eq!(taps(2.0, 4, ResizeMode::Linear), (2, 2, 0.0));
    assert_eq!(taps(-0.25, 4, ResizeMode::Linear), (0, 0, 0.75));
    assert_eq!(taps(3.5, 4, ResizeMode::Linear), (3, 3, 0.5));
    assert_eq!(taps(7.0, 4, ResizeMode::NearestFloor), (3, 3, 0.0));
    assert_eq!(taps(0.25, 1, ResizeMode::Linear), (0, 0, 0.25));
}

#[test]
fn the_cubic_kernel_interpolates_and_its_weights_sum_to_one() {
    for a in [-0.75, -0.5] {
        assert_eq!((cubic_kernel(0.0, a), cubic_kernel(1.0, a), cubic_kernel(-2.0, a)), (1.0, 0.0, 0.0));
        assert_eq!(cubic_kernel(2.5, a), 0.0);
        // At t = 0.5: (a + 2) / 8 - (a + 3) / 4 + 1.
        assert_eq!(cubic_kernel(-0.5, a), (a + 2.0) / 8.0 - (a + 3.0) / 4.0 + 1.0);
    }
    // The plain cubic's polynomials are the kernel at the tap distances
    // (up to the rounding of two different f64 evaluations, a few ulps of
    // 1), and an integral coordinate reads its own sample exactly.
    let p = shape(1, 8, 16, 1, ResizeMode::Cubic);
    let mut w = [0.0; 4];
    for x in [2.0, 2.25, 2.5, 3.9] {
        let start = window(x, 8, 2.0, &p, &mut w);
        let sum: f64 = w.iter().sum();
        assert!((sum - 1.0).abs() < 1e-14, "{x}: {w:?}");
        for (k, wk) in w.iter().enumerate() {
            let kernel = cubic_kernel((start + k as i64) as f64 - x, -0.75);
            assert!((wk - kernel).abs() < 1e-14, "{x} tap {k}: {wk} vs {kernel}");
        }
    }
    assert_eq!(window(2.0, 8, 2.0, &p, &mut w), 0);
    assert_eq!(w, [0.0, 0.0, 1.0, 0.0]);
}

#[test]
fn antialias_widens_the_filter_by_the_inverse_scale() {
    // Linear at scale 1/3: a triangle of half-width 3, 6 taps.
    let p = ResizeShape { antialias: true, ..shape(1, 12, 4, 1, ResizeMode::Linear) };
    let mut w = [0.0; 6];
    // x = (0 + 0.5) * 3 - 0.5 = 1: taps -2 ..= 3 at distances -3 ..= 2.
    let start = window(1.0, 12, 1.0 / 3.0, &p, &mut w);
    assert_eq!(start, -2);
    let raw = [0.0, 1.0 / 3.0, 2.0 / 3.0, 1.0, 2.0 / 3.0, 1.0 / 3.0];
    for (wk, r) in w.iter().zip(raw) {
        assert!((wk - r / 3.0).abs() < 1e-15, "{w:?}");
    }
    // exclude_outside drops taps -2 and -1 and renormalizes.
    let p = ResizeShape { exclude_outside: true, ..p };
    window(1.0, 12, 1.0 / 3.0, &p, &mut w);
    let kept = [0.0, 0.0, 2.0 / 3.0, 1.0, 2.0 / 3.0, 1.0 / 3.0];
    for (wk, r) in w.iter().zip(kept) {
        assert!((wk - r / (8.0 / 3.0)).abs() < 1e-15, "{w:?}");
    }
}

/// The n source indices nearest to `x` (ties to the smaller), as the
/// reference picks a window: by sorting all candidates.
fn nearest_indices(x: f64, n: usize, in_len: usize) -> Vec<i64> {
    let pad = n as i64;
    let mut all: Vec<i64> = (-pad..in_len as i64 + pad).collect();
    all.sort_by(|a, b| ((*a as f64 - x).abs(), *a).partial_cmp(&((*b as f64 - x).abs(), *b)).unwrap());
    let mut picked = all[..n].to_vec();
    picked.sort();
    picked
}

/// The weight of source index `i` for coordinate `x` before any
/// normalization: the reference's plain cubic polynomials (by the tap's
/// place in the window) or the stretched kernel with antialias.
fn raw_weight(p: &ResizeShape, s: f64, x: f64, k: usize, i: i64) -> f64 {
    let a = f64::from(p.cubic_a);
    if p.antialias {
        let d = (i as f64 - x) * s.min(1.0);
        return match p.mode {
            ResizeMode::Cubic => cubic_kernel(d, a),
            _ => (1.0 - d.abs()).clamp(0.0, 1.0),
        };
    }
    let r = if x == x.floor() { 1.0 } else { x - x.floor() };
    let q = 1.0 - r;
    match k {
        0 => ((a * (r + 1.0) - 5.0 * a) * (r + 1.0) + 8.0 * a) * (r + 1.0) - 4.0 * a,
        1 => ((a + 2.0) * r - (a + 3.0)) * r * r + 1.0,
        2 => ((a + 2.0) * q - (a + 3.0)) * q * q + 1.0,
        _ => ((a * (q + 1.0) - 5.0 * a) * (q + 1.0) + 8.0 * a) * (q + 1.0) - 4.0 * a,
    }
}

/// Each output through the definition: coordinate, extrapolation, the
/// window of the nearest indices, weights, exclusion, normalization, and
/// an f64 sum over edge-clamped samples; direct modes as before.
fn reference(p: &ResizeShape, src: &[f32]) -> Vec<f32> {
    let (n, m, inner) = (p.in_len, p.out_len, p.inner);
    let ax = Axis::new(p);
    let s = resize_axis_scale(n, m, p.scale, p.by_size);
    let mut out = Vec::new();
    for r in 0..p.outer {
        for o in 0..m {
            let x = ax.source(o);
            let outside = p.coord == ResizeCoord::TfCropAndResize && (x < 0.0 || x > (n - 1) as f64);
            for j in 0..inner {
                let at = |i: i64| f64::from(src[(r * n + i.clamp(0, n as i64 - 1) as usize) * inner + j]);
                let v = if outside {
                    f64::from(p.extrapolation)
                } else if !resize_weighted(p.mode, p.antialias) {
                    let f = x.floor();
                    match p.mode {
                        ResizeMode::Linear if f != x => (1.0 - (x - f)) * at(f as i64) + (x - f) * at(f as i64 + 1),
                        _ => at(taps(x, n, p.mode).0 as i64),
                    }
                } else {
                    let support = if p.mode == ResizeMode::Cubic { 2.0 } else { 1.0 };
                    let count = if p.antialias { 2 * (support / s.min(1.0)).ceil() as usize } else { 4 };
                    // Window centres sit between samples: shifting an
                    // integral x down a little keeps the ratio-1 window.
                    let centre = if x == x.floor() { x - 1e-9 } else { x };
                    let idx = nearest_indices(centre, count, n);
                    let mut w: Vec<f64> = idx.iter().enumerate().map(|(k, &i)| raw_weight(p, s, x, k, i)).collect();
                    if p.antialias {
                        let t = w.iter().fold(0.0, |a, b| a + b);
                        w.iter_mut().for_each(|v| *v /= t);
                    }
                    if p.exclude_outside {
                        for (v, &i) in w.iter_mut().zip(&idx) {
                            if i < 0 || i >= n as i64 {
                                *v = 0.0;
                            }
                        }
                        let t = w.iter().fold(0.0, |a, b| a + b);
                        let t = if t == 0.0 { 1.0 } else { t };
                        w.iter_mut().for_each(|v| *v /= t);
                    }
                    w.iter().zip(&idx).fold(0.0, |acc, (wk, &i)| acc + wk * at(i))
                };
                out.push(v as f32);
            }
        }
    }
    out
}

const SHAPES: [(usize, usize, usize, usize); 8] = [
    (1, 4, 8, 1),
    (3, 5, 3, 7),
    (2, 1, 4, 3),
    (1, 7, 1, 17),
    (2, 6, 6, 1),
    (1, 9, 2, 17),
    (2, 3, 11, 1),
    (2, 13, 4, 2),
];

/// Every coordinate mode, `tf_crop_and_resize` with three rois (inside,
/// the whole axis, and one reaching outside on both ends).
fn coords() -> Vec<(ResizeCoord, f32, f32)> {
    let mut all: Vec<_> = ResizeCoord::ALL.iter().map(|&c| (c, 0.0, 1.0)).collect();
    all.extend([(ResizeCoord::TfCropAndResize, 0.2, 0.7), (ResizeCoord::TfCropAndResize, -0.3, 1.4)]);
    all
}

fn check(p: &ResizeShape, what: &str) {
    let src = data(p.outer * p.in_len * p.inner);
    let want = reference(p, &src);
    for par in [false, true] {
        assert_eq!(run(p, &src, par), want, "{what} par {par}: {p:?}");
    }
}

#[test]
fn direct_resizes_match_the_definition_over_awkward_shapes() {
    for (outer, n, m, inner) in SHAPES {
        let direct = ResizeMode::ALL.iter().filter(|&&mode| mode != ResizeMode::Cubic);
        for &mode in direct {
            for (coord, roi_start, roi_end) in coords() {
                for by_size in [false, true] {
                    let p = ResizeShape {
                        by_size,
                        coord,
                        roi_start,
                        roi_end,
                        extrapolation: -7.5,
                        ..shape(outer, n, m, inner, mode)
                    };
                    check(&p, "direct");
                }
            }
        }
    }
}

#[test]
fn weighted_resizes_match_the_definition_over_awkward_shapes() {
    let kinds = [
        (ResizeMode::Cubic, false, -0.75),
        (ResizeMode::Cubic, false, -0.5),
        (ResizeMode::Cubic, true, -0.75),
        (ResizeMode::Linear, true, -0.75),
    ];
    for (outer, n, m, inner) in SHAPES {
        for (mode, antialias, cubic_a) in kinds {
            for (coord, roi_start, roi_end) in coords() {
                for (by_size, exclude_outside) in [(true, false), (false, true), (true, true)] {
                    let p = ResizeShape {
                        by_size,
                        coord,
                        roi_start,
                        roi_end,
                        extrapolation: 10.0,
                        antialias,
                        cubic_a,
                        exclude_outside,
                        ..shape(outer, n, m, inner, mode)
                    };
                    check(&p, "weighted");
                }
            }
        }
    }
}

#[test]
fn an_extrapolated_output_is_the_value_on_both_paths() {
    // roi [-1, 2] of 2 samples over 4 outputs: x = -1, 0, 1, 2; the first
    // and last are outside [0, 1].
    for mode in [ResizeMode::Linear, ResizeMode::Cubic, ResizeMode::NearestFloor] {
        let p = ResizeShape {
            coord: ResizeCoord::TfCropAndResize,
            roi_start: -1.0,
            roi_end: 2.0,
            extrapolation: 10.0,
            ..shape(1, 2, 4, 1, mode)
        };
        assert_eq!(run(&p, &[1.0, 3.0], false), [10.0, 1.0, 3.0, 10.0], "{mode:?}");
    }
}
