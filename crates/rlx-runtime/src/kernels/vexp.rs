//! The vector `exp`, written once over [`Lanes`]: Cody-Waite reduction to
//! `x = n ln2 + r` with `|r| <= ln2 / 2`, the Cephes `expf` polynomial for
//! `exp(r)`, and the scaling by `2^n` as two normal factors. Its users
//! differ only in what they clamp and flush, which stays theirs:
//!
//! - the softmax's [`exp_flushed`]: results below `f32::MIN_POSITIVE`
//!   flushed to 0, `+inf` past `ln(f32::MAX)`, NaN passed
//!   (`softmax::EXP_MAX_REL_ERR` bounds it);
//! - the transcendental activations' [`exp_parts`] with their own clamps
//!   (subnormal results rounded once), and [`exp_reduce`] and
//!   [`exp_poly`] alone for `expm1` and the exact GELU.
//!
//! The operations are the same at every width, so each caller's AVX-512
//! form gives its AVX2 bits, and NEON those bits too.

use super::lanes::Lanes;

/// `ln 2` split so `n * LN2_HI` is exact for `|n| <= 256` (Cody-Waite).
pub(crate) const LN2_HI: f32 = 0.693_359_4;
pub(crate) const LN2_LO: f32 = -2.121_944_4e-4;
/// Cephes `expf`: `exp(r) ~ 1 + r + r^2 * P(r)` on `|r| <= ln2 / 2`,
/// highest degree first.
pub(crate) const EXP_P: [f32; 6] = [1.987_569_1e-4, 1.398_199_9e-3, 8.333_452e-3, 4.166_579_6e-2, 0.166_666_65, 0.5];

/// `ln(2^-126)`: the smallest input whose `exp` is a normal f32; below it
/// [`exp_flushed`] gives 0.
pub(crate) const FLUSH_LO: f32 = -87.336_54;
/// `ln(f32::MAX)`: above it [`exp_flushed`] gives `+inf`.
pub(crate) const FLUSH_HI: f32 = 88.722_83;

/// `(r, n)` with `x = n ln2 + r`, `n = round(x log2 e)` integral and
/// `|r| <= ln2 / 2` (plus rounding), for `x` already clamped so `n` fits
/// [`Lanes::pow2`].
///
/// # Safety
/// `V`'s target features are enabled.
#[inline(always)]
pub(crate) unsafe fn exp_reduce<V: Lanes>(x: V) -> (V, V) {
    // SAFETY: `V`'s target features are the caller's contract.
    unsafe {
        let n = x.mul(V::splat(std::f32::consts::LOG2_E)).round();
        let r = n.fnma(V::splat(LN2_HI), x);
        (n.fnma(V::splat(LN2_LO), r), n)
    }
}

/// `exp(r) - 1 ~ r + r^2 P(r)` for a reduced `r`.
///
/// # Safety
/// `V`'s target features are enabled.
#[inline(always)]
pub(crate) unsafe fn exp_poly<V: Lanes>(r: V) -> V {
    // SAFETY: `V`'s target features are the caller's contract.
    unsafe { r.horner(&EXP_P).fma(r.mul(r), r) }
}

/// `exp(x) = p * 2^n` with `p` in `[0.7, 1.42]` and `n` integral: `x`
/// clamped to `[lo, hi]` (`max(lo, x)` then `min(hi, t)`, so NaN passes),
/// then reduced. `lo` and `hi` keep `n` inside [`Lanes::pow2`]'s range.
///
/// # Safety
/// `V`'s target features are enabled.
#[inline(always)]
pub(crate) unsafe fn exp_parts<V: Lanes>(x: V, lo: f32, hi: f32) -> (V, V) {
    // SAFETY: `V`'s target features are the caller's contract.
    unsafe {
        let xc = V::splat(hi).min(V::splat(lo).max(x));
        let (r, n) = exp_reduce(xc);
        (exp_poly(r).add(V::splat(1.0)), n)
    }
}

/// `exp(x)` with relative error under `softmax::EXP_MAX_REL_ERR` for
/// normal results: `x < FLUSH_LO` gives 0, `x > FLUSH_HI` gives `+inf`,
/// NaN gives the NaN.
///
/// # Safety
/// `V`'s target features are enabled.
#[inline(always)]
pub(crate) unsafe fn exp_flushed<V: Lanes>(x: V) -> V {
    // SAFETY: `V`'s target features are the caller's contract.
    unsafe {
        // n in [-126, 128]: 2^n as two normal halves, so n = 128 (x near
        // FLUSH_HI) does not overflow the exponent field.
        let (p, n) = exp_parts(x, FLUSH_LO, FLUSH_HI);
        let out = p.pow2(n);
        let out = V::select(x.lt(V::splat(FLUSH_LO)), V::splat(0.0), out);
        let out = V::select(x.gt(V::splat(FLUSH_HI)), V::splat(f32::INFINITY), out);
        V::select(x.eq(x), out, x)
    }
}
