//! The reference row softmax: the spec every SIMD variant is tested against.

/// Softmax of one row of `n` f32, in three passes: the maximum (NaN
/// ignored), `exp(x - max)` summed in order, then a multiply by
/// `1 / sum`. A row with maximum `-inf` shifts by 0 instead, so its
/// exponentials are all 0 and the row becomes zeros; a NaN reaches the sum
/// and makes the row NaN.
///
/// # Safety
///
/// `src` must be valid for reads and `dst` for writes of `n` f32; they may
/// be the same pointer but must not otherwise overlap.
pub(crate) unsafe fn scalar_softmax_row_f32(src: *const f32, dst: *mut f32, n: usize) {
    let mut max = f32::NEG_INFINITY;
    for i in 0..n {
        // SAFETY: `i < n`, inside the caller's extent.
        max = max.max(unsafe { *src.add(i) });
    }
    let shift = if max == f32::NEG_INFINITY { 0.0 } else { max };
    let mut sum = 0.0f32;
    for i in 0..n {
        // SAFETY: as above; element `i` is read before it is written, so
        // `dst == src` is fine.
        unsafe {
            let e = (*src.add(i) - shift).exp();
            *dst.add(i) = e;
            sum += e;
        }
    }
    let inv = normaliser(sum);
    for i in 0..n {
        // SAFETY: as above.
        unsafe { *dst.add(i) *= inv };
    }
}

/// `1 / sum`, except 0 for an all-zero row (fully masked), so the row stays
/// zeros instead of `0 * inf = NaN`. A NaN sum stays NaN.
pub(crate) fn normaliser(sum: f32) -> f32 {
    if sum == 0.0 {
        0.0
    } else {
        1.0 / sum
    }
}
