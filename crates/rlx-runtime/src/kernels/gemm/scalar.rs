//! Scalar reference kernels of the GEMM family: the specification the
//! SIMD variants must match bit for bit.

/// `dst[j] = src[j] + bias[j]` for `j < len`.
///
/// # Safety
///
/// `src`, `bias` valid for `len` reads, `dst` for `len` writes; `dst` may
/// equal `src` exactly (each element is read before it is written) but
/// must not otherwise overlap `src` or `bias`.
pub(super) unsafe fn bias_add_row_f32(src: *const f32, bias: *const f32, dst: *mut f32, len: usize) {
    for j in 0..len {
        // SAFETY: `j < len`, inside every extent.
        unsafe { *dst.add(j) = *src.add(j) + *bias.add(j) };
    }
}

/// `y[j] = fma(a, x[j], y[j])` for `j < len`, one rounding per element.
///
/// # Safety
///
/// `x` valid for `len` reads, `y` for `len` reads and writes; no overlap.
pub(super) unsafe fn axpy_f32(y: *mut f32, a: f32, x: *const f32, len: usize) {
    for j in 0..len {
        // SAFETY: `j < len`.
        unsafe { *y.add(j) = a.mul_add(*x.add(j), *y.add(j)) };
    }
}

/// One IEEE binary16 value widened to f32. Exact for every finite value and
/// infinity; a NaN keeps its sign and payload and comes out quiet, as the
/// F16C and AArch64 conversion instructions produce.
pub(super) fn f16_bits_to_f32(h: u16) -> f32 {
    let sign = u32::from(h & 0x8000) << 16;
    let exp = u32::from((h >> 10) & 0x1f);
    let man = u32::from(h & 0x03ff);
    let bits = match (exp, man) {
        (0, 0) => sign,
        (0, _) => {
            // Subnormal: man * 2^-24. Shift the leading one up to bit 10,
            // the implicit bit of a normal f32, and lower the exponent.
            let shift = man.leading_zeros() - 21;
            let exp32 = 113 - shift;
            sign | (exp32 << 23) | (((man << shift) & 0x03ff) << 13)
        }
        (0x1f, 0) => sign | 0x7f80_0000,
        (0x1f, _) => sign | 0x7fc0_0000 | (man << 13),
        _ => sign | ((exp + 112) << 23) | (man << 13),
    };
    f32::from_bits(bits)
}

/// One bfloat16 value widened to f32: the bits shifted up by 16. Exact for
/// every input, NaN payloads included (no quieting).
pub(super) fn bf16_bits_to_f32(h: u16) -> f32 {
    f32::from_bits(u32::from(h) << 16)
}

/// Widens `len` f16 values.
///
/// # Safety
///
/// `src` valid for `len` reads, `dst` for `len` writes; no overlap.
pub(super) unsafe fn f16_to_f32(src: *const u16, dst: *mut f32, len: usize) {
    for j in 0..len {
        // SAFETY: `j < len`.
        unsafe { *dst.add(j) = f16_bits_to_f32(*src.add(j)) };
    }
}

/// Widens `len` bf16 values.
///
/// # Safety
///
/// `src` valid for `len` reads, `dst` for `len` writes; no overlap.
pub(super) unsafe fn bf16_to_f32(src: *const u16, dst: *mut f32, len: usize) {
    for j in 0..len {
        // SAFETY: `j < len`.
        unsafe { *dst.add(j) = bf16_bits_to_f32(*src.add(j)) };
    }
}
