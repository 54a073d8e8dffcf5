//! `Requantize`: i32 sums to 8-bit values, per channel, in one pass: the
//! end of `QLinearConv` and `QLinearMatMul`.
//!
//! Each element takes the same f32 steps `QuantizeLinear` is composed of
//! (`lower/quant.rs` in the importer), so the fused pass gives the
//! composition's bits: the bias added in wrapping i32, one conversion to
//! f32, one rounded product with the scale, rounding half to even, the
//! zero point added, saturation to the type's range. The AVX2 form does
//! the same operations on 8 lanes.

#[cfg(target_arch = "x86_64")]
mod avx2;
mod scalar;
#[cfg(test)]
mod tests;

pub use scalar::requantize_reference;

use super::IntElem;
use crate::kernels::reduce::SendPtr;
use crate::kernels::variants::variants;

/// How a row is requantized.
#[derive(Clone, Copy, Debug)]
enum RowBody {
    /// 8 lanes of AVX2, the tail one at a time.
    #[cfg(target_arch = "x86_64")]
    Avx2,
    /// One element at a time.
    Portable,
}

variants! {
    /// The row bodies, best first.
    static ROW_BODIES: RowBody = [
        #[cfg(target_arch = "x86_64")]
        "avx2" if cpu::avx2_fma() => RowBody::Avx2,
        "portable" => RowBody::Portable,
    ];
}

/// `out = saturate(round_half_even(f32(acc + bias[c]) * scale[c]) + zero)`
/// over `outer` blocks of `channels` rows of `inner`. `bias` null adds 0,
/// `scale` has 1 (`scale_len`) or `channels` elements, `zero` null is 0.
/// `par` splits the rows over the pool.
///
/// # Safety
///
/// `acc` readable and `out` writable for `outer * channels * inner`
/// elements (not overlapping), `bias` (unless null) for `channels`, `scale`
/// for `scale_len`, `zero` (unless null) for one.
#[allow(clippy::too_many_arguments)]
pub unsafe fn requantize<Q: IntElem>(
    acc: *const i32,
    bias: *const i32,
    scale: *const f32,
    zero: *const Q,
    out: *mut Q,
    outer: usize,
    channels: usize,
    inner: usize,
    scale_len: usize,
    par: bool,
) {
    // SAFETY: forwarded contract; the best body runs on this CPU.
    unsafe { requantize_with(*ROW_BODIES.best(), acc, bias, scale, zero, out, outer, channels, inner, scale_len, par) }
}

/// [`requantize`] with the row body `body`.
///
/// # Safety
/// As [`requantize`]; `body` runs on this CPU.
#[allow(clippy::too_many_arguments)]
unsafe fn requantize_with<Q: IntElem>(
    body: RowBody,
    acc: *const i32,
    bias: *const i32,
    scale: *const f32,
    zero: *const Q,
    out: *mut Q,
    outer: usize,
    channels: usize,
    inner: usize,
    scale_len: usize,
    par: bool,
) {
    let rows = outer * channels;
    if rows == 0 || inner == 0 {
        return;
    }
    // SAFETY: a non-null zero point is readable (caller).
    let z = if zero.is_null() { 0.0 } else { (unsafe { (*zero).to_i32() }) as f32 };
    let (a, b, sc, o) = (SendPtr(acc.cast_mut()), SendPtr(bias.cast_mut()), SendPtr(scale.cast_mut()), SendPtr(out));
    let run = |start: usize, len: usize| {
        for row in start..start + len {
            let c = row % channels;
            // SAFETY: row `row` of `acc` and `out`, entry `c` of `bias` and
            // of a per-channel `scale`: inside the caller's extents; each
            // task writes its own rows.
            unsafe {
                let bias = if b.get().is_null() { 0 } else { *b.get().add(c) };
                let scale = *sc.get().add(if scale_len == 1 { 0 } else { c });
                let src = std::slice::from_raw_parts(a.get().add(row * inner), inner);
                let dst = std::slice::from_raw_parts_mut(o.get().add(row * inner), inner);
                requantize_row(body, src, dst, bias, scale, z);
            }
        }
    };
    if par {
        crate::threads::par_for(rows, (16 * 1024 / inner).max(1), &run);
    } else {
        run(0, rows);
    }
}

/// One row with the body `body`.
///
/// # Safety
/// `body` runs on this CPU.
#[inline]
unsafe fn requantize_row<Q: IntElem>(body: RowBody, src: &[i32], dst: &mut [Q], bias: i32, scale: f32, zero: f32) {
    match body {
        #[cfg(target_arch = "x86_64")]
        // SAFETY: the body, and with it AVX2 and FMA, runs on this CPU.
        RowBody::Avx2 => unsafe { avx2::row_avx2(src, dst, bias, scale, zero) },
        RowBody::Portable => row(src, dst, bias, scale, zero),
    }
}

/// One row, one element at a time: the portable body and the vector
/// form's tail.
#[inline(always)]
fn row<Q: IntElem>(src: &[i32], dst: &mut [Q], bias: i32, scale: f32, zero: f32) {
    for (d, &a) in dst.iter_mut().zip(src) {
        *d = requantize_one(a, bias, scale, zero);
    }
}

/// One element: the steps every path takes.
#[inline(always)]
pub(super) fn requantize_one<Q: IntElem>(acc: i32, bias: i32, scale: f32, zero: f32) -> Q {
    let v = (acc.wrapping_add(bias) as f32 * scale).round_ties_even() + zero;
    Q::from_i32(v.max(Q::MIN).min(Q::MAX) as i32)
}
