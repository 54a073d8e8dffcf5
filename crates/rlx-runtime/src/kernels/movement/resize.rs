//! `Resize` along one axis: ONNX's coordinate transformations and its
//! nearest and linear modes, with the reference's edge rule (a neighbour
//! outside the source is the edge value).

use rlx_core::{ResizeCoord, ResizeMode};

use crate::threads::par_for;

/// The axis' scale in f64: the given one, or with `by_size` the exact
/// ratio `out_len / in_len` (ONNX computes a `sizes` scale in f64; its f32
/// rounding would move coordinates that fall on a tie).
pub fn axis_scale(in_len: usize, out_len: usize, scale: f32, by_size: bool) -> f64 {
    if by_size {
        out_len as f64 / in_len as f64
    } else {
        f64::from(scale)
    }
}

/// The source coordinate of output index `o`, in f64 as ONNX's reference
/// computes it (`output_width` is `s * in_len`, not the rounded size).
pub fn source_coordinate(o: usize, in_len: usize, out_len: usize, s: f64, coord: ResizeCoord) -> f64 {
    let (o, n) = (o as f64, in_len as f64);
    let width = s * n;
    match coord {
        ResizeCoord::HalfPixel => (o + 0.5) / s - 0.5,
        ResizeCoord::HalfPixelSymmetric => {
            let offset = n / 2.0 * (1.0 - out_len as f64 / width);
            offset + (o + 0.5) / s - 0.5
        }
        ResizeCoord::PytorchHalfPixel if width == 1.0 => -0.5,
        ResizeCoord::PytorchHalfPixel => (o + 0.5) / s - 0.5,
        ResizeCoord::AlignCorners if width == 1.0 => 0.0,
        ResizeCoord::AlignCorners => o * (n - 1.0) / (width - 1.0),
        ResizeCoord::Asymmetric => o / s,
    }
}

/// What output index `o` reads: `(i0, i1, w1)` with the value `(1 - w1) *
/// src[i0] + w1 * src[i1]` (nearest: `w1` is 0 or 1 and `i0 == i1`).
/// Indices are clamped to the source, which is the reference's edge rule.
pub fn taps(x: f64, in_len: usize, mode: ResizeMode) -> (usize, usize, f64) {
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
    }
}

/// `dst [outer, out_len, inner]` = `src [outer, in_len, inner]` resized
/// along the middle axis (scale: [`axis_scale`]). Linear values are computed in f64 and rounded
/// once. Rows of `outer` split over threads when `par` (same bits).
///
/// # Safety
///
/// `src` valid for `outer * in_len * inner` f32 reads, `dst` for `outer *
/// out_len * inner` writes, not overlapping; `in_len > 0` when `out_len >
/// 0`.
#[allow(clippy::too_many_arguments)]
pub unsafe fn resize_f32(
    src: *const f32,
    dst: *mut f32,
    outer: usize,
    in_len: usize,
    out_len: usize,
    inner: usize,
    scale: f32,
    by_size: bool,
    mode: ResizeMode,
    coord: ResizeCoord,
    par: bool,
) {
    if outer * out_len * inner == 0 {
        return;
    }
    let s = axis_scale(in_len, out_len, scale, by_size);
    let (src, dst) = (src as usize, dst as usize);
    let work = |first: usize, count: usize| {
        for row in first..first + count {
            for o in 0..out_len {
                let (i0, i1, w1) = taps(source_coordinate(o, in_len, out_len, s, coord), in_len, mode);
                // SAFETY: rows `i0`, `i1` of source row `row` and row `o` of
                // destination row `row`, inside the caller's extents; rows
                // of `outer` are written by one task each.
                unsafe {
                    let a = (src as *const f32).add((row * in_len + i0) * inner);
                    let b = (src as *const f32).add((row * in_len + i1) * inner);
                    let out = (dst as *mut f32).add((row * out_len + o) * inner);
                    for j in 0..inner {
                        *out.add(j) = if w1 == 0.0 {
                            *a.add(j)
                        } else {
                            ((1.0 - w1) * f64::from(*a.add(j)) + w1 * f64::from(*b.add(j))) as f32
                        };
                    }
                }
            }
        }
    };
    if par {
        par_for(outer, 1, &work);
    } else {
        work(0, outer);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn coordinates_follow_the_onnx_formulas() {
        // Upsampling 4 -> 8 (scale 2).
        assert_eq!(source_coordinate(0, 4, 8, 2.0, ResizeCoord::HalfPixel), -0.25);
        assert_eq!(source_coordinate(3, 4, 8, 2.0, ResizeCoord::Asymmetric), 1.5);
        assert_eq!(source_coordinate(7, 4, 8, 2.0, ResizeCoord::AlignCorners), 3.0);
        assert_eq!(source_coordinate(0, 4, 1, 0.25, ResizeCoord::PytorchHalfPixel), -0.5);
        assert_eq!(source_coordinate(0, 4, 1, 0.25, ResizeCoord::AlignCorners), 0.0);
        // scale 0.6 of 5: width 3.0000001, out 3: the symmetric offset is tiny.
        let s = f64::from(0.6f32);
        let x = source_coordinate(1, 5, 3, s, ResizeCoord::HalfPixelSymmetric);
        let plain = source_coordinate(1, 5, 3, s, ResizeCoord::HalfPixel);
        assert!((x - plain).abs() < 1e-6 && x != plain);
    }

    #[test]
    fn a_size_scale_is_the_exact_ratio() {
        // 6 -> 4: f32(2/3) is above 2/3, so o = 2 would map to 2.9999999
        // (floor 2) instead of the spec's 3.
        let exact = axis_scale(6, 4, 4.0 / 6.0, true);
        let x = source_coordinate(2, 6, 4, exact, ResizeCoord::Asymmetric);
        assert_eq!(taps(x, 6, ResizeMode::NearestFloor), (3, 3, 0.0));
        let rounded = axis_scale(6, 4, 4.0 / 6.0, false);
        let x = source_coordinate(2, 6, 4, rounded, ResizeCoord::Asymmetric);
        assert_eq!(taps(x, 6, ResizeMode::NearestFloor), (2, 2, 0.0));
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

    /// Each output through the definition (coordinate, taps, f64 blend).
    fn reference(
        src: &[f32],
        (outer, n, m, inner): (usize, usize, usize, usize),
        s: f64,
        mode: ResizeMode,
        coord: ResizeCoord,
    ) -> Vec<f32> {
        let mut out = Vec::new();
        for r in 0..outer {
            for o in 0..m {
                let x = source_coordinate(o, n, m, s, coord);
                for j in 0..inner {
                    let at = |i: f64| f64::from(src[(r * n + (i.max(0.0) as usize).min(n - 1)) * inner + j]);
                    let v = match mode {
                        ResizeMode::Linear => {
                            let f = x.floor();
                            if f == x {
                                at(f)
                            } else {
                                (1.0 - (x - f)) * at(f) + (x - f) * at(f + 1.0)
                            }
                        }
                        _ => {
                            let (i, _, _) = taps(x, n, mode);
                            at(i as f64)
                        }
                    };
                    out.push(v as f32);
                }
            }
        }
        out
    }

    #[test]
    fn resizes_match_the_definition_over_awkward_shapes() {
        let shapes = [(1, 4, 8, 1), (3, 5, 3, 7), (2, 1, 4, 3), (1, 7, 1, 17), (2, 6, 6, 1)];
        for (outer, n, m, inner) in shapes {
            let src: Vec<f32> = (0..outer * n * inner).map(|i| ((i * 37) % 23) as f32 * 0.5 - 3.0).collect();
            let scale = m as f32 / n as f32;
            for mode in ResizeMode::ALL {
                for coord in ResizeCoord::ALL {
                    for (by_size, par) in [(false, false), (true, false), (true, true)] {
                        let mut out = vec![f32::NAN; outer * m * inner];
                        // SAFETY: buffers of the documented extents.
                        unsafe {
                            resize_f32(
                                src.as_ptr(),
                                out.as_mut_ptr(),
                                outer,
                                n,
                                m,
                                inner,
                                scale,
                                by_size,
                                *mode,
                                *coord,
                                par,
                            )
                        };
                        let s = axis_scale(n, m, scale, by_size);
                        let want = reference(&src, (outer, n, m, inner), s, *mode, *coord);
                        assert_eq!(
                            out, want,
                            "{outer}x{n}->{m}x{inner} {mode:?} {coord:?} by_size {by_size} par {par}"
                        );
                    }
                }
            }
        }
    }
}
