//! `Col2Im`: column rows summed into an image, the adjoint of im2col
//! (what a transposed convolution computes after its product).

use rlx_core::shapes::Col2ImShape;

use crate::threads::par_for;

/// Writes every `[n, c]` image plane of `dst` (see the `Col2Im` kind):
/// starts at `bias[ch]` (or 0), then adds column rows in order of `(ki,
/// kj)`, positions in order of `(iy, ix)`. One plane per task, so the
/// order, and the bits, do not depend on `par`.
///
/// # Safety
///
/// `src` valid for `n * c * kh * kw * h_cols * w_cols` f32 reads, `bias`
/// null or valid for `c`, `dst` for `n * c * h * w` writes, overlapping no
/// input.
pub unsafe fn col2im_f32(src: *const f32, bias: *const f32, dst: *mut f32, s: &Col2ImShape, par: bool) {
    let planes = s.n * s.c;
    let (plane, cols) = (s.h * s.w, s.h_cols * s.w_cols);
    if planes == 0 || plane == 0 {
        return;
    }
    let (src, bias, dst) = (src as usize, bias as usize, dst as usize);
    let work = |first: usize, count: usize| {
        for p in first..first + count {
            // SAFETY: plane `p` of `dst` and its `kh * kw` column rows of
            // `src`, inside the caller's extents; tasks write disjoint planes.
            unsafe {
                let out = std::slice::from_raw_parts_mut((dst as *mut f32).add(p * plane), plane);
                let start = if bias == 0 { 0.0 } else { *(bias as *const f32).add(p % s.c) };
                out.fill(start);
                let rows = (src as *const f32).add(p * s.kh * s.kw * cols);
                add_plane(out, rows, s);
            }
        }
    };
    if par {
        par_for(planes, 1, &work);
    } else {
        work(0, planes);
    }
}

/// Adds the `kh * kw` column rows at `rows` to one image plane.
///
/// # Safety
///
/// `rows` valid for `kh * kw * h_cols * w_cols` reads.
unsafe fn add_plane(out: &mut [f32], rows: *const f32, s: &Col2ImShape) {
    let cols = s.h_cols * s.w_cols;
    for ki in 0..s.kh {
        for kj in 0..s.kw {
            // SAFETY: row `ki * kw + kj` of the plane's column rows.
            let row = unsafe { std::slice::from_raw_parts(rows.add((ki * s.kw + kj) * cols), cols) };
            for iy in 0..s.h_cols {
                // y = iy * sh + ki * dh - ph, skipped outside [0, h).
                let Some(y) = (iy * s.sh + ki * s.dh).checked_sub(s.ph).filter(|&y| y < s.h) else { continue };
                let out_row = &mut out[y * s.w..(y + 1) * s.w];
                for (ix, &v) in row[iy * s.w_cols..(iy + 1) * s.w_cols].iter().enumerate() {
                    if let Some(x) = (ix * s.sw + kj * s.dw).checked_sub(s.pw).filter(|&x| x < s.w) {
                        out_row[x] += v;
                    }
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn values(n: usize, seed: usize) -> Vec<f32> {
        (0..n).map(|i| ((i * 7 + seed * 13) % 19) as f32 * 0.25 - 2.0).collect()
    }

    /// The definition, one output pixel at a time (a different order of
    /// additions: compared with a tolerance).
    fn reference(src: &[f32], bias: Option<&[f32]>, s: &Col2ImShape) -> Vec<f32> {
        let mut out = vec![0.0f64; s.n * s.c * s.h * s.w];
        for b in 0..s.n {
            for ch in 0..s.c {
                for y in 0..s.h {
                    for x in 0..s.w {
                        let mut acc = bias.map_or(0.0, |bs| f64::from(bs[ch]));
                        for ki in 0..s.kh {
                            for kj in 0..s.kw {
                                for iy in 0..s.h_cols {
                                    for ix in 0..s.w_cols {
                                        let yy = (iy * s.sh + ki * s.dh) as isize - s.ph as isize;
                                        let xx = (ix * s.sw + kj * s.dw) as isize - s.pw as isize;
                                        if yy == y as isize && xx == x as isize {
                                            let row = ((b * s.c + ch) * s.kh + ki) * s.kw + kj;
                                            acc += f64::from(src[row * s.h_cols * s.w_cols + iy * s.w_cols + ix]);
                                        }
                                    }
                                }
                            }
                        }
                        out[((b * s.c + ch) * s.h + y) * s.w + x] = acc;
                    }
                }
            }
        }
        out.into_iter().map(|v| v as f32).collect()
    }

    fn shape(
        n: usize,
        c: usize,
        hw: (usize, usize),
        cols: (usize, usize),
        k: (usize, usize),
        sp: [usize; 6],
    ) -> Col2ImShape {
        let [sh, sw, ph, pw, dh, dw] = sp;
        Col2ImShape { n, c, h: hw.0, w: hw.1, h_cols: cols.0, w_cols: cols.1, kh: k.0, kw: k.1, sh, sw, ph, pw, dh, dw }
    }

    #[test]
    fn matches_the_definition_over_awkward_shapes() {
        let cases = [
            // A transposed 3x3 stride-2 conv of a 4x5 input, pad 1, output padding 1.
            shape(2, 3, (8, 10), (4, 5), (3, 3), [2, 2, 1, 1, 1, 1]),
            // Size 1 everywhere.
            shape(1, 1, (1, 1), (1, 1), (1, 1), [1, 1, 0, 0, 1, 1]),
            // Dilation, asymmetric strides, padding larger than a window.
            shape(1, 2, (7, 9), (3, 4), (2, 3), [3, 2, 2, 3, 2, 1]),
            // Columns mostly outside the image; pixels no column reaches.
            shape(1, 1, (3, 3), (2, 2), (2, 2), [4, 4, 0, 0, 1, 1]),
            // A 1-D case as height 1.
            shape(3, 2, (1, 17), (1, 8), (1, 4), [1, 2, 0, 1, 1, 1]),
        ];
        for s in cases {
            let src = values(s.n * s.c * s.kh * s.kw * s.h_cols * s.w_cols, 1);
            let bias = values(s.c, 2);
            for (b, par) in [(None, false), (Some(&bias[..]), false), (Some(&bias[..]), true)] {
                let mut out = vec![f32::NAN; s.n * s.c * s.h * s.w];
                let bp = b.map_or(std::ptr::null(), <[f32]>::as_ptr);
                // SAFETY: every buffer has the extent the shape asks for.
                unsafe { col2im_f32(src.as_ptr(), bp, out.as_mut_ptr(), &s, par) };
                let want = reference(&src, b, &s);
                for (i, (g, w)) in out.iter().zip(&want).enumerate() {
                    assert!((g - w).abs() <= 1e-5 * (1.0 + w.abs()), "{s:?} bias {} at {i}: {g} vs {w}", b.is_some());
                }
            }
        }
    }

    #[test]
    fn serial_and_split_give_the_same_bits_and_empty_images_write_nothing() {
        let s = shape(2, 4, (9, 9), (5, 5), (3, 3), [2, 2, 1, 1, 1, 1]);
        let src = values(s.n * s.c * s.kh * s.kw * s.h_cols * s.w_cols, 3);
        let (mut a, mut b) = (vec![0.0f32; s.n * s.c * 81], vec![0.0f32; s.n * s.c * 81]);
        // SAFETY: as above.
        unsafe {
            col2im_f32(src.as_ptr(), std::ptr::null(), a.as_mut_ptr(), &s, false);
            col2im_f32(src.as_ptr(), std::ptr::null(), b.as_mut_ptr(), &s, true);
        }
        assert!(a.iter().zip(&b).all(|(x, y)| x.to_bits() == y.to_bits()));
        let empty = shape(0, 4, (9, 9), (5, 5), (3, 3), [2, 2, 1, 1, 1, 1]);
        // SAFETY: nothing is read or written for an empty image.
        unsafe { col2im_f32(std::ptr::null(), std::ptr::null(), std::ptr::null_mut(), &empty, true) };
    }
}
