//! Max / mean pooling on the blocked channel layout (NCHW16c,
//! `rlx_core::blocked`): `[n, cb, h, w, 16]` -> `[n, cb, h_out, w_out, 16]`.
//!
//! Every lane is the NCHW kernel's output (`super::pool2d_f32`, the
//! window rules of the module docs): the real elements of the window
//! folded from `-inf` (max, NaN-propagating `max_nan`) or `+0` (mean) in
//! `(ki, kj)` order, the mean's sum divided by the same count. A pixel's
//! 16 channels are one `[f32; 16]`, so each fold step is one vector
//! operation; the body is plain Rust, compiled per ISA with its target
//! features, which LLVM turns into one zmm (or two ymm) per step.
//! A global pooling (one output per plane) folds [`GROUP`] planes at once,
//! so the add (or compare) chains overlap.

use crate::kernels::variants::variants;
use std::ops::Range;

use rlx_core::blocked::{channel_blocks, CHANNEL_BLOCK};

use super::{Pool2dShape, PoolKind};
use crate::kernels::reduce::scalar::max_nan;

const L: usize = CHANNEL_BLOCK;

/// Planes a global pooling folds together.
const GROUP: usize = 4;

type Lanes = [f32; L];

/// Runs planes `start..start + len` (all outputs of each) of a pooling.
///
/// # Safety
///
/// As [`pool_planes`].
type PlanesFn =
    unsafe fn(src: *const f32, dst: *mut f32, s: &Pool2dShape, kind: PoolKind, cip: bool, start: usize, len: usize);

variants! {
    /// The plane kernels, best first.
    static PLANES_KERNELS: PlanesFn = [
        #[cfg(target_arch = "x86_64")]
        "avx512" if cpu::avx512f() => avx512_planes,
        #[cfg(target_arch = "x86_64")]
        "avx2" if cpu::avx2_fma() => avx2_planes,
        "scalar" => scalar_planes,
    ];
}

/// `(name, planes)` of every variant this CPU runs, best first; scalar last.
#[cfg(test)]
fn variants() -> Vec<(&'static str, PlanesFn)> {
    PLANES_KERNELS.supported()
}

/// The best variant, detected once per process.
#[inline]
fn planes_kernel() -> PlanesFn {
    *PLANES_KERNELS.best()
}

/// Pools every `(image, block)` plane of a blocked tensor; see the module
/// docs. All 16 lanes of every output are written (padded lanes pool
/// whatever they hold). `par` splits planes over the pool, with the same
/// bits.
///
/// # Safety
///
/// `src` valid for reads of `n * cb * h * w * 16` f32, `dst` for writes of
/// `n * cb * h_out * w_out * 16` f32 (`cb = ceil(c / 16)`), not
/// overlapping; `sh`, `sw` >= 1.
pub unsafe fn pool2d_blocked_f32(
    src: *const f32,
    dst: *mut f32,
    s: &Pool2dShape,
    kind: PoolKind,
    count_include_pad: bool,
    par: bool,
) {
    // SAFETY: forwarded contract; the selected variant runs on this CPU.
    unsafe { pool_with(planes_kernel(), src, dst, s, kind, count_include_pad, par) }
}

/// [`pool2d_blocked_f32`] on a given variant.
///
/// # Safety
///
/// As [`pool2d_blocked_f32`]; `kernel` runs on this CPU.
unsafe fn pool_with(
    kernel: PlanesFn,
    src: *const f32,
    dst: *mut f32,
    s: &Pool2dShape,
    kind: PoolKind,
    cip: bool,
    par: bool,
) {
    let planes = s.n * channel_blocks(s.c);
    if planes == 0 || s.h_out * s.w_out == 0 {
        return;
    }
    let (src_addr, dst_addr) = (src as usize, dst as usize);
    // SAFETY: chunks are disjoint planes of both tensors.
    let run = |start: usize, len: usize| unsafe {
        kernel(src_addr as *const f32, dst_addr as *mut f32, s, kind, cip, start, len)
    };
    if par {
        let per_plane = s.h_out * s.w_out * s.kh * s.kw * L;
        crate::threads::par_for(planes, crate::kernels::reduce::units_per_chunk(per_plane), &run);
    } else {
        run(0, planes);
    }
}

/// Kernel offsets `k < kernel` whose input index `o*stride + k - pad`
/// lies in `[0, in_len)` (the NCHW kernel's rule).
fn real_taps(o: usize, stride: usize, kernel: usize, pad: usize, in_len: usize) -> Range<usize> {
    let start = (o * stride) as isize - pad as isize;
    let lo = (-start).clamp(0, kernel as isize) as usize;
    let hi = (in_len as isize - start).clamp(0, kernel as isize) as usize;
    lo..hi.max(lo)
}

/// Window positions inside the padded input `[0, in_len + 2*pad)`.
fn padded_taps(o: usize, stride: usize, kernel: usize, pad: usize, in_len: usize) -> usize {
    (in_len + 2 * pad).saturating_sub(o * stride).min(kernel)
}

/// One fold step of `kind`, lane by lane.
#[inline(always)]
fn step(kind: PoolKind, acc: Lanes, x: Lanes) -> Lanes {
    match kind {
        PoolKind::Max => std::array::from_fn(|i| max_nan(acc[i], x[i])),
        PoolKind::Mean => std::array::from_fn(|i| acc[i] + x[i]),
    }
}

/// 16 f32 at `p`.
///
/// # Safety
///
/// `p` valid for reads of 16 f32.
#[inline(always)]
unsafe fn load(p: *const f32) -> Lanes {
    // SAFETY: the caller's extent.
    unsafe { p.cast::<Lanes>().read_unaligned() }
}

/// The mean's divisor of output `(ho, wo)`: the NCHW kernel's count.
#[inline(always)]
fn count(s: &Pool2dShape, ho: usize, wo: usize, cip: bool) -> usize {
    if cip {
        padded_taps(ho, s.sh, s.kh, s.ph, s.h) * padded_taps(wo, s.sw, s.kw, s.pw, s.w)
    } else {
        real_taps(ho, s.sh, s.kh, s.ph, s.h).len() * real_taps(wo, s.sw, s.kw, s.pw, s.w).len()
    }
}

/// Stores a window's fold, divided by its count for a mean (0 when the
/// count is).
///
/// # Safety
///
/// `dst` valid for writes of 16 f32.
#[inline(always)]
unsafe fn finish(acc: Lanes, kind: PoolKind, count: usize, dst: *mut f32) {
    let out = match kind {
        PoolKind::Max => acc,
        PoolKind::Mean if count > 0 => acc.map(|a| a / count as f32),
        PoolKind::Mean => [0.0; L],
    };
    // SAFETY: the caller's extent.
    unsafe { dst.cast::<Lanes>().write_unaligned(out) }
}

/// Planes `start..start + len`: each output's window folded in `(ki, kj)`
/// order; a one-output plane in groups of [`GROUP`].
///
/// # Safety
///
/// As [`pool2d_blocked_f32`]; `start + len <= n * cb`; the CPU has the
/// features of the function this is inlined into.
#[inline(always)]
unsafe fn pool_planes(
    src: *const f32,
    dst: *mut f32,
    s: &Pool2dShape,
    kind: PoolKind,
    cip: bool,
    start: usize,
    len: usize,
) {
    let init = match kind {
        PoolKind::Max => f32::NEG_INFINITY,
        PoolKind::Mean => 0.0,
    };
    let (in_plane, out_plane) = (s.h * s.w * L, s.h_out * s.w_out * L);
    let mut p = start;
    if s.h_out == 1 && s.w_out == 1 {
        let (rows, cols) = (real_taps(0, s.sh, s.kh, s.ph, s.h), real_taps(0, s.sw, s.kw, s.pw, s.w));
        let n = count(s, 0, 0, cip);
        while p + GROUP <= start + len {
            let mut acc = [[init; L]; GROUP];
            for ki in rows.clone() {
                for kj in cols.clone() {
                    let off = ((ki - s.ph) * s.w + kj - s.pw) * L;
                    for (g, a) in acc.iter_mut().enumerate() {
                        // SAFETY: a real pixel of plane `p + g`.
                        *a = step(kind, *a, unsafe { load(src.add((p + g) * in_plane + off)) });
                    }
                }
            }
            for (g, a) in acc.into_iter().enumerate() {
                // SAFETY: the one output of plane `p + g`.
                unsafe { finish(a, kind, n, dst.add((p + g) * out_plane)) };
            }
            p += GROUP;
        }
    }
    // Every window inside the image (no padding, no ceil-mode overhang):
    // the same folds without the per-output tap ranges.
    let inside = s.ph == 0
        && s.pw == 0
        && (s.h_out == 0 || (s.h_out - 1) * s.sh + s.kh <= s.h)
        && (s.w_out == 0 || (s.w_out - 1) * s.sw + s.kw <= s.w);
    if inside {
        let n = s.kh * s.kw;
        for p in p..start + len {
            let (src, dst) = (src.wrapping_add(p * in_plane), dst.wrapping_add(p * out_plane));
            for ho in 0..s.h_out {
                for wo in 0..s.w_out {
                    let corner = src.wrapping_add((ho * s.sh * s.w + wo * s.sw) * L);
                    let mut acc = [init; L];
                    for ki in 0..s.kh {
                        for kj in 0..s.kw {
                            // SAFETY: a pixel of the window, inside the image.
                            acc = step(kind, acc, unsafe { load(corner.add((ki * s.w + kj) * L)) });
                        }
                    }
                    // SAFETY: output `(ho, wo)` of plane `p`.
                    unsafe { finish(acc, kind, n, dst.add((ho * s.w_out + wo) * L)) };
                }
            }
        }
        return;
    }
    for p in p..start + len {
        let (src, dst) = (src.wrapping_add(p * in_plane), dst.wrapping_add(p * out_plane));
        for ho in 0..s.h_out {
            let rows = real_taps(ho, s.sh, s.kh, s.ph, s.h);
            for wo in 0..s.w_out {
                let cols = real_taps(wo, s.sw, s.kw, s.pw, s.w);
                let mut acc = [init; L];
                for ki in rows.clone() {
                    let row = src.wrapping_add((ho * s.sh + ki - s.ph) * s.w * L);
                    for kj in cols.clone() {
                        // SAFETY: a real pixel of the window.
                        acc = step(kind, acc, unsafe { load(row.add((wo * s.sw + kj - s.pw) * L)) });
                    }
                }
                // SAFETY: output `(ho, wo)` of plane `p`.
                unsafe { finish(acc, kind, count(s, ho, wo, cip), dst.add((ho * s.w_out + wo) * L)) };
            }
        }
    }
}

/// The reference variant (baseline features).
///
/// # Safety
///
/// As [`pool_planes`].
unsafe fn scalar_planes(
    src: *const f32,
    dst: *mut f32,
    s: &Pool2dShape,
    kind: PoolKind,
    cip: bool,
    start: usize,
    len: usize,
) {
    // SAFETY: forwarded contract.
    unsafe { pool_planes(src, dst, s, kind, cip, start, len) }
}

/// # Safety
///
/// As [`pool_planes`]; the CPU has AVX-512F.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx512f")]
unsafe fn avx512_planes(
    src: *const f32,
    dst: *mut f32,
    s: &Pool2dShape,
    kind: PoolKind,
    cip: bool,
    start: usize,
    len: usize,
) {
    // SAFETY: forwarded contract.
    unsafe { pool_planes(src, dst, s, kind, cip, start, len) }
}

/// # Safety
///
/// As [`pool_planes`]; the CPU has AVX2 and FMA.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2,fma")]
unsafe fn avx2_planes(
    src: *const f32,
    dst: *mut f32,
    s: &Pool2dShape,
    kind: PoolKind,
    cip: bool,
    start: usize,
    len: usize,
) {
    // SAFETY: forwarded contract.
    unsafe { pool_planes(src, dst, s, kind, cip, start, len) }
}

#[cfg(test)]
mod tests;
