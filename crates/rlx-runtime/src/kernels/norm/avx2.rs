//! AVX2 row primitives of the norm kernels.
//!
//! Each reproduces the scalar spec bit for bit: sums keep four 8-lane
//! accumulators (the spec's 32 lanes), fold them in the spec's order, take
//! leftover 8-blocks into the folded vector, reduce with the spec's tree
//! and add the tail one by one. No FMA: products are rounded before they
//! are added, as in the scalar code. Loads and stores are unaligned; tails
//! are scalar, so nothing reads past `n`.

use std::arch::x86_64::*;

/// `(t0 + t2) + (t1 + t3)` where `t[k] = v[k] + v[k + 4]`.
#[inline]
#[target_feature(enable = "avx2,fma")]
fn hsum(v: __m256) -> f32 {
    let t = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps::<1>(v));
    let u = _mm_add_ps(t, _mm_movehl_ps(t, t));
    _mm_cvtss_f32(_mm_add_ss(u, _mm_shuffle_ps::<1>(u, u)))
}

/// The spec's ordered sum of `f(x[i])`, `f` given per vector and per lane.
///
/// # Safety
/// AVX2 and FMA available; `x` readable for `n` f32.
#[inline(always)]
unsafe fn reduce(x: *const f32, n: usize, fv: impl Fn(__m256) -> __m256, fs: impl Fn(f32) -> f32) -> f32 {
    // SAFETY: every load is below `n`; the caller guarantees AVX2.
    unsafe {
        let mut a = [_mm256_setzero_ps(); 4];
        let mut i = 0;
        while i + 32 <= n {
            for (k, acc) in a.iter_mut().enumerate() {
                *acc = _mm256_add_ps(*acc, fv(_mm256_loadu_ps(x.add(i + 8 * k))));
            }
            i += 32;
        }
        let mut b = _mm256_add_ps(_mm256_add_ps(a[0], a[1]), _mm256_add_ps(a[2], a[3]));
        while i + 8 <= n {
            b = _mm256_add_ps(b, fv(_mm256_loadu_ps(x.add(i))));
            i += 8;
        }
        let mut s = hsum(b);
        while i < n {
            s += fs(*x.add(i));
            i += 1;
        }
        s
    }
}

/// AVX2 `sum(x[i])`, bit-identical to the scalar spec.
///
/// # Safety
/// AVX2 and FMA available; `x` readable for `n` f32.
#[target_feature(enable = "avx2,fma")]
pub(super) unsafe fn avx2_sum(x: *const f32, n: usize) -> f32 {
    // SAFETY: forwarded contract.
    unsafe { reduce(x, n, |v| v, |v| v) }
}

/// AVX2 `sum((x[i] - mean)^2)`, bit-identical to the scalar spec.
///
/// # Safety
/// AVX2 and FMA available; `x` readable for `n` f32.
#[target_feature(enable = "avx2,fma")]
pub(super) unsafe fn avx2_sum_sq_dev(x: *const f32, n: usize, mean: f32) -> f32 {
    let m = _mm256_set1_ps(mean);
    // SAFETY: forwarded contract.
    unsafe {
        reduce(
            x,
            n,
            |v| {
                let d = _mm256_sub_ps(v, m);
                _mm256_mul_ps(d, d)
            },
            |v| {
                let d = v - mean;
                d * d
            },
        )
    }
}

/// AVX2 `out[i] = (x[i] + res[i]) + bias[i]`.
///
/// # Safety
/// AVX2 and FMA available; inputs readable, `out` writable for `n` f32;
/// `out` may equal `x` or `res` exactly.
#[target_feature(enable = "avx2,fma")]
pub(super) unsafe fn avx2_add(x: *const f32, res: *const f32, bias: Option<*const f32>, out: *mut f32, n: usize) {
    let mut i = 0;
    // SAFETY: every access is below `n`; each block is loaded before the
    // store that may alias it.
    unsafe {
        match bias {
            Some(bias) => {
                while i + 8 <= n {
                    let v = _mm256_add_ps(_mm256_loadu_ps(x.add(i)), _mm256_loadu_ps(res.add(i)));
                    _mm256_storeu_ps(out.add(i), _mm256_add_ps(v, _mm256_loadu_ps(bias.add(i))));
                    i += 8;
                }
                while i < n {
                    *out.add(i) = (*x.add(i) + *res.add(i)) + *bias.add(i);
                    i += 1;
                }
            }
            None => {
                while i + 8 <= n {
                    let v = _mm256_add_ps(_mm256_loadu_ps(x.add(i)), _mm256_loadu_ps(res.add(i)));
                    _mm256_storeu_ps(out.add(i), v);
                    i += 8;
                }
                while i < n {
                    *out.add(i) = *x.add(i) + *res.add(i);
                    i += 1;
                }
            }
        }
    }
}

/// AVX2 `out[i] = ((x[i] - mean) * scale) * g[i] + b[i]`.
///
/// # Safety
/// AVX2 and FMA available; inputs readable, `out` writable for `n` f32;
/// `out` may equal `x` exactly.
#[target_feature(enable = "avx2,fma")]
pub(super) unsafe fn avx2_normalize(
    x: *const f32,
    mean: f32,
    scale: f32,
    g: *const f32,
    b: Option<*const f32>,
    out: *mut f32,
    n: usize,
) {
    let (m, s) = (_mm256_set1_ps(mean), _mm256_set1_ps(scale));
    let mut i = 0;
    // SAFETY: every access is below `n`; each block is loaded before the
    // store that may alias it.
    unsafe {
        let scaled = |i: usize| {
            let v = _mm256_mul_ps(_mm256_sub_ps(_mm256_loadu_ps(x.add(i)), m), s);
            _mm256_mul_ps(v, _mm256_loadu_ps(g.add(i)))
        };
        match b {
            Some(b) => {
                while i + 8 <= n {
                    _mm256_storeu_ps(out.add(i), _mm256_add_ps(scaled(i), _mm256_loadu_ps(b.add(i))));
                    i += 8;
                }
                while i < n {
                    *out.add(i) = ((*x.add(i) - mean) * scale) * *g.add(i) + *b.add(i);
                    i += 1;
                }
            }
            None => {
                while i + 8 <= n {
                    _mm256_storeu_ps(out.add(i), scaled(i));
                    i += 8;
                }
                while i < n {
                    *out.add(i) = ((*x.add(i) - mean) * scale) * *g.add(i);
                    i += 1;
                }
            }
        }
    }
}
