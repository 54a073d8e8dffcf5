//! The reference of `IntGemmPacked`: one output element at a time,
//! summed in i64 and wrapped to i32 at the end.

use crate::kernels::quant::IntElem;

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
