use proptest::prelude::*;
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};

use super::*;
use crate::kernels::activation::act_f32_slice;
use crate::kernels::test_support::{check_variants, same, LENGTHS};

const U: f64 = f32::EPSILON as f64 / 2.0;

/// A shape from input size, kernel, stride, leading and trailing padding
/// and dilation, with the output size they imply.
fn shape(
    n: usize,
    c_in: usize,
    c_out: usize,
    groups: usize,
    (h, w): (usize, usize),
    (kh, kw): (usize, usize),
    (sh, sw): (usize, usize),
    (ph, pw): (usize, usize),
    (pe_h, pe_w): (usize, usize),
    (dh, dw): (usize, usize),
) -> Conv2dShape {
    let h_out = (h + ph + pe_h - dh * (kh - 1) - 1) / sh + 1;
    let w_out = (w + pw + pe_w - dw * (kw - 1) - 1) / sw + 1;
    Conv2dShape { n, c_in, h, w_in: w, c_out, h_out, w_out, kh, kw, sh, sw, ph, pw, dh, dw, groups }
}

struct Case {
    s: Conv2dShape,
    x: Vec<f32>,
    w: Vec<f32>,
    bias: Option<Vec<f32>>,
    act: ActKind,
}

impl Case {
    fn new(s: Conv2dShape, with_bias: bool, seed: u64) -> Case {
        let mut rng = StdRng::seed_from_u64(seed);
        let mut r = |n: usize| (0..n).map(|_| rng.gen_range(-1.0f32..1.0)).collect::<Vec<_>>();
        let x = r(s.n * s.c_in * s.h * s.w_in);
        let w = r(s.c_out * (s.c_in / s.groups) * s.kh * s.kw);
        let bias = with_bias.then(|| r(s.c_out));
        Case { s, x, w, bias, act: ActKind::Identity }
    }

    /// Independent direct convolution in f64, with an error bound for any
    /// summation order of the `K` products plus the bias: `(K + 2) u`
    /// times the sum of absolute terms.
    fn naive(&self) -> (Vec<f64>, Vec<f64>) {
        let s = &self.s;
        let (cig, cog) = (s.c_in / s.groups, s.c_out / s.groups);
        let k = (cig * s.kh * s.kw) as f64;
        let mut out = vec![0.0; s.n * s.c_out * s.h_out * s.w_out];
        let mut tol = vec![0.0; out.len()];
        for b in 0..s.n {
            for co in 0..s.c_out {
                let g = co / cog;
                for ho in 0..s.h_out {
                    for wo in 0..s.w_out {
                        let mut acc = self.bias.as_ref().map_or(0.0, |v| v[co] as f64);
                        let mut mag = acc.abs();
                        for cl in 0..cig {
                            let ci = g * cig + cl;
                            for ki in 0..s.kh {
                                for kj in 0..s.kw {
                                    let hi = (ho * s.sh + ki * s.dh) as i64 - s.ph as i64;
                                    let wi = (wo * s.sw + kj * s.dw) as i64 - s.pw as i64;
                                    if hi < 0 || wi < 0 || hi >= s.h as i64 || wi >= s.w_in as i64 {
                                        continue;
                                    }
                                    let xv =
                                        self.x[((b * s.c_in + ci) * s.h + hi as usize) * s.w_in + wi as usize] as f64;
                                    let wv = self.w[((co * cig + cl) * s.kh + ki) * s.kw + kj] as f64;
                                    acc += xv * wv;
                                    mag += (xv * wv).abs();
                                }
                            }
                        }
                        let at = ((b * s.c_out + co) * s.h_out + ho) * s.w_out + wo;
                        out[at] = acc;
                        tol[at] = (k + 2.0) * U * mag;
                    }
                }
            }
        }
        (out, tol)
    }

    fn run(&self, path: ConvPath, par: bool) -> Vec<f32> {
        let s = &self.s;
        let mut out = vec![f32::NAN; s.n * s.c_out * s.h_out * s.w_out];
        let mut scratch = vec![f32::NAN; conv2d_scratch_bytes(s, path) / 4 + 1];
        let bias = self.bias.as_ref().map_or(std::ptr::null(), |b| b.as_ptr());
        // SAFETY: buffers sized for the shape.
        unsafe {
            conv2d_f32(
                self.x.as_ptr(),
                self.w.as_ptr(),
                bias,
                out.as_mut_ptr(),
                s,
                path,
                self.act,
                scratch.as_mut_ptr(),
                par,
            )
        };
        out
    }

    /// Every applicable path against the exact result, `par` bit-identical.
    fn check(&self, what: &str) {
        let s = &self.s;
        let (want, tol) = self.naive();
        let mut paths = vec![ConvPath::Im2colGemm, ConvPath::PhaseGemm];
        if s.kh == 1
            && s.kw == 1
            && s.sh == 1
            && s.sw == 1
            && s.ph == 0
            && s.pw == 0
            && s.h_out == s.h
            && s.w_out == s.w_in
        {
            paths.push(ConvPath::Pointwise);
        }
        if s.c_in > 0 && s.groups == s.c_in && s.c_out.is_multiple_of(s.c_in) {
            paths.push(ConvPath::Depthwise);
        }
        assert!(paths.contains(&conv2d_path(s)), "{what}: chosen path not applicable");
        for path in paths {
            let got = self.run(path, false);
            for (i, (&g, (&w, &t))) in got.iter().zip(want.iter().zip(&tol)).enumerate() {
                assert!((g as f64 - w).abs() <= t, "{what} {path:?} at {i}: got {g} want {w} tol {t:e}");
            }
            let par = self.run(path, true);
            let b = |v: &[f32]| v.iter().map(|x| x.to_bits()).collect::<Vec<_>>();
            assert_eq!(b(&got), b(&par), "{what} {path:?}: par differs");
        }
    }
}

#[test]
fn valid_outputs_brute_force() {
    for out_len in 0..6 {
        for stride in 1..4 {
            for offset in -5isize..5 {
                for in_len in 0..7 {
                    let want: Vec<usize> = (0..out_len)
                        .filter(|&o| {
                            let i = (o * stride) as isize + offset;
                            i >= 0 && i < in_len as isize
                        })
                        .collect();
                    assert_eq!(valid_outputs(out_len, stride, offset, in_len).collect::<Vec<_>>(), want);
                }
            }
        }
    }
}

#[test]
fn plain_3x3_with_and_without_bias() {
    for bias in [false, true] {
        Case::new(shape(2, 3, 4, 1, (7, 9), (3, 3), (1, 1), (1, 1), (1, 1), (1, 1)), bias, 50).check("3x3");
    }
}

#[test]
fn stride_padding_dilation_and_trailing_padding() {
    let cases = [
        shape(1, 2, 3, 1, (9, 8), (3, 3), (2, 2), (1, 1), (1, 1), (1, 1)),
        shape(1, 2, 3, 1, (9, 8), (3, 2), (2, 3), (0, 2), (1, 0), (1, 1)),
        shape(2, 3, 2, 1, (11, 10), (3, 3), (1, 1), (2, 2), (2, 2), (2, 2)),
        shape(1, 1, 2, 1, (5, 6), (5, 5), (1, 1), (4, 4), (4, 4), (1, 1)),
        shape(1, 2, 2, 1, (3, 4), (2, 3), (3, 2), (2, 1), (0, 3), (2, 1)),
        shape(1, 1, 1, 1, (1, 1), (1, 1), (1, 1), (0, 0), (0, 0), (1, 1)),
    ];
    for (i, s) in cases.into_iter().enumerate() {
        Case::new(s, true, 51 + i as u64).check(&format!("case {i}"));
    }
}

#[test]
fn grouped_convolution() {
    Case::new(shape(2, 4, 6, 2, (6, 7), (3, 3), (1, 2), (1, 1), (1, 1), (1, 1)), true, 60).check("groups 2");
    Case::new(shape(1, 6, 3, 3, (5, 5), (2, 2), (1, 1), (0, 0), (0, 0), (2, 1)), false, 61).check("groups 3");
    // Channel multiplier 2: groups == c_in but c_out != c_in (not depthwise).
    Case::new(shape(1, 3, 6, 3, (6, 6), (3, 3), (1, 1), (1, 1), (1, 1), (1, 1)), true, 62).check("multiplier 2");
}

#[test]
fn depthwise_strides_padding_dilation() {
    for (i, (stride, pad, dil)) in
        [((1, 1), (1, 1), (1, 1)), ((2, 2), (1, 1), (1, 1)), ((1, 3), (2, 0), (2, 1)), ((3, 2), (0, 2), (1, 2))]
            .into_iter()
            .enumerate()
    {
        let s = shape(2, 5, 5, 5, (9, 300), (3, 3), stride, pad, pad, dil);
        assert_eq!(conv2d_path(&s), ConvPath::Depthwise);
        Case::new(s, i % 2 == 0, 70 + i as u64).check(&format!("depthwise {i}"));
    }
}

#[test]
fn pointwise_1x1() {
    let s = shape(2, 7, 5, 1, (3, 5), (1, 1), (1, 1), (0, 0), (0, 0), (1, 1));
    assert_eq!(conv2d_path(&s), ConvPath::Pointwise);
    Case::new(s, true, 80).check("1x1");
    // 1x1 with stride 2 is not pointwise: it runs on phase planes.
    let s2 = shape(1, 4, 3, 1, (5, 5), (1, 1), (2, 2), (0, 0), (0, 0), (1, 1));
    assert_eq!(conv2d_path(&s2), ConvPath::PhaseGemm);
    Case::new(s2, false, 81).check("1x1 stride 2");
    let s3 = shape(1, 4, 6, 2, (4, 4), (1, 1), (1, 1), (0, 0), (0, 0), (1, 1));
    Case::new(s3, true, 82).check("1x1 grouped");
}

#[test]
fn scratch_matches_the_plan() {
    let s = shape(1, 6, 4, 2, (10, 9), (3, 2), (1, 1), (1, 1), (1, 1), (1, 1));
    assert_eq!((s.h_out, s.w_out), (10, 10));
    // One group's phase planes (one phase at stride 1): 3 channels of
    // (10 + 2 + 1) rows of pitch 10 + 1; then the grid product, 2 channels
    // of 10 x 11, since the grid is wider than the output.
    let bytes = (3 * 13 * 11 + 2 * 10 * 11) * 4;
    assert_eq!(conv2d_scratch_bytes(&s, ConvPath::PhaseGemm), bytes);
    assert_eq!(conv2d_scratch_bytes(&s, ConvPath::Im2colGemm), 0);
    assert_eq!(conv2d_scratch_bytes(&s, ConvPath::Depthwise), 0);
    // Stride 2, 1x1: four phase planes per channel, the grid is the output.
    let s2 = shape(1, 4, 3, 1, (5, 5), (1, 1), (2, 2), (0, 0), (0, 0), (1, 1));
    assert_eq!(conv2d_scratch_bytes(&s2, ConvPath::PhaseGemm), 4 * 4 * (3 + 1) * 3 * 4);
    let p = shape(2, 7, 5, 1, (3, 5), (1, 1), (1, 1), (0, 0), (0, 0), (1, 1));
    assert_eq!(conv2d_scratch_bytes(&p, ConvPath::Pointwise), 0);
}

#[test]
fn narrow_outputs_unfold_and_wide_ones_use_the_grid() {
    // 3x3 stride 1: the grid is 2 columns wider; 56, 7 and 2 wide take it
    // (3.4%, 22%, 50% dropped), 1 wide does not (67%).
    let s = |hw| shape(1, 8, 8, 1, (hw, hw), (3, 3), (1, 1), (1, 1), (1, 1), (1, 1));
    assert_eq!(conv2d_path(&s(56)), ConvPath::PhaseGemm);
    assert_eq!(conv2d_path(&s(7)), ConvPath::PhaseGemm);
    assert_eq!(conv2d_path(&s(2)), ConvPath::PhaseGemm);
    assert_eq!(conv2d_path(&s(1)), ConvPath::Im2colGemm);
    // A 5-wide kernel over a 1-wide output (a column).
    let column = shape(1, 2, 2, 1, (9, 1), (5, 5), (1, 1), (2, 2), (2, 2), (1, 1));
    assert_eq!(conv2d_path(&column), ConvPath::Im2colGemm);
    // ResNet's 7x7 stride-2 stem: a 115-wide grid for 112 outputs.
    assert_eq!(
        conv2d_path(&shape(1, 3, 64, 1, (224, 224), (7, 7), (2, 2), (3, 3), (3, 3), (1, 1))),
        ConvPath::PhaseGemm
    );
}

/// The product paths' reference: each output its bias (or 0), then one
/// fused multiply-add per patch element in `(ci, ki, kj)` order, padding
/// taking part as 0.
fn ordered_reference(c: &Case) -> Vec<f32> {
    let s = &c.s;
    let (cig, cog) = (s.c_in_g(), s.c_out_g());
    let mut out = vec![0.0f32; s.n * s.c_out * s.h_out * s.w_out];
    for b in 0..s.n {
        for co in 0..s.c_out {
            let g = co / cog;
            for ho in 0..s.h_out {
                for wo in 0..s.w_out {
                    let mut acc = c.bias.as_ref().map_or(0.0, |v| v[co]);
                    for cl in 0..cig {
                        for ki in 0..s.kh {
                            for kj in 0..s.kw {
                                let hi = (ho * s.sh + ki * s.dh) as i64 - s.ph as i64;
                                let wi = (wo * s.sw + kj * s.dw) as i64 - s.pw as i64;
                                let inside = hi >= 0 && wi >= 0 && hi < s.h as i64 && wi < s.w_in as i64;
                                let xv = if inside {
                                    c.x[((b * s.c_in + g * cig + cl) * s.h + hi as usize) * s.w_in + wi as usize]
                                } else {
                                    0.0
                                };
                                acc = c.w[((co * cig + cl) * s.kh + ki) * s.kw + kj].mul_add(xv, acc);
                            }
                        }
                    }
                    out[((b * s.c_out + co) * s.h_out + ho) * s.w_out + wo] = acc;
                }
            }
        }
    }
    out
}

#[test]
fn product_paths_are_the_ordered_fma_chain() {
    let bits = |v: &[f32]| v.iter().map(|x| x.to_bits()).collect::<Vec<_>>();
    let shapes = [
        // Stride 1: grid wider than the output (squeezed); 3x3, 5x5, 7x7.
        shape(1, 3, 5, 1, (9, 11), (3, 3), (1, 1), (1, 1), (1, 1), (1, 1)),
        shape(2, 4, 20, 1, (14, 14), (5, 5), (1, 1), (2, 2), (2, 2), (1, 1)),
        shape(1, 2, 3, 1, (17, 17), (7, 7), (1, 1), (3, 3), (3, 3), (1, 1)),
        // Strides 2 and 3, asymmetric and trailing padding, dilation.
        shape(1, 3, 4, 1, (16, 15), (3, 3), (2, 2), (1, 1), (0, 1), (1, 1)),
        shape(1, 2, 3, 1, (13, 12), (3, 5), (2, 3), (1, 2), (2, 0), (1, 1)),
        shape(1, 2, 3, 1, (12, 12), (3, 3), (2, 1), (2, 2), (2, 2), (2, 2)),
        shape(1, 3, 64, 1, (32, 32), (7, 7), (2, 2), (3, 3), (3, 3), (1, 1)),
        // 1x1 at stride 2 (one of four phases used); pointwise; grouped.
        shape(1, 4, 3, 1, (7, 7), (1, 1), (2, 2), (0, 0), (0, 0), (1, 1)),
        shape(1, 300, 17, 1, (6, 7), (1, 1), (1, 1), (0, 0), (0, 0), (1, 1)),
        shape(2, 6, 4, 2, (10, 9), (3, 2), (1, 1), (1, 1), (1, 1), (1, 1)),
        // Width 1, a single output, k across passes (300 * 9 > 256).
        shape(1, 2, 3, 1, (5, 1), (3, 1), (1, 1), (1, 0), (1, 0), (1, 1)),
        shape(1, 300, 2, 1, (3, 3), (3, 3), (1, 1), (0, 0), (0, 0), (1, 1)),
    ];
    for (i, s) in shapes.into_iter().enumerate() {
        for with_bias in [false, true] {
            let case = Case::new(s, with_bias, 90 + i as u64);
            let want = bits(&ordered_reference(&case));
            let path = conv2d_path(&case.s);
            assert_ne!(path, ConvPath::Depthwise);
            for par in [false, true] {
                assert_eq!(bits(&case.run(path, par)), want, "shape {i} ({s:?}) bias {with_bias} par {par}");
            }
            // Every product path gives the same bits.
            for other in [ConvPath::Im2colGemm, ConvPath::PhaseGemm] {
                assert_eq!(bits(&case.run(other, false)), want, "shape {i} {other:?}");
                assert_eq!(bits(&case.run(other, true)), want, "shape {i} {other:?} par");
            }
        }
    }
}

#[test]
fn a_fused_activation_has_the_bits_of_a_separate_one() {
    let bits = |v: &[f32]| v.iter().map(|x| x.to_bits()).collect::<Vec<_>>();
    let shapes = [
        shape(1, 3, 5, 1, (9, 11), (3, 3), (1, 1), (1, 1), (1, 1), (1, 1)),
        shape(1, 300, 17, 1, (6, 7), (1, 1), (1, 1), (0, 0), (0, 0), (1, 1)),
        shape(2, 6, 6, 6, (10, 9), (3, 3), (2, 2), (1, 1), (1, 1), (1, 1)),
        // Depthwise with 17x17 taps (> 256): the per-tap path.
        shape(1, 2, 2, 2, (20, 20), (17, 17), (1, 1), (8, 8), (8, 8), (1, 1)),
    ];
    for (i, s) in shapes.into_iter().enumerate() {
        for act in [ActKind::Relu, ActKind::Gelu, ActKind::Sigmoid] {
            let mut case = Case::new(s, true, 120 + i as u64);
            let path = conv2d_path(&case.s);
            let mut want = case.run(path, false);
            // SAFETY: in place over the whole output.
            unsafe { act_f32_slice(act, want.as_ptr(), want.as_mut_ptr(), want.len(), false) };
            case.act = act;
            for par in [false, true] {
                assert_eq!(bits(&case.run(path, par)), bits(&want), "shape {i} {act:?} par {par}");
            }
        }
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(32))]

    #[test]
    fn random_shapes_match_exact(
        n in 1usize..3, g in 1usize..4, cig in 1usize..3, cog in 1usize..3, h in 1usize..9, w in 1usize..9,
        kh in 1usize..4, kw in 1usize..4, sh in 1usize..3, sw in 1usize..3, ph in 0usize..3, pw in 0usize..3,
        dh in 1usize..3, dw in 1usize..3, bias in any::<bool>(), seed in any::<u64>(),
    ) {
        // Keep the dilated kernel inside the padded input.
        prop_assume!(dh * (kh - 1) < h + 2 * ph && dw * (kw - 1) < w + 2 * pw);
        let s = shape(n, g * cig, g * cog, g, (h, w), (kh, kw), (sh, sw), (ph, pw), (ph, pw), (dh, dw));
        Case::new(s, bias, seed).check("prop");
    }
}

// The depthwise kernel is bit-exact: every output is `acc = +0; for ki {
// for kj { acc = fma(w, xpad, acc) } }; acc + bias`, whatever the band
// kernel, budget or thread count.

/// The depthwise function, written out: `xpad` is 0 in the padding.
fn depthwise_reference(case: &Case) -> Vec<f32> {
    let s = &case.s;
    let mut out = Vec::with_capacity(s.n * s.c_out * s.h_out * s.w_out);
    for b in 0..s.n {
        for c in 0..s.c_out {
            for ho in 0..s.h_out {
                for wo in 0..s.w_out {
                    let mut acc = 0.0f32;
                    for ki in 0..s.kh {
                        for kj in 0..s.kw {
                            let hi = (ho * s.sh + ki * s.dh) as isize - s.ph as isize;
                            let wi = (wo * s.sw + kj * s.dw) as isize - s.pw as isize;
                            let inside = hi >= 0 && wi >= 0 && hi < s.h as isize && wi < s.w_in as isize;
                            let xv = if inside {
                                // Input channel `c / m`, `m` filters per channel.
                                let ci = c / (s.c_out / s.c_in);
                                case.x[((b * s.c_in + ci) * s.h + hi as usize) * s.w_in + wi as usize]
                            } else {
                                0.0
                            };
                            acc = case.w[(c * s.kh + ki) * s.kw + kj].mul_add(xv, acc);
                        }
                    }
                    if let Some(bias) = &case.bias {
                        acc += bias[c];
                    }
                    out.push(acc);
                }
            }
        }
    }
    out
}

fn depthwise_run(case: &Case, kernel: depthwise::Kernel, budget: depthwise::Budget, par: bool) -> Vec<f32> {
    let s = &case.s;
    let mut out = vec![f32::NAN; s.n * s.c_out * s.h_out * s.w_out];
    let bias = case.bias.as_ref().map_or(std::ptr::null(), |b| b.as_ptr());
    // SAFETY: buffers sized for the shape; the kernel is supported here.
    unsafe {
        depthwise::depthwise_with(
            case.x.as_ptr(),
            case.w.as_ptr(),
            bias,
            out.as_mut_ptr(),
            s,
            ActKind::Identity,
            par,
            kernel,
            budget,
        )
    };
    out
}

/// Equal bits, any NaN equal to any NaN (a NaN's payload is the CPU's).
fn assert_same_bits(got: &[f32], want: &[f32], what: &str) {
    assert_eq!(got.len(), want.len(), "{what}: length");
    for (i, (g, w)) in got.iter().zip(want).enumerate() {
        assert!(g.to_bits() == w.to_bits() || (g.is_nan() && w.is_nan()), "{what} at {i}: got {g:e} want {w:e}");
    }
}

/// Budgets from the kernel's down to a few rows, one row, and column
/// tiles (small enough that even a 1x1 tile of a large window may not fit:
/// then the per-tap path runs, which must agree too).
const DEPTHWISE_BUDGETS: [depthwise::Budget; 5] = [
    depthwise::BUDGET,
    depthwise::Budget { phases: 1200, acc: 256 },
    depthwise::Budget { phases: 400, acc: 64 },
    depthwise::Budget { phases: 160, acc: 32 },
    depthwise::Budget { phases: 0, acc: 0 },
];

/// Every band kernel, budget and `par` against the reference.
fn check_depthwise(case: &Case, what: &str) {
    let want = depthwise_reference(case);
    let kernels = depthwise::supported_variants();
    for (bi, &budget) in DEPTHWISE_BUDGETS.iter().enumerate() {
        for par in [false, true] {
            let what = format!("{what} budget {bi} par {par}");
            check_variants(&want, &kernels, same, &what, |kernel| depthwise_run(case, kernel, budget, par));
        }
    }
}

/// A depthwise shape (`c` channels); `None` when the window does not fit.
fn dw_shape(
    n: usize,
    c: usize,
    (h, w): (usize, usize),
    (kh, kw): (usize, usize),
    (sh, sw): (usize, usize),
    (ph, pw): (usize, usize),
    (pe_h, pe_w): (usize, usize),
    (dh, dw): (usize, usize),
) -> Option<Conv2dShape> {
    let fits = h + ph + pe_h > dh * (kh - 1) && w + pw + pe_w > dw * (kw - 1);
    fits.then(|| shape(n, c, c, c, (h, w), (kh, kw), (sh, sw), (ph, pw), (pe_h, pe_w), (dh, dw)))
}

#[test]
fn depthwise_bit_exact_over_awkward_shapes() {
    let kernels = [(1, 1), (3, 3), (5, 5), (7, 7), (3, 5)];
    let strides = [(1, 1), (2, 2), (3, 3), (1, 2), (2, 1), (3, 2)];
    let dilations = [(1, 1), (2, 2), (1, 2)];
    let widths = [1, 7, 14, 15, 16, 17, 33, 112];
    let mut rng = StdRng::seed_from_u64(90);
    let mut cases = 0;
    for (ki, &(kh, kw)) in kernels.iter().enumerate() {
        for &stride in &strides {
            for &(dh, dw) in &dilations {
                for &w in &widths {
                    // Leading padding 0..kernel-1, trailing independent of it.
                    let pad = (rng.gen_range(0..kh), rng.gen_range(0..kw));
                    let trail = (rng.gen_range(0..kh), rng.gen_range(0..kw));
                    let h = [1, 4, 9, 16][rng.gen_range(0..4)];
                    let n = 1 + (w + ki) % 2;
                    let Some(s) = dw_shape(n, 2, (h, w), (kh, kw), stride, pad, trail, (dh, dw)) else { continue };
                    let case = Case::new(s, rng.gen(), rng.gen());
                    check_depthwise(&case, &format!("{s:?}"));
                    cases += 1;
                }
            }
        }
    }
    assert!(cases > 500, "only {cases} shapes fit");
}

#[test]
fn depthwise_bit_exact_on_model_shapes() {
    // Symmetric "same" padding, and wide planes that need several bands.
    for (i, (c, hw, k, st)) in
        [(3, 112, 3, 1), (2, 112, 3, 2), (2, 56, 5, 2), (4, 14, 5, 1), (4, 7, 3, 1), (2, 17, 7, 1)]
            .into_iter()
            .enumerate()
    {
        let p = k / 2;
        let s = shape(1, c, c, c, (hw, hw), (k, k), (st, st), (p, p), (p, p), (1, 1));
        check_depthwise(&Case::new(s, i % 2 == 0, 100 + i as u64), &format!("model shape {i}"));
    }
}

#[test]
fn depthwise_with_a_channel_multiplier() {
    // `groups == c_in`, `m` filters per input channel: output channel `c`
    // reads input channel `c / m`. LeNet's first layer (1 -> 6) and a
    // grouped 2 -> 6.
    let shapes = [
        shape(1, 1, 6, 1, (32, 32), (5, 5), (1, 1), (0, 0), (0, 0), (1, 1)),
        shape(2, 2, 6, 2, (9, 11), (3, 3), (2, 1), (1, 1), (0, 1), (1, 1)),
        shape(1, 3, 24, 3, (7, 7), (3, 3), (1, 1), (1, 1), (1, 1), (1, 1)),
    ];
    for (i, s) in shapes.into_iter().enumerate() {
        assert_eq!(conv2d_path(&s), ConvPath::Depthwise, "{s:?}");
        let case = Case::new(s, i != 1, 140 + i as u64);
        check_depthwise(&case, &format!("multiplier {i}"));
        // And against the exact result, as every path is.
        case.check(&format!("multiplier {i}"));
    }
    // Nine filters per channel is past `DEPTHWISE_MAX_MULTIPLIER`: a product.
    let wide = shape(1, 2, 18, 2, (7, 7), (3, 3), (1, 1), (1, 1), (1, 1), (1, 1));
    assert_eq!(conv2d_path(&wide), ConvPath::PhaseGemm);
    Case::new(wide, true, 150).check("multiplier 9");
}

#[test]
fn depthwise_all_padding_and_empty_input() {
    // No input rows or columns at all: every tap reads padding.
    for (h, w) in [(0, 5), (4, 0), (0, 0)] {
        let s = shape(2, 3, 3, 3, (h, w), (3, 3), (1, 1), (2, 2), (2, 2), (1, 1));
        check_depthwise(&Case::new(s, true, 110), &format!("{h}x{w}"));
    }
}

#[test]
fn depthwise_wide_rows_tile_columns() {
    // 20000 columns do not fit one band: the row is cut into column tiles.
    let s = shape(1, 2, 2, 2, (3, 20000), (3, 3), (1, 2), (1, 1), (1, 1), (1, 1));
    let (bands, tiles) = depthwise::plan_split(&s, depthwise::BUDGET).expect("tiles");
    assert!(tiles > 1, "{bands} bands, {tiles} tiles");
    let case = Case::new(s, true, 111);
    let want = depthwise_reference(&case);
    for par in [false, true] {
        check_variants(&want, &depthwise::supported_variants(), same, &format!("par {par}"), |kernel| {
            depthwise_run(&case, kernel, depthwise::BUDGET, par)
        });
    }
}

#[test]
fn depthwise_per_tap_path() {
    let no_stack = depthwise::Budget { phases: 0, acc: 0 };
    let s = shape(2, 3, 3, 3, (9, 300), (3, 3), (2, 1), (1, 1), (0, 2), (1, 2));
    assert_eq!(depthwise::plan_split(&s, no_stack), None);
    let case = Case::new(s, true, 112);
    let want = depthwise_reference(&case);
    for par in [false, true] {
        assert_same_bits(&depthwise_run(&case, depthwise::supported_kernels()[0], no_stack, par), &want, "per tap");
    }
    // More taps than the stack holds: the per-tap path on the real budget.
    let s = shape(1, 2, 2, 2, (20, 20), (17, 17), (1, 1), (8, 8), (8, 8), (1, 1));
    assert!(s.kh * s.kw > depthwise::MAX_TAPS);
    assert_eq!(depthwise::plan_split(&s, depthwise::BUDGET), None);
    check_depthwise(&Case::new(s, false, 113), "17x17");
}

#[test]
fn depthwise_non_finite_weights() {
    // An infinite weight times the zero padding is NaN: the banded kernels
    // and the per-tap path both multiply it (NaN payloads may differ).
    let s = shape(1, 3, 3, 3, (6, 9), (3, 3), (1, 2), (1, 1), (1, 1), (1, 1));
    let mut case = Case::new(s, true, 114);
    case.w[4] = f32::INFINITY;
    case.w[9 + 2] = f32::NEG_INFINITY;
    case.w[18] = f32::NAN;
    case.x[5] = 0.0;
    check_depthwise(&case, "non-finite");
}

#[test]
fn depthwise_band_kernels_match_scalar() {
    let kernels = depthwise::supported_variants();
    let scalar = kernels.last().unwrap().1;
    let mut rng = StdRng::seed_from_u64(115);
    let src: Vec<f32> = (0..1024).map(|_| rng.gen_range(-1.0f32..1.0) * 2f32.powi(rng.gen_range(-8..8))).collect();
    // The awkward lengths that fit the source, and the band's own: NEON's
    // 4-lane tails and whole and partial blocks of `PAD` (16) lanes.
    let lens = LENGTHS.into_iter().filter(|&n| n <= 300).chain([3, 4, 5, 32, 35, 63, 64, 65, 127, 131, 300]);
    for len in lens {
        for n_taps in [0, 1, 2, 9, 25] {
            let taps: Vec<(usize, f32)> =
                (0..n_taps).map(|_| (rng.gen_range(0..400), rng.gen_range(-1.0..1.0))).collect();
            for bias in [None, Some(0.375f32)] {
                let want = depthwise::band_for_test(scalar, &src, &taps, len, bias);
                check_variants(&want, &kernels, same, &format!("len {len} taps {n_taps}"), |k| {
                    depthwise::band_for_test(k, &src, &taps, len, bias)
                });
            }
        }
    }
}

#[test]
fn depthwise_short_copies_stay_in_range() {
    let src: Vec<f32> = (0..200).map(|i| i as f32 + 0.5).collect();
    // The awkward lengths that fit the source, and the copies' own short
    // and 4-lane tails.
    let lens: Vec<usize> = LENGTHS.into_iter().filter(|&n| n <= 100).chain([2, 3, 4, 5, 32, 35, 47, 64, 100]).collect();
    let kernels = depthwise::supported_variants();
    for &n in &lens {
        let guard = [f32::NAN; 20];
        let with = |f: &dyn Fn(usize) -> f32| {
            guard.iter().copied().chain((0..n).map(f)).chain(guard.iter().copied()).collect::<Vec<_>>()
        };
        let want = [
            with(&|i| src[i]),
            with(&|_| 0.0),
            with(&|i| src[2 * i]),
            with(&|i| src[2 * i + 1]),
            with(&|i| src[2 * i]),
        ];
        for (at, what) in ["copy", "zero", "split2 even", "split2 odd", "gather2"].into_iter().enumerate() {
            check_variants(&want[at], &kernels, same, &format!("{what} n {n}"), |k| {
                depthwise::prims_for_test(k, &src, n)[at].clone()
            });
        }
    }
}

#[test]
fn depthwise_empty_output_writes_nothing() {
    // The caller returns before the kernel when a dimension is empty.
    for (n, c, h, w) in [(0, 3, 5, 5), (1, 0, 5, 5), (1, 3, 0, 5), (1, 3, 5, 0)] {
        let s = Conv2dShape {
            n,
            c_in: c,
            h,
            w_in: w,
            c_out: c,
            h_out: h,
            w_out: w,
            kh: 3,
            kw: 3,
            sh: 1,
            sw: 1,
            ph: 1,
            pw: 1,
            dh: 1,
            dw: 1,
            groups: c.max(1),
        };
        let (x, wt, mut out) = (vec![1.0f32; n * c * h * w], vec![1.0f32; c * 9], [7.0f32; 4]);
        // SAFETY: every extent is empty; `out` is never written.
        unsafe {
            conv2d_f32(
                x.as_ptr(),
                wt.as_ptr(),
                std::ptr::null(),
                out.as_mut_ptr(),
                &s,
                ConvPath::Depthwise,
                ActKind::Identity,
                std::ptr::null_mut(),
                true,
            )
        };
        assert_eq!(out, [7.0; 4]);
    }
}

/// The models' depthwise shapes, timed (`cargo test --release -p
/// rlx-runtime depthwise_timing -- --ignored --nocapture`, with
/// `RLX_NUM_THREADS` to taste); prints only.
#[test]
#[ignore]
fn depthwise_timing() {
    for (name, c, hw, k, st) in [
        ("3x3 s1 32x112x112", 32, 112, 3, 1),
        ("3x3 s2 96x112x112", 96, 112, 3, 2),
        ("5x5 s2 144x56x56", 144, 56, 5, 2),
        ("5x5 s1 672x14x14", 672, 14, 5, 1),
        ("3x3 s1 576x14x14", 576, 14, 3, 1),
    ] {
        let p = k / 2;
        let s = shape(1, c, c, c, (hw, hw), (k, k), (st, st), (p, p), (p, p), (1, 1));
        let case = Case::new(s, true, 1);
        let bias = case.bias.as_ref().unwrap().as_ptr();
        let mut out = vec![0.0f32; c * s.h_out * s.w_out];
        let flops = 2.0 * (c * s.h_out * s.w_out * k * k) as f64;
        for par in [false, true] {
            let mut best = f64::MAX;
            for _ in 0..50 {
                let t = std::time::Instant::now();
                // SAFETY: buffers sized for the shape.
                unsafe {
                    depthwise::depthwise(
                        case.x.as_ptr(),
                        case.w.as_ptr(),
                        bias,
                        out.as_mut_ptr(),
                        &s,
                        ActKind::Identity,
                        par,
                    )
                };
                best = best.min(t.elapsed().as_secs_f64());
            }
            let threads = crate::threads::num_threads();
            println!(
                "{name:<20} par {par:<5} threads {threads}: {:8.1} us {:6.1} GFLOP/s",
                best * 1e6,
                flops / best / 1e9
            );
        }
    }
}

/// Timing of every product path on ResNet-18's convolutions (`cargo test
/// --release -p rlx-runtime product_paths_timing -- --ignored
/// --nocapture`); prints only. The paths run interleaved, so a busy
/// machine slows all alike.
#[test]
#[ignore]
fn product_paths_timing() {
    let shapes = [
        ("7x7/2 3->64 224", shape(1, 3, 64, 1, (224, 224), (7, 7), (2, 2), (3, 3), (3, 3), (1, 1))),
        ("3x3 64 56", shape(1, 64, 64, 1, (56, 56), (3, 3), (1, 1), (1, 1), (1, 1), (1, 1))),
        ("3x3/2 64->128 56", shape(1, 64, 128, 1, (56, 56), (3, 3), (2, 2), (1, 1), (1, 1), (1, 1))),
        ("3x3 128 28", shape(1, 128, 128, 1, (28, 28), (3, 3), (1, 1), (1, 1), (1, 1), (1, 1))),
        ("3x3 256 14", shape(1, 256, 256, 1, (14, 14), (3, 3), (1, 1), (1, 1), (1, 1), (1, 1))),
        ("3x3 512 7", shape(1, 512, 512, 1, (7, 7), (3, 3), (1, 1), (1, 1), (1, 1), (1, 1))),
        ("1x1/2 256->512 14", shape(1, 256, 512, 1, (14, 14), (1, 1), (2, 2), (0, 0), (0, 0), (1, 1))),
        ("LeNet 5x5 1->6 32", shape(1, 1, 6, 1, (32, 32), (5, 5), (1, 1), (0, 0), (0, 0), (1, 1))),
        ("LeNet 5x5 6->16 14", shape(1, 6, 16, 1, (14, 14), (5, 5), (1, 1), (0, 0), (0, 0), (1, 1))),
    ];
    for (name, s) in shapes {
        let case = Case::new(s, true, 7);
        let flops = 2.0 * (s.c_out * s.out_plane() * s.patch_len()) as f64;
        let mut best = [f64::MAX; 2];
        let paths = [ConvPath::PhaseGemm, ConvPath::Im2colGemm];
        for _ in 0..5 {
            for (b, path) in best.iter_mut().zip(paths) {
                // Buffers made once, outside the timing.
                let mut out = vec![0.0f32; s.n * s.c_out * s.out_plane()];
                let mut scratch = vec![0.0f32; conv2d_scratch_bytes(&s, path) / 4 + 1];
                let bias = case.bias.as_ref().map_or(std::ptr::null(), |b| b.as_ptr());
                let t = std::time::Instant::now();
                for _ in 0..3 {
                    // SAFETY: buffers sized for the shape and path.
                    unsafe {
                        conv2d_f32(
                            case.x.as_ptr(),
                            case.w.as_ptr(),
                            bias,
                            out.as_mut_ptr(),
                            &s,
                            path,
                            ActKind::Identity,
                            scratch.as_mut_ptr(),
                            false,
                        )
                    };
                    std::hint::black_box(&out);
                }
                *b = b.min(t.elapsed().as_secs_f64() / 3.0);
            }
        }
        println!(
            "{name:20} chosen {:?}: phase {:6.1} GF/s, unfold {:6.1} GF/s",
            conv2d_path(&s),
            flops / best[0] / 1e9,
            flops / best[1] / 1e9
        );
    }
}
