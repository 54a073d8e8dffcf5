//! Unfolding one group of one image into the patch matrix, written in the
//! tiled GEMM's panel layout (`rlx_core::pack`) so the product reads it
//! contiguously.

use rlx_core::pack::PANEL;

use super::{valid_outputs, Conv2dShape, SendPtr};

/// The patch matrix row `r` as it will be packed: 16 values at a time, one
/// panel row each.
struct PackedRow {
    /// Element `(r, 0)` of the packed matrix.
    base: *mut f32,
    /// Rows of the matrix (the stride between panels is `rows * PANEL`).
    rows: usize,
}

impl PackedRow {
    /// Where column `q` of the row lives.
    fn at(&self, q: usize) -> *mut f32 {
        self.base.wrapping_add((q / PANEL) * PANEL * self.rows + q % PANEL)
    }

    /// Writes `values` to columns `q0..q0 + values.len()`, one copy per
    /// panel the run crosses.
    ///
    /// # Safety
    ///
    /// The columns are inside the packed matrix; no other thread writes
    /// row `r`.
    unsafe fn put(&self, q0: usize, values: &[f32]) {
        let mut done = 0;
        while done < values.len() {
            let q = q0 + done;
            let n = (PANEL - q % PANEL).min(values.len() - done);
            // SAFETY: columns `q..q + n` are in one panel row, inside the
            // matrix (the caller's bounds).
            unsafe { std::ptr::copy_nonoverlapping(values.as_ptr().add(done), self.at(q), n) };
            done += n;
        }
    }

    /// Writes zeros to columns `q0..q1`.
    ///
    /// # Safety
    ///
    /// As [`PackedRow::put`].
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

/// Writes the patch matrix of one group, packed: row `(ci * kh + ki) * kw
/// + kj`, column `ho * w_out + wo` holds
/// `x[ci, ho*sh + ki*dh - ph, wo*sw + kj*dw - pw]`, or 0 outside the
/// input; the last panel's columns past `h_out * w_out` are 0. Rows are
/// independent, so `par` splits them over the pool.
///
/// # Safety
///
/// `x` valid for reads of `(c_in / groups) * h * w_in` f32 (the group's
/// channels); `col` valid for writes of `packed_len((c_in / groups) * kh *
/// kw, h_out * w_out)` f32, not overlapping `x`.
pub(super) unsafe fn im2col(x: *const f32, s: &Conv2dShape, col: *mut f32, par: bool) {
    let rows = s.c_in_g() * s.kh * s.kw;
    let p = s.out_plane();
    let p_padded = p.div_ceil(PANEL) * PANEL;
    let (x, col) = (SendPtr(x.cast_mut()), SendPtr(col));
    let run = |start: usize, len: usize| {
        for r in start..start + len {
            let (ci, ki, kj) = (r / (s.kh * s.kw), r / s.kw % s.kh, r % s.kw);
            // Row `r` of the packed matrix, written only here.
            let dst = PackedRow { base: col.get().wrapping_add(r * PANEL), rows };
            let plane = x.get().cast_const().wrapping_add(ci * s.h * s.w_in);
            let h_off = (ki * s.dh) as isize - s.ph as isize;
            let w_off = (kj * s.dw) as isize - s.pw as isize;
            let rows_ok = valid_outputs(s.h_out, s.sh, h_off, s.h);
            let cols_ok = valid_outputs(s.w_out, s.sw, w_off, s.w_in);
            // SAFETY: every `put`/`zero` is at a column below `p_padded` of
            // row `r`, which only this iteration writes, and every read is
            // at an input column in `cols_ok` of input row `hi` (rows in
            // `rows_ok`), which map inside the channel's plane.
            unsafe {
                for ho in 0..s.h_out {
                    let q0 = ho * s.w_out;
                    if !rows_ok.contains(&ho) || cols_ok.is_empty() {
                        dst.zero(q0, q0 + s.w_out);
                        continue;
                    }
                    let hi = (ho * s.sh) as isize + h_off;
                    // Input index of output column 0 (may be negative; only
                    // columns in `cols_ok` are read).
                    let base = plane.wrapping_offset(hi * s.w_in as isize + w_off);
                    dst.zero(q0, q0 + cols_ok.start);
                    dst.zero(q0 + cols_ok.end, q0 + s.w_out);
                    if s.sw == 1 {
                        let src = std::slice::from_raw_parts(base.wrapping_add(cols_ok.start), cols_ok.len());
                        dst.put(q0 + cols_ok.start, src);
                    } else {
                        // Gathered a panel row at a time.
                        let mut buf = [0.0f32; PANEL];
                        let mut wo = cols_ok.start;
                        while wo < cols_ok.end {
                            let n = (PANEL - (q0 + wo) % PANEL).min(cols_ok.end - wo);
                            for (i, v) in buf[..n].iter_mut().enumerate() {
                                *v = *base.wrapping_add((wo + i) * s.sw);
                            }
                            dst.put(q0 + wo, &buf[..n]);
                            wo += n;
                        }
                    }
                }
                dst.zero(p, p_padded);
            }
        }
    };
    if par {
        crate::threads::par_for(rows, crate::kernels::reduce::units_per_chunk(p), &run);
    } else {
        run(0, rows);
    }
}
