//! Products of one or two rows with a weight packed in 2-byte floats (a
//! decode step's `PackedGemmHalf`): the kernel widens each vector of `B`
//! in registers right before its multiply-adds, so a weight costs a 2-byte
//! load, a conversion and the FMAs, and the product runs at the speed of
//! memory. Bits are those of the tiled GEMM over the widened weights: each
//! element is its bias (or 0) followed by one FMA per step of `k`, in
//! order (the partial sums of a pass are kept in an L1 buffer between
//! passes, exactly).
//!
//! x86 only (AVX-512F, or AVX2 + FMA; F16C for f16): elsewhere, and for
//! more rows, `packed_gemm_half` widens slices into a buffer instead.

use std::arch::x86_64::*;

use rlx_core::pack::PANEL;
use rlx_core::ActKind;

use super::{Init, KC};
use crate::kernels::variants::variants;
use crate::threads::par_for;

/// Panels of one task.
const GROUP_PANELS: usize = 4;
/// Columns of one task.
const GROUP: usize = GROUP_PANELS * PANEL;
/// Rows a kernel takes at most.
const MAX_ROWS: usize = 2;

/// One kernel call: `rows` rows of `a` (stride `lda`) times `kc` rows of
/// `Q` full panels of `b` (2-byte floats, panel `q` at `b + q *
/// panel_stride`) into the `rows x Q*16` tile `c` (stride [`GROUP`]),
/// starting from `init`.
#[derive(Clone, Copy)]
pub(super) struct HalfTile {
    rows: usize,
    kc: usize,
    a: *const f32,
    lda: usize,
    b: *const u16,
    panel_stride: usize,
    c: *mut f32,
    init: Init,
}

/// A kernel over `panels` (1 to [`GROUP_PANELS`]) full panels.
///
/// # Safety
///
/// `a` valid for `rows` rows of `kc` reads, `b` for `kc * PANEL` reads in
/// each of `panels` panels, `c` for `rows` rows of `panels * PANEL` reads
/// and writes at stride [`GROUP`], a column bias for `panels * PANEL`
/// reads; the CPU has the kernel's instruction set.
pub(super) type HalfKernel = unsafe fn(t: &HalfTile, panels: usize);

/// A kernel and the row counts it takes, `min..=max`.
#[derive(Clone, Copy)]
pub(super) struct HalfVariant {
    min_rows: usize,
    max_rows: usize,
    kernel: HalfKernel,
}

variants! {
    /// The f16 kernels, best first; none where F16C is missing.
    static F16_KERNELS: Option<HalfVariant> = [
        "avx512" if cpu::avx512f() && cpu::avx2_f16c() =>
            Some(HalfVariant { min_rows: 0, max_rows: MAX_ROWS, kernel: avx512::<false> }),
        "avx2" if cpu::avx2_fma() && cpu::avx2_f16c() =>
            Some(HalfVariant { min_rows: 1, max_rows: 1, kernel: avx2::<false> }),
        "none" => None,
    ];
}

variants! {
    /// The bf16 kernels (widening is a shift: no F16C), best first.
    static BF16_KERNELS: Option<HalfVariant> = [
        "avx512" if cpu::avx512f() => Some(HalfVariant { min_rows: 0, max_rows: MAX_ROWS, kernel: avx512::<true> }),
        "avx2" if cpu::avx2_fma() => Some(HalfVariant { min_rows: 1, max_rows: 1, kernel: avx2::<true> }),
        "none" => None,
    ];
}

/// The kernel for this CPU and rows, if any: `bf16` weights, else f16.
#[inline]
pub(super) fn kernel_for(rows: usize, bf16: bool) -> Option<(usize, HalfKernel)> {
    let v = (*if bf16 { BF16_KERNELS.best() } else { F16_KERNELS.best() })?;
    (v.min_rows..=v.max_rows).contains(&rows).then_some((v.max_rows, v.kernel))
}

/// `c[m,n] = act(a[m,k] @ widen(B) + bias[n])`, `m <= ` the kernel's rows.
///
/// # Safety
///
/// As `super::packed_gemm_half`, with `kernel` from [`kernel_for`] for `m`.
#[allow(clippy::too_many_arguments)]
pub(super) unsafe fn gemv(
    kernel: HalfKernel,
    a: *const f32,
    w: *const u16,
    bias: Option<*const f32>,
    c: *mut f32,
    (m, k, n): (usize, usize, usize),
    act: ActKind,
    par: bool,
) {
    if m == 0 || n == 0 {
        return;
    }
    let (a, w, c) = (a as usize, w as usize, c as usize);
    let bias = bias.map(|b| b as usize);
    let groups = n.div_ceil(GROUP);
    let work = |first: usize, count: usize| {
        for g in first..first + count {
            let j0 = g * GROUP;
            let cols = GROUP.min(n - j0);
            let panels = cols.div_ceil(PANEL);
            // The group's tile of `c`, and its bias, padded to full panels.
            let mut tile = [0.0f32; MAX_ROWS * GROUP];
            let mut bias_tile = [0.0f32; GROUP];
            // SAFETY: columns `j0..j0 + cols` of the bias, rows `0..m`
            // of `a` and `c`, panels `j0 / PANEL ..` of `w` and `kc` of
            // their rows: the caller's extents; the tile holds the padding.
            unsafe {
                if let Some(b) = bias {
                    std::ptr::copy_nonoverlapping((b as *const f32).add(j0), bias_tile.as_mut_ptr(), cols);
                }
                let mut p0 = 0;
                while p0 < k {
                    let kc = KC.min(k - p0);
                    let init = match (p0, bias) {
                        (0, None) => Init::Zero,
                        (0, Some(_)) => Init::ColBias(bias_tile.as_ptr()),
                        _ => Init::Load,
                    };
                    let t = HalfTile {
                        rows: m,
                        kc,
                        a: (a as *const f32).add(p0),
                        lda: k,
                        b: (w as *const u16).add(j0 * k + p0 * PANEL),
                        panel_stride: k * PANEL,
                        c: tile.as_mut_ptr(),
                        init,
                    };
                    kernel(&t, panels);
                    p0 += kc;
                }
                if k == 0 {
                    // No pass ran: the product is its bias (or 0).
                    for r in 0..m {
                        tile[r * GROUP..r * GROUP + cols].copy_from_slice(&bias_tile[..cols]);
                    }
                }
                for r in 0..m {
                    let row = (c as *mut f32).add(r * n + j0);
                    std::ptr::copy_nonoverlapping(tile.as_ptr().add(r * GROUP), row, cols);
                    if !matches!(act, ActKind::Identity) {
                        crate::kernels::activation::act_f32_slice(act, row, row, cols, false);
                    }
                }
            }
        }
    };
    if par {
        par_for(groups, 1, &work);
    } else {
        work(0, groups);
    }
}

/// `R` rows by `Q` panels on AVX-512: one 16-lane accumulator per row and
/// panel.
#[target_feature(enable = "avx512f,f16c")]
unsafe fn panels_avx512<const R: usize, const Q: usize, const BF16: bool>(t: &HalfTile) {
    let HalfTile { kc, a, lda, b, panel_stride, c, init, .. } = *t;
    // SAFETY: the extents of `HalfKernel`.
    unsafe {
        let mut acc = [[_mm512_setzero_ps(); Q]; R];
        for (r, row) in acc.iter_mut().enumerate() {
            for (q, v) in row.iter_mut().enumerate() {
                *v = match init {
                    Init::Zero => _mm512_setzero_ps(),
                    Init::Load => _mm512_loadu_ps(c.add(r * GROUP + q * PANEL)),
                    Init::ColBias(bias) => _mm512_loadu_ps(bias.add(q * PANEL)),
                    Init::RowBias(bias) => _mm512_set1_ps(*bias.add(r)),
                };
            }
        }
        for p in 0..kc {
            let bv: [__m512; Q] = std::array::from_fn(|q| {
                let raw = _mm256_loadu_si256(b.add(q * panel_stride + p * PANEL).cast());
                if BF16 {
                    _mm512_castsi512_ps(_mm512_slli_epi32::<16>(_mm512_cvtepu16_epi32(raw)))
                } else {
                    _mm512_cvtph_ps(raw)
                }
            });
            for (r, row) in acc.iter_mut().enumerate() {
                let av = _mm512_set1_ps(*a.add(r * lda + p));
                for (v, bq) in row.iter_mut().zip(bv) {
                    *v = _mm512_fmadd_ps(av, bq, *v);
                }
            }
        }
        for (r, row) in acc.iter().enumerate() {
            for (q, v) in row.iter().enumerate() {
                _mm512_storeu_ps(c.add(r * GROUP + q * PANEL), *v);
            }
        }
    }
}

/// # Safety
///
/// As [`HalfKernel`], on a CPU with AVX-512F and F16C.
unsafe fn avx512<const BF16: bool>(t: &HalfTile, panels: usize) {
    // SAFETY: forwarded contract.
    unsafe {
        match (t.rows, panels) {
            (1, 1) => panels_avx512::<1, 1, BF16>(t),
            (1, 2) => panels_avx512::<1, 2, BF16>(t),
            (1, 3) => panels_avx512::<1, 3, BF16>(t),
            (1, 4) => panels_avx512::<1, 4, BF16>(t),
            (2, 1) => panels_avx512::<2, 1, BF16>(t),
            (2, 2) => panels_avx512::<2, 2, BF16>(t),
            (2, 3) => panels_avx512::<2, 3, BF16>(t),
            (2, 4) => panels_avx512::<2, 4, BF16>(t),
            _ => unreachable!("rows 1..=2, panels 1..=4"),
        }
    }
}

/// One row by `Q` panels on AVX2: two 8-lane accumulators per panel.
#[target_feature(enable = "avx2,fma,f16c")]
unsafe fn panels_avx2<const Q: usize, const BF16: bool>(t: &HalfTile) {
    let HalfTile { kc, a, b, panel_stride, c, init, .. } = *t;
    // SAFETY: the extents of `HalfKernel` for one row.
    unsafe {
        let mut acc = [[_mm256_setzero_ps(); 2]; Q];
        for (q, halves) in acc.iter_mut().enumerate() {
            for (h, v) in halves.iter_mut().enumerate() {
                let at = q * PANEL + 8 * h;
                *v = match init {
                    Init::Zero => _mm256_setzero_ps(),
                    Init::Load => _mm256_loadu_ps(c.add(at)),
                    Init::ColBias(bias) => _mm256_loadu_ps(bias.add(at)),
                    Init::RowBias(bias) => _mm256_set1_ps(*bias),
                };
            }
        }
        for p in 0..kc {
            let av = _mm256_broadcast_ss(&*a.add(p));
            for (q, halves) in acc.iter_mut().enumerate() {
                for (h, v) in halves.iter_mut().enumerate() {
                    let raw = _mm_loadu_si128(b.add(q * panel_stride + p * PANEL + 8 * h).cast());
                    let bv = if BF16 {
                        _mm256_castsi256_ps(_mm256_slli_epi32::<16>(_mm256_cvtepu16_epi32(raw)))
                    } else {
                        _mm256_cvtph_ps(raw)
                    };
                    *v = _mm256_fmadd_ps(av, bv, *v);
                }
            }
        }
        for (q, halves) in acc.iter().enumerate() {
            for (h, v) in halves.iter().enumerate() {
                _mm256_storeu_ps(c.add(q * PANEL + 8 * h), *v);
            }
        }
    }
}

/// # Safety
///
/// As [`HalfKernel`] with one row, on a CPU with AVX2, FMA and F16C.
unsafe fn avx2<const BF16: bool>(t: &HalfTile, panels: usize) {
    // SAFETY: forwarded contract.
    unsafe {
        match panels {
            1 => panels_avx2::<1, BF16>(t),
            2 => panels_avx2::<2, BF16>(t),
            3 => panels_avx2::<3, BF16>(t),
            4 => panels_avx2::<4, BF16>(t),
            _ => unreachable!("panels 1..=4"),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::kernels::test_support::{check_variants, identical};

    /// Every kernel this CPU runs, against the ordered FMA chain over the
    /// widened weights, bit for bit: rows, `k` across a pass and zero,
    /// column tails, bias or none, f16 and bf16.
    #[test]
    fn kernels_are_the_ordered_fma_chain_over_widened_weights() {
        // The vector kernels of each type (the list ends in "none").
        let kernels = |bf16: bool| -> Vec<(&'static str, HalfVariant)> {
            let list = if bf16 { BF16_KERNELS.supported() } else { F16_KERNELS.supported() };
            list.into_iter().filter_map(|(name, v)| v.map(|v| (name, v))).collect()
        };
        let mut seed = 7u32;
        let mut next = move || {
            seed = seed.wrapping_mul(1_664_525).wrapping_add(1_013_904_223);
            (seed >> 8) as f32 / (1 << 24) as f32 * 2.0 - 1.0
        };
        for bf16 in [false, true] {
            for (m, k, n, with_bias) in [(1, 300, 33, true), (1, 0, 20, true), (1, 7, 64, false), (2, 513, 100, true)] {
                let takes_m: Vec<(&'static str, HalfKernel)> = kernels(bf16)
                    .into_iter()
                    .filter(|(_, v)| m <= v.max_rows)
                    .map(|(name, v)| (name, v.kernel))
                    .collect();
                let a: Vec<f32> = (0..m * k).map(|_| next()).collect();
                let bias: Vec<f32> = (0..n).map(|_| next()).collect();
                let (bits, wide): (Vec<u16>, Vec<f32>) = (0..k * n)
                    .map(|_| next())
                    .map(|x| {
                        if bf16 {
                            let h = half::bf16::from_f32(x);
                            (h.to_bits(), h.to_f32())
                        } else {
                            let h = half::f16::from_f32(x);
                            (h.to_bits(), h.to_f32())
                        }
                    })
                    .unzip();
                let packed = rlx_core::pack::pack_b(&bits, k, n, false);
                let mut want = vec![0.0f32; m * n];
                for i in 0..m {
                    for j in 0..n {
                        let mut acc = if with_bias { bias[j] } else { 0.0 };
                        for p in 0..k {
                            acc = a[i * k + p].mul_add(wide[p * n + j], acc);
                        }
                        want[i * n + j] = acc;
                    }
                }
                let bias_ptr = with_bias.then_some(bias.as_ptr());
                for par in [false, true] {
                    let what = format!("bf16={bf16} m={m} k={k} n={n} par={par}");
                    check_variants(&want, &takes_m, identical, &what, |kernel| {
                        let mut got = vec![f32::NAN; m * n];
                        // SAFETY: the buffers hold the extents of the product;
                        // the kernel runs on this CPU and takes `m` rows.
                        unsafe {
                            gemv(
                                kernel,
                                a.as_ptr(),
                                packed.as_ptr(),
                                bias_ptr,
                                got.as_mut_ptr(),
                                (m, k, n),
                                ActKind::Identity,
                                par,
                            )
                        };
                        got
                    });
                }
            }
        }
    }
}
