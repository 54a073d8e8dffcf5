//! NEON row softmax and the vector `exp` it uses: the AVX2 algorithm on 4
//! lanes (same range reduction, polynomial and edge cases). The tail
//! (`n % 4` elements) is handled with the scalar `exp`, since NEON has no
//! masked loads; its error bound is tighter, so the row bound still holds.

use std::arch::aarch64::*;

use super::scalar::normaliser;

const EXP_LO: f32 = -87.336_54;
const EXP_HI: f32 = 88.722_83;
const LOG2E: f32 = std::f32::consts::LOG2_E;
const LN2_HI: f32 = 0.693_359_4;
const LN2_LO: f32 = -2.121_944_4e-4;
const P: [f32; 6] = [1.987_569_1e-4, 1.398_199_9e-3, 8.333_452e-3, 4.166_579_6e-2, 0.166_666_65, 0.5];

/// `exp` of 4 lanes; see the AVX2 `exp256` for the method and bounds.
#[inline]
#[target_feature(enable = "neon")]
pub(crate) fn exp128(x: float32x4_t) -> float32x4_t {
    let xc = vminq_f32(vmaxq_f32(x, vdupq_n_f32(EXP_LO)), vdupq_n_f32(EXP_HI));
    let n = vrndnq_f32(vmulq_f32(xc, vdupq_n_f32(LOG2E)));
    let r = vfmsq_f32(xc, n, vdupq_n_f32(LN2_HI));
    let r = vfmsq_f32(r, n, vdupq_n_f32(LN2_LO));
    let mut poly = vdupq_n_f32(P[0]);
    for &c in &P[1..] {
        poly = vfmaq_f32(vdupq_n_f32(c), poly, r);
    }
    let r2 = vmulq_f32(r, r);
    let e_r = vaddq_f32(vfmaq_f32(r, poly, r2), vdupq_n_f32(1.0));
    let ni = vcvtq_s32_f32(n);
    let n1 = vshrq_n_s32::<1>(ni);
    let n2 = vsubq_s32(ni, n1);
    let bias = vdupq_n_s32(127);
    let s1 = vreinterpretq_f32_s32(vshlq_n_s32::<23>(vaddq_s32(n1, bias)));
    let s2 = vreinterpretq_f32_s32(vshlq_n_s32::<23>(vaddq_s32(n2, bias)));
    let mut out = vmulq_f32(vmulq_f32(e_r, s1), s2);
    out = vbslq_f32(vcltq_f32(x, vdupq_n_f32(EXP_LO)), vdupq_n_f32(0.0), out);
    out = vbslq_f32(vcgtq_f32(x, vdupq_n_f32(EXP_HI)), vdupq_n_f32(f32::INFINITY), out);
    // `x == x` is false only for NaN: keep the computed lane where it holds.
    vbslq_f32(vceqq_f32(x, x), out, x)
}

/// Softmax of one row of `n` f32; same edge cases as the scalar reference.
///
/// # Safety
///
/// `src` must be valid for reads and `dst` for writes of `n` f32; they may
/// be the same pointer but must not otherwise overlap.
#[target_feature(enable = "neon")]
pub(crate) unsafe fn neon_softmax_row_f32(src: *const f32, dst: *mut f32, n: usize) {
    let full = n - n % 4;
    // `vmaxq_f32` propagates NaN, unlike `f32::max`; `vmaxnmq_f32` ignores
    // it, matching the reference (NaN still reaches the sum).
    let mut vmax = vdupq_n_f32(f32::NEG_INFINITY);
    let mut i = 0;
    while i < full {
        // SAFETY: `i + 4 <= n`.
        vmax = vmaxnmq_f32(vmax, unsafe { vld1q_f32(src.add(i)) });
        i += 4;
    }
    let mut max = vmaxnmvq_f32(vmax);
    for j in full..n {
        // SAFETY: `j < n`.
        max = max.max(unsafe { *src.add(j) });
    }
    let shift_s = if max == f32::NEG_INFINITY { 0.0 } else { max };
    let shift = vdupq_n_f32(shift_s);

    let mut vsum = vdupq_n_f32(0.0);
    let mut i = 0;
    while i < full {
        // SAFETY: `i + 4 <= n`; load before store, so `dst == src` is fine.
        unsafe {
            let e = exp128(vsubq_f32(vld1q_f32(src.add(i)), shift));
            vst1q_f32(dst.add(i), e);
            vsum = vaddq_f32(vsum, e);
        }
        i += 4;
    }
    let mut sum = vaddvq_f32(vsum);
    for j in full..n {
        // SAFETY: `j < n`.
        unsafe {
            let e = (*src.add(j) - shift_s).exp();
            *dst.add(j) = e;
            sum += e;
        }
    }
    let inv_s = normaliser(sum);
    let inv = vdupq_n_f32(inv_s);
    let mut i = 0;
    while i < full {
        // SAFETY: `i + 4 <= n`.
        unsafe { vst1q_f32(dst.add(i), vmulq_f32(vld1q_f32(dst.add(i)), inv)) };
        i += 4;
    }
    for j in full..n {
        // SAFETY: `j < n`.
        unsafe { *dst.add(j) *= inv_s };
    }
}
