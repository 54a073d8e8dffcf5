//! When a GEMM needs a temporary, and how half-precision weights are
//! widened. The scratch bytes follow from the lowered call
//! (`crate::call::KernelCall::scratch_bytes`).

use crate::operand::{Operand, Segment};

fn overlap(a: &Operand, a_bytes: usize, b: &Operand, b_bytes: usize) -> bool {
    a.segment == Segment::Arena
        && b.segment == Segment::Arena
        && super::ranges_overlap(a.offset, a_bytes, b.offset, b_bytes)
}

/// Whether a GEMM writing `c` must go through a temporary because `c`
/// overlaps one of its inputs.
pub fn gemm_needs_temp(a: &Operand, a_bytes: usize, b: &Operand, b_bytes: usize, c: &Operand, c_bytes: usize) -> bool {
    overlap(a, a_bytes, c, c_bytes) || overlap(b, b_bytes, c, c_bytes)
}

/// Bytes of the temporary a GEMM writes its `rows x cols` f32 output to
/// when that output overlaps an input (the `...Via` entries). `None` on
/// overflow.
pub fn gemm_temp_bytes(rows: usize, cols: usize) -> Option<usize> {
    rows.checked_mul(cols)?.checked_mul(4)
}

/// GEMMs with at most this many rows stream half-precision weights through
/// a stack tile; larger ones widen all of `b` into scratch first.
pub const HALF_WEIGHT_DIRECT_MAX_M: usize = 8;

/// f32 elements of scratch a half-weight GEMM needs for widened weights.
pub const fn half_weight_scratch_elems(m: usize, k: usize, n: usize) -> usize {
    if m <= HALF_WEIGHT_DIRECT_MAX_M {
        0
    } else {
        k * n
    }
}

/// Bytes of scratch `SgemmF16` / `SgemmBf16` need: the output temporary
/// when `via` (the output overlaps an input), then the widened weights
/// when `m` is above [`HALF_WEIGHT_DIRECT_MAX_M`]. `None` on overflow.
pub fn half_gemm_scratch_bytes(m: usize, k: usize, n: usize, via: bool) -> Option<usize> {
    let temp = if via { gemm_temp_bytes(m, n)? } else { 0 };
    let widened = if m <= HALF_WEIGHT_DIRECT_MAX_M { 0 } else { gemm_temp_bytes(k, n)? };
    temp.checked_add(widened)
}

/// Bytes of `IntGemm`'s scratch taken by `b - b_zero` packed as i16 pairs
/// of k rows (`ceil(k/2) * n * 2` elements), rounded up to 64 bytes.
pub const fn int_gemm_packed_b_bytes(k: usize, n: usize) -> usize {
    (k.div_ceil(2) * n * 2 * 2).div_ceil(64) * 64
}

/// Bytes of scratch `IntGemm` needs: the packed `b`
/// ([`int_gemm_packed_b_bytes`]), then `a - a_zero` as i16 pairs (`batch
/// * m * ceil(k/2)` i32). `None` on overflow.
pub fn int_gemm_scratch_bytes_checked(batch: usize, m: usize, k: usize, n: usize) -> Option<usize> {
    let pairs = k.div_ceil(2);
    let b = pairs.checked_mul(n)?.checked_mul(4)?.checked_add(63)? / 64 * 64;
    b.checked_add(batch.checked_mul(m)?.checked_mul(pairs)?.checked_mul(4)?)
}

/// [`int_gemm_scratch_bytes_checked`] of a validated thunk.
pub fn int_gemm_scratch_bytes(batch: usize, m: usize, k: usize, n: usize) -> usize {
    int_gemm_scratch_bytes_checked(batch, m, k, n).expect("the validator bounds an integer product's scratch")
}

/// Bytes of scratch `IntGemmPacked` needs: the sums of `a`'s rows (i32,
/// 64-byte rounded) when the weight has a zero point, then `a` widened to
/// i16 quads for CPUs without VNNI (`m * ceil(k / 4) * 8`; the AVX2 body
/// broadcasts a quad with one load). `None` on overflow.
pub fn int_gemm_packed_scratch_bytes_checked(m: usize, k: usize, w_zero: bool) -> Option<usize> {
    let sums = if w_zero { m.checked_mul(4)?.checked_add(63)? / 64 * 64 } else { 0 };
    sums.checked_add(m.checked_mul(k.div_ceil(4))?.checked_mul(8)?)
}

/// [`int_gemm_packed_scratch_bytes_checked`] of a validated thunk.
pub fn int_gemm_packed_scratch_bytes(m: usize, k: usize, w_zero: bool) -> usize {
    int_gemm_packed_scratch_bytes_checked(m, k, w_zero)
        .expect("the validator bounds a packed integer product's scratch")
}

/// The first part of [`int_gemm_packed_scratch_bytes`]: the row sums.
pub const fn int_gemm_packed_row_terms_bytes(m: usize, w_zero: bool) -> usize {
    if w_zero {
        (m * 4).div_ceil(64) * 64
    } else {
        0
    }
}
