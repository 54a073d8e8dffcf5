use proptest::prelude::*;
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};

use super::*;

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
}

impl Case {
    fn new(s: Conv2dShape, with_bias: bool, seed: u64) -> Case {
        let mut rng = StdRng::seed_from_u64(seed);
        let mut r = |n: usize| (0..n).map(|_| rng.gen_range(-1.0f32..1.0)).collect::<Vec<_>>();
        let x = r(s.n * s.c_in * s.h * s.w_in);
        let w = r(s.c_out * (s.c_in / s.groups) * s.kh * s.kw);
        let bias = with_bias.then(|| r(s.c_out));
        Case { s, x, w, bias }
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
            conv2d_f32(self.x.as_ptr(), self.w.as_ptr(), bias, out.as_mut_ptr(), s, path, scratch.as_mut_ptr(), par)
        };
        out
    }

    /// Every applicable path against the exact result, `par` bit-identical.
    fn check(&self, what: &str) {
        let s = &self.s;
        let (want, tol) = self.naive();
        let mut paths = vec![ConvPath::Im2colGemm];
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
        if s.groups == s.c_in && s.c_out == s.c_in {
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
    // 1x1 with stride 2 is not pointwise: it unfolds.
    let s2 = shape(1, 4, 3, 1, (5, 5), (1, 1), (2, 2), (0, 0), (0, 0), (1, 1));
    assert_eq!(conv2d_path(&s2), ConvPath::Im2colGemm);
    Case::new(s2, false, 81).check("1x1 stride 2");
    let s3 = shape(1, 4, 6, 2, (4, 4), (1, 1), (1, 1), (0, 0), (0, 0), (1, 1));
    Case::new(s3, true, 82).check("1x1 grouped");
}

#[test]
fn scratch_matches_the_plan() {
    let s = shape(1, 6, 4, 2, (10, 9), (3, 2), (1, 1), (1, 1), (1, 1), (1, 1));
    // One group's patches, packed: columns rounded up to panels of 16.
    let bytes = (6 / 2) * 3 * 2 * (s.h_out * s.w_out).div_ceil(16) * 16 * 4;
    assert_eq!(conv2d_scratch_bytes(&s, ConvPath::Im2colGemm), bytes);
    assert_eq!(conv2d_scratch_bytes(&s, ConvPath::Depthwise), 0);
    let p = shape(2, 7, 5, 1, (3, 5), (1, 1), (1, 1), (0, 0), (0, 0), (1, 1));
    assert_eq!(conv2d_scratch_bytes(&p, ConvPath::Pointwise), 7 * 16 * 4);
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
