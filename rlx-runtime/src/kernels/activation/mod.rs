//! Activation kernels: `dst[i] = act(src[i])`, in place or not.
//!
//! The scalar kernel applies `crate::math`, the single definition of every
//! activation. The AVX2 kernel covers the activations whose vector form is
//! the same IEEE operations in the same order as `math` (comparisons,
//! blends, `+ - * /`, `sqrt`, rounding), so it is bit-exact with scalar;
//! transcendental activations (`exp`, `tanh`, `gelu`, ...) always run the
//! scalar kernel, so every path computes them identically. Only the NaN
//! payload chosen when both operands of an operation are NaN may differ.

mod scalar;

#[cfg(target_arch = "x86_64")]
mod avx2;

#[cfg(test)]
pub(crate) mod tests;

use crate::kernels::elementwise::par::{split, SyncPtr};
use rlx_sched::ActKind;

pub use scalar::scalar_act_f32;

/// Whether `act` runs a SIMD kernel on this CPU (else the scalar one).
pub fn act_has_simd(act: ActKind) -> bool {
    #[cfg(target_arch = "x86_64")]
    {
        crate::kernels::elementwise::par::has_avx2_fma() && avx2::supports(act)
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
    if act_has_simd(act) {
        // SAFETY: AVX2 and FMA were detected; extents as the caller promised.
        unsafe { avx2::avx2_act_f32(act, src, dst, len) };
        return;
    }
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

/// `data[i] = act(data[i])` for `i < len`, split over threads when `par`.
///
/// # Safety
/// `data` is valid for reads and writes of `len` f32, aligned to 4 bytes.
pub unsafe fn act_in_place_f32(act: ActKind, data: *mut f32, len: usize, par: bool) {
    unsafe { act_f32_slice(act, data, data, len, par) }
}
