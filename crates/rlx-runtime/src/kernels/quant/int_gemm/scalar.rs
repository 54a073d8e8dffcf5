//! The reference of `IntGemm`: one output element at a time, summed in
//! i64 and wrapped to i32 at the end (the same value as wrapping every
//! step).

use crate::kernels::quant::IntElem;

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
