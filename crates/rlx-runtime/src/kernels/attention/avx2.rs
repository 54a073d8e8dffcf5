//! AVX2+FMA dot and axpy for short strided rows (attention heads, conv
//! rows).
//!
//! `dot`: four 8-lane FMA accumulators over 32-element blocks, then one
//! 8-element step at a time into the first, then a masked tail into the
//! second; the accumulators are added as `(a0 + a1) + (a2 + a3)` and the
//! lanes pairwise. `axpy`: one FMA per element, so it equals the scalar
//! `mul_add` exactly. No alignment is assumed.

use std::arch::x86_64::*;

use crate::kernels::softmax::avx2::{hsum, tail_mask};

/// Dot product of `n` f32.
///
/// # Safety
///
/// The CPU must support AVX2 and FMA; `a` and `b` must be valid for reads
/// of `n` f32.
#[target_feature(enable = "avx2,fma")]
pub(crate) unsafe fn avx2_dot_f32(a: *const f32, b: *const f32, n: usize) -> f32 {
    let mut acc = [_mm256_setzero_ps(); 4];
    let mut i = 0;
    while i + 32 <= n {
        for (j, acc) in acc.iter_mut().enumerate() {
            // SAFETY: `i + 8 * j + 8 <= n`.
            *acc =
                unsafe { _mm256_fmadd_ps(_mm256_loadu_ps(a.add(i + 8 * j)), _mm256_loadu_ps(b.add(i + 8 * j)), *acc) };
        }
        i += 32;
    }
    while i + 8 <= n {
        // SAFETY: `i + 8 <= n`.
        acc[0] = unsafe { _mm256_fmadd_ps(_mm256_loadu_ps(a.add(i)), _mm256_loadu_ps(b.add(i)), acc[0]) };
        i += 8;
    }
    if i < n {
        let mask = tail_mask(n - i);
        // SAFETY: masked lanes stay below `n`; the others load as 0.
        acc[1] =
            unsafe { _mm256_fmadd_ps(_mm256_maskload_ps(a.add(i), mask), _mm256_maskload_ps(b.add(i), mask), acc[1]) };
    }
    hsum(_mm256_add_ps(_mm256_add_ps(acc[0], acc[1]), _mm256_add_ps(acc[2], acc[3])))
}

/// `y[i] = alpha * x[i] + y[i]` over `n` f32, fused.
///
/// # Safety
///
/// The CPU must support AVX2 and FMA; `x` must be valid for reads and `y`
/// for reads and writes of `n` f32; they must not overlap.
#[target_feature(enable = "avx2,fma")]
pub(crate) unsafe fn avx2_axpy_f32(alpha: f32, x: *const f32, y: *mut f32, n: usize) {
    let a = _mm256_set1_ps(alpha);
    let mut i = 0;
    while i + 16 <= n {
        // SAFETY: `i + 16 <= n`.
        unsafe {
            let y0 = _mm256_fmadd_ps(a, _mm256_loadu_ps(x.add(i)), _mm256_loadu_ps(y.add(i)));
            let y1 = _mm256_fmadd_ps(a, _mm256_loadu_ps(x.add(i + 8)), _mm256_loadu_ps(y.add(i + 8)));
            _mm256_storeu_ps(y.add(i), y0);
            _mm256_storeu_ps(y.add(i + 8), y1);
        }
        i += 16;
    }
    while i + 8 <= n {
        // SAFETY: `i + 8 <= n`.
        unsafe { _mm256_storeu_ps(y.add(i), _mm256_fmadd_ps(a, _mm256_loadu_ps(x.add(i)), _mm256_loadu_ps(y.add(i)))) };
        i += 8;
    }
    if i < n {
        let mask = tail_mask(n - i);
        // SAFETY: masked lanes only.
        unsafe {
            let r = _mm256_fmadd_ps(a, _mm256_maskload_ps(x.add(i), mask), _mm256_maskload_ps(y.add(i), mask));
            _mm256_maskstore_ps(y.add(i), mask, r);
        }
    }
}
