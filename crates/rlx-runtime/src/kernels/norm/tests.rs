//! Norm kernels: SIMD variants against the scalar spec (bit-exact, since
//! they share one summation order and never fuse), and the kernels against
//! an f64 reference written here with a stated bound.

use rand::{Rng, SeedableRng};

use super::*;

use crate::kernels::test_support::{bits_checksum, check_variants, same, LENGTHS};

fn random(n: usize, lo: f32, hi: f32, seed: u64) -> Vec<f32> {
    let mut r = rand::rngs::StdRng::seed_from_u64(seed);
    (0..n).map(|_| r.gen_range(lo..hi)).collect()
}

/// Every primitive table against the scalar one, bit for bit, over the
/// awkward lengths: both sums, the residual add and the normalisation,
/// with and without their optional operands.
#[test]
fn every_variant_matches_scalar_bit_for_bit() {
    let variants = ROW_OPS.supported();
    for &n in &LENGTHS {
        // Offset data makes rounding in every partial sum visible.
        let x = random(n, -3.0, 5.0, n as u64);
        let r = random(n, -1.0, 1.0, n as u64 + 1);
        let bias = random(n, -0.5, 0.5, n as u64 + 2);
        let g = random(n, 0.5, 1.5, n as u64 + 3);
        // SAFETY: `x` holds `n` f32.
        let sums = |ops: RowOps| unsafe { vec![(ops.sum)(x.as_ptr(), n), (ops.sum_sq_dev)(x.as_ptr(), n, 0.7)] };
        check_variants(&sums(SCALAR), &variants, same, &format!("sums n={n}"), sums);
        for b in [None, Some(bias.as_ptr())] {
            let add = |ops: RowOps| {
                let mut out = vec![0.0; n];
                // SAFETY: every buffer holds `n` f32.
                unsafe { (ops.add)(x.as_ptr(), r.as_ptr(), b, out.as_mut_ptr(), n) };
                out
            };
            check_variants(&add(SCALAR), &variants, same, &format!("add n={n}"), add);
            let normalize = |ops: RowOps| {
                let mut out = vec![0.0; n];
                // SAFETY: every buffer holds `n` f32.
                unsafe { (ops.normalize)(x.as_ptr(), 0.3, 1.7, g.as_ptr(), b, out.as_mut_ptr(), n) };
                out
            };
            check_variants(&normalize(SCALAR), &variants, same, &format!("normalize n={n}"), normalize);
        }
    }
}

/// What a call computes, in f64, from the written formulas.
#[derive(Clone, Copy, PartialEq, Debug)]
enum Kind {
    Layer,
    Rms,
    FusedLayer,
    FusedRms,
}

struct Case {
    x: Vec<f32>,
    res: Vec<f32>,
    bias: Vec<f32>,
    g: Vec<f32>,
    b: Vec<f32>,
    rows: usize,
    h: usize,
}

impl Case {
    fn new(rows: usize, h: usize, seed: u64) -> Case {
        Case {
            x: random(rows * h, -2.0, 3.0, seed),
            res: random(rows * h, -1.0, 1.0, seed + 1),
            bias: random(h, -0.5, 0.5, seed + 2),
            g: random(h, 0.5, 1.5, seed + 3),
            b: random(h, -1.0, 1.0, seed + 4),
            rows,
            h,
        }
    }

    /// `kind` with the optional operands present when `full`.
    fn reference(&self, kind: Kind, full: bool, eps: f32) -> Vec<f64> {
        let (h, eps) = (self.h, eps as f64);
        let mut out = Vec::with_capacity(self.rows * h);
        for r in 0..self.rows {
            let v: Vec<f64> = (0..h)
                .map(|i| {
                    let x = self.x[r * h + i] as f64;
                    match kind {
                        Kind::Layer | Kind::Rms => x,
                        Kind::FusedLayer | Kind::FusedRms => {
                            x + self.res[r * h + i] as f64 + if full { self.bias[i] as f64 } else { 0.0 }
                        }
                    }
                })
                .collect();
            let n = h as f64;
            let (mean, denom) = match kind {
                Kind::Layer | Kind::FusedLayer => {
                    let m = v.iter().sum::<f64>() / n;
                    (m, (v.iter().map(|a| (a - m) * (a - m)).sum::<f64>() / n + eps).sqrt())
                }
                Kind::Rms | Kind::FusedRms => (0.0, (v.iter().map(|a| a * a).sum::<f64>() / n + eps).sqrt()),
            };
            let shift = matches!(kind, Kind::FusedLayer) || (full && kind != Kind::Rms);
            for (i, vi) in v.iter().enumerate() {
                let b = if shift { self.b[i] as f64 } else { 0.0 };
                out.push((vi - mean) / denom * self.g[i] as f64 + b);
            }
        }
        out
    }

    /// Runs the public entry of `kind`, writing into `out`.
    ///
    /// # Safety
    /// `x`/`res` may point into `out` exactly (the in-place forms).
    unsafe fn run(&self, kind: Kind, full: bool, x: *const f32, res: *const f32, out: *mut f32, eps: f32, par: bool) {
        let opt = |v: &Vec<f32>| full.then_some(v.as_ptr());
        let (rows, h, g) = (self.rows, self.h, self.g.as_ptr());
        // SAFETY: every buffer holds `rows * h` or `h` f32.
        unsafe {
            match kind {
                Kind::Layer => layer_norm_f32(x, g, opt(&self.b), out, rows, h, eps, par),
                Kind::Rms => rms_norm_f32(x, g, out, rows, h, eps, par),
                Kind::FusedLayer => {
                    fused_residual_ln_f32(x, res, opt(&self.bias), g, self.b.as_ptr(), out, rows, h, eps, par)
                }
                Kind::FusedRms => {
                    fused_residual_rms_norm_f32(x, res, opt(&self.bias), g, opt(&self.b), out, rows, h, eps, par)
                }
            }
        }
    }
}

/// Error bound against the f64 reference. Each sum is a chain of at most
/// `k = h / 32 + 16` f32 additions per term (32-lane accumulators, the
/// fold, up to three 8-blocks, the tree and a 7-element tail), so its
/// error is below `k * eps` relative to the sum of magnitudes. Mean and
/// variance each carry one such error, then the normalised value picks up
/// a few more roundings (sub, two muls, add, rstd); with inputs of
/// magnitude below 4 and unit-scale outputs, `4 * k * eps * (1 + |ref|)`
/// covers all of them.
fn tolerance(h: usize, reference: f64) -> f64 {
    let k = (h / 32 + 16) as f64;
    4.0 * k * f32::EPSILON as f64 * (1.0 + reference.abs())
}

const KINDS: [Kind; 4] = [Kind::Layer, Kind::Rms, Kind::FusedLayer, Kind::FusedRms];

#[test]
fn norms_match_the_f64_reference() {
    for &h in &LENGTHS {
        let case = Case::new(3, h, h as u64 * 10);
        for kind in KINDS {
            for full in [false, true] {
                let want = case.reference(kind, full, 1e-5);
                let mut got = vec![0.0f32; 3 * h];
                // SAFETY: out-of-place, all buffers sized.
                unsafe { case.run(kind, full, case.x.as_ptr(), case.res.as_ptr(), got.as_mut_ptr(), 1e-5, false) };
                for (i, (&g, &w)) in got.iter().zip(&want).enumerate() {
                    let err = (g as f64 - w).abs();
                    assert!(err <= tolerance(h, w), "h={h} elem {i}: {g} vs {w} (err {err:e})");
                }
            }
        }
    }
}

/// Whole rows of every kind through every primitive table, against the
/// scalar table, bit for bit.
#[test]
fn every_variant_normalises_rows_as_scalar_does() {
    let variants = ROW_OPS.supported();
    for &h in &LENGTHS {
        let case = Case::new(4, h, h as u64 + 77);
        for kind in KINDS {
            let stats = if matches!(kind, Kind::Layer | Kind::FusedLayer) { Stats::MeanVar } else { Stats::MeanSquare };
            let fused = matches!(kind, Kind::FusedLayer | Kind::FusedRms);
            let rows = |ops: RowOps| {
                let mut out = vec![0.0f32; 4 * h];
                let a = NormArgs {
                    x: case.x.as_ptr(),
                    res: fused.then_some(case.res.as_ptr()),
                    bias: fused.then_some(case.bias.as_ptr()),
                    g: case.g.as_ptr(),
                    b: Some(case.b.as_ptr()),
                    out: out.as_mut_ptr(),
                };
                // SAFETY: buffers sized for 4 rows of `h`.
                unsafe { norm_rows(&ops, a, stats, 4, h, 1e-5, false) };
                out
            };
            check_variants(&rows(SCALAR), &variants, same, &format!("{kind:?} h={h}"), rows);
        }
    }
}

#[test]
fn in_place_and_parallel_match_out_of_place() {
    for (rows, h) in [(5, 33), (64, 1023)] {
        let case = Case::new(rows, h, 5);
        for kind in KINDS {
            let mut want = vec![0.0f32; rows * h];
            // SAFETY: out-of-place, sized.
            unsafe { case.run(kind, true, case.x.as_ptr(), case.res.as_ptr(), want.as_mut_ptr(), 1e-6, false) };

            let mut par = vec![0.0f32; rows * h];
            // SAFETY: as above.
            unsafe { case.run(kind, true, case.x.as_ptr(), case.res.as_ptr(), par.as_mut_ptr(), 1e-6, true) };
            assert_eq!(par, want, "parallel h={h}");

            // out == x.
            let mut buf = case.x.clone();
            let p = buf.as_mut_ptr();
            // SAFETY: `out` equals `x` exactly, which every kind allows.
            unsafe { case.run(kind, true, p, case.res.as_ptr(), p, 1e-6, false) };
            assert_eq!(buf, want, "out == x, h={h}");

            if matches!(kind, Kind::FusedLayer | Kind::FusedRms) {
                // out == res.
                let mut buf = case.res.clone();
                let p = buf.as_mut_ptr();
                // SAFETY: `out` equals `res` exactly, which fused kinds allow.
                unsafe { case.run(kind, true, case.x.as_ptr(), p, p, 1e-6, true) };
                assert_eq!(buf, want, "out == res, h={h}");
            }
        }
    }
}

#[test]
fn non_finite_rows_stay_in_their_row() {
    let (rows, h) = (3, 40);
    let mut case = Case::new(rows, h, 9);
    case.x[h + 5] = f32::NAN;
    case.x[2 * h + 7] = f32::INFINITY;
    for kind in KINDS {
        let want = case.reference(kind, true, 1e-5);
        let mut got = vec![0.0f32; rows * h];
        // SAFETY: out-of-place, sized.
        unsafe { case.run(kind, true, case.x.as_ptr(), case.res.as_ptr(), got.as_mut_ptr(), 1e-5, false) };
        for (i, (&g, &w)) in got.iter().zip(&want).enumerate() {
            assert_eq!(g.is_nan(), w.is_nan(), "elem {i}: {g} vs {w}");
            assert_eq!(g.is_finite(), w.is_finite(), "elem {i}: {g} vs {w}");
            if w.is_finite() {
                assert!((g as f64 - w).abs() <= tolerance(h, w), "elem {i}: {g} vs {w}");
            }
        }
        assert!(got[..h].iter().all(|v| v.is_finite()), "row 0 must not see the other rows' NaN/inf");
    }
}

#[test]
fn batch_norm_matches_reference_in_and_out_of_place() {
    for (n, c, hw) in [(1, 1, 1), (2, 3, 17), (2, 5, 4097), (8, 16, 300)] {
        let x = random(n * c * hw, -3.0, 3.0, 1);
        let scale = random(c, 0.5, 2.0, 2);
        let bias = random(c, -1.0, 1.0, 3);
        let mean = random(c, -1.0, 1.0, 4);
        let var = random(c, 0.1, 2.0, 5);
        let eps = 1e-5f32;
        let mut want = vec![0.0f32; x.len()];
        let mut got = vec![0.0f32; x.len()];
        for (i, w) in want.iter_mut().enumerate() {
            let ch = (i / hw) % c;
            let v = (x[i] as f64 - mean[ch] as f64) / (var[ch] as f64 + eps as f64).sqrt();
            *w = (v * scale[ch] as f64 + bias[ch] as f64) as f32;
        }
        // SAFETY: buffers sized for `[n, c, hw]` and `[c]`.
        unsafe {
            let p = (scale.as_ptr(), bias.as_ptr(), mean.as_ptr(), var.as_ptr());
            batch_norm_inference_f32(x.as_ptr(), p.0, p.1, p.2, p.3, got.as_mut_ptr(), n, c, hw, eps, false);
            // Five f32 roundings (sub, sqrt, div, two muls, add) on values
            // below 4 / sqrt(0.1) * 2 + 1 < 27: 8 ulps of 32 is ample.
            for (i, (&g, &w)) in got.iter().zip(&want).enumerate() {
                assert!((g - w).abs() <= 8.0 * 32.0 * f32::EPSILON, "elem {i}: {g} vs {w}");
            }
            let mut par = vec![0.0f32; x.len()];
            batch_norm_inference_f32(x.as_ptr(), p.0, p.1, p.2, p.3, par.as_mut_ptr(), n, c, hw, eps, true);
            assert_eq!(par, got);
            let mut inplace = x.clone();
            let q = inplace.as_mut_ptr();
            batch_norm_inference_f32(q, p.0, p.1, p.2, p.3, q, n, c, hw, eps, false);
            assert_eq!(inplace, got);
        }
    }
}

/// `n` values in `[lo, hi)` from a fixed integer hash: the same bits on
/// every platform and with any `rand` version.
fn pinning_values(n: usize, seed: u64, lo: f32, hi: f32) -> Vec<f32> {
    (0..n as u64)
        .map(|i| {
            let mut z = (seed << 32 ^ i).wrapping_add(0x9e37_79b9_7f4a_7c15);
            z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
            z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
            let unit = (z >> 40) as f32 / (1u32 << 24) as f32;
            lo + (hi - lo) * unit
        })
        .collect()
}

/// Every output of one primitive table over the awkward lengths and
/// several row counts, in a fixed order: the primitives (sums, the
/// residual add, the normalisation) and each kind of row with and without
/// its optional operands. One checksum per entry.
fn pinned_outputs(ops: &RowOps) -> [(&'static str, u64); 6] {
    let (mut sums, mut adds, mut normalized) = (Vec::new(), Vec::new(), Vec::new());
    let (mut layer, mut rms, mut fused) = (Vec::new(), Vec::new(), Vec::new());
    for &h in &LENGTHS {
        for rows in [1, 3, 8] {
            let seed = (h * 16 + rows) as u64;
            let x = pinning_values(rows * h, seed, -3.0, 5.0);
            let res = pinning_values(rows * h, seed + 1, -1.0, 1.0);
            let bias = pinning_values(h, seed + 2, -0.5, 0.5);
            let g = pinning_values(h, seed + 3, 0.5, 1.5);
            let b = pinning_values(h, seed + 4, -1.0, 1.0);
            // SAFETY: every buffer holds `rows * h` or `h` f32.
            unsafe {
                for r in 0..rows {
                    let row = x.as_ptr().add(r * h);
                    sums.push((ops.sum)(row, h));
                    sums.push((ops.sum_sq_dev)(row, h, 0.0));
                    sums.push((ops.sum_sq_dev)(row, h, 0.7));
                }
                for opt in [None, Some(bias.as_ptr())] {
                    let mut out = vec![0.0f32; rows * h];
                    for r in 0..rows {
                        let at = r * h;
                        (ops.add)(x.as_ptr().add(at), res.as_ptr().add(at), opt, out.as_mut_ptr().add(at), h);
                    }
                    adds.extend(&out);
                }
                for opt in [None, Some(b.as_ptr())] {
                    let mut out = vec![0.0f32; h];
                    (ops.normalize)(x.as_ptr(), 0.3, 1.7, g.as_ptr(), opt, out.as_mut_ptr(), h);
                    normalized.extend(&out);
                }
                let run = |stats, res: Option<*const f32>, bias, b, into: &mut Vec<f32>| {
                    let mut out = vec![0.0f32; rows * h];
                    let a = NormArgs { x: x.as_ptr(), res, bias, g: g.as_ptr(), b, out: out.as_mut_ptr() };
                    norm_rows(ops, a, stats, rows, h, 1e-5, false);
                    into.extend(&out);
                };
                for opt_b in [None, Some(b.as_ptr())] {
                    run(Stats::MeanVar, None, None, opt_b, &mut layer);
                    run(Stats::MeanSquare, None, None, opt_b, &mut rms);
                    for opt_bias in [None, Some(bias.as_ptr())] {
                        run(Stats::MeanVar, Some(res.as_ptr()), opt_bias, opt_b, &mut fused);
                        run(Stats::MeanSquare, Some(res.as_ptr()), opt_bias, opt_b, &mut fused);
                    }
                }
            }
        }
    }
    [
        ("sums", bits_checksum(&sums)),
        ("add", bits_checksum(&adds)),
        ("normalize", bits_checksum(&normalized)),
        ("layer", bits_checksum(&layer)),
        ("rms", bits_checksum(&rms)),
        ("fused", bits_checksum(&fused)),
    ]
}

/// Every variant's results, pinned: the checksums of [`pinned_outputs`],
/// the same on x86 and aarch64 for every primitive table (they share one
/// summation order), so a rewrite of any of them cannot change a norm
/// unnoticed.
#[test]
fn every_variant_keeps_its_pinned_bits() {
    for (name, ops) in ROW_OPS.supported() {
        let got = pinned_outputs(&ops);
        for ((entry, sum), want) in got.into_iter().zip(NORM_BITS) {
            assert_eq!(sum, want, "{name}: {entry}: {sum:#018x}");
        }
    }
}

/// See [`every_variant_keeps_its_pinned_bits`].
const NORM_BITS: [u64; 6] = [
    0x8713_9c63_c9e2_a683,
    0x1fd8_83db_431b_ee98,
    0xa7af_2ae5_4566_4095,
    0x2626_b777_9dad_3e26,
    0x9651_304d_3436_8899,
    0x2020_3631_1c07_6f1f,
];
