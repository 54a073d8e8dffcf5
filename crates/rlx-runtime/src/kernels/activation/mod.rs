//! Activation kernels: `dst[i] = act(src[i])`, in place or not.
//!
//! The scalar kernel applies `crate::math`, the single definition of every
//! activation. Two kinds of SIMD kernel (x86-64; aarch64 runs the scalar
//! kernel for every kind, there is no NEON file):
//!
//! - `avx2`: the activations whose vector form is the same IEEE operations
//!   in the same order as `math` (comparisons, blends, `+ - * /`, `sqrt`,
//!   rounding), so it is bit-exact with scalar; only the NaN payload chosen
//!   when both operands of an operation are NaN may differ.
//! - `transcendental`: exp, sigmoid, silu, tanh, gelu_tanh, mish,
//!   softplus, elu, selu, celu and the exact gelu, written once over
//!   `kernels::lanes`' vector interface and run on 16 lanes with AVX-512F
//!   or 8 with AVX2+FMA (the same operations lane for lane, so the same
//!   bits): approximations on the one vector `exp` (`kernels::vexp`), each
//!   within a measured ulp bound of the exact function
//!   (`docs/kernels/activation.md`). Log, erf, sin and cos stay scalar.
//!
//! The choice is made once per process, and every vector kernel runs its
//! tail through the same vector code (masked), so an element's bits do not
//! depend on its position, the call's length or the thread split
//! ([`act_f32_fast`] is that per-element function). The interpreter and
//! generated code both call [`act_f32_slice`] / [`act_in_place_f32`], so
//! they agree bit for bit on one machine.
//!
//! [`act_f32_slice_math`] is the path bit-exact with `math` for every kind:
//! it takes only the exact SIMD kernels. The fused `ElementwiseRegion`
//! applies its activation steps through the fast path instead, so a fused
//! chain keeps the bits of its unfused thunks.

mod scalar;

#[cfg(target_arch = "x86_64")]
mod avx2;
#[cfg(target_arch = "x86_64")]
mod transcendental;

#[cfg(test)]
pub(crate) mod tests;

use crate::kernels::elementwise::par::{split, SyncPtr};
use crate::kernels::variants::variants;
use rlx_core::ActKind;

pub use scalar::scalar_act_f32;

/// Whether `act` runs a SIMD kernel on this CPU (else the scalar one).
pub fn act_has_simd(act: ActKind) -> bool {
    let k = KERNELS.best();
    (k.exact.is_some() && has_exact_form(act)) || (k.trans.is_some() && has_trans_form(act))
}

/// `dst[i] = f(src[i])` for `i < len` (see [`act_f32_slice`]).
type MapFn = unsafe fn(*const f32, *mut f32, usize);
/// `dst[i] = act(src[i])` for `i < len` (see [`act_f32_slice`]).
type ActFn = unsafe fn(ActKind, *const f32, *mut f32, usize);

/// One instruction set's activation kernels; a kind with no kernel here
/// runs the scalar one.
#[derive(Clone, Copy)]
pub(crate) struct Kernels {
    /// The exact GELU on 16 lanes (else it runs in `exact`).
    gelu16: Option<MapFn>,
    /// The transcendental forms ([`has_trans_form`]).
    trans: Option<ActFn>,
    /// The forms of [`has_exact_form`] (the exact GELU on 8 lanes).
    exact: Option<ActFn>,
}

variants! {
    /// The kernels, best first. The AVX-512 forms give the AVX2 bits, so
    /// the choice never changes a result. Only x86-64 has vector forms:
    /// elsewhere the list is the scalar kernel alone, which the kernels
    /// call without looking it up.
    #[cfg_attr(not(target_arch = "x86_64"), allow(dead_code))]
    pub(crate) static KERNELS: Kernels = [
        #[cfg(target_arch = "x86_64")]
        "avx512" if cpu::avx512f() => Kernels {
            gelu16: Some(transcendental::avx512_gelu_f32),
            trans: Some(transcendental::avx512_trans_f32),
            exact: Some(avx2::avx2_act_f32),
        },
        #[cfg(target_arch = "x86_64")]
        "avx2" if cpu::avx2_fma() => Kernels {
            gelu16: None,
            trans: Some(transcendental::avx2_trans_f32),
            exact: Some(avx2::avx2_act_f32),
        },
        "scalar" => Kernels {
            gelu16: None,
            trans: None,
            exact: None,
        },
    ];
}

/// Whether `act` has a transcendental vector form (an approximation).
fn has_trans_form(act: ActKind) -> bool {
    #[cfg(target_arch = "x86_64")]
    {
        transcendental::supports(act)
    }
    #[cfg(not(target_arch = "x86_64"))]
    {
        let _ = act;
        false
    }
}

/// Whether `act` has a form in the `exact` kernel.
fn has_exact_form(act: ActKind) -> bool {
    #[cfg(target_arch = "x86_64")]
    {
        avx2::supports(act)
    }
    #[cfg(not(target_arch = "x86_64"))]
    {
        let _ = act;
        false
    }
}

/// Whether the `exact` kernel's form of `act` gives `math`'s bits (the
/// 8-lane exact GELU is within an ulp bound instead).
fn exact_form_is_bit_exact(act: ActKind) -> bool {
    #[cfg(target_arch = "x86_64")]
    {
        avx2::is_bit_exact(act)
    }
    #[cfg(not(target_arch = "x86_64"))]
    {
        let _ = act;
        false
    }
}

/// One thread's share: the SIMD kernel where it exists, else scalar.
///
/// # Safety
/// As [`act_f32_slice`].
unsafe fn act_serial(act: ActKind, src: *const f32, dst: *mut f32, len: usize) {
    #[cfg(target_arch = "x86_64")]
    // SAFETY: the best variant runs on this CPU; the caller's extents.
    unsafe {
        act_with(KERNELS.best(), act, src, dst, len)
    }
    #[cfg(not(target_arch = "x86_64"))]
    // SAFETY: the caller's extents and aliasing (`dst == src` or disjoint)
    // are what `scalar_act_f32` requires.
    unsafe {
        scalar_act_f32(act, src, dst, len)
    }
}

/// [`act_serial`] with the variant `k`.
///
/// # Safety
/// As [`act_f32_slice`]; `k` runs on this CPU.
#[cfg_attr(not(any(test, target_arch = "x86_64")), allow(dead_code))]
#[inline]
unsafe fn act_with(k: &Kernels, act: ActKind, src: *const f32, dst: *mut f32, len: usize) {
    if act == ActKind::Gelu {
        if let Some(gelu16) = k.gelu16 {
            // SAFETY: the variant runs on this CPU; extents as the caller promised.
            unsafe { gelu16(src, dst, len) };
            return;
        }
    }
    if let (Some(trans), true) = (k.trans, has_trans_form(act)) {
        // SAFETY: the variant runs on this CPU; extents as the caller promised.
        unsafe { trans(act, src, dst, len) };
        return;
    }
    if let (Some(exact), true) = (k.exact, has_exact_form(act)) {
        // SAFETY: the variant runs on this CPU; extents as the caller promised.
        unsafe { exact(act, src, dst, len) };
        return;
    }
    // SAFETY: the caller's extents and aliasing (`dst == src` or disjoint) are
    // what `scalar_act_f32` requires.
    unsafe { scalar_act_f32(act, src, dst, len) }
}

/// Whether [`act_with`] gives `math`'s bits for `act` on `k` (up to NaN
/// payloads): the scalar kernel or an exact vector form, not an
/// approximation.
#[cfg(test)]
fn is_bit_exact_with(k: &Kernels, act: ActKind) -> bool {
    if (act == ActKind::Gelu && k.gelu16.is_some()) || (k.trans.is_some() && has_trans_form(act)) {
        return false;
    }
    !(k.exact.is_some() && has_exact_form(act)) || exact_form_is_bit_exact(act)
}

/// `dst[i] = math::act_f32(act, src[i])` for `i < len`, bit for bit on
/// every CPU (up to NaN payloads): the SIMD kernel only for the kinds
/// whose vector form is exact, so `gelu` and the transcendental kinds
/// (exp, sigmoid, tanh, ...) run the scalar `math` here. Serial.
///
/// # Safety
/// As [`act_f32_slice`].
pub unsafe fn act_f32_slice_math(act: ActKind, src: *const f32, dst: *mut f32, len: usize) {
    #[cfg(target_arch = "x86_64")]
    // SAFETY: the best variant runs on this CPU; the caller's extents.
    unsafe {
        act_math_with(KERNELS.best(), act, src, dst, len)
    }
    #[cfg(not(target_arch = "x86_64"))]
    // SAFETY: the caller's extents and aliasing (`dst == src` or disjoint)
    // are what `scalar_act_f32` requires.
    unsafe {
        scalar_act_f32(act, src, dst, len)
    }
}

/// [`act_f32_slice_math`] with the variant `k`: its exact kernel for the
/// kinds whose form there is bit-exact, else scalar.
///
/// # Safety
/// As [`act_f32_slice`]; `k` runs on this CPU.
#[cfg_attr(not(any(test, target_arch = "x86_64")), allow(dead_code))]
#[inline]
unsafe fn act_math_with(k: &Kernels, act: ActKind, src: *const f32, dst: *mut f32, len: usize) {
    if let (Some(exact), true) = (k.exact, has_exact_form(act) && exact_form_is_bit_exact(act)) {
        // SAFETY: the variant runs on this CPU; extents as the caller promised.
        unsafe { exact(act, src, dst, len) };
        return;
    }
    // SAFETY: the caller's extents and aliasing (`dst == src` or disjoint) are
    // what `scalar_act_f32` requires.
    unsafe { scalar_act_f32(act, src, dst, len) }
}

/// `dst[i] = act(src[i])` for `i < len`; split over threads when `par`
/// (results are identical either way).
///
/// # Safety
/// `src` is valid for reads and `dst` for writes of `len` f32 (aligned to
/// 4 bytes); `dst == src` (exact alias, in place) or the ranges do not
/// overlap.
pub unsafe fn act_f32_slice(act: ActKind, src: *const f32, dst: *mut f32, len: usize, par: bool) {
    let (s, d) = (SyncPtr::new_const(src), SyncPtr(dst));
    split(len, par, &|start, n| {
        // SAFETY: `start + n <= len`, so both sub-ranges lie inside the
        // caller's extents; chunks write disjoint ranges.
        unsafe { act_serial(act, s.get().add(start), d.get().add(start), n) }
    });
}

/// `act(x)` as [`act_f32_slice`] computes it for an element `x` on this
/// CPU: every kernel gives an element the same bits wherever it sits in
/// a call of any length (the SIMD forms run their tail through the same
/// vector code), so this is the per-element spec of the fast path, as
/// `math::act_f32` is of [`act_f32_slice_math`]. Scalar references of
/// kernels that apply activations through the fast path use it.
pub fn act_f32_fast(act: ActKind, x: f32) -> f32 {
    let mut v = x;
    let p: *mut f32 = &mut v;
    // SAFETY: `p` is one f32, read and written in place (the exact alias).
    unsafe { act_serial(act, p, p, 1) };
    v
}

/// `data[i] = act(data[i])` for `i < len`, split over threads when `par`.
///
/// # Safety
/// `data` is valid for reads and writes of `len` f32, aligned to 4 bytes.
pub unsafe fn act_in_place_f32(act: ActKind, data: *mut f32, len: usize, par: bool) {
    // SAFETY: `data` is readable and writable for `len` f32; passing it as both
    // `src` and `dst` is the exact alias `act_f32_slice` allows.
    unsafe { act_f32_slice(act, data, data, len, par) }
}

/// The activations that are a clamp, as `(lo, hi)`: `t = x < lo ? lo : x;
/// t > hi ? hi : t`, which is `math::clip` and, with `(0, +inf)`, exactly
/// `math::relu` (`-0.0` and NaN pass through both). Kernels apply these in
/// registers before they store (AVX `max(lo, x)` then `min(hi, t)` are
/// those comparisons operand for operand), which saves a pass over the
/// output and gives the bits of a separate `Activation`.
pub(crate) fn as_clamp(act: ActKind) -> Option<(f32, f32)> {
    match act {
        ActKind::Relu => Some((0.0, f32::INFINITY)),
        ActKind::Clip { min, max } => Some((min, max)),
        _ => None,
    }
}
