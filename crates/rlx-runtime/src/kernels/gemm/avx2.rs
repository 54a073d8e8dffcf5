//! x86_64 AVX2/FMA/F16C variants of the GEMM family's vector kernels.
//!
//! Each processes 8 f32 lanes per step with unaligned loads (arena offsets
//! are only 4-byte aligned) and finishes the `len % 8` tail with the same
//! per-element operation as the scalar reference, so results match it bit
//! for bit: bias add is one rounded add, axpy one fused multiply-add, and
//! the conversions are exact.

use std::arch::x86_64::*;

/// `dst[j] = src[j] + bias[j]`; see `scalar::bias_add_row_f32`.
///
/// # Safety
///
/// As the scalar version, and the CPU must support AVX2.
#[target_feature(enable = "avx2,fma")]
pub(super) unsafe fn avx2_bias_add_row_f32(src: *const f32, bias: *const f32, dst: *mut f32, len: usize) {
    let mut j = 0;
    // SAFETY: every access is at an index below `len`; loads of a step
    // happen before its store, so `dst == src` is fine.
    unsafe {
        while j + 8 <= len {
            let v = _mm256_add_ps(_mm256_loadu_ps(src.add(j)), _mm256_loadu_ps(bias.add(j)));
            _mm256_storeu_ps(dst.add(j), v);
            j += 8;
        }
        while j < len {
            *dst.add(j) = *src.add(j) + *bias.add(j);
            j += 1;
        }
    }
}

/// `y[j] = fma(a, x[j], y[j])`; see `scalar::axpy_f32`.
///
/// # Safety
///
/// As the scalar version, and the CPU must support AVX2 and FMA.
#[target_feature(enable = "avx2,fma")]
pub(super) unsafe fn avx2_axpy_f32(y: *mut f32, a: f32, x: *const f32, len: usize) {
    let va = _mm256_set1_ps(a);
    let mut j = 0;
    // SAFETY: every access is at an index below `len`.
    unsafe {
        // Two independent vectors per step hide the FMA latency.
        while j + 16 <= len {
            let y0 = _mm256_fmadd_ps(va, _mm256_loadu_ps(x.add(j)), _mm256_loadu_ps(y.add(j)));
            let y1 = _mm256_fmadd_ps(va, _mm256_loadu_ps(x.add(j + 8)), _mm256_loadu_ps(y.add(j + 8)));
            _mm256_storeu_ps(y.add(j), y0);
            _mm256_storeu_ps(y.add(j + 8), y1);
            j += 16;
        }
        while j + 8 <= len {
            let v = _mm256_fmadd_ps(va, _mm256_loadu_ps(x.add(j)), _mm256_loadu_ps(y.add(j)));
            _mm256_storeu_ps(y.add(j), v);
            j += 8;
        }
        while j < len {
            *y.add(j) = a.mul_add(*x.add(j), *y.add(j));
            j += 1;
        }
    }
}

/// Widens f16 with the F16C `vcvtph2ps` instruction, 8 values per step.
///
/// # Safety
///
/// As `scalar::f16_to_f32`, and the CPU must support AVX2 and F16C.
#[target_feature(enable = "avx2,f16c")]
pub(super) unsafe fn avx2_f16_to_f32(src: *const u16, dst: *mut f32, len: usize) {
    let mut j = 0;
    // SAFETY: every access is at an index below `len`.
    unsafe {
        while j + 8 <= len {
            let h = _mm_loadu_si128(src.add(j).cast());
            _mm256_storeu_ps(dst.add(j), _mm256_cvtph_ps(h));
            j += 8;
        }
        if j < len {
            super::scalar::f16_to_f32(src.add(j), dst.add(j), len - j);
        }
    }
}

/// Widens bf16 by zero-extending each value to 32 bits and shifting it
/// into the high half, 8 values per step.
///
/// # Safety
///
/// As `scalar::bf16_to_f32`, and the CPU must support AVX2.
#[target_feature(enable = "avx2")]
pub(super) unsafe fn avx2_bf16_to_f32(src: *const u16, dst: *mut f32, len: usize) {
    let mut j = 0;
    // SAFETY: every access is at an index below `len`.
    unsafe {
        while j + 8 <= len {
            let h = _mm_loadu_si128(src.add(j).cast());
            let w = _mm256_slli_epi32::<16>(_mm256_cvtepu16_epi32(h));
            _mm256_storeu_ps(dst.add(j), _mm256_castsi256_ps(w));
            j += 8;
        }
        if j < len {
            super::scalar::bf16_to_f32(src.add(j), dst.add(j), len - j);
        }
    }
}
