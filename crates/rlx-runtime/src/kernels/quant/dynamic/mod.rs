//! `DynamicQuantize`: ONNX `DynamicQuantizeLinear` in two passes over
//! `x` (its range, then the u8 values) instead of the dozen element-wise
//! thunks its function body composes to.
//!
//! Each step is the composed thunk's scalar operation in the body's
//! order (`reduce`'s NaN-propagating min and max, `math::min_f32` /
//! `max_f32` for `Min` / `Max`, a true division, ties-to-even rounding,
//! the saturating cast), so the outputs are the composed thunks' bits.
//! The range's partial results combine in any order: min and max are
//! exact, and the only order-dependent bits (the sign of a zero, a NaN's
//! payload) are erased by the widening to include 0.

mod scalar;
#[cfg(test)]
mod tests;

pub use scalar::dynamic_quantize_reference;

use crate::kernels::reduce::scalar::{max_nan, min_nan};
use crate::kernels::reduce::SendPtr;
use crate::kernels::variants::variants;
use crate::math::{max_f32, min_f32, round};

/// The bodies of both passes.
#[derive(Clone, Copy, Debug)]
enum PassBody {
    /// The loops compiled with AVX2 (8 lanes, rounding in one instruction).
    #[cfg(target_arch = "x86_64")]
    Avx2,
    /// The portable loops.
    Portable,
}

variants! {
    /// The pass bodies, best first.
    static PASS_BODIES: PassBody = [
        #[cfg(target_arch = "x86_64")]
        "avx2" if cpu::avx2_fma() => PassBody::Avx2,
        "portable" => PassBody::Portable,
    ];
}

/// Parts the range pass is split into over the pool.
const PARTS: usize = 32;
/// Lanes of the range pass's accumulators (LLVM vectorises them).
const LANES: usize = 16;

/// `x`'s range (NaN-propagating min and max) over `x[0..len]`, on the
/// body `body`: 8 lanes of AVX2 (the baseline x86-64 target has no
/// vector min with this NaN rule and no rounding instruction), or the
/// portable loop.
///
/// # Safety
/// `x` readable for `len` f32; `body` runs on this CPU.
unsafe fn raw_range(body: PassBody, x: *const f32, len: usize) -> (f32, f32) {
    // SAFETY: the caller's extent.
    let x = unsafe { std::slice::from_raw_parts(x, len) };
    match body {
        #[cfg(target_arch = "x86_64")]
        // SAFETY: the body, and with it AVX2, runs on this CPU.
        PassBody::Avx2 => unsafe { range_avx2(x) },
        PassBody::Portable => range_of(x),
    }
}

/// [`range_of`] 8 lanes at a time: `min(lo, x)` keeps `x` when it is
/// NaN but not a NaN `lo`, so NaNs are tracked on the side and turn the
/// result into `(NaN, NaN)`, what the NaN-propagating rule gives.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2,fma")]
unsafe fn range_avx2(x: &[f32]) -> (f32, f32) {
    use std::arch::x86_64::*;
    let mut chunks = x.chunks_exact(8);
    let (mut lo, mut hi) = (_mm256_set1_ps(f32::INFINITY), _mm256_set1_ps(f32::NEG_INFINITY));
    let mut nan = _mm256_setzero_ps();
    for chunk in &mut chunks {
        // SAFETY: 8 f32 of the chunk.
        let v = unsafe { _mm256_loadu_ps(chunk.as_ptr()) };
        lo = _mm256_min_ps(lo, v);
        hi = _mm256_max_ps(hi, v);
        nan = _mm256_or_ps(nan, _mm256_cmp_ps::<_CMP_UNORD_Q>(v, v));
    }
    let (mut lanes_lo, mut lanes_hi) = ([0f32; 8], [0f32; 8]);
    // SAFETY: 8 f32 each.
    unsafe {
        _mm256_storeu_ps(lanes_lo.as_mut_ptr(), lo);
        _mm256_storeu_ps(lanes_hi.as_mut_ptr(), hi);
    }
    if _mm256_movemask_ps(nan) != 0 {
        return (f32::NAN, f32::NAN);
    }
    let tail = range_of(chunks.remainder());
    let lo = lanes_lo.into_iter().fold(tail.0, min_nan);
    let hi = lanes_hi.into_iter().fold(tail.1, max_nan);
    (lo, hi)
}

#[inline(always)]
fn range_of(x: &[f32]) -> (f32, f32) {
    let (mut lo, mut hi) = ([f32::INFINITY; LANES], [f32::NEG_INFINITY; LANES]);
    let mut chunks = x.chunks_exact(LANES);
    for chunk in &mut chunks {
        for l in 0..LANES {
            lo[l] = min_nan(lo[l], chunk[l]);
            hi[l] = max_nan(hi[l], chunk[l]);
        }
    }
    let lo = chunks.remainder().iter().fold(lo.into_iter().fold(f32::INFINITY, min_nan), |a, &v| min_nan(a, v));
    let hi = chunks.remainder().iter().fold(hi.into_iter().fold(f32::NEG_INFINITY, max_nan), |a, &v| max_nan(a, v));
    (lo, hi)
}

/// The scale and zero point of a range, as the function body computes
/// them from `ReduceMin` / `ReduceMax`'s results.
pub(super) fn scale_and_zero(lo: f32, hi: f32) -> (f32, u8) {
    let x_min = min_f32(lo, 0.0);
    let x_max = max_f32(hi, 0.0);
    let scale = (x_max - x_min) / 255.0;
    let zero = round(min_f32(max_f32(0.0 - x_min / scale, 0.0), 255.0));
    (scale, zero as u8)
}

/// One element: `min(max(round(x / scale) + zero, 0), 255)` as u8.
#[inline(always)]
pub(super) fn quantize(x: f32, scale: f32, zero: f32) -> u8 {
    min_f32(max_f32(round(x / scale) + zero, 0.0), 255.0) as u8
}

/// [`quantize`] over a slice, on the body `body` (as [`raw_range`]).
///
/// # Safety
/// `body` runs on this CPU.
unsafe fn quantize_slice(body: PassBody, xs: &[f32], ys: &mut [u8], scale: f32, zero: f32) {
    match body {
        #[cfg(target_arch = "x86_64")]
        // SAFETY: the body, and with it AVX2, runs on this CPU.
        PassBody::Avx2 => unsafe { quantize_avx2(xs, ys, scale, zero) },
        PassBody::Portable => quantize_each(xs, ys, scale, zero),
    }
}

/// [`quantize_each`] 16 at a time. `maxps(v, 0)` and `minps(v, 255)`
/// return their second operand for a NaN or equal first one, as
/// `max_f32` / `min_f32` do; the clamped values are whole numbers in
/// 0..=255, so truncation and the unsigned pack are exact.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2,fma")]
unsafe fn quantize_avx2(xs: &[f32], ys: &mut [u8], scale: f32, zero: f32) {
    use std::arch::x86_64::*;
    let (s, z, lo, hi) = (_mm256_set1_ps(scale), _mm256_set1_ps(zero), _mm256_setzero_ps(), _mm256_set1_ps(255.0));
    let one = |v: __m256| {
        let r = _mm256_round_ps::<{ _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC }>(_mm256_div_ps(v, s));
        _mm256_cvttps_epi32(_mm256_min_ps(_mm256_max_ps(_mm256_add_ps(r, z), lo), hi))
    };
    let whole = xs.len().min(ys.len()) / 16 * 16;
    for i in (0..whole).step_by(16) {
        // SAFETY: elements `i..i + 16` of both slices.
        unsafe {
            let a = one(_mm256_loadu_ps(xs.as_ptr().add(i)));
            let b = one(_mm256_loadu_ps(xs.as_ptr().add(i + 8)));
            // i32 -> i16 -> u8, each pack within 128-bit halves; the
            // permute puts the 16 bytes back in order.
            let words = _mm256_permute4x64_epi64::<0b11_01_10_00>(_mm256_packs_epi32(a, b));
            let bytes = _mm256_packus_epi16(words, words);
            _mm_storeu_si128(
                ys.as_mut_ptr().add(i).cast(),
                _mm256_castsi256_si128(_mm256_permute4x64_epi64::<0b00_00_10_00>(bytes)),
            );
        }
    }
    quantize_each(&xs[whole..], &mut ys[whole..], scale, zero);
}

#[inline(always)]
fn quantize_each(xs: &[f32], ys: &mut [u8], scale: f32, zero: f32) {
    for (y, &x) in ys.iter_mut().zip(xs) {
        *y = quantize(x, scale, zero);
    }
}

/// `DynamicQuantize` over `len` elements (see `Thunk::DynamicQuantize`):
/// writes `y`, `scale` and `zero`. `par` splits both passes over the pool.
///
/// # Safety
///
/// `x` readable for `len` f32; `y` writable for `len` bytes, `scale` for
/// one f32 and `zero` for one byte, none overlapping `x` or each other.
pub unsafe fn dynamic_quantize(x: *const f32, y: *mut u8, scale: *mut f32, zero: *mut u8, len: usize, par: bool) {
    // SAFETY: forwarded contract; the best body runs on this CPU.
    unsafe { dynamic_quantize_with(*PASS_BODIES.best(), x, y, scale, zero, len, par) }
}

/// [`dynamic_quantize`] with the pass body `body`.
///
/// # Safety
/// As [`dynamic_quantize`]; `body` runs on this CPU.
unsafe fn dynamic_quantize_with(
    body: PassBody,
    x: *const f32,
    y: *mut u8,
    scale: *mut f32,
    zero: *mut u8,
    len: usize,
    par: bool,
) {
    let (lo, hi) = if par && len >= PARTS {
        let mut parts = [(f32::INFINITY, f32::NEG_INFINITY); PARTS];
        let (x_in, parts_out) = (SendPtr(x.cast_mut()), SendPtr(parts.as_mut_ptr()));
        let bounds = |p: usize| (p * len / PARTS, (p + 1) * len / PARTS);
        crate::threads::par_for(PARTS, 1, &|start, count| {
            for p in start..start + count {
                let (from, to) = bounds(p);
                // SAFETY: part `p` of `x` and slot `p` of `parts`, written by
                // this task alone.
                unsafe { *parts_out.get().add(p) = raw_range(body, x_in.get().add(from), to - from) };
            }
        });
        parts.iter().fold((f32::INFINITY, f32::NEG_INFINITY), |(lo, hi), &(l, h)| (min_nan(lo, l), max_nan(hi, h)))
    } else {
        // SAFETY: the caller's extent and body.
        unsafe { raw_range(body, x, len) }
    };
    let (s, z) = scale_and_zero(lo, hi);
    // SAFETY: one element each (caller).
    unsafe {
        *scale = s;
        *zero = z;
    }
    let zf = f32::from(z);
    let (x_in, y_out) = (SendPtr(x.cast_mut()), SendPtr(y));
    let values = |start: usize, count: usize| {
        // SAFETY: elements `start..start + count` of `x` and `y`; each task
        // writes its own; the caller's body.
        unsafe {
            let xs = std::slice::from_raw_parts(x_in.get().add(start), count);
            let ys = std::slice::from_raw_parts_mut(y_out.get().add(start), count);
            quantize_slice(body, xs, ys, s, zf);
        }
    };
    if par {
        crate::threads::par_for(len, 4096, &values);
    } else {
        values(0, len);
    }
}
