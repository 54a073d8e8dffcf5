//! Reference strided dot and axpy: the spec the SIMD variants follow.

/// `sum_i a[i] * b[i]`, accumulated in index order with separate multiply
/// and add (the SIMD variants sum in lanes, so they differ by rounding).
///
/// # Safety
///
/// `a` and `b` must be valid for reads of `n` f32.
pub(crate) unsafe fn scalar_dot_f32(a: *const f32, b: *const f32, n: usize) -> f32 {
    let mut acc = 0.0f32;
    for i in 0..n {
        // SAFETY: `i < n`.
        acc += unsafe { *a.add(i) * *b.add(i) };
    }
    acc
}

/// `y[i] = alpha * x[i] + y[i]` with one rounding (`mul_add`), which is
/// what the FMA variants compute lane by lane: all variants agree bit for
/// bit.
///
/// # Safety
///
/// `x` must be valid for reads and `y` for reads and writes of `n` f32;
/// they must not overlap.
pub(crate) unsafe fn scalar_axpy_f32(alpha: f32, x: *const f32, y: *mut f32, n: usize) {
    for i in 0..n {
        // SAFETY: `i < n`; distinct ranges.
        unsafe { *y.add(i) = alpha.mul_add(*x.add(i), *y.add(i)) };
    }
}
