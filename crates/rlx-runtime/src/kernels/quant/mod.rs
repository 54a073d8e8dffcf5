//! Integer kernels of quantized models: [`int_gemm`], the matrix product
//! of 8-bit integers with i32 accumulation (ONNX `MatMulInteger`, and the
//! core of `QLinearMatMul`).
//!
//! One portable body, written so LLVM vectorises its inner loop over the
//! output row (widen, subtract the zero point, multiply-add in i32 lanes);
//! `scalar.rs` is the element-at-a-time reference it is tested against
//! bit for bit.

mod scalar;
#[cfg(test)]
mod tests;

pub use scalar::int_gemm_reference;

use crate::kernels::reduce::SendPtr;

/// An 8-bit integer element of a quantized tensor.
pub trait IntElem: Copy + Send + Sync + 'static {
    /// The value, exactly.
    fn to_i32(self) -> i32;
}

impl IntElem for u8 {
    #[inline(always)]
    fn to_i32(self) -> i32 {
        i32::from(self)
    }
}

impl IntElem for i8 {
    #[inline(always)]
    fn to_i32(self) -> i32 {
        i32::from(self)
    }
}

/// `IntGemm`: for each of `batch` products, `c[m,n] = sum over k of
/// (a[m,k] - a_zero) * (b[k,n] - b_zero[j])`, accumulated in i32 with
/// wrapping (exact while the sum fits: `k` up to 33,000 for any 8-bit
/// values). `a_zero` is one element (0 when null); `b_zero` is one element
/// (`b_zero_len` 1) or one per column (`n`), 0 when null. `b` is
/// `[batch, k, n]`, or one `[k, n]` shared by every batch when `b_bcast`.
/// `par` splits the output rows over the pool.
///
/// # Safety
///
/// `a` readable for `batch * m * k` elements, `b` for `k * n` (`b_bcast`)
/// or `batch * k * n`, `a_zero` for one element and `b_zero` for
/// `b_zero_len` elements unless null; `c` writable for `batch * m * n`
/// i32 and not overlapping any input.
#[allow(clippy::too_many_arguments)]
pub unsafe fn int_gemm<A: IntElem, B: IntElem>(
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
    par: bool,
) {
    if batch == 0 || m == 0 || n == 0 {
        return;
    }
    // SAFETY: a non-null zero point is readable for one element (caller).
    let za = if a_zero.is_null() { 0 } else { unsafe { (*a_zero).to_i32() } };
    let per_column = !b_zero.is_null() && b_zero_len == n && n > 1;
    // SAFETY: as above, for `b_zero`'s first element.
    let zb0 = if b_zero.is_null() { 0 } else { unsafe { (*b_zero).to_i32() } };
    let (a, b, b_zero, c) = (SendPtr(a.cast_mut()), SendPtr(b.cast_mut()), SendPtr(b_zero.cast_mut()), SendPtr(c));
    let run = |start: usize, len: usize| {
        for row in start..start + len {
            let bt = row / m;
            // SAFETY: `row < batch * m`, so the row of `a`, the matrix of `b`
            // (its batch, or the shared one) and the row of `c` lie inside
            // the caller's extents; `c` overlaps no input and each task
            // writes only its own rows.
            unsafe {
                let a_row = a.get().add(row * k);
                let b_mat = b.get().add(if b_bcast { 0 } else { bt * k * n });
                let out = std::slice::from_raw_parts_mut(c.get().add(row * n), n);
                out.fill(0);
                for p in 0..k {
                    let av = (*a_row.add(p)).to_i32().wrapping_sub(za);
                    if av == 0 {
                        continue;
                    }
                    let b_row = std::slice::from_raw_parts(b_mat.add(p * n), n);
                    if per_column {
                        let zb = std::slice::from_raw_parts(b_zero.get(), n);
                        for ((o, &bv), &z) in out.iter_mut().zip(b_row).zip(zb) {
                            *o = o.wrapping_add(av.wrapping_mul(bv.to_i32().wrapping_sub(z.to_i32())));
                        }
                    } else {
                        for (o, &bv) in out.iter_mut().zip(b_row) {
                            *o = o.wrapping_add(av.wrapping_mul(bv.to_i32().wrapping_sub(zb0)));
                        }
                    }
                }
            }
        }
    };
    let rows = batch * m;
    if par {
        crate::threads::par_for(rows, (16 * 1024 / (k * n).max(1)).max(1), &run);
    } else {
        run(0, rows);
    }
}
