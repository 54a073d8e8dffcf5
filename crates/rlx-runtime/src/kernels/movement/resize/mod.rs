//! `Resize` along one axis: ONNX's coordinate transformations and its
//! nearest, linear and cubic modes, with antialiasing, `exclude_outside`
//! and `tf_crop_and_resize`'s extrapolation, as ONNX's reference computes
//! them (coordinates, windows and weights in f64, each output rounded to
//! f32 once).
//!
//! Two paths (`rlx_core::plan::resize_weighted` picks one at gen time):
//!
//! - direct (nearest, plain linear): per row and output index the source
//!   coordinate and at most two samples, no table and no scratch;
//! - weighted (cubic, linear with antialias): the window start and weights
//!   of every output index are computed once per call into scratch (they
//!   do not depend on the row), then each row is a dot product per output.
//!
//! Rows of `outer` split over threads on both paths; a row is written by
//! one task in one order, so the bits do not depend on `par`.

mod window;

#[cfg(test)]
mod tests;

use rlx_core::plan::{resize_axis_scale, resize_taps, resize_weighted};
pub use rlx_core::shapes::ResizeShape;
use rlx_core::ResizeCoord;

use crate::threads::par_for;
pub(crate) use window::{taps, window};

/// How one axis maps an output index to a source coordinate.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Axis {
    in_len: usize,
    out_len: usize,
    /// The scale in f64 (`plan::resize_axis_scale`).
    s: f64,
    coord: ResizeCoord,
    /// `[roi_start, roi_end]` of `tf_crop_and_resize`.
    roi: (f64, f64),
}

impl Axis {
    pub(crate) fn new(p: &ResizeShape) -> Axis {
        Axis {
            in_len: p.in_len,
            out_len: p.out_len,
            s: resize_axis_scale(p.in_len, p.out_len, p.scale, p.by_size),
            coord: p.coord,
            roi: (f64::from(p.roi_start), f64::from(p.roi_end)),
        }
    }

    /// The scale in f64.
    pub(crate) fn scale(&self) -> f64 {
        self.s
    }

    /// The source coordinate of output index `o`, in f64 as ONNX's
    /// reference computes it (`width` is `s * in_len`, not the rounded
    /// size).
    pub(crate) fn source(&self, o: usize) -> f64 {
        let (o, n) = (o as f64, self.in_len as f64);
        let (s, width) = (self.s, self.s * n);
        match self.coord {
            ResizeCoord::HalfPixel => (o + 0.5) / s - 0.5,
            ResizeCoord::HalfPixelSymmetric => {
                let offset = n / 2.0 * (1.0 - self.out_len as f64 / width);
                offset + (o + 0.5) / s - 0.5
            }
            ResizeCoord::PytorchHalfPixel if width == 1.0 => -0.5,
            ResizeCoord::PytorchHalfPixel => (o + 0.5) / s - 0.5,
            ResizeCoord::AlignCorners if width == 1.0 => 0.0,
            ResizeCoord::AlignCorners => o * (n - 1.0) / (width - 1.0),
            ResizeCoord::Asymmetric => o / s,
            ResizeCoord::TfCropAndResize => {
                let (start, end) = self.roi;
                let x = if width == 1.0 {
                    (end - start) * (n - 1.0) / 2.0
                } else {
                    o * (end - start) * (n - 1.0) / (width - 1.0)
                };
                x + start * (n - 1.0)
            }
        }
    }

    /// Whether the output at coordinate `x` is the extrapolation value:
    /// with `tf_crop_and_resize`, a coordinate outside `[0, in_len - 1]`
    /// (TensorFlow's `CropAndResize`, which ONNX follows).
    pub(crate) fn extrapolated(&self, x: f64) -> bool {
        self.coord == ResizeCoord::TfCropAndResize && (x < 0.0 || x > self.in_len as f64 - 1.0)
    }
}

/// `dst [outer, out_len, inner]` = `src [outer, in_len, inner]` resized
/// along the middle axis as the `Resize` thunk says (`p`'s fields are the
/// thunk's).
///
/// # Safety
///
/// `src` valid for `outer * in_len * inner` f32 reads, `dst` for `outer *
/// out_len * inner` writes, not overlapping; `in_len > 0` when `out_len >
/// 0`; the shape one the validator accepts (a positive finite scale unless
/// `by_size`, no antialias with nearest). On the weighted path `scratch`
/// is valid for `plan::resize_scratch_bytes(p)` bytes of writes, aligned
/// to 8, and used by no one else during the call.
pub unsafe fn resize_f32(src: *const f32, dst: *mut f32, p: &ResizeShape, scratch: *mut f64, par: bool) {
    if p.outer * p.out_len * p.inner == 0 {
        return;
    }
    let axis = Axis::new(p);
    if resize_weighted(p.mode, p.antialias) {
        let n_taps = resize_taps(p.mode, p.antialias, axis.scale()).expect("the validator bounds the taps");
        // SAFETY: forwarded from the caller; the scratch holds the table
        // of `n_taps` per output (`plan::resize_scratch_bytes`).
        unsafe { resize_weighted_rows(src, dst, p, &axis, n_taps, scratch, par) }
    } else {
        // SAFETY: forwarded from the caller.
        unsafe { resize_direct_rows(src, dst, p, &axis, par) }
    }
}

/// Runs `work(first, count)` over the rows of `outer`, split over threads
/// when `par`.
fn rows(outer: usize, par: bool, work: &(dyn Fn(usize, usize) + Sync)) {
    if par {
        par_for(outer, 1, work);
    } else {
        work(0, outer);
    }
}

/// Writes `value` to the `inner` floats at `out`.
///
/// # Safety
///
/// `out` valid for `inner` f32 writes.
unsafe fn fill(out: *mut f32, inner: usize, value: f32) {
    for j in 0..inner {
        // SAFETY: `j < inner`, inside the caller's extent.
        unsafe { *out.add(j) = value };
    }
}

/// The direct path: nearest and plain linear, coordinates and the two
/// taps computed per row and output index (no table), as before the
/// weighted path existed.
///
/// # Safety
///
/// As [`resize_f32`] without the scratch.
unsafe fn resize_direct_rows(src: *const f32, dst: *mut f32, p: &ResizeShape, axis: &Axis, par: bool) {
    let (in_len, out_len, inner, mode, extrapolation) = (p.in_len, p.out_len, p.inner, p.mode, p.extrapolation);
    let (src, dst) = (src as usize, dst as usize);
    let work = |first: usize, count: usize| {
        for row in first..first + count {
            for o in 0..out_len {
                let x = axis.source(o);
                let out = (dst as *mut f32).wrapping_add((row * out_len + o) * inner);
                if axis.extrapolated(x) {
                    // SAFETY: row `o` of destination row `row`, inside the
                    // caller's extent.
                    unsafe { fill(out, inner, extrapolation) };
                    continue;
                }
                let (i0, i1, w1) = taps(x, in_len, mode);
                // SAFETY: rows `i0`, `i1` of source row `row` and row `o` of
                // destination row `row`, inside the caller's extents; rows
                // of `outer` are written by one task each.
                unsafe {
                    let a = (src as *const f32).add((row * in_len + i0) * inner);
                    let b = (src as *const f32).add((row * in_len + i1) * inner);
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
    rows(p.outer, par, &work);
}

/// A window start that marks an extrapolated output in the table.
const EXTRAPOLATED: i64 = i64::MIN;

/// Outputs of one row the weighted path accumulates at a time.
const CHUNK: usize = 16;

/// The weighted path: the table of window starts (`out_len` i64 after the
/// weights) and weights (`out_len * taps` f64) built once, then per row
/// and output index a dot product of the weights with the window's
/// samples (indices clamped to the source: the edge padding), summed in
/// f64 in tap order and rounded once.
///
/// # Safety
///
/// As [`resize_f32`], with `scratch` holding `out_len * (n_taps + 1)` f64.
unsafe fn resize_weighted_rows(
    src: *const f32,
    dst: *mut f32,
    p: &ResizeShape,
    axis: &Axis,
    n_taps: usize,
    scratch: *mut f64,
    par: bool,
) {
    let (in_len, out_len, inner) = (p.in_len, p.out_len, p.inner);
    // SAFETY: the caller's scratch holds `out_len * n_taps` weights
    // followed by `out_len` starts (8 bytes each, so the starts stay
    // aligned), and no one else uses it during the call.
    let (weights, starts) = unsafe {
        (
            std::slice::from_raw_parts_mut(scratch, out_len * n_taps),
            std::slice::from_raw_parts_mut(scratch.add(out_len * n_taps).cast::<i64>(), out_len),
        )
    };
    for (o, (start, w)) in starts.iter_mut().zip(weights.chunks_exact_mut(n_taps)).enumerate() {
        let x = axis.source(o);
        *start = if axis.extrapolated(x) { EXTRAPOLATED } else { window(x, in_len, axis.scale(), p, w) };
    }
    let (weights, starts) = (&*weights, &*starts);
    let last = in_len as i64 - 1;
    let (src, dst) = (src as usize, dst as usize);
    let work = |first: usize, count: usize| {
        for row in first..first + count {
            let base = (src as *const f32).wrapping_add(row * in_len * inner);
            for (o, (&start, w)) in starts.iter().zip(weights.chunks_exact(n_taps)).enumerate() {
                let out = (dst as *mut f32).wrapping_add((row * out_len + o) * inner);
                if start == EXTRAPOLATED {
                    // SAFETY: row `o` of destination row `row`, inside the
                    // caller's extent.
                    unsafe { fill(out, inner, p.extrapolation) };
                    continue;
                }
                if inner == 1 {
                    let mut acc = 0.0f64;
                    for (k, &wk) in w.iter().enumerate() {
                        let i = (start + k as i64).clamp(0, last) as usize;
                        // SAFETY: `i < in_len`: inside source row `row`.
                        acc += wk * f64::from(unsafe { *base.add(i) });
                    }
                    // SAFETY: row `o` of destination row `row`, which one
                    // task writes.
                    unsafe { *out = acc as f32 };
                    continue;
                }
                // `inner` in chunks of f64 accumulators on the stack, taps
                // outer: each tap reads a contiguous run of its source row
                // (the loop vectorizes), and every output still sums its
                // taps in order from 0, as the single sum above.
                for j0 in (0..inner).step_by(CHUNK) {
                    let len = CHUNK.min(inner - j0);
                    let mut acc = [0.0f64; CHUNK];
                    for (k, &wk) in w.iter().enumerate() {
                        let i = (start + k as i64).clamp(0, last) as usize;
                        // SAFETY: `i < in_len` and `j0 + len <= inner`: inside
                        // source row `row`.
                        let run = unsafe { std::slice::from_raw_parts(base.add(i * inner + j0), len) };
                        for (a, &x) in acc.iter_mut().zip(run) {
                            *a += wk * f64::from(x);
                        }
                    }
                    for (jj, &a) in acc[..len].iter().enumerate() {
                        // SAFETY: inside row `o` of destination row `row`,
                        // which one task writes.
                        unsafe { *out.add(j0 + jj) = a as f32 };
                    }
                }
            }
        }
    };
    rows(p.outer, par, &work);
}
