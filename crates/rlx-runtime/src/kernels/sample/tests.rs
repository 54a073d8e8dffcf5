//! The per-axis formulas on hand-computed values, `grid_sample_f32` on
//! hand-computed images, and the entry against [`super::scalar`] bit for
//! bit over awkward shapes (size-1 axes, ranks 1 to 3, points exactly on
//! -1, 0 and 1, outside the image on every side), every mode, padding and
//! `align_corners`, serial and parallel.

use rand::{Rng, SeedableRng};
use rlx_core::{GridSampleMode as Mode, GridSamplePadding as Pad};

use super::scalar::{bounds, cubic_weights, denormalize, reflect};
use super::*;

const MODES: [Mode; 3] = [Mode::Nearest, Mode::Linear, Mode::Cubic];
const PADS: [Pad; 3] = [Pad::Zeros, Pad::Border, Pad::Reflection];

/// Runs the entry on slices.
#[allow(clippy::too_many_arguments)]
fn run(
    src: &[f32],
    grid: &[f32],
    n: usize,
    c: usize,
    in_dims: &[usize],
    out_dims: &[usize],
    mode: Mode,
    pad: Pad,
    align: bool,
    par: bool,
) -> Vec<f32> {
    let len = n * c * out_dims.iter().product::<usize>();
    assert_eq!(src.len(), n * c * in_dims.iter().product::<usize>());
    assert_eq!(grid.len(), n * out_dims.iter().product::<usize>() * in_dims.len());
    let mut out = vec![f32::from_bits(0x7fc0_dead); len];
    // SAFETY: slices of the documented extents.
    unsafe {
        grid_sample_f32(src.as_ptr(), grid.as_ptr(), out.as_mut_ptr(), n, c, in_dims, out_dims, mode, pad, align, par)
    };
    out
}

#[test]
fn denormalize_maps_the_extrema_to_centres_or_edges() {
    // align_corners: -1 and 1 are the first and last samples' centres.
    assert_eq!(denormalize(-1.0, 5, true), 0.0);
    assert_eq!(denormalize(1.0, 5, true), 4.0);
    assert_eq!(denormalize(0.0, 5, true), 2.0);
    assert_eq!(denormalize(0.5, 1, true), 0.0);
    // Otherwise their outer edges, half a sample further out.
    assert_eq!(denormalize(-1.0, 5, false), -0.5);
    assert_eq!(denormalize(1.0, 5, false), 4.5);
    assert_eq!(denormalize(0.0, 4, false), 1.5);
    assert_eq!(denormalize(-1.0, 1, false), -0.5);
    assert_eq!(bounds(5, true), (0.0, 4.0));
    assert_eq!(bounds(5, false), (-0.5, 4.5));
}

#[test]
fn reflect_mirrors_at_each_edge_in_turn() {
    let (lo, hi) = (-0.5, 2.5);
    assert_eq!(reflect(1.25, lo, hi), 1.25);
    assert_eq!(reflect(-0.5, lo, hi), -0.5);
    assert_eq!(reflect(-1.0, lo, hi), 0.0);
    assert_eq!(reflect(3.25, lo, hi), 1.75);
    // Past a whole range: measured from the other edge.
    assert_eq!(reflect(-4.0, lo, hi), 2.0);
    assert_eq!(reflect(6.0, lo, hi), 0.0);
    // Past two ranges: the near edge again.
    assert_eq!(reflect(-7.0, lo, hi), 0.0);
    // Integers with align_corners: -1 reads 1, len reads len - 2.
    assert_eq!(reflect(-1.0, 0.0, 3.0), 1.0);
    assert_eq!(reflect(4.0, 0.0, 3.0), 2.0);
    // One sample with align_corners: a zero range.
    assert_eq!(reflect(-1.0, 0.0, 0.0), 0.0);
    assert_eq!(reflect(5.0, 0.0, 0.0), 0.0);
    assert!(reflect(f64::INFINITY, lo, hi).is_nan());
    assert!(reflect(f64::NAN, lo, hi).is_nan());
}

#[test]
fn cubic_weights_are_keys_kernel() {
    assert_eq!(cubic_weights(0.0), [0.0, 1.0, 0.0, 0.0]);
    assert_eq!(cubic_weights(0.5), [-0.09375, 0.59375, 0.59375, -0.09375]);
    for t in [0.0, 0.1, 0.25, 0.7, 0.999] {
        let w = cubic_weights(t);
        assert!((w.iter().sum::<f64>() - 1.0).abs() < 1e-12, "{t}: {w:?}");
    }
}

#[test]
fn coordinates_round_and_pad_as_the_spec() {
    // Ties to even for nearest: 0.5 -> 0, 2.5 -> 2, 1.5 -> 2.
    assert_eq!(coordinate(0.0, 2, Mode::Nearest, Pad::Zeros, false), 0.0);
    assert_eq!(coordinate(0.5, 4, Mode::Nearest, Pad::Zeros, false), 2.0);
    assert_eq!(coordinate(0.0, 4, Mode::Nearest, Pad::Zeros, false), 2.0);
    // Outside the bounds: clamped to the samples, or reflected.
    assert_eq!(coordinate(1.5, 3, Mode::Linear, Pad::Border, false), 2.0);
    assert_eq!(coordinate(1.5, 3, Mode::Linear, Pad::Reflection, false), 1.75);
    assert_eq!(coordinate(1.5, 3, Mode::Linear, Pad::Zeros, false), 3.25);
    // On the bound (-0.5) nothing moves, even under border padding.
    assert_eq!(coordinate(-1.0, 3, Mode::Cubic, Pad::Border, false), -0.5);
    assert_eq!(coordinate(f32::INFINITY, 3, Mode::Linear, Pad::Border, true), 2.0);
    assert!(coordinate(f32::INFINITY, 3, Mode::Linear, Pad::Reflection, true).is_nan());
}

/// The taps of `x` by `mode`, as (offset, inside) pairs.
fn taps_of(x: f32, len: usize, stride: usize, mode: Mode, pad: Pad) -> Vec<(usize, bool)> {
    let pairs = |taps: &[Tap]| taps.iter().map(|t| (t.offset, t.inside)).collect();
    match mode {
        Mode::Nearest => pairs(&axis_taps::<1>(x.round_ties_even(), len, stride, pad, false)),
        Mode::Linear => pairs(&axis_taps::<2>(x, len, stride, pad, false)),
        Mode::Cubic => pairs(&axis_taps::<4>(x, len, stride, pad, false)),
    }
}

#[test]
fn taps_stay_inside_the_axis_for_any_position() {
    for x in [-1e30f32, -7.5, -1.0, -0.25, 0.0, 0.5, 2.0, 3.75, 1e30] {
        for mode in MODES {
            for pad in PADS {
                for len in [1, 2, 5] {
                    for (offset, inside) in taps_of(x, len, 7, mode, pad) {
                        assert!(offset < len * 7 && offset % 7 == 0, "{x} {mode:?} {pad:?} {len}: {offset}");
                        assert!(inside || pad == Pad::Zeros);
                    }
                }
            }
        }
    }
    // Linear at 1.25 on 5 samples: taps 1 and 2; cubic: 0 to 3.
    assert_eq!(taps_of(1.25, 5, 3, Mode::Linear, Pad::Zeros), [(3, true), (6, true)]);
    assert_eq!(taps_of(0.5, 5, 1, Mode::Cubic, Pad::Zeros), [(0, false), (0, true), (1, true), (2, true)]);
    assert_eq!(taps_of(0.5, 5, 1, Mode::Cubic, Pad::Border), [(0, true), (0, true), (1, true), (2, true)]);
    // Without align_corners the bounds are the outer edges: -1 mirrors at
    // -0.5 onto 0.
    assert_eq!(taps_of(0.5, 5, 1, Mode::Cubic, Pad::Reflection), [(0, true), (0, true), (1, true), (2, true)]);
}

/// The 2x3 image `[[1, 2, 3], [4, 5, 6]]` at one point `(x, y)`.
fn at_point(x: f32, y: f32, mode: Mode, pad: Pad, align: bool) -> f32 {
    let img = [1.0, 2.0, 3.0, 4.0, 5.0, 6.0];
    run(&img, &[x, y], 1, 1, &[2, 3], &[1, 1], mode, pad, align, false)[0]
}

#[test]
fn hand_computed_points() {
    // align_corners: the corners are the corner samples; the centre
    // (x = 1, y = 0.5) averages rows 2 and 5.
    for pad in PADS {
        assert_eq!(at_point(-1.0, -1.0, Mode::Linear, pad, true), 1.0);
        assert_eq!(at_point(1.0, 1.0, Mode::Linear, pad, true), 6.0);
        assert_eq!(at_point(0.0, 0.0, Mode::Linear, pad, true), 3.5);
        assert_eq!(at_point(1.0, -1.0, Mode::Nearest, pad, true), 3.0);
    }
    // Without: the corner point (-0.5, -0.5) is half outside.
    assert_eq!(at_point(-1.0, -1.0, Mode::Linear, Pad::Zeros, false), 0.25);
    assert_eq!(at_point(-1.0, -1.0, Mode::Linear, Pad::Border, false), 1.0);
    assert_eq!(at_point(-1.0, -1.0, Mode::Linear, Pad::Reflection, false), 1.0);
    // (3.25, 0.5): outside on the right.
    assert_eq!(at_point(1.5, 0.0, Mode::Linear, Pad::Zeros, false), 0.0);
    assert_eq!(at_point(1.5, 0.0, Mode::Linear, Pad::Border, false), 4.5);
    assert_eq!(at_point(1.5, 0.0, Mode::Linear, Pad::Reflection, false), 4.25);
    // Nearest at (1, 0.5): the row rounds to even (0).
    assert_eq!(at_point(0.0, 0.0, Mode::Nearest, Pad::Zeros, false), 2.0);
    // Cubic at (1, 0.5) with align_corners: rows -1..=2 weighted
    // [-0.09375, 0.59375, 0.59375, -0.09375]; rows -1 and 2 read 0, or
    // the edge rows under border padding.
    assert_eq!(at_point(0.0, 0.0, Mode::Cubic, Pad::Zeros, true), 4.15625);
    assert_eq!(at_point(0.0, 0.0, Mode::Cubic, Pad::Border, true), 3.5);
    // A sample point reads its sample exactly in every mode.
    for mode in MODES {
        assert_eq!(at_point(0.0, 1.0, mode, Pad::Border, true), 5.0);
    }
}

#[test]
fn non_finite_coordinates_give_nan_unless_border_clamps_them() {
    for mode in MODES {
        assert!(at_point(f32::NAN, 0.0, mode, Pad::Border, false).is_nan());
        assert!(at_point(0.0, f32::INFINITY, mode, Pad::Zeros, false).is_nan());
        assert!(at_point(f32::NEG_INFINITY, 0.0, mode, Pad::Reflection, true).is_nan());
        // Clamped to the last column, centre row.
        assert_eq!(
            at_point(f32::INFINITY, 0.0, mode, Pad::Border, true),
            if mode == Mode::Nearest { 3.0 } else { 4.5 }
        );
    }
    // Huge finite coordinates read zeros, the edge, or a reflection.
    assert_eq!(at_point(1e30, 0.0, Mode::Cubic, Pad::Zeros, false), 0.0);
    assert_eq!(at_point(-1e30, -1.0, Mode::Linear, Pad::Border, true), 1.0);
    assert!(at_point(1e30, 1e37, Mode::Cubic, Pad::Reflection, false).is_finite());
}

/// Grid values spread over `[-1.6, 1.6]`, with exact `-1`, `0` and `1`
/// mixed in.
fn random_grid(len: usize, seed: u64) -> Vec<f32> {
    let mut r = rand::rngs::StdRng::seed_from_u64(seed);
    (0..len)
        .map(|_| match r.gen_range(0..8) {
            0 => -1.0,
            1 => 1.0,
            2 => 0.0,
            _ => r.gen_range(-1.6f32..1.6),
        })
        .collect()
}

fn random_data(len: usize, seed: u64) -> Vec<f32> {
    let mut r = rand::rngs::StdRng::seed_from_u64(seed);
    (0..len).map(|_| r.gen_range(-4.0f32..4.0)).collect()
}

#[test]
fn matches_the_reference_over_awkward_shapes() {
    // (n, c, in_dims, out_dims)
    let cases: [(usize, usize, &[usize], &[usize]); 10] = [
        (1, 1, &[1], &[3]),
        (2, 3, &[7], &[5]),
        (1, 1, &[1, 1], &[2, 2]),
        (1, 2, &[3, 2], &[2, 4]),
        (2, 1, &[4, 4], &[6, 6]),
        (1, 3, &[1, 5], &[3, 1]),
        (1, 1, &[5, 1], &[1, 7]),
        (1, 2, &[3, 2, 2], &[2, 4, 2]),
        (2, 1, &[1, 3, 1], &[2, 2, 3]),
        (1, 1, &[4, 3, 5], &[3, 2, 2]),
    ];
    for (seed, (n, c, in_dims, out_dims)) in cases.into_iter().enumerate() {
        let seed = seed as u64;
        let src = random_data(n * c * in_dims.iter().product::<usize>(), seed);
        let grid = random_grid(n * out_dims.iter().product::<usize>() * in_dims.len(), seed + 100);
        for mode in MODES {
            for pad in PADS {
                for align in [false, true] {
                    let want = scalar::grid_sample(&src, &grid, n, c, in_dims, out_dims, mode, pad, align);
                    for par in [false, true] {
                        let got = run(&src, &grid, n, c, in_dims, out_dims, mode, pad, align, par);
                        let bits = |v: &[f32]| v.iter().map(|x| x.to_bits()).collect::<Vec<_>>();
                        assert_eq!(
                            bits(&got),
                            bits(&want),
                            "{in_dims:?} -> {out_dims:?} {mode:?} {pad:?} align {align} par {par}"
                        );
                    }
                }
            }
        }
    }
}

#[test]
fn a_large_grid_splits_over_threads_with_the_same_bits() {
    let (n, c, in_dims, out_dims) = (2, 3, [17usize, 23], [40usize, 41]);
    let src = random_data(n * c * 17 * 23, 7);
    let grid = random_grid(n * 40 * 41 * 2, 8);
    for mode in MODES {
        let serial = run(&src, &grid, n, c, &in_dims, &out_dims, mode, Pad::Reflection, false, false);
        let parallel = run(&src, &grid, n, c, &in_dims, &out_dims, mode, Pad::Reflection, false, true);
        assert_eq!(serial, parallel, "{mode:?}");
        let want = scalar::grid_sample(&src, &grid, n, c, &in_dims, &out_dims, mode, Pad::Reflection, false);
        assert_eq!(serial, want, "{mode:?}");
    }
}

#[test]
fn an_empty_output_writes_nothing() {
    let mut out = [7.0f32; 4];
    for (n, c, out_dims) in [(0, 2, [2usize, 2]), (1, 0, [2, 2]), (1, 2, [0, 2])] {
        // SAFETY: nothing is read or written for an empty output.
        unsafe {
            grid_sample_f32(
                [1.0f32].as_ptr(),
                [0.0f32; 2].as_ptr(),
                out.as_mut_ptr(),
                n,
                c,
                &[1, 1],
                &out_dims,
                Mode::Linear,
                Pad::Zeros,
                false,
                false,
            )
        };
    }
    assert_eq!(out, [7.0; 4]);
}
