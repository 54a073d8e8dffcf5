//! Vector forms of the transcendental activations (`exp`, `sigmoid`,
//! `silu`, `tanh`, `gelu_tanh`, `elu`, `selu`, `celu`, `mish`,
//! `softplus`) and the exact `gelu`, written
//! once over [`Lanes`] and run on 8 lanes (AVX2+FMA) or 16 (AVX-512F) with
//! the same operations lane for lane, so both widths give the same bits.
//!
//! They are approximations within a few f32 ulp of the exact function
//! (each bound is measured in the tests), not `math`'s bits: `math` calls
//! libm one element at a time, which dominates LSTM/GRU gates, SiLU CNNs
//! and tanh-GELU FFNs. Everything is built on one `exp`: Cody-Waite
//! reduction `x = n ln2 + r` and the Cephes polynomial for `exp(r)`
//! (`kernels::vexp`), with the `2^n` applied last by `pow2`, as two
//! normal factors, so a subnormal result is rounded once. Where a result
//! is `x * e^x`-small (`sigmoid`, `silu`, `gelu_tanh`, `mish` for negative
//! inputs) the whole product is formed on the reduced `exp(r)` and scaled
//! by `2^n` at the end, for the same reason. Limits are exact and NaN
//! propagates; each form says how.
//!
//! Every element goes through the same vector code (the tail through a
//! masked load and store), so a result never depends on its position or
//! on the call's length: the recurrent family's reference relies on it.

use std::arch::x86_64::{__m256, __m512};

use crate::kernels::lanes::{map, Form, Lanes};
use crate::kernels::vexp::{exp_parts, exp_poly, exp_reduce, LN2_HI, LN2_LO};
use rlx_core::ActKind;

/// Arguments of `exp` are clamped to `[EXP_LO, EXP_HI]`: `exp(-120)` and
/// `120 * exp(-120)` round to 0 and `exp(89)` overflows to `inf`, so the
/// clamp changes no result, and `n` stays in `[-173, 128]`, inside
/// `times_pow2`'s `[-252, 254]`.
pub(super) const EXP_LO: f32 = -120.0;
/// See [`EXP_LO`].
pub(super) const EXP_HI: f32 = 89.0;
/// `expm1` arguments are clamped to `[EXPM1_LO, 0]`: below -17.4 `expm1`
/// is -1 in f32, and `2^n` stays normal.
pub(super) const EXPM1_LO: f32 = -30.0;
/// Below this `|x|`, `tanh` is the odd polynomial; from it on,
/// `1 - 2e / (1 + e)` with `e = exp(-2|x|)`, which no longer cancels.
pub(super) const TANH_SPLIT: f32 = 0.625;
/// Cephes `tanhf`: `tanh(x) = x + x^3 P(x^2)` on `|x| < 0.625`, highest
/// degree first.
pub(super) const TANH_P: [f32; 5] = [-5.704_988_7e-3, 2.063_909e-2, -5.373_971_6e-2, 1.333_144_2e-1, -3.333_328e-1];
/// `mish`'s `exp` argument is clamped to this: from 20 on,
/// `w (w + 2) / (w (w + 2) + 2)` is 1 in f32 (`w = e^x`).
pub(super) const MISH_HI: f32 = 20.0;
/// Cephes `logf`: `ln(1 + f) = f - f^2 / 2 + f^3 P(f)` on
/// `sqrt(1/2) - 1 <= f < sqrt(2) - 1`, highest degree first.
pub(super) const LOG_P: [f32; 9] = [
    7.037_683_6e-2,
    -1.151_461_e-1,
    1.167_699_9e-1,
    -1.242_014_1e-1,
    1.424_932_3e-1,
    -1.666_805_8e-1,
    2.000_071_4e-1,
    -2.499_999_4e-1,
    3.333_333e-1,
];
/// `2 * sqrt(2 / pi)`, as `math::gelu_tanh` rounds it.
const GELU_TANH_2C: f32 = (2.0 * std::f64::consts::FRAC_2_SQRT_PI * std::f64::consts::FRAC_1_SQRT_2) as f32;

/// Whether `act` has a vector form here (`celu` only for `alpha > 0`, the
/// range where its `exp` argument `x / alpha` is never positive).
pub(super) fn supports(act: ActKind) -> bool {
    match act {
        ActKind::Exp
        | ActKind::Sigmoid
        | ActKind::Silu
        | ActKind::Tanh
        | ActKind::GeluTanh
        | ActKind::Mish
        | ActKind::Softplus
        | ActKind::Elu { .. }
        | ActKind::Selu { .. } => true,
        ActKind::Celu { alpha } => alpha > 0.0,
        _ => false,
    }
}

/// `exp(x) = p * 2^n` (`vexp::exp_parts`) with `x` clamped to
/// `[EXP_LO, hi]` (NaN passes).
///
/// # Safety
/// `V`'s target features are enabled.
#[inline(always)]
unsafe fn exp_split<V: Lanes>(x: V, hi: f32) -> (V, V) {
    // SAFETY: `V`'s target features are the caller's contract.
    unsafe { exp_parts(x, EXP_LO, hi) }
}

/// `exp(x)`: `exp(-inf) = 0`, `exp(inf) = inf`, overflow to `inf` from
/// `ln(f32::MAX)`, subnormal results rounded once.
///
/// # Safety
/// `V`'s target features are enabled.
#[inline(always)]
unsafe fn exp<V: Lanes>(x: V) -> V {
    // SAFETY: `V`'s target features are the caller's contract.
    unsafe {
        let (p, n) = exp_split(x, EXP_HI);
        p.pow2(n)
    }
}

/// `num / (1 + e) * 2^m` with `exp(-|u|) = p 2^n = e`: the shared tail
/// of the logistic forms. For `u >= 0` the numerator is `pos` and
/// `m = 0`; below, `neg * p` and `m = n`, so `x e / (1 + e)`-small
/// results are scaled once, at the end (no overflow: `e <= 1`).
///
/// # Safety
/// `V`'s target features are enabled.
#[inline(always)]
unsafe fn logistic<V: Lanes>(u: V, pos: V, neg: V) -> V {
    // SAFETY: `V`'s target features are the caller's contract.
    unsafe {
        let (p, n) = exp_split(u.abs().mul(V::splat(-1.0)), 0.0);
        let d = p.pow2(n).add(V::splat(1.0));
        let ge = u.ge(V::splat(0.0));
        let num = V::select(ge, pos, neg.mul(p));
        num.div(d).pow2(V::select(ge, V::splat(0.0), n))
    }
}

/// `1 / (1 + exp(-x))`: `1 / (1 + e)` for `x >= 0`, `e / (1 + e)` below
/// (`e = exp(-|x|)`, never overflowing); `sigmoid(-inf) = 0`,
/// `sigmoid(inf) = 1`.
///
/// # Safety
/// `V`'s target features are enabled.
#[inline(always)]
unsafe fn sigmoid<V: Lanes>(x: V) -> V {
    // `1 * p` is `p`: the numerator below 0 is `e`'s reduced part.
    // SAFETY: `V`'s target features are the caller's contract.
    unsafe { logistic(x, V::splat(1.0), V::splat(1.0)) }
}

/// `x * sigmoid(u)` for the silu-like forms. `x` is clamped below at
/// `EXP_LO` in the negative route (where it only scales a result that
/// rounds to -0 there), so `x = -inf` gives -0, not NaN.
///
/// # Safety
/// `V`'s target features are enabled.
#[inline(always)]
unsafe fn x_sigmoid<V: Lanes>(x: V, u: V) -> V {
    // SAFETY: `V`'s target features are the caller's contract.
    unsafe { logistic(u, x, V::splat(EXP_LO).max(x)) }
}

/// `x * sigmoid(x)`; `silu(-inf) = -0`, `silu(inf) = inf`.
///
/// # Safety
/// `V`'s target features are enabled.
#[inline(always)]
unsafe fn silu<V: Lanes>(x: V) -> V {
    // SAFETY: `V`'s target features are the caller's contract.
    unsafe { x_sigmoid(x, x) }
}

/// `x * sigmoid(2u)` with `2u = 2c (x + 0.044715 x^3)`, as
/// `math::gelu_tanh`; `gelu_tanh(-inf) = -0`. For `x < -75` (or overflowing
/// `x^3`) `2u` is below `EXP_LO` and the result rounds to -0.
///
/// # Safety
/// `V`'s target features are enabled.
#[inline(always)]
unsafe fn gelu_tanh<V: Lanes>(x: V) -> V {
    // SAFETY: `V`'s target features are the caller's contract.
    unsafe {
        let inner = V::splat(0.044715).mul(x).mul(x).fma(x, x);
        x_sigmoid(x, inner.mul(V::splat(GELU_TANH_2C)))
    }
}

/// `tanh(x)` from `a = |x|`, the sign put back last (so `-0` stays `-0`):
/// `a + a^3 P(a^2)` below `TANH_SPLIT`, else `1 - 2e / (1 + e)` with
/// `e = exp(-2a)`, which is exactly 1 once `2e` is below half an ulp of 1
/// (and for infinities). NaN takes the second route and stays NaN.
///
/// # Safety
/// `V`'s target features are enabled.
#[inline(always)]
unsafe fn tanh<V: Lanes>(x: V) -> V {
    // SAFETY: `V`'s target features are the caller's contract.
    unsafe {
        let a = x.abs();
        let z = a.mul(a);
        let near = a.mul(z).fma(z.horner(&TANH_P), a);
        let (p, n) = exp_split(a.mul(V::splat(-2.0)), 0.0);
        let e = p.pow2(n);
        let far = V::splat(1.0).sub(e.add(e).div(e.add(V::splat(1.0))));
        V::select(a.lt(V::splat(TANH_SPLIT)), near, far).or_sign_of(x)
    }
}

/// `expm1(x)` for `x <= 0` (other lanes are computed on `min(x, 0)`):
/// `x = n ln2 + r`, `expm1(x) = 2^n expm1(r) + (2^n - 1)` with `expm1(r)`
/// the Cephes polynomial before its `+ 1`, so near 0 (`n = 0`) nothing
/// cancels; one fused multiply-add joins the parts. The sign of `x` is
/// or-ed in so `expm1(-0) = -0`; `expm1(-inf) = -1`.
///
/// # Safety
/// `V`'s target features are enabled.
#[inline(always)]
unsafe fn expm1_neg<V: Lanes>(x: V) -> V {
    // SAFETY: `V`'s target features are the caller's contract.
    unsafe {
        let xc = V::splat(0.0).min(V::splat(EXPM1_LO).max(x));
        let (r, n) = exp_reduce(xc);
        let q = exp_poly(r);
        let s = V::splat(1.0).pow2(n);
        s.fma(q, s.sub(V::splat(1.0))).or_sign_of(x)
    }
}

/// `alpha * expm1(x)` for `x < 0`, else `x` (NaN passes), as `math::elu`.
///
/// # Safety
/// `V`'s target features are enabled.
#[inline(always)]
unsafe fn elu<V: Lanes>(x: V, alpha: f32) -> V {
    // SAFETY: `V`'s target features are the caller's contract.
    unsafe { V::select(x.lt(V::splat(0.0)), V::splat(alpha).mul(expm1_neg(x)), x) }
}

/// `gamma * x` for `x > 0`, else `gamma * (alpha * expm1(x))`, as
/// `math::selu` (the positive route is its bits).
///
/// # Safety
/// `V`'s target features are enabled.
#[inline(always)]
unsafe fn selu<V: Lanes>(x: V, alpha: f32, gamma: f32) -> V {
    // SAFETY: `V`'s target features are the caller's contract.
    unsafe {
        let g = V::splat(gamma);
        let neg = g.mul(V::splat(alpha).mul(expm1_neg(x)));
        V::select(x.gt(V::splat(0.0)), g.mul(x), neg)
    }
}

/// `x` for `x > 0`, else `alpha * expm1(x / alpha)`, as `math::celu`
/// (`alpha > 0`, see [`supports`]).
///
/// # Safety
/// `V`'s target features are enabled.
#[inline(always)]
unsafe fn celu<V: Lanes>(x: V, alpha: f32) -> V {
    // SAFETY: `V`'s target features are the caller's contract.
    unsafe {
        let a = V::splat(alpha);
        V::select(x.gt(V::splat(0.0)), x, a.mul(expm1_neg(x.div(a))))
    }
}

/// `x * tanh(softplus(x))` without a logarithm: with `w = e^x`,
/// `tanh(ln(1 + w)) = N / (N + 2)` where `N = w (w + 2)`. For `x >= 0`
/// that ratio times `x` (it is exactly 1 from [`MISH_HI`] on, so large
/// `x` give `x`); below, `w = p 2^n` and the result is
/// `(x p (w + 2) / (N + 2)) * 2^n`, scaled once, at the end.
/// `mish(-inf) = -0`, `mish(inf) = inf`, NaN passes.
///
/// # Safety
/// `V`'s target features are enabled.
#[inline(always)]
unsafe fn mish<V: Lanes>(x: V) -> V {
    // SAFETY: `V`'s target features are the caller's contract.
    unsafe {
        let two = V::splat(2.0);
        let (p, n) = exp_split(x, MISH_HI);
        let w = p.pow2(n);
        let w2 = w.add(two);
        let big_n = w.mul(w2);
        let ge = x.ge(V::splat(0.0));
        let q = V::select(ge, big_n, p.mul(w2)).div(big_n.add(two));
        let xc = V::splat(EXP_LO).max(x);
        xc.mul(q).pow2(V::select(ge, V::splat(0.0), n))
    }
}

/// `ln(1 + y)` for `y` in `[0, 1]` (NaN passes): `u = 1 + y` rounded,
/// `u = 2^k (1 + f)` with `k` 0 or 1 and `f` in `[sqrt(1/2) - 1, sqrt(2) -
/// 1)` (both steps exact), Cephes' polynomial for `ln(1 + f)`, and the
/// rounding error of `u`, `y - (u - 1)` (exact), added back as
/// `(y - (u - 1)) / u`, so a tiny `y` gives `y` itself.
///
/// # Safety
/// `V`'s target features are enabled.
#[inline(always)]
unsafe fn log1p_unit<V: Lanes>(y: V) -> V {
    // SAFETY: `V`'s target features are the caller's contract.
    unsafe {
        let one = V::splat(1.0);
        let u = one.add(y);
        let c = y.sub(u.sub(one)).div(u);
        let big = u.ge(V::splat(std::f32::consts::SQRT_2));
        let k = V::select(big, one, V::splat(0.0));
        let f = V::select(big, u.mul(V::splat(0.5)), u).sub(one);
        let z = f.mul(f);
        let t = f.mul(z).fma(f.horner(&LOG_P), V::splat(-0.5).mul(z));
        let t = k.fma(V::splat(LN2_LO), t.add(c));
        k.fma(V::splat(LN2_HI), f.add(t))
    }
}

/// `ln(1 + exp(x))` as `max(x, 0) + ln(1 + exp(-|x|))`, as
/// `math::softplus`: no overflow, and for very negative `x` the result is
/// `exp(x)` itself (rounded once, subnormals included).
/// `softplus(-inf) = 0`, `softplus(inf) = inf`, NaN passes.
///
/// # Safety
/// `V`'s target features are enabled.
#[inline(always)]
unsafe fn softplus<V: Lanes>(x: V) -> V {
    // SAFETY: `V`'s target features are the caller's contract.
    unsafe {
        let zero = V::splat(0.0);
        let e = exp(x.abs().mul(V::splat(-1.0)));
        let pos = V::select(x.gt(zero), x, zero);
        pos.add(log1p_unit(e))
    }
}

// ------------------------------------------------------------- gelu ----

/// Below this `|x|` GELU is `0.5 x (1 + erf(x / sqrt 2))` with `erf` an odd
/// polynomial; from it on, `erfc` as `exp(-x^2 / 2) * erfcx`. At 0.75,
/// `1 + erf` is still above 0.45 for negative `x`, so the cancellation
/// at most doubles erf's error.
pub(super) const GELU_SPLIT: f32 = 0.75;
/// `|x|` is clamped to this in the `erfc` route: at 15, `0.5 x erfc` is
/// below 1e-48 (rounds to -0 for negative `x`) and `x - 0.5 x erfc` is
/// `x`, so larger magnitudes (and infinities) give the limits.
pub(super) const GELU_CLAMP: f32 = 15.0;
/// `erf(x / sqrt 2) / x` as a polynomial in `x^2` on `|x| <= 0.75`,
/// highest degree first: a weighted least-squares fit on Chebyshev-spaced
/// points (relative error 3e-8 with the coefficients rounded to f32).
pub(super) const ERF_P: [f32; 6] =
    [-1.677_573_2e-5, 2.295_552_1e-4, -2.374_275_1e-3, 1.994_706_3e-2, -1.329_807_6e-1, 7.978_846e-1];
/// `g(a) = 0.5 a erfcx(a / sqrt 2)` (where `erfcx(t) = exp(t^2) erfc(t)`)
/// as a polynomial in `v = 1 / (1 + 0.75 a) - GELU_V0` on `0.75 <= a <= 15`,
/// highest degree first: a weighted least-squares fit on 200k points
/// (relative error 1.7e-7 when evaluated in f32 with f32 coefficients,
/// simulated). Folding `0.5 a` into `g` saves a rounding; centring `v`
/// keeps the coefficients small.
pub(super) const GELU_G: [f32; 12] = [
    -2.563_128_5,
    3.227_598,
    -5.785_254e-1,
    -1.304_916,
    1.200_348_5,
    -2.050_775_7e-1,
    -5.432_647_5e-1,
    5.041_454_4e-1,
    1.188_564_4e-1,
    -5.269_781e-1,
    -3.145_764_8e-1,
    3.493_310_8e-1,
];
/// Centre of `1 / (1 + 0.75 a)` over `0.75 <= a <= 15`.
pub(super) const GELU_V0: f32 = 0.360_816_33;
/// Exact GELU `0.5 x (1 + erf(x / sqrt 2))`, within a few f32
/// ulp of `math::gelu` (the bound is measured and asserted in the tests).
///
/// Both routes are computed for every lane and blended:
/// - `|x| < 0.75`: `0.5 x * (1 + x P(x^2))`. Tiny and subnormal `x` give
///   `0.5 x` rounded once, as `math::gelu`; signed zeros are kept.
/// - otherwise, with `a = min(|x|, 15)`: `e = g(a) exp(-a^2/2)` where
///   `g(a) = 0.5 a erfcx(a / sqrt 2)` is a polynomial in `1 / (1 + 0.75 a)`,
///   and the result is `x - e` for `x > 0`, `-e` for `x < 0`. `a^2` is
///   split exactly as `h + l` (FMA) so the exponent carries no rounding
///   error; `exp(-h/2)` is reduced Cody-Waite style to `2^n exp(r)` and
///   `2^n` is applied last as two normal factors, so a subnormal result is
///   rounded once. `x = -inf` gives -0, `+inf` gives `+inf`.
/// - NaN lanes take the second route, whose `x + ...` returns the NaN.
///
/// # Safety
/// `V`'s target features are enabled.
#[inline(always)]
unsafe fn gelu<V: Lanes>(x: V) -> V {
    // SAFETY: `V`'s target features are the caller's contract.
    unsafe {
        let half = V::splat(0.5);
        let one = V::splat(1.0);
        let ax = x.abs();
        let p = x.mul(x).horner(&ERF_P);
        let near = half.mul(x).mul(x.fma(p, one));
        let a = ax.max(V::splat(GELU_SPLIT)).min(V::splat(GELU_CLAMP));
        let s = one.div(V::splat(0.75).fma(a, one));
        let g = s.sub(V::splat(GELU_V0)).horner(&GELU_G);
        // -a^2 / 2 = hh + ll exactly (halving is exact at these magnitudes).
        let h = a.mul(a);
        let l = a.fms(a, h);
        let hh = h.mul(V::splat(-0.5));
        let ll = l.mul(V::splat(-0.5));
        // hh = n ln2 + r, n in [-163, 0], |r| <= ln2 / 2 (+ |ll|).
        let (r, n) = exp_reduce(hh);
        let e_r = exp_poly(r.add(ll)).add(one);
        // m = -0.5 a erfc(a / sqrt 2) = -g exp(-a^2 / 2): normal until the
        // last factor of 2^n (n1, n2 >= -82: both normal).
        let m = g.mul(e_r).pow2(n).neg();
        let far = V::select(x.lt(V::splat(0.0)), m, x.add(m));
        V::select(ax.lt(V::splat(GELU_SPLIT)), near, far)
    }
}

/// A [`Form`] per kind: `form!(Name { params }, |self, x| expr)`.
macro_rules! form {
    ($name:ident { $($p:ident),* }, |$s:ident, $x:ident| $body:expr) => {
        struct $name {
            $($p: f32,)*
        }
        impl Form for $name {
            #[inline(always)]
            #[allow(unused_variables)]
            unsafe fn apply<V: Lanes>(&self, $x: V) -> V {
                let $s = self;
                // SAFETY: `V`'s target features are the `Form::apply` contract.
                unsafe { $body }
            }
        }
    };
}

form!(Gelu {}, |s, x| gelu(x));
form!(Exp {}, |s, x| exp(x));
form!(Sigmoid {}, |s, x| sigmoid(x));
form!(Silu {}, |s, x| silu(x));
form!(Tanh {}, |s, x| tanh(x));
form!(GeluTanh {}, |s, x| gelu_tanh(x));
form!(Mish {}, |s, x| mish(x));
form!(Softplus {}, |s, x| softplus(x));
form!(Elu { alpha }, |s, x| elu(x, s.alpha));
form!(Selu { alpha, gamma }, |s, x| selu(x, s.alpha, s.gamma));
form!(Celu { alpha }, |s, x| celu(x, s.alpha));

/// `dst[i] = act(src[i])` for a kind [`supports`] accepts, `V::N` lanes
/// at a time; other kinds run the scalar kernel.
///
/// # Safety
/// `V`'s target features are enabled; `src` readable and `dst` writable
/// for `len` f32; `dst == src` or no overlap.
#[inline(always)]
unsafe fn run<V: Lanes>(act: ActKind, src: *const f32, dst: *mut f32, len: usize) {
    // SAFETY: the caller's target features, extents and aliasing are what
    // `map` (and each form it applies) and `scalar_act_f32` require.
    unsafe {
        match act {
            ActKind::Exp => map::<V, _>(src, dst, len, &Exp {}),
            ActKind::Sigmoid => map::<V, _>(src, dst, len, &Sigmoid {}),
            ActKind::Silu => map::<V, _>(src, dst, len, &Silu {}),
            ActKind::Tanh => map::<V, _>(src, dst, len, &Tanh {}),
            ActKind::GeluTanh => map::<V, _>(src, dst, len, &GeluTanh {}),
            ActKind::Mish => map::<V, _>(src, dst, len, &Mish {}),
            ActKind::Softplus => map::<V, _>(src, dst, len, &Softplus {}),
            ActKind::Elu { alpha } => map::<V, _>(src, dst, len, &Elu { alpha }),
            ActKind::Selu { alpha, gamma } => map::<V, _>(src, dst, len, &Selu { alpha, gamma }),
            ActKind::Celu { alpha } if alpha > 0.0 => map::<V, _>(src, dst, len, &Celu { alpha }),
            _ => super::scalar_act_f32(act, src, dst, len),
        }
    }
}

/// [`run`] on 8 lanes.
///
/// # Safety
/// AVX2 and FMA available; extents and aliasing as [`run`].
#[target_feature(enable = "avx2,fma")]
pub(super) unsafe fn avx2_trans_f32(act: ActKind, src: *const f32, dst: *mut f32, len: usize) {
    // SAFETY: AVX2 and FMA are enabled here, the features `__m256` lanes
    // need; the rest is the caller's contract.
    unsafe { run::<__m256>(act, src, dst, len) }
}

/// [`run`] on 16 lanes: the bits of [`avx2_trans_f32`].
///
/// # Safety
/// AVX-512F available; extents and aliasing as [`run`].
#[target_feature(enable = "avx512f")]
pub(super) unsafe fn avx512_trans_f32(act: ActKind, src: *const f32, dst: *mut f32, len: usize) {
    // SAFETY: AVX-512F is enabled here, the feature `__m512` lanes need;
    // the rest is the caller's contract.
    unsafe { run::<__m512>(act, src, dst, len) }
}

/// The exact GELU on 8 lanes.
///
/// # Safety
/// AVX2 and FMA available; `src` readable and `dst` writable for `len`
/// f32; `dst == src` or no overlap.
#[target_feature(enable = "avx2,fma")]
pub(super) unsafe fn avx2_gelu_f32(src: *const f32, dst: *mut f32, len: usize) {
    // SAFETY: AVX2 and FMA are enabled here; the rest is the caller's contract.
    unsafe { map::<__m256, _>(src, dst, len, &Gelu {}) }
}

/// The exact GELU on 16 lanes: the bits of [`avx2_gelu_f32`] (GELU models
/// spend a few percent of their time here, and 16 lanes halve it).
///
/// # Safety
/// AVX-512F available; `src` readable and `dst` writable for `len` f32;
/// `dst == src` or no overlap.
#[target_feature(enable = "avx512f")]
pub(super) unsafe fn avx512_gelu_f32(src: *const f32, dst: *mut f32, len: usize) {
    // SAFETY: AVX-512F is enabled here; the rest is the caller's contract.
    unsafe { map::<__m512, _>(src, dst, len, &Gelu {}) }
}
