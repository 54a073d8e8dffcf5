//! Unfolding one group of one image into the patch matrix.

use super::{valid_outputs, Conv2dShape, SendPtr};

/// Writes the patch matrix of one group: row `(ci * kh + ki) * kw + kj`,
/// column `ho * w_out + wo` holds
/// `x[ci, ho*sh + ki*dh - ph, wo*sw + kj*dw - pw]`, or 0 outside the
/// input. Rows are independent, so `par` splits them over the pool.
///
/// # Safety
///
/// `x` valid for reads of `(c_in / groups) * h * w_in` f32 (the group's
/// channels); `col` valid for writes of `(c_in / groups) * kh * kw * h_out
/// * w_out` f32, not overlapping `x`.
pub(super) unsafe fn im2col(x: *const f32, s: &Conv2dShape, col: *mut f32, par: bool) {
    let rows = s.c_in_g() * s.kh * s.kw;
    let p = s.out_plane();
    let (x, col) = (SendPtr(x.cast_mut()), SendPtr(col));
    let run = |start: usize, len: usize| {
        for r in start..start + len {
            let (ci, ki, kj) = (r / (s.kh * s.kw), r / s.kw % s.kh, r % s.kw);
            // SAFETY: row `r` of the patch matrix, written only here.
            let dst = unsafe { std::slice::from_raw_parts_mut(col.get().add(r * p), p) };
            let plane = x.get().cast_const().wrapping_add(ci * s.h * s.w_in);
            let h_off = (ki * s.dh) as isize - s.ph as isize;
            let w_off = (kj * s.dw) as isize - s.pw as isize;
            let rows_ok = valid_outputs(s.h_out, s.sh, h_off, s.h);
            let cols_ok = valid_outputs(s.w_out, s.sw, w_off, s.w_in);
            for (ho, out_row) in dst.chunks_exact_mut(s.w_out).enumerate() {
                if !rows_ok.contains(&ho) || cols_ok.is_empty() {
                    out_row.fill(0.0);
                    continue;
                }
                let hi = (ho * s.sh) as isize + h_off;
                // Input index of output column 0 (may be negative; only
                // columns in `cols_ok` are read).
                let base = plane.wrapping_offset(hi * s.w_in as isize + w_off);
                out_row[..cols_ok.start].fill(0.0);
                out_row[cols_ok.end..].fill(0.0);
                if s.sw == 1 {
                    // SAFETY: columns `cols_ok` map inside input row `hi`.
                    let src = unsafe { std::slice::from_raw_parts(base.wrapping_add(cols_ok.start), cols_ok.len()) };
                    out_row[cols_ok.clone()].copy_from_slice(src);
                } else {
                    for wo in cols_ok.clone() {
                        // SAFETY: as above, strided.
                        out_row[wo] = unsafe { *base.wrapping_add(wo * s.sw) };
                    }
                }
            }
        }
    };
    if par {
        crate::threads::par_for(rows, crate::kernels::reduce::units_per_chunk(p), &run);
    } else {
        run(0, rows);
    }
}
