//! AVX2 inner loops, bit-exact with the scalar reference.
//!
//! Binary loops apply `BinOp::avx2`, whose lanes are the operator's IEEE
//! operation (see `ops`), 32 elements per step while they last, then 8,
//! then the scalar function for the last `n % 8`. Loads and stores are
//! unaligned; every block is loaded before it is stored, so an output that
//! exactly aliases an input is fine.

use std::arch::x86_64::*;

use super::ops::BinOp;

/// Eight f32 from `p + j`, unaligned.
///
/// # Safety
/// AVX available; `p + j .. p + j + 8` readable.
#[inline(always)]
unsafe fn load(p: *const f32, j: usize) -> __m256 {
    // SAFETY: the caller guarantees AVX and that the 8 f32 at `p + j` are
    // readable; `loadu` has no alignment requirement.
    unsafe { _mm256_loadu_ps(p.add(j)) }
}

/// `o[j] = op(l[j], r[j])`.
///
/// # Safety
/// AVX2 and FMA available; `l`, `r` readable and `o` writable for `n` f32;
/// `o` equals an input or overlaps neither.
#[target_feature(enable = "avx2,fma")]
pub(super) unsafe fn avx2_same_f32<O: BinOp>(l: *const f32, r: *const f32, o: *mut f32, n: usize) {
    let mut j = 0;
    // SAFETY: the caller guarantees AVX2 and FMA (as `load` and `O::avx2`
    // need); every access is at `j..j + 32 <= n`, `j..j + 8 <= n` or `j < n`,
    // inside the caller's `n`-element extents; a block's loads precede its
    // stores, so `o` may exactly alias an input.
    unsafe {
        while j + 32 <= n {
            // All loads before the stores: `o` may alias `l` or `r`.
            let (a0, a1, a2, a3) = (load(l, j), load(l, j + 8), load(l, j + 16), load(l, j + 24));
            let (b0, b1, b2, b3) = (load(r, j), load(r, j + 8), load(r, j + 16), load(r, j + 24));
            _mm256_storeu_ps(o.add(j), O::avx2(a0, b0));
            _mm256_storeu_ps(o.add(j + 8), O::avx2(a1, b1));
            _mm256_storeu_ps(o.add(j + 16), O::avx2(a2, b2));
            _mm256_storeu_ps(o.add(j + 24), O::avx2(a3, b3));
            j += 32;
        }
        while j + 8 <= n {
            _mm256_storeu_ps(o.add(j), O::avx2(_mm256_loadu_ps(l.add(j)), _mm256_loadu_ps(r.add(j))));
            j += 8;
        }
        while j < n {
            *o.add(j) = O::f32(*l.add(j), *r.add(j));
            j += 1;
        }
    }
}

/// `o[j] = op(a, r[j])`.
///
/// # Safety
/// AVX2 and FMA available; `r` readable and `o` writable for `n` f32;
/// `o == r` or no overlap.
#[target_feature(enable = "avx2,fma")]
pub(super) unsafe fn avx2_scalar_lhs_f32<O: BinOp>(a: f32, r: *const f32, o: *mut f32, n: usize) {
    let av = _mm256_set1_ps(a);
    let mut j = 0;
    // SAFETY: as in `avx2_same_f32`: AVX2 and FMA from the caller, every access
    // below `n`, and each block of `r` loaded before `o` is stored.
    unsafe {
        while j + 32 <= n {
            let (b0, b1, b2, b3) = (load(r, j), load(r, j + 8), load(r, j + 16), load(r, j + 24));
            _mm256_storeu_ps(o.add(j), O::avx2(av, b0));
            _mm256_storeu_ps(o.add(j + 8), O::avx2(av, b1));
            _mm256_storeu_ps(o.add(j + 16), O::avx2(av, b2));
            _mm256_storeu_ps(o.add(j + 24), O::avx2(av, b3));
            j += 32;
        }
        while j + 8 <= n {
            _mm256_storeu_ps(o.add(j), O::avx2(av, _mm256_loadu_ps(r.add(j))));
            j += 8;
        }
        while j < n {
            *o.add(j) = O::f32(a, *r.add(j));
            j += 1;
        }
    }
}

/// `o[j] = op(l[j], b)`.
///
/// # Safety
/// AVX2 and FMA available; `l` readable and `o` writable for `n` f32;
/// `o == l` or no overlap.
#[target_feature(enable = "avx2,fma")]
pub(super) unsafe fn avx2_scalar_rhs_f32<O: BinOp>(l: *const f32, b: f32, o: *mut f32, n: usize) {
    let bv = _mm256_set1_ps(b);
    let mut j = 0;
    // SAFETY: as in `avx2_same_f32`: AVX2 and FMA from the caller, every access
    // below `n`, and each block of `l` loaded before `o` is stored.
    unsafe {
        while j + 32 <= n {
            let (a0, a1, a2, a3) = (load(l, j), load(l, j + 8), load(l, j + 16), load(l, j + 24));
            _mm256_storeu_ps(o.add(j), O::avx2(a0, bv));
            _mm256_storeu_ps(o.add(j + 8), O::avx2(a1, bv));
            _mm256_storeu_ps(o.add(j + 16), O::avx2(a2, bv));
            _mm256_storeu_ps(o.add(j + 24), O::avx2(a3, bv));
            j += 32;
        }
        while j + 8 <= n {
            _mm256_storeu_ps(o.add(j), O::avx2(_mm256_loadu_ps(l.add(j)), bv));
            j += 8;
        }
        while j < n {
            *o.add(j) = O::f32(*l.add(j), b);
            j += 1;
        }
    }
}

/// `d[j] = a[j] * b[j] + c[j]` with one rounding (`vfmadd`, the same
/// operation as `f32::mul_add`).
///
/// # Safety
/// AVX2 and FMA available; inputs readable and `d` writable for `n` f32;
/// `d` equals an input or overlaps none.
#[target_feature(enable = "avx2,fma")]
pub(super) unsafe fn avx2_fma_f32(a: *const f32, b: *const f32, c: *const f32, d: *mut f32, n: usize) {
    let mut j = 0;
    // SAFETY: the caller guarantees AVX2 and FMA; every access is at
    // `j..j + 8 <= n` or `j < n`, inside the `n`-element extents; the inputs of
    // a block are loaded before `d` is stored, so an exact alias is fine.
    unsafe {
        while j + 8 <= n {
            let v = _mm256_fmadd_ps(_mm256_loadu_ps(a.add(j)), _mm256_loadu_ps(b.add(j)), _mm256_loadu_ps(c.add(j)));
            _mm256_storeu_ps(d.add(j), v);
            j += 8;
        }
        while j < n {
            *d.add(j) = (*a.add(j)).mul_add(*b.add(j), *c.add(j));
            j += 1;
        }
    }
}

/// `d[j] = a[j] * b[j] + c[j]` on f64 with one rounding.
///
/// # Safety
/// As [`avx2_fma_f32`] with f64 elements.
#[target_feature(enable = "avx2,fma")]
pub(super) unsafe fn avx2_fma_f64(a: *const f64, b: *const f64, c: *const f64, d: *mut f64, n: usize) {
    let mut j = 0;
    // SAFETY: the caller guarantees AVX2 and FMA; every access is at
    // `j..j + 4 <= n` or `j < n`, inside the `n`-element extents; the inputs of
    // a block are loaded before `d` is stored, so an exact alias is fine.
    unsafe {
        while j + 4 <= n {
            let v = _mm256_fmadd_pd(_mm256_loadu_pd(a.add(j)), _mm256_loadu_pd(b.add(j)), _mm256_loadu_pd(c.add(j)));
            _mm256_storeu_pd(d.add(j), v);
            j += 4;
        }
        while j < n {
            *d.add(j) = (*a.add(j)).mul_add(*b.add(j), *c.add(j));
            j += 1;
        }
    }
}
