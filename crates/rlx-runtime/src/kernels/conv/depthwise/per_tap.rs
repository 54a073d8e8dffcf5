//! The per-tap path, for shapes the banded kernel cannot stage on the
//! stack (a filter of more than `MAX_TAPS` taps, or a window so dilated
//! that one output row's phase planes overflow the budget): per plane and
//! tap, one `axpy` over each output row segment.
//!
//! Each output plane starts at +0 and takes one fused multiply-add per tap
//! in `(ki, kj)` order, then the bias: the banded kernel's function. A tap
//! that falls in the padding multiplies a zero; with a finite weight that
//! adds a signed zero to an accumulator that is never -0 (it starts at +0,
//! and a fused multiply-add only returns -0 from -0 + -0), so it is
//! skipped; a non-finite weight takes it through `axpy` on zeros, so even
//! the NaNs are where the banded kernel puts them.

use super::super::{valid_outputs, Conv2dShape, SendPtr};
use crate::kernels::attention::axpy_f32;

/// Strided inputs gathered per `axpy`, and the zeros a non-finite weight
/// multiplies in the padding.
const GATHER: usize = 256;

/// # Safety
///
/// As [`super::depthwise`].
pub(super) unsafe fn depthwise_rows(
    x: *const f32,
    w: *const f32,
    bias: *const f32,
    out: *mut f32,
    s: &Conv2dShape,
    par: bool,
) {
    let planes = s.n * s.c_out;
    let (x, w, bias, out) = (SendPtr(x.cast_mut()), SendPtr(w.cast_mut()), SendPtr(bias.cast_mut()), SendPtr(out));
    let run = |start: usize, len: usize| {
        for plane in start..start + len {
            // SAFETY: plane `plane` (image b, channel c) of each operand.
            unsafe { one_plane(x.get(), w.get(), bias.get(), out.get(), s, plane) };
        }
    };
    if par {
        crate::threads::par_for(planes, crate::kernels::reduce::units_per_chunk(s.h_out * s.w_out * s.kh * s.kw), &run);
    } else {
        run(0, planes);
    }
}

/// `y[..len] = fma(wv, 0, y)` in `axpy` steps.
///
/// # Safety
///
/// `y` valid for reads and writes of `len` f32.
unsafe fn axpy_zeros(wv: f32, y: *mut f32, len: usize) {
    let zeros = [0.0f32; GATHER];
    let mut i = 0;
    while i < len {
        let step = GATHER.min(len - i);
        // SAFETY: `i + step <= len`; the zeros are a separate buffer.
        unsafe { axpy_f32(wv, zeros.as_ptr(), y.add(i), step) };
        i += step;
    }
}

/// # Safety
///
/// As [`depthwise_rows`]; `plane < n * c_out`, written by this call only.
unsafe fn one_plane(x: *const f32, w: *const f32, bias: *const f32, out: *mut f32, s: &Conv2dShape, plane: usize) {
    let c = plane % s.c_out;
    let in_plane = x.wrapping_add(super::input_plane(s, plane) * s.h * s.w_in);
    let p = s.h_out * s.w_out;
    // SAFETY: this call's output plane; nothing else references it.
    let dst = unsafe { std::slice::from_raw_parts_mut(out.add(plane * p), p) };
    dst.fill(0.0);
    let mut gathered = [0.0f32; GATHER];
    for ki in 0..s.kh {
        let h_off = (ki * s.dh) as isize - s.ph as isize;
        let rows = valid_outputs(s.h_out, s.sh, h_off, s.h);
        for kj in 0..s.kw {
            let w_off = (kj * s.dw) as isize - s.pw as isize;
            let cols = valid_outputs(s.w_out, s.sw, w_off, s.w_in);
            // SAFETY: filter `c`, position `(ki, kj)`.
            let wv = unsafe { *w.add((c * s.kh + ki) * s.kw + kj) };
            let pad_taps = !wv.is_finite();
            for ho in 0..s.h_out {
                let out_row = dst[ho * s.w_out..].as_mut_ptr();
                if !rows.contains(&ho) || cols.is_empty() {
                    if pad_taps {
                        // SAFETY: output row `ho` of this plane.
                        unsafe { axpy_zeros(wv, out_row, s.w_out) };
                    }
                    continue;
                }
                if pad_taps {
                    // SAFETY: the row's columns outside `cols`.
                    unsafe {
                        axpy_zeros(wv, out_row, cols.start);
                        axpy_zeros(wv, out_row.add(cols.end), s.w_out - cols.end);
                    }
                }
                let hi = (ho * s.sh) as isize + h_off;
                // Input index of output column 0; only `cols` are read.
                let base = in_plane.wrapping_offset(hi * s.w_in as isize + w_off);
                if s.sw == 1 {
                    // SAFETY: columns `cols` map inside input row `hi`;
                    // the output row segment is inside this plane.
                    unsafe { axpy_f32(wv, base.wrapping_add(cols.start), out_row.add(cols.start), cols.len()) };
                } else {
                    let mut wo = cols.start;
                    while wo < cols.end {
                        let len = GATHER.min(cols.end - wo);
                        for (j, g) in gathered[..len].iter_mut().enumerate() {
                            // SAFETY: column `wo + j` maps inside row `hi`.
                            *g = unsafe { *base.wrapping_add((wo + j) * s.sw) };
                        }
                        // SAFETY: stack buffer and output segment, disjoint.
                        unsafe { axpy_f32(wv, gathered.as_ptr(), out_row.add(wo), len) };
                        wo += len;
                    }
                }
            }
        }
    }
    if !bias.is_null() {
        // SAFETY: bias `c`.
        let b = unsafe { *bias.add(c) };
        dst.iter_mut().for_each(|v| *v += b);
    }
}
