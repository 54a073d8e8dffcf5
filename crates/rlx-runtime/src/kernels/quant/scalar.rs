//! The reference: one output element at a time, summed in i64 and wrapped
//! to i32 at the end (the same value as wrapping every step).

use super::IntElem;

/// The [`super::int_gemm`] contract computed one element at a time.
///
/// # Safety
///
/// As [`super::int_gemm`].
#[allow(clippy::too_many_arguments)]
pub unsafe fn int_gemm_reference<A: IntElem, B: IntElem>(
    a: *const A,
    b: *const B,
    a_zero: *const A,
    b_zero: *const B,
    c: *mut i32,
    batch: usize,
    m: usize,
    k: usize,
    n: usize,
    b_zero_len: usize,
    b_bcast: bool,
) {
    // SAFETY: every index below is inside the extents the caller promises
    // (`# Safety` of `int_gemm`).
    unsafe {
        let za = if a_zero.is_null() { 0 } else { i64::from((*a_zero).to_i32()) };
        for bt in 0..batch {
            let b_base = if b_bcast { 0 } else { bt * k * n };
            for i in 0..m {
                for j in 0..n {
                    let zb = if b_zero.is_null() {
                        0
                    } else if b_zero_len == 1 {
                        i64::from((*b_zero).to_i32())
                    } else {
                        i64::from((*b_zero.add(j)).to_i32())
                    };
                    let mut sum = 0i64;
                    for p in 0..k {
                        let av = i64::from((*a.add((bt * m + i) * k + p)).to_i32()) - za;
                        let bv = i64::from((*b.add(b_base + p * n + j)).to_i32()) - zb;
                        sum += av * bv;
                    }
                    *c.add((bt * m + i) * n + j) = sum as i32;
                }
            }
        }
    }
}

/// The [`super::int_gemm_packed`] sums from their definition, one element
/// at a time: each weight read back from its place in the packing, the
/// zero points subtracted before the product (no column sums, no shift).
///
/// # Safety
///
/// As [`super::int_gemm_packed`] (no `w_sums`, no scratch).
#[allow(clippy::too_many_arguments)]
pub unsafe fn int_gemm_packed_reference<A: IntElem>(
    a: *const A,
    w: *const i8,
    a_zero: *const A,
    w_zero: *const i32,
    c: *mut i32,
    m: usize,
    k: usize,
    n: usize,
    w_zero_len: usize,
) {
    let quads = k.div_ceil(4);
    // SAFETY: every index below is inside the extents the caller promises.
    unsafe {
        let za = if a_zero.is_null() { 0 } else { i64::from((*a_zero).to_i32()) };
        for i in 0..m {
            for j in 0..n {
                let zw = match (w_zero.is_null(), w_zero_len) {
                    (true, _) => 0,
                    (false, 1) => i64::from(*w_zero),
                    (false, _) => i64::from(*w_zero.add(j)),
                };
                let mut sum = 0i64;
                for p in 0..k {
                    let wv = i64::from(*w.add(((j / 16 * quads + p / 4) * 16 + j % 16) * 4 + p % 4));
                    sum += (i64::from((*a.add(i * k + p)).to_i32()) - za) * (wv - zw);
                }
                *c.add(i * n + j) = sum as i32;
            }
        }
    }
}

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
        super::requantize_reference(sums.as_ptr(), bias, scale, zero, out, s.n, s.c_out, s.h_out * s.w_out, scale_len);
    }
}
