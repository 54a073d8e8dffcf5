//! x86_64 kernels. AVX-512: products of up to 14 tiles x 2 output blocks
//! (28 accumulators, the 2 filter vectors and a broadcast: 31 of the 32
//! zmm registers), per input channel two filter loads and 14 broadcasts
//! for 28 fused multiply-adds; the transforms one zmm per patch pixel.
//! AVX2+FMA: up to 6 tiles x 1 block as 12 ymm accumulators, the
//! transforms on two 8-lane halves. Every lane takes the scalar
//! reference's operations in its order, so the bits are the same. No
//! alignment assumed (unaligned loads and stores); no tails (a block is
//! 16 lanes, a product's channel count is walked one lane at a time).

use std::arch::x86_64::*;

use crate::kernels::prefetch::prefetch_l2;

use super::{grid6, wino_in_1d, wino_input, wino_out_1d, wino_output, Gemm, Kernel, OutTile, B, P};

/// The AVX-512 kernels.
pub(super) const AVX512: Kernel =
    Kernel { name: "avx512", max_r: 14, max_q: 2, gemm: gemm_avx512, input: input_avx512, output: output_avx512 };
/// The AVX2+FMA kernels.
pub(super) const AVX2: Kernel =
    Kernel { name: "avx2", max_r: 6, max_q: 1, gemm: gemm_avx2, input: input_avx2, output: output_avx2 };

/// Calls `$f::<R, Q>` for the product's `(r, q)`, one arm per pair listed.
macro_rules! dispatch {
    ($g:expr, $f:ident; $($r:literal => [$($q:literal),*]),* $(,)?) => {
        match ($g.r, $g.q) {
            $($(($r, $q) => $f::<$r, $q>($g),)*)*
            (r, q) => unreachable!("no {r} x {q} product"),
        }
    };
}

/// See [`super::GemmFn`].
///
/// # Safety
///
/// As [`super::GemmFn`] with `r <= 14`, `q <= 2`; the CPU must support
/// AVX-512F.
unsafe fn gemm_avx512(g: &Gemm) {
    // SAFETY: forwarded contract; the arms are every allowed pair.
    unsafe {
        dispatch!(g, product_avx512;
            1 => [1, 2], 2 => [1, 2], 3 => [1, 2], 4 => [1, 2], 5 => [1, 2], 6 => [1, 2], 7 => [1, 2],
            8 => [1, 2], 9 => [1, 2], 10 => [1, 2], 11 => [1, 2], 12 => [1, 2], 13 => [1, 2], 14 => [1, 2],
        )
    }
}

/// `R` tiles x `Q` blocks.
///
/// # Safety
///
/// As [`gemm_avx512`] with `r == R`, `q == Q`.
#[target_feature(enable = "avx512f")]
unsafe fn product_avx512<const R: usize, const Q: usize>(g: &Gemm) {
    let mut acc = [[_mm512_setzero_ps(); Q]; R];
    // SAFETY: every address is one of the formula's: input channel `ci`
    // of tile `i < R`, filter vectors of blocks `j < Q`, products of both.
    unsafe {
        let mut c0 = 0;
        while c0 < g.c_in {
            let lanes = B.min(g.c_in - c0);
            let v = g.v.add((c0 / B) * g.v_block);
            let u = g.u.add(c0 * B);
            for l in 0..lanes {
                let mut w = [_mm512_setzero_ps(); Q];
                for (j, x) in w.iter_mut().enumerate() {
                    *x = _mm512_loadu_ps(u.add(j * g.u_block + l * B));
                    if g.prefetch != 0 {
                        prefetch_l2(u.wrapping_offset(g.prefetch).wrapping_add(j * g.u_block + l * B));
                    }
                }
                for (i, row) in acc.iter_mut().enumerate() {
                    let xv = _mm512_set1_ps(*v.add(i * g.v_tile + l));
                    for (a, &wj) in row.iter_mut().zip(&w) {
                        *a = _mm512_fmadd_ps(xv, wj, *a);
                    }
                }
            }
            c0 += lanes;
        }
        for (i, row) in acc.iter().enumerate() {
            for (j, a) in row.iter().enumerate() {
                _mm512_storeu_ps(g.m.add((j * R + i) * B), *a);
            }
        }
    }
}

/// See [`super::InputFn`].
///
/// # Safety
///
/// As [`super::InputFn`]; the CPU must support AVX-512F.
#[target_feature(enable = "avx512f")]
unsafe fn input_avx512(src: *const f32, src_row: usize, dst: *mut f32, dst_step: usize) {
    // SAFETY: the patch's pixels.
    let d = unsafe { grid6!(|k| _mm512_loadu_ps(src.add((k / P) * src_row + (k % P) * B))) };
    let k = (_mm512_set1_ps(4.0), _mm512_set1_ps(-4.0), _mm512_set1_ps(-5.0));
    let v = wino_input!(_mm512_add_ps, _mm512_sub_ps, _mm512_fmadd_ps, k, d);
    for (i, x) in v.iter().flatten().enumerate() {
        // SAFETY: point `i`'s 16 lanes.
        unsafe { _mm512_storeu_ps(dst.add(i * dst_step), *x) };
    }
}

/// See [`super::OutputFn`].
///
/// # Safety
///
/// As [`super::OutputFn`]; the CPU must support AVX-512F.
#[target_feature(enable = "avx512f")]
unsafe fn output_avx512(o: &OutTile) {
    // SAFETY: the 36 products of the formula.
    let m = unsafe { grid6!(|k| _mm512_loadu_ps(o.m.add(k * o.m_step))) };
    let k = (_mm512_set1_ps(2.0), _mm512_set1_ps(4.0), _mm512_set1_ps(8.0));
    let y = wino_output!(_mm512_add_ps, _mm512_sub_ps, _mm512_fmadd_ps, k, m);
    // SAFETY: the bias block, and pixels `(i, j) < (rows, cols)` of the
    // tile in the output and the residual.
    unsafe {
        let bias = if o.bias.is_null() { _mm512_setzero_ps() } else { _mm512_loadu_ps(o.bias) };
        for (i, row) in y.iter().enumerate().take(o.rows) {
            for (j, &v) in row.iter().enumerate().take(o.cols) {
                let at = i * o.out_row + j * B;
                let v = if o.bias.is_null() { v } else { _mm512_add_ps(v, bias) };
                let v = if o.res.is_null() { v } else { _mm512_add_ps(v, _mm512_loadu_ps(o.res.add(at))) };
                _mm512_storeu_ps(o.out.add(at), v);
            }
        }
    }
}

/// See [`super::GemmFn`].
///
/// # Safety
///
/// As [`super::GemmFn`] with `r <= 6`, `q == 1`; the CPU must support
/// AVX2 and FMA.
unsafe fn gemm_avx2(g: &Gemm) {
    // SAFETY: forwarded contract; the arms are every allowed pair.
    unsafe { dispatch!(g, product_avx2; 1 => [1], 2 => [1], 3 => [1], 4 => [1], 5 => [1], 6 => [1]) }
}

/// `R` tiles x one block as two 8-lane halves.
///
/// # Safety
///
/// As [`gemm_avx2`] with `r == R`, `Q == q == 1`.
#[target_feature(enable = "avx2,fma")]
unsafe fn product_avx2<const R: usize, const Q: usize>(g: &Gemm) {
    debug_assert!(Q == 1 && g.q == 1);
    let mut lo = [_mm256_setzero_ps(); R];
    let mut hi = [_mm256_setzero_ps(); R];
    // SAFETY: as in `product_avx512`, for block 0.
    unsafe {
        let mut c0 = 0;
        while c0 < g.c_in {
            let lanes = B.min(g.c_in - c0);
            let v = g.v.add((c0 / B) * g.v_block);
            let u = g.u.add(c0 * B);
            for l in 0..lanes {
                let (w0, w1) = (_mm256_loadu_ps(u.add(l * B)), _mm256_loadu_ps(u.add(l * B + 8)));
                if g.prefetch != 0 {
                    prefetch_l2(u.wrapping_offset(g.prefetch).wrapping_add(l * B));
                }
                for i in 0..R {
                    let xv = _mm256_broadcast_ss(&*v.add(i * g.v_tile + l));
                    lo[i] = _mm256_fmadd_ps(xv, w0, lo[i]);
                    hi[i] = _mm256_fmadd_ps(xv, w1, hi[i]);
                }
            }
            c0 += lanes;
        }
        for i in 0..R {
            _mm256_storeu_ps(g.m.add(i * B), lo[i]);
            _mm256_storeu_ps(g.m.add(i * B + 8), hi[i]);
        }
    }
}

/// See [`super::InputFn`].
///
/// # Safety
///
/// As [`super::InputFn`]; the CPU must support AVX2 and FMA.
#[target_feature(enable = "avx2,fma")]
unsafe fn input_avx2(src: *const f32, src_row: usize, dst: *mut f32, dst_step: usize) {
    for half in [0, 8] {
        // SAFETY: the patch's pixels.
        let d = unsafe { grid6!(|k| _mm256_loadu_ps(src.add((k / P) * src_row + (k % P) * B + half))) };
        let k = (_mm256_set1_ps(4.0), _mm256_set1_ps(-4.0), _mm256_set1_ps(-5.0));
        let v = wino_input!(_mm256_add_ps, _mm256_sub_ps, _mm256_fmadd_ps, k, d);
        for (i, x) in v.iter().flatten().enumerate() {
            // SAFETY: point `i`'s 16 lanes.
            unsafe { _mm256_storeu_ps(dst.add(i * dst_step + half), *x) };
        }
    }
}

/// See [`super::OutputFn`].
///
/// # Safety
///
/// As [`super::OutputFn`]; the CPU must support AVX2 and FMA.
#[target_feature(enable = "avx2,fma")]
unsafe fn output_avx2(o: &OutTile) {
    for half in [0, 8] {
        // SAFETY: the 36 products of the formula.
        let m = unsafe { grid6!(|k| _mm256_loadu_ps(o.m.add(k * o.m_step + half))) };
        let k = (_mm256_set1_ps(2.0), _mm256_set1_ps(4.0), _mm256_set1_ps(8.0));
        let y = wino_output!(_mm256_add_ps, _mm256_sub_ps, _mm256_fmadd_ps, k, m);
        // SAFETY: as in `output_avx512`, for one half.
        unsafe {
            let bias = if o.bias.is_null() { _mm256_setzero_ps() } else { _mm256_loadu_ps(o.bias.add(half)) };
            for (i, row) in y.iter().enumerate().take(o.rows) {
                for (j, &v) in row.iter().enumerate().take(o.cols) {
                    let at = i * o.out_row + j * B + half;
                    let v = if o.bias.is_null() { v } else { _mm256_add_ps(v, bias) };
                    let v = if o.res.is_null() { v } else { _mm256_add_ps(v, _mm256_loadu_ps(o.res.add(at))) };
                    _mm256_storeu_ps(o.out.add(at), v);
                }
            }
        }
    }
}
