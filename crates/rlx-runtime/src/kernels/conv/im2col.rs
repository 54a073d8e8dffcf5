//! The `Im2colGemm` path's producer: each pass's slice of the patch
//! matrix unfolded straight from the input into the product's stack
//! buffer, for outputs too narrow for the phase-plane grid (whose
//! `(kw - 1) * dw / sw` extra columns per row would cost more than the
//! unfolding's bookkeeping: a 7x7 output on a 9-wide grid).
//!
//! Patch row `(ci * kh + ki) * kw + kj`, column `ho * w_out + wo`, is
//! `x[ci, ho*sh + ki*dh - ph, wo*sw + kj*dw - pw]`, or 0 outside the input.

use std::ops::Range;

use rlx_core::pack::PANEL;

use super::{valid_outputs, Conv2dShape};

/// One row of a pass slice: panel `q` (counted from the slice's first
/// column) at `base + q * kc * PANEL`.
struct SliceRow {
    base: *mut f32,
    /// First column of the slice (a multiple of [`PANEL`]).
    first: usize,
    /// Rows of the slice.
    kc: usize,
}

impl SliceRow {
    /// Where column `q` of the row lives.
    fn at(&self, q: usize) -> *mut f32 {
        let q = q - self.first;
        self.base.wrapping_add((q / PANEL) * PANEL * self.kc + q % PANEL)
    }

    /// Writes `values` to columns `q0..q0 + values.len()`, one copy per
    /// panel the run crosses.
    ///
    /// # Safety
    ///
    /// The columns are inside the slice.
    unsafe fn put(&self, q0: usize, values: &[f32]) {
        let mut done = 0;
        while done < values.len() {
            let q = q0 + done;
            let n = (PANEL - q % PANEL).min(values.len() - done);
            // SAFETY: columns `q..q + n` are in one panel row of the slice.
            unsafe { std::ptr::copy_nonoverlapping(values.as_ptr().add(done), self.at(q), n) };
            done += n;
        }
    }

    /// Writes zeros to columns `q0..q1`.
    ///
    /// # Safety
    ///
    /// As [`SliceRow::put`].
    unsafe fn zero(&self, q0: usize, q1: usize) {
        let mut q = q0;
        while q < q1 {
            let n = (PANEL - q % PANEL).min(q1 - q);
            // SAFETY: as in `put`.
            unsafe { std::ptr::write_bytes(self.at(q), 0, n) };
            q += n;
        }
    }
}

/// Writes the pass slice [`crate::kernels::gemm::Producer`] asks for:
/// patch rows `p0..p0 + kc` of one group, the panels covering `cols`
/// (columns past the output's end zero), to `dst`.
///
/// # Safety
///
/// `x` valid for the group's `c_in / groups` input channels;
/// `p0 + kc <= patch_len`; `cols` inside `0..h_out * w_out`, starting on a
/// panel; `dst` valid for `kc * PANEL` writes per panel of `cols`.
pub(super) unsafe fn unfold_pass(
    x: *const f32,
    s: &Conv2dShape,
    p0: usize,
    kc: usize,
    cols: Range<usize>,
    dst: *mut f32,
) {
    let p = s.out_plane();
    let padded_end = cols.end.div_ceil(PANEL) * PANEL;
    for r in p0..p0 + kc {
        let (ci, ki, kj) = (r / (s.kh * s.kw), r / s.kw % s.kh, r % s.kw);
        let row = SliceRow { base: dst.wrapping_add((r - p0) * PANEL), first: cols.start, kc };
        let plane = x.wrapping_add(ci * s.h * s.w_in);
        let h_off = (ki * s.dh) as isize - s.ph as isize;
        let w_off = (kj * s.dw) as isize - s.pw as isize;
        let rows_ok = valid_outputs(s.h_out, s.sh, h_off, s.h);
        let cols_ok = valid_outputs(s.w_out, s.sw, w_off, s.w_in);
        // SAFETY: every `put`/`zero` is at a column of `cols` (or the last
        // panel's padding) of this slice row; every read is at an input
        // column in `cols_ok` of an input row `hi` (rows in `rows_ok`),
        // which map inside the channel's plane.
        unsafe {
            for ho in cols.start / s.w_out..cols.end.div_ceil(s.w_out) {
                let q0 = ho * s.w_out;
                // The output columns of row `ho` inside `cols`.
                let lo = cols.start.max(q0) - q0;
                let hi_w = cols.end.min(q0 + s.w_out) - q0;
                if !rows_ok.contains(&ho) || cols_ok.is_empty() {
                    row.zero(q0 + lo, q0 + hi_w);
                    continue;
                }
                let hi = (ho * s.sh) as isize + h_off;
                // Input index of output column 0 (may be negative; only
                // columns in `cols_ok` are read).
                let base = plane.wrapping_offset(hi * s.w_in as isize + w_off);
                let ok = cols_ok.start.clamp(lo, hi_w)..cols_ok.end.clamp(lo, hi_w);
                row.zero(q0 + lo, q0 + ok.start);
                row.zero(q0 + ok.end, q0 + hi_w);
                if s.sw == 1 {
                    row.put(q0 + ok.start, std::slice::from_raw_parts(base.wrapping_add(ok.start), ok.len()));
                } else {
                    // Gathered a panel row at a time.
                    let mut buf = [0.0f32; PANEL];
                    let mut wo = ok.start;
                    while wo < ok.end {
                        let n = (PANEL - (q0 + wo) % PANEL).min(ok.end - wo);
                        for (i, v) in buf[..n].iter_mut().enumerate() {
                            *v = *base.wrapping_add((wo + i) * s.sw);
                        }
                        row.put(q0 + wo, &buf[..n]);
                        wo += n;
                    }
                }
            }
            if cols.end == p {
                row.zero(p, padded_end);
            }
        }
    }
}
