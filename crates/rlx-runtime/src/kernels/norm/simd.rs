//! The vector row primitives of the norm kernels, written once over
//! [`Lanes`], with thin `#[target_feature]` entries per instruction set:
//! AVX2 (`__m256`, 8 lanes) and NEON (`float32x4_t`, 4 lanes).
//!
//! Each reproduces the scalar spec (`scalar.rs`) bit for bit. Sums keep
//! the spec's 32 accumulator lanes as `32 / N` vectors: vector `k` holds
//! spec lanes `kN..(k + 1)N`, so the spec's 8-lane groups are `8 / N`
//! consecutive vectors (one on AVX2, a low and a high half on NEON). The
//! fold to 8 lanes adds the four groups in the spec's order, leftover
//! 8-blocks go into the folded group, the group's halves are added (NEON:
//! `lo + hi`) and [`Lanes::hsum`] finishes the spec's tree; the tail is
//! added one by one. No fused multiply-add: products are rounded before
//! they are added. Loads and stores are unaligned; tails are scalar, so
//! nothing reads past `n`.

use crate::kernels::lanes::Lanes;

/// The spec's accumulator lanes, and the lanes it folds them to.
const SPEC_LANES: usize = 32;
const GROUP_LANES: usize = 8;

/// What a sum adds per element: its vector and its scalar form (the same
/// operations). A trait rather than a closure so the vector form inlines
/// into the `#[target_feature]` entry that instantiates it.
trait Term<V: Lanes> {
    /// # Safety
    /// `V`'s target features are enabled.
    unsafe fn vector(&self, v: V) -> V;
    fn scalar(&self, v: f32) -> f32;
}

/// `x[i]`.
struct Value;

impl<V: Lanes> Term<V> for Value {
    #[inline(always)]
    unsafe fn vector(&self, v: V) -> V {
        v
    }
    #[inline(always)]
    fn scalar(&self, v: f32) -> f32 {
        v
    }
}

/// `(x[i] - mean)^2`, the difference rounded before it is squared; the
/// mean in every lane and alone.
struct SquaredDeviation<V> {
    lanes: V,
    mean: f32,
}

impl<V: Lanes> Term<V> for SquaredDeviation<V> {
    #[inline(always)]
    unsafe fn vector(&self, v: V) -> V {
        // SAFETY: `V`'s target features are the caller's contract.
        unsafe {
            let d = v.sub(self.lanes);
            d.mul(d)
        }
    }
    #[inline(always)]
    fn scalar(&self, v: f32) -> f32 {
        let d = v - self.mean;
        d * d
    }
}

/// The spec's ordered sum of `term(x[i])` for `i < n`.
///
/// # Safety
/// `V`'s target features are enabled; `x` readable for `n` f32.
#[inline(always)]
unsafe fn reduce<V: Lanes>(x: *const f32, n: usize, term: &impl Term<V>) -> f32 {
    // The arrays below are sized for the narrowest width, 4 lanes.
    const { assert!(V::N == 4 || V::N == 8) };
    let (accs, group) = (SPEC_LANES / V::N, GROUP_LANES / V::N);
    // SAFETY: every load is below `n`; `V`'s features are the caller's.
    unsafe {
        let zero = V::splat(0.0);
        let mut a = [zero; SPEC_LANES / 4];
        let mut i = 0;
        while i + SPEC_LANES <= n {
            for (k, acc) in a.iter_mut().enumerate().take(accs) {
                *acc = acc.add(term.vector(V::load(x.add(i + k * V::N))));
            }
            i += SPEC_LANES;
        }
        // Vector `j` of the group: spec lanes `jN..(j + 1)N` of each
        // 8-lane group, `(g0 + g1) + (g2 + g3)`.
        let mut b = [zero; GROUP_LANES / 4];
        for (j, lane) in b.iter_mut().enumerate().take(group) {
            *lane = a[j].add(a[j + group]).add(a[j + 2 * group].add(a[j + 3 * group]));
        }
        while i + GROUP_LANES <= n {
            for (j, lane) in b.iter_mut().enumerate().take(group) {
                *lane = lane.add(term.vector(V::load(x.add(i + j * V::N))));
            }
            i += GROUP_LANES;
        }
        // The tree's first step, `b[k] + b[k + 4]`, when the group spans
        // two vectors; `hsum` does the rest.
        let halves = if group == 2 { b[0].add(b[1]) } else { b[0] };
        let mut s = halves.hsum();
        while i < n {
            s += term.scalar(*x.add(i));
            i += 1;
        }
        s
    }
}

/// `sum(x[i])` in the spec's order.
///
/// # Safety
/// `V`'s target features are enabled; `x` readable for `n` f32.
#[inline(always)]
unsafe fn sum<V: Lanes>(x: *const f32, n: usize) -> f32 {
    // SAFETY: forwarded contract.
    unsafe { reduce::<V>(x, n, &Value) }
}

/// `sum((x[i] - mean)^2)` in the spec's order.
///
/// # Safety
/// `V`'s target features are enabled; `x` readable for `n` f32.
#[inline(always)]
unsafe fn sum_sq_dev<V: Lanes>(x: *const f32, n: usize, mean: f32) -> f32 {
    // SAFETY: forwarded contract.
    unsafe { reduce::<V>(x, n, &SquaredDeviation { lanes: V::splat(mean), mean }) }
}

/// `out[i] = (x[i] + res[i]) + bias[i]` (no bias term when `None`).
///
/// # Safety
/// `V`'s target features are enabled; inputs readable, `out` writable
/// for `n` f32; `out` may equal `x` or `res` exactly.
#[inline(always)]
unsafe fn add<V: Lanes>(x: *const f32, res: *const f32, bias: Option<*const f32>, out: *mut f32, n: usize) {
    let mut i = 0;
    // SAFETY: every access is below `n`; each block is loaded before the
    // store that may alias it.
    unsafe {
        match bias {
            Some(bias) => {
                while i + V::N <= n {
                    let v = V::load(x.add(i)).add(V::load(res.add(i)));
                    v.add(V::load(bias.add(i))).store(out.add(i));
                    i += V::N;
                }
                while i < n {
                    *out.add(i) = (*x.add(i) + *res.add(i)) + *bias.add(i);
                    i += 1;
                }
            }
            None => {
                while i + V::N <= n {
                    V::load(x.add(i)).add(V::load(res.add(i))).store(out.add(i));
                    i += V::N;
                }
                while i < n {
                    *out.add(i) = *x.add(i) + *res.add(i);
                    i += 1;
                }
            }
        }
    }
}

/// `out[i] = ((x[i] - mean) * scale) * g[i] + b[i]` (no shift when
/// `None`).
///
/// # Safety
/// `V`'s target features are enabled; inputs readable, `out` writable
/// for `n` f32; `out` may equal `x` exactly.
#[inline(always)]
unsafe fn normalize<V: Lanes>(
    x: *const f32,
    mean: f32,
    scale: f32,
    g: *const f32,
    b: Option<*const f32>,
    out: *mut f32,
    n: usize,
) {
    let mut i = 0;
    // SAFETY: every access is below `n`; each block is loaded before the
    // store that may alias it; `V`'s features are the caller's.
    unsafe {
        let (m, s) = (V::splat(mean), V::splat(scale));
        match b {
            Some(b) => {
                while i + V::N <= n {
                    scaled(x.add(i), m, s, g.add(i)).add(V::load(b.add(i))).store(out.add(i));
                    i += V::N;
                }
                while i < n {
                    *out.add(i) = ((*x.add(i) - mean) * scale) * *g.add(i) + *b.add(i);
                    i += 1;
                }
            }
            None => {
                while i + V::N <= n {
                    scaled(x.add(i), m, s, g.add(i)).store(out.add(i));
                    i += V::N;
                }
                while i < n {
                    *out.add(i) = ((*x.add(i) - mean) * scale) * *g.add(i);
                    i += 1;
                }
            }
        }
    }
}

/// `((x - m) * s) * g` of one vector.
///
/// # Safety
/// `V`'s target features are enabled; `x` and `g` readable for `N` f32.
#[inline(always)]
unsafe fn scaled<V: Lanes>(x: *const f32, m: V, s: V, g: *const f32) -> V {
    // SAFETY: the caller's contract.
    unsafe { V::load(x).sub(m).mul(s).mul(V::load(g)) }
}

/// The AVX2 entries: the bodies above on `__m256`.
#[cfg(target_arch = "x86_64")]
pub(super) mod avx2 {
    use std::arch::x86_64::__m256;

    /// [`super::sum`] on 8 lanes.
    ///
    /// # Safety
    /// AVX2 and FMA available; `x` readable for `n` f32.
    #[target_feature(enable = "avx2,fma")]
    pub(in crate::kernels::norm) unsafe fn avx2_sum(x: *const f32, n: usize) -> f32 {
        // SAFETY: forwarded contract; AVX2 and FMA are enabled here.
        unsafe { super::sum::<__m256>(x, n) }
    }

    /// [`super::sum_sq_dev`] on 8 lanes.
    ///
    /// # Safety
    /// AVX2 and FMA available; `x` readable for `n` f32.
    #[target_feature(enable = "avx2,fma")]
    pub(in crate::kernels::norm) unsafe fn avx2_sum_sq_dev(x: *const f32, n: usize, mean: f32) -> f32 {
        // SAFETY: forwarded contract; AVX2 and FMA are enabled here.
        unsafe { super::sum_sq_dev::<__m256>(x, n, mean) }
    }

    /// [`super::add`] on 8 lanes.
    ///
    /// # Safety
    /// AVX2 and FMA available; as [`super::add`].
    #[target_feature(enable = "avx2,fma")]
    pub(in crate::kernels::norm) unsafe fn avx2_add(
        x: *const f32,
        res: *const f32,
        bias: Option<*const f32>,
        out: *mut f32,
        n: usize,
    ) {
        // SAFETY: forwarded contract; AVX2 and FMA are enabled here.
        unsafe { super::add::<__m256>(x, res, bias, out, n) }
    }

    /// [`super::normalize`] on 8 lanes.
    ///
    /// # Safety
    /// AVX2 and FMA available; as [`super::normalize`].
    #[target_feature(enable = "avx2,fma")]
    pub(in crate::kernels::norm) unsafe fn avx2_normalize(
        x: *const f32,
        mean: f32,
        scale: f32,
        g: *const f32,
        b: Option<*const f32>,
        out: *mut f32,
        n: usize,
    ) {
        // SAFETY: forwarded contract; AVX2 and FMA are enabled here.
        unsafe { super::normalize::<__m256>(x, mean, scale, g, b, out, n) }
    }
}

/// The NEON entries: the bodies above on `float32x4_t`.
#[cfg(target_arch = "aarch64")]
pub(super) mod neon {
    use std::arch::aarch64::float32x4_t;

    /// [`super::sum`] on 4 lanes.
    ///
    /// # Safety
    /// NEON available; `x` readable for `n` f32.
    #[target_feature(enable = "neon")]
    pub(in crate::kernels::norm) unsafe fn neon_sum(x: *const f32, n: usize) -> f32 {
        // SAFETY: forwarded contract; NEON is enabled here.
        unsafe { super::sum::<float32x4_t>(x, n) }
    }

    /// [`super::sum_sq_dev`] on 4 lanes.
    ///
    /// # Safety
    /// NEON available; `x` readable for `n` f32.
    #[target_feature(enable = "neon")]
    pub(in crate::kernels::norm) unsafe fn neon_sum_sq_dev(x: *const f32, n: usize, mean: f32) -> f32 {
        // SAFETY: forwarded contract; NEON is enabled here.
        unsafe { super::sum_sq_dev::<float32x4_t>(x, n, mean) }
    }

    /// [`super::add`] on 4 lanes.
    ///
    /// # Safety
    /// NEON available; as [`super::add`].
    #[target_feature(enable = "neon")]
    pub(in crate::kernels::norm) unsafe fn neon_add(
        x: *const f32,
        res: *const f32,
        bias: Option<*const f32>,
        out: *mut f32,
        n: usize,
    ) {
        // SAFETY: forwarded contract; NEON is enabled here.
        unsafe { super::add::<float32x4_t>(x, res, bias, out, n) }
    }

    /// [`super::normalize`] on 4 lanes.
    ///
    /// # Safety
    /// NEON available; as [`super::normalize`].
    #[target_feature(enable = "neon")]
    pub(in crate::kernels::norm) unsafe fn neon_normalize(
        x: *const f32,
        mean: f32,
        scale: f32,
        g: *const f32,
        b: Option<*const f32>,
        out: *mut f32,
        n: usize,
    ) {
        // SAFETY: forwarded contract; NEON is enabled here.
        unsafe { super::normalize::<float32x4_t>(x, mean, scale, g, b, out, n) }
    }
}
