//! The reference of `QLinearConv2D`: one output element at a time, summed
//! in i64 and wrapped to i32, then `Requantize`'s reference steps.

/// The [`super::qlinear_conv2d`] contract one output element at a time,
/// straight from the definition: the filter read through the packing's
/// index formula, the sum in i64 wrapped to i32, then `Requantize`'s
/// reference steps.
///
/// # Safety
///
/// As [`super::qlinear_conv2d`] (no scratch).
#[allow(clippy::too_many_arguments)]
pub unsafe fn qlinear_conv2d_reference(
    x: *const u8,
    w: *const i8,
    bias: *const i32,
    scale: *const f32,
    zero: *const u8,
    out: *mut u8,
    s: &crate::kernels::conv::Conv2dShape,
    x_pad: usize,
    scale_len: usize,
) {
    use rlx_core::qconv::{QCONV_IN_QUAD, QCONV_OUT_BLOCK};
    let (cpg, opg) = (s.c_in_g(), s.c_out_g());
    let (taps, quads) = (s.kh * s.kw, cpg.div_ceil(QCONV_IN_QUAD));
    let packed = |oc: usize, ic: usize, tap: usize| {
        (((oc / QCONV_OUT_BLOCK * taps + tap) * quads + ic / QCONV_IN_QUAD) * QCONV_OUT_BLOCK + oc % QCONV_OUT_BLOCK)
            * QCONV_IN_QUAD
            + ic % QCONV_IN_QUAD
    };
    let mut sums = vec![0i32; s.n * s.c_out * s.h_out * s.w_out];
    // SAFETY: every index below is inside the extents the caller promises
    // (`# Safety` of `qlinear_conv2d`).
    unsafe {
        for b in 0..s.n {
            for oc in 0..s.c_out {
                for oy in 0..s.h_out {
                    for ox in 0..s.w_out {
                        let mut sum = 0i64;
                        for ic in 0..cpg {
                            for ki in 0..s.kh {
                                for kj in 0..s.kw {
                                    let iy = (oy * s.sh + ki * s.dh).wrapping_sub(s.ph);
                                    let ix = (ox * s.sw + kj * s.dw).wrapping_sub(s.pw);
                                    let xv = if iy >= s.h || ix >= s.w_in {
                                        x_pad as i64
                                    } else {
                                        let ch = oc / opg * cpg + ic;
                                        i64::from(*x.add(((b * s.c_in + ch) * s.h + iy) * s.w_in + ix))
                                    };
                                    sum += xv * i64::from(*w.add(packed(oc, ic, ki * s.kw + kj)));
                                }
                            }
                        }
                        sums[((b * s.c_out + oc) * s.h_out + oy) * s.w_out + ox] = sum as i32;
                    }
                }
            }
        }
        crate::kernels::quant::requantize_reference(
            sums.as_ptr(),
            bias,
            scale,
            zero,
            out,
            s.n,
            s.c_out,
            s.h_out * s.w_out,
            scale_len,
        );
    }
}
