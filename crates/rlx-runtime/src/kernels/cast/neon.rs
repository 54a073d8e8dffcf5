//! NEON conversions between f32 and bf16 (aarch64), bit-exact with `half`
//! by the same bit arithmetic as the AVX2 versions: 4 elements per step,
//! the tail through `half`. f16 conversions go through `half`'s slice
//! conversion, which uses the FP16 instructions when the CPU has them.

use std::arch::aarch64::*;

use half::bf16;

/// `dst[i] = bf16::from_f32(src[i])` (nearest even; NaN quietened).
///
/// # Safety
/// `src` readable and `dst` writable for `n` elements; no overlap.
pub(super) unsafe fn neon_f32_to_bf16(src: *const f32, dst: *mut bf16, n: usize) {
    let mut i = 0;
    // SAFETY: NEON is baseline on aarch64; every access is at `i..i + 4 <= n`
    // or `i < n`, inside the caller's `n`-element extents; no overlap.
    unsafe {
        let abs_mask = vdupq_n_u32(0x7fff_ffff);
        let inf = vdupq_n_u32(0x7f80_0000);
        let quiet = vdupq_n_u32(0x0040);
        let one = vdupq_n_u32(1);
        let bias = vdupq_n_u32(0x7fff);
        while i + 4 <= n {
            let x = vld1q_u32(src.add(i).cast());
            let nan = vcgtq_u32(vandq_u32(x, abs_mask), inf);
            let lsb = vandq_u32(vshrq_n_u32::<16>(x), one);
            let rounded = vshrq_n_u32::<16>(vaddq_u32(x, vaddq_u32(bias, lsb)));
            let nan_bits = vorrq_u32(vshrq_n_u32::<16>(x), quiet);
            let r = vbslq_u32(nan, nan_bits, rounded);
            vst1_u16(dst.add(i).cast(), vmovn_u32(r));
            i += 4;
        }
        while i < n {
            *dst.add(i) = bf16::from_f32(*src.add(i));
            i += 1;
        }
    }
}

/// `dst[i] = src[i].to_f32()` (bits shifted up; NaN quietened).
///
/// # Safety
/// As [`neon_f32_to_bf16`].
pub(super) unsafe fn neon_bf16_to_f32(src: *const bf16, dst: *mut f32, n: usize) {
    let mut i = 0;
    // SAFETY: as in `neon_f32_to_bf16`: NEON is baseline, every access is
    // below `n`, no overlap.
    unsafe {
        let abs_mask = vdupq_n_u32(0x7fff_ffff);
        let inf = vdupq_n_u32(0x7f80_0000);
        let quiet = vdupq_n_u32(0x0040_0000);
        while i + 4 <= n {
            let x = vshlq_n_u32::<16>(vmovl_u16(vld1_u16(src.add(i).cast())));
            let nan = vcgtq_u32(vandq_u32(x, abs_mask), inf);
            let r = vorrq_u32(x, vandq_u32(nan, quiet));
            vst1q_u32(dst.add(i).cast(), r);
            i += 4;
        }
        while i < n {
            *dst.add(i) = (*src.add(i)).to_f32();
            i += 1;
        }
    }
}
