//! AArch64 NEON variants of the GEMM family's vector kernels.
//!
//! Four f32 lanes per step with unaligned loads; the `len % 4` tail uses
//! the scalar reference's per-element operation, so results match it bit
//! for bit (one rounded add, one fused multiply-add, exact conversions).

use std::arch::aarch64::*;
use std::arch::asm;

/// `dst[j] = src[j] + bias[j]`; see `scalar::bias_add_row_f32`.
///
/// # Safety
///
/// As the scalar version (NEON is part of the AArch64 baseline).
#[target_feature(enable = "neon")]
pub(super) unsafe fn neon_bias_add_row_f32(src: *const f32, bias: *const f32, dst: *mut f32, len: usize) {
    let mut j = 0;
    // SAFETY: every access is at an index below `len`; a step's loads
    // precede its store, so `dst == src` is fine.
    unsafe {
        while j + 4 <= len {
            vst1q_f32(dst.add(j), vaddq_f32(vld1q_f32(src.add(j)), vld1q_f32(bias.add(j))));
            j += 4;
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
/// As the scalar version.
#[target_feature(enable = "neon")]
pub(super) unsafe fn neon_axpy_f32(y: *mut f32, a: f32, x: *const f32, len: usize) {
    let va = vdupq_n_f32(a);
    let mut j = 0;
    // SAFETY: every access is at an index below `len`.
    unsafe {
        while j + 4 <= len {
            // vfmaq_f32(acc, b, c) = acc + b * c with one rounding.
            vst1q_f32(y.add(j), vfmaq_f32(vld1q_f32(y.add(j)), va, vld1q_f32(x.add(j))));
            j += 4;
        }
        while j < len {
            *y.add(j) = a.mul_add(*x.add(j), *y.add(j));
            j += 1;
        }
    }
}

/// Widens f16 with `fcvtl`, 4 values per step. Stable Rust has no f16
/// vector type for the intrinsic, so the instruction is written directly.
///
/// # Safety
///
/// As `scalar::f16_to_f32`.
#[target_feature(enable = "neon")]
pub(super) unsafe fn neon_f16_to_f32(src: *const u16, dst: *mut f32, len: usize) {
    let mut j = 0;
    // SAFETY: every access is at an index below `len`; the asm only
    // converts registers.
    unsafe {
        while j + 4 <= len {
            let h: uint16x4_t = vld1_u16(src.add(j));
            let f: float32x4_t;
            asm!(
                "fcvtl {out:v}.4s, {inp:v}.4h",
                out = lateout(vreg) f,
                inp = in(vreg) h,
                options(pure, nomem, nostack, preserves_flags),
            );
            vst1q_f32(dst.add(j), f);
            j += 4;
        }
        if j < len {
            super::scalar::f16_to_f32(src.add(j), dst.add(j), len - j);
        }
    }
}

/// Widens bf16 with a long shift left by 16, 4 values per step.
///
/// # Safety
///
/// As `scalar::bf16_to_f32`.
#[target_feature(enable = "neon")]
pub(super) unsafe fn neon_bf16_to_f32(src: *const u16, dst: *mut f32, len: usize) {
    let mut j = 0;
    // SAFETY: every access is at an index below `len`.
    unsafe {
        while j + 4 <= len {
            let w = vshll_n_u16::<16>(vld1_u16(src.add(j)));
            vst1q_f32(dst.add(j), vreinterpretq_f32_u32(w));
            j += 4;
        }
        if j < len {
            super::scalar::bf16_to_f32(src.add(j), dst.add(j), len - j);
        }
    }
}
