//! The reference of `IntConv2D`: one output element at a time, summed in
//! i64 and wrapped to i32 at the end.

use crate::kernels::quant::IntElem;

/// The [`super::int_conv2d`] contract computed one output element at a
/// time, straight from the definition (no unfolding, no packing).
///
/// # Safety
///
/// As [`super::int_conv2d`] (no scratch).
pub unsafe fn int_conv2d_reference<X: IntElem, W: IntElem>(
    x: *const X,
    w: *const W,
    x_zero: *const X,
    w_zero: *const W,
    out: *mut i32,
    s: &crate::kernels::conv::Conv2dShape,
    w_zero_len: usize,
) {
    let (cpg, opg) = (s.c_in_g(), s.c_out_g());
    // SAFETY: every index below is inside the extents the caller promises
    // (`# Safety` of `int_conv2d`).
    unsafe {
        let zx = if x_zero.is_null() { 0 } else { i64::from((*x_zero).to_i32()) };
        for b in 0..s.n {
            for oc in 0..s.c_out {
                let zw = match (w_zero.is_null(), w_zero_len) {
                    (true, _) => 0,
                    (false, 1) => i64::from((*w_zero).to_i32()),
                    (false, _) => i64::from((*w_zero.add(oc)).to_i32()),
                };
                let g = oc / opg;
                for oy in 0..s.h_out {
                    for ox in 0..s.w_out {
                        let mut sum = 0i64;
                        for ic in 0..cpg {
                            for ki in 0..s.kh {
                                for kj in 0..s.kw {
                                    let iy = (oy * s.sh + ki * s.dh).wrapping_sub(s.ph);
                                    let ix = (ox * s.sw + kj * s.dw).wrapping_sub(s.pw);
                                    if iy >= s.h || ix >= s.w_in {
                                        continue;
                                    }
                                    let ch = g * cpg + ic;
                                    let xv = i64::from((*x.add(((b * s.c_in + ch) * s.h + iy) * s.w_in + ix)).to_i32());
                                    let wv = i64::from((*w.add(((oc * cpg + ic) * s.kh + ki) * s.kw + kj)).to_i32());
                                    sum += (xv - zx) * (wv - zw);
                                }
                            }
                        }
                        *out.add(((b * s.c_out + oc) * s.h_out + oy) * s.w_out + ox) = sum as i32;
                    }
                }
            }
        }
    }
}
