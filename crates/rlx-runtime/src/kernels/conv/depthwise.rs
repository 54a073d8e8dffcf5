//! Depthwise convolution (`groups == c_in == c_out`): one `kh x kw` filter
//! per channel, applied directly.
//!
//! Each output plane starts at 0 and takes one fused multiply-add per
//! window position in `(ki, kj)` order, a whole output row segment at a
//! time through the shared `axpy` (strided inputs are first gathered into
//! a stack buffer, so every position goes through the same fused `axpy`);
//! then the bias is added.

use super::{valid_outputs, Conv2dShape, SendPtr};
use crate::kernels::attention::axpy_f32;

/// Strided inputs gathered per `axpy`.
const GATHER: usize = 256;

/// # Safety
///
/// As [`super::conv2d_f32`] with `groups == c_in == c_out`.
pub(super) unsafe fn depthwise(
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

/// # Safety
///
/// As [`depthwise`]; `plane < n * c_out`, written by this call only.
unsafe fn one_plane(x: *const f32, w: *const f32, bias: *const f32, out: *mut f32, s: &Conv2dShape, plane: usize) {
    let c = plane % s.c_out;
    let in_plane = x.wrapping_add(plane * s.h * s.w_in);
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
            if cols.is_empty() {
                continue;
            }
            // SAFETY: filter `c`, position `(ki, kj)`.
            let wv = unsafe { *w.add((c * s.kh + ki) * s.kw + kj) };
            for ho in rows.clone() {
                let hi = (ho * s.sh) as isize + h_off;
                // Input index of output column 0; only `cols` are read.
                let base = in_plane.wrapping_offset(hi * s.w_in as isize + w_off);
                let out_row = dst[ho * s.w_out..].as_mut_ptr();
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
