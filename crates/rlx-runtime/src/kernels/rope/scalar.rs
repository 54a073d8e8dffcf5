//! Scalar reference for one rotary-embedding row.
//!
//! Each pair `(x1, x2)` becomes `(x1 * c - x2 * s, x2 * c + x1 * s)`, with
//! every product rounded before the sum (no fused multiply-add), so the
//! SIMD variants can match it bit for bit.

/// Rotates the pairs `(i, i + half)` of one row.
///
/// # Safety
/// `x` readable and `out` writable for `2 * half` f32, `cos`/`sin` readable
/// for `half`; `out` equals `x` exactly or does not overlap it.
pub(super) unsafe fn rotate_half(x: *const f32, cos: *const f32, sin: *const f32, out: *mut f32, half: usize) {
    for i in 0..half {
        // SAFETY: indices below `2 * half`; both elements of a pair are
        // read before either is written.
        unsafe {
            let (x1, x2) = (*x.add(i), *x.add(half + i));
            let (c, s) = (*cos.add(i), *sin.add(i));
            *out.add(i) = x1 * c - x2 * s;
            *out.add(half + i) = x2 * c + x1 * s;
        }
    }
}

/// Rotates the pairs `(2i, 2i + 1)` of one row.
///
/// # Safety
/// As [`rotate_half`].
pub(super) unsafe fn rotate_interleaved(x: *const f32, cos: *const f32, sin: *const f32, out: *mut f32, half: usize) {
    for i in 0..half {
        // SAFETY: as in `rotate_half`.
        unsafe {
            let (x1, x2) = (*x.add(2 * i), *x.add(2 * i + 1));
            let (c, s) = (*cos.add(i), *sin.add(i));
            *out.add(2 * i) = x1 * c - x2 * s;
            *out.add(2 * i + 1) = x2 * c + x1 * s;
        }
    }
}
