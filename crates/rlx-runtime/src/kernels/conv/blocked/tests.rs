//! Every microkernel against the scalar reference and against the NCHW
//! product paths, bit for bit, over awkward shapes (channel and block
//! tails, narrow and odd rows, every window kind, padding on one side,
//! several images, empty outputs), with and without bias and activation,
//! serial and split, from blocked and NCHW inputs; padded input lanes full of NaN; and the semantics
//! against an independent f64 reference. Plus the timing against NCHW.

use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};

use rlx_core::blocked::{
    channel_blocks, conv_blocked_scratch_bytes, pack_conv_filter, pad_channels, CHANNEL_BLOCK as B,
};

use super::*;
use crate::kernels::conv::test_util::{bits, from_blocked, to_blocked};
use crate::kernels::conv::{conv2d_f32, conv2d_path, conv2d_scratch_bytes, ConvPath};
use crate::kernels::test_support::{check_variants, identical};

const U: f64 = f32::EPSILON as f64 / 2.0;

/// A shape from input size, kernel, stride, leading and trailing padding
/// and dilation, with the output size they imply.
#[allow(clippy::too_many_arguments)]
fn shape(
    n: usize,
    c_in: usize,
    c_out: usize,
    (h, w): (usize, usize),
    (kh, kw): (usize, usize),
    (sh, sw): (usize, usize),
    (ph, pw): (usize, usize),
    (pe_h, pe_w): (usize, usize),
    (dh, dw): (usize, usize),
) -> Conv2dShape {
    let h_out = (h + ph + pe_h - dh * (kh - 1) - 1) / sh + 1;
    let w_out = (w + pw + pe_w - dw * (kw - 1) - 1) / sw + 1;
    Conv2dShape { n, c_in, h, w_in: w, c_out, h_out, w_out, kh, kw, sh, sw, ph, pw, dh, dw, groups: 1 }
}

/// A 3x3, stride-1, pad-1 ("same") shape.
fn same3(n: usize, c_in: usize, c_out: usize, (h, w): (usize, usize)) -> Conv2dShape {
    shape(n, c_in, c_out, (h, w), (3, 3), (1, 1), (1, 1), (1, 1), (1, 1))
}

struct Case {
    s: Conv2dShape,
    /// NCHW input, OIHW filter.
    x: Vec<f32>,
    w: Vec<f32>,
    bias: Option<Vec<f32>>,
    /// NCHW, shaped as the output.
    residual: Option<Vec<f32>>,
    act: ActKind,
}

impl Case {
    fn new(s: Conv2dShape, with_bias: bool, act: ActKind, seed: u64) -> Case {
        let mut rng = StdRng::seed_from_u64(seed);
        // Varied exponents, so a different summation order shows.
        let mut r = |n: usize| (0..n).map(|_| rng.gen_range(-1.0f32..1.0) * 2f32.powi(rng.gen_range(-6..4))).collect();
        let x = r(s.n * s.c_in * s.h * s.w_in);
        let w = r(s.c_out * s.c_in_g() * s.kh * s.kw);
        let bias = with_bias.then(|| r(s.c_out));
        Case { s, x, w, bias, residual: None, act }
    }

    /// The case with a residual added before the activation.
    fn with_residual(mut self, seed: u64) -> Case {
        let mut rng = StdRng::seed_from_u64(seed);
        let len = self.s.n * self.s.c_out * self.s.out_plane();
        self.residual = Some((0..len).map(|_| rng.gen_range(-1.0f32..1.0)).collect());
        self
    }

    /// The blocked output (padded lanes included) of `kernel`, padded
    /// input lanes set to `fill`.
    fn run_blocked(&self, kernel: &Kernel, par: bool, fill: f32) -> Vec<f32> {
        self.run_input(kernel, Input::Blocked, par, fill)
    }

    /// As [`Case::run_blocked`], from the input in the layout `input`.
    fn run_input(&self, kernel: &Kernel, input: Input, par: bool, fill: f32) -> Vec<f32> {
        self.run_stored(kernel, input, par, fill, None)
    }

    /// The case with its weights rounded to f16 (bf16 with `bf16`), so
    /// that a 16-bit filter holds them exactly.
    fn rounded(&self, bf16: bool) -> Case {
        let round = |v: f32| if bf16 { half::bf16::from_f32(v).to_f32() } else { half::f16::from_f32(v).to_f32() };
        Case {
            s: self.s,
            x: self.x.clone(),
            w: self.w.iter().map(|&v| round(v)).collect(),
            bias: self.bias.clone(),
            residual: self.residual.clone(),
            act: self.act,
        }
    }

    /// As [`Case::run_input`], the packed filter stored in 16-bit floats
    /// when `half` is `Some(bf16)` (the weights must be exact in it).
    fn run_stored(&self, kernel: &Kernel, input: Input, par: bool, fill: f32, half: Option<bool>) -> Vec<f32> {
        let s = &self.s;
        let x = match input {
            Input::Blocked => to_blocked(&self.x, s.n, s.c_in, s.h * s.w_in, fill),
            Input::Nchw => self.x.clone(),
        };
        let w = pack_conv_filter(&self.w, s.c_out, s.c_in_g(), s.kh, s.kw);
        let w16: Vec<u16> = match half {
            Some(true) => w.iter().map(|&v| half::bf16::from_f32(v).to_bits()).collect(),
            Some(false) => w.iter().map(|&v| half::f16::from_f32(v).to_bits()).collect(),
            None => Vec::new(),
        };
        let filter = match half {
            Some(bf16) => Filter::Half(w16.as_ptr(), if bf16 { widen_bf16 } else { widen_f16 }),
            None => Filter::F32(w.as_ptr()),
        };
        let bias = self.bias.as_ref().map(|b| pad_channels(b));
        let residual = self.residual.as_ref().map(|r| to_blocked(r, s.n, s.c_out, s.out_plane(), fill));
        let mut out = vec![f32::NAN; s.n * channel_blocks(s.c_out) * s.out_plane() * B];
        let mut scratch = vec![f32::NAN; conv_blocked_scratch_bytes(s) / 4];
        let scratch_ptr = if scratch.is_empty() { std::ptr::null_mut() } else { scratch.as_mut_ptr() };
        // SAFETY: buffers sized for the shape; `kernel` is supported.
        unsafe {
            run(
                kernel,
                input,
                x.as_ptr(),
                filter,
                bias.as_ref().map_or(std::ptr::null(), |b| b.as_ptr()),
                residual.as_ref().map_or(std::ptr::null(), |r| r.as_ptr()),
                out.as_mut_ptr(),
                s,
                self.act,
                scratch_ptr,
                par,
            )
        };
        out
    }

    /// The NCHW product path's output; with a residual, the convolution,
    /// then the add, then the activation, as three thunks would run.
    fn run_nchw(&self, path: ConvPath) -> Vec<f32> {
        let s = &self.s;
        let mut out = vec![f32::NAN; s.n * s.c_out * s.out_plane()];
        let mut scratch = vec![f32::NAN; conv2d_scratch_bytes(s, path) / 4 + 1];
        let bias = self.bias.as_ref().map_or(std::ptr::null(), |b| b.as_ptr());
        // SAFETY: buffers sized for the shape and path.
        unsafe {
            conv2d_f32(
                self.x.as_ptr(),
                self.w.as_ptr(),
                bias,
                out.as_mut_ptr(),
                s,
                path,
                if self.residual.is_some() { ActKind::Identity } else { self.act },
                scratch.as_mut_ptr(),
                false,
            )
        };
        if let Some(r) = &self.residual {
            for (o, r) in out.iter_mut().zip(r) {
                *o += *r;
            }
            // SAFETY: in place over the whole output.
            unsafe {
                crate::kernels::activation::act_f32_slice(self.act, out.as_ptr(), out.as_mut_ptr(), out.len(), false)
            };
        }
        out
    }

    /// Independent f64 convolution and an error bound for any summation
    /// order: `(K + 2) u` times the sum of absolute terms.
    fn naive(&self) -> (Vec<f64>, Vec<f64>) {
        let s = &self.s;
        let k = (s.c_in * s.kh * s.kw) as f64;
        let mut out = vec![0.0; s.n * s.c_out * s.out_plane()];
        let mut tol = vec![0.0; out.len()];
        for b in 0..s.n {
            for co in 0..s.c_out {
                for ho in 0..s.h_out {
                    for wo in 0..s.w_out {
                        let mut acc = self.bias.as_ref().map_or(0.0, |v| v[co] as f64);
                        let mut mag = acc.abs();
                        for ci in 0..s.c_in {
                            for ki in 0..s.kh {
                                for kj in 0..s.kw {
                                    let hi = (ho * s.sh + ki * s.dh) as i64 - s.ph as i64;
                                    let wi = (wo * s.sw + kj * s.dw) as i64 - s.pw as i64;
                                    if hi < 0 || wi < 0 || hi >= s.h as i64 || wi >= s.w_in as i64 {
                                        continue;
                                    }
                                    let xv =
                                        self.x[((b * s.c_in + ci) * s.h + hi as usize) * s.w_in + wi as usize] as f64;
                                    let wv = self.w[((co * s.c_in + ci) * s.kh + ki) * s.kw + kj] as f64;
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

    /// Every kernel, serial and split, bit-identical to the scalar
    /// reference (all lanes) and to the NCHW path (real channels); the
    /// identity's result within the f64 bound.
    fn check(&self, what: &str) {
        let s = &self.s;
        let hw = s.out_plane();
        let reference = self.run_blocked(&SCALAR, false, 0.0);
        // `conv2d_path` may pick the depthwise path for `c_in == 1`: not a
        // product path.
        let path = match conv2d_path(s) {
            ConvPath::Depthwise => ConvPath::Im2colGemm,
            p => p,
        };
        let nchw = self.run_nchw(path);
        assert_eq!(bits(&from_blocked(&reference, s.n, s.c_out, hw)), bits(&nchw), "{what}: scalar vs NCHW {path:?}");
        let kernels = supported_variants();
        for par in [false, true] {
            let blocked = |k: Kernel| self.run_blocked(&k, par, 0.0);
            check_variants(&reference, &kernels, identical, &format!("{what}: par {par} vs scalar"), blocked);
            // An NCHW input (a network's image) and 16-bit filters are one
            // group's.
            if s.groups == 1 {
                let nchw = |k: Kernel| self.run_input(&k, Input::Nchw, par, 0.0);
                let what = format!("{what}: par {par} NCHW input vs scalar");
                check_variants(&reference, &kernels, identical, &what, nchw);
            }
        }
        if s.groups == 1 {
            self.check_half(what);
        }
        if matches!(self.act, ActKind::Identity) && self.residual.is_none() && s.groups == 1 {
            let (want, tol) = self.naive();
            let got = from_blocked(&reference, s.n, s.c_out, hw);
            for (i, (&g, (&w, &t))) in got.iter().zip(want.iter().zip(&tol)).enumerate() {
                assert!((g as f64 - w).abs() <= t, "{what} at {i}: got {g} want {w} tol {t:e}");
            }
        }
    }
}

impl Case {
    /// With the weights rounded to f16 and to bf16: every kernel, serial
    /// and split, from both input layouts, with the filter stored in that
    /// type, bit-identical to the same kernel reading it widened to f32.
    fn check_half(&self, what: &str) {
        let s = &self.s;
        if !rlx_core::blocked::half_filter_fits(s.c_in, s.kh, s.kw) {
            return;
        }
        for bf16 in [false, true] {
            let rounded = self.rounded(bf16);
            for kernel in supported_kernels() {
                for (par, input) in [(false, Input::Blocked), (true, Input::Blocked), (true, Input::Nchw)] {
                    let want = rounded.run_stored(&kernel, input, par, 0.0, None);
                    let got = rounded.run_stored(&kernel, input, par, 0.0, Some(bf16));
                    assert_eq!(bits(&got), bits(&want), "{what}: {} par {par} {input:?} bf16 {bf16}", kernel.name);
                }
            }
        }
    }
}

const ACTS: [ActKind; 4] = [ActKind::Identity, ActKind::Relu, ActKind::Gelu, ActKind::Clip { min: 0.0, max: 6.0 }];

#[test]
fn residual_is_added_before_the_activation() {
    // 33 input channels of 3x3 windows take several passes: the residual
    // waits for the last. A 1x1 plane read in place runs as one long row.
    for (i, s) in [
        same3(1, 33, 20, (6, 9)),
        same3(2, 5, 16, (7, 7)),
        shape(1, 16, 40, (4, 30), (1, 1), (1, 1), (0, 0), (0, 0), (1, 1)),
    ]
    .into_iter()
    .enumerate()
    {
        for (j, act) in ACTS.into_iter().enumerate() {
            let case = Case::new(s, j % 2 == 0, act, (40 + i * 4 + j) as u64).with_residual(7 + i as u64);
            case.check(&format!("residual {s:?} {act:?}"));
        }
    }
}

#[test]
fn clamps_in_registers_give_the_activation_kernels_bits() {
    // A residual of signed zeros, infinities, NaN and values on the bounds
    // drives the sums there; the clamp (ReLU, Clip, an inverted Clip) runs
    // in registers and must match the separate activation kernel.
    let specials = [0.0, -0.0, f32::INFINITY, f32::NEG_INFINITY, f32::NAN, 6.0, -6.0, 0.25, -0.5, 1e30];
    let acts = [ActKind::Relu, ActKind::Clip { min: -0.5, max: 0.25 }, ActKind::Clip { min: 2.0, max: -2.0 }];
    for (i, s) in [same3(1, 17, 20, (5, 7)), shape(1, 16, 40, (4, 30), (1, 1), (1, 1), (0, 0), (0, 0), (1, 1))]
        .into_iter()
        .enumerate()
    {
        for (j, act) in acts.into_iter().enumerate() {
            let mut case = Case::new(s, j % 2 == 0, act, (70 + i * 3 + j) as u64).with_residual(9);
            for (k, r) in case.residual.as_mut().unwrap().iter_mut().enumerate() {
                *r = specials[k % specials.len()];
            }
            case.check(&format!("clamp {s:?} {act:?}"));
        }
    }
}

#[test]
fn channel_counts_and_block_tails() {
    for (i, c_in) in [1, 3, 16, 17, 33].into_iter().enumerate() {
        for (j, c_out) in [1, 6, 8, 9, 16, 20, 48].into_iter().enumerate() {
            let act = ACTS[(i + j) % ACTS.len()];
            let case = Case::new(same3(1, c_in, c_out, (5, 7)), (i + j) % 2 == 0, act, (i * 7 + j) as u64);
            case.check(&format!("c_in {c_in} c_out {c_out} {act:?}"));
        }
    }
}

#[test]
fn row_widths_split_into_tiles() {
    for (i, w) in [1, 5, 7, 13, 31].into_iter().enumerate() {
        for act in ACTS {
            let case = Case::new(same3(1, 17, 20, (3, w)), i % 2 == 1, act, i as u64);
            case.check(&format!("w_out {w} {act:?}"));
        }
    }
}

#[test]
fn window_kinds() {
    let cases = [
        ("1x1 in place", shape(1, 33, 48, (11, 13), (1, 1), (1, 1), (0, 0), (0, 0), (1, 1))),
        ("1x1 padded", shape(1, 17, 20, (5, 7), (1, 1), (1, 1), (1, 2), (0, 1), (1, 1))),
        ("1x1 stride 2", shape(1, 17, 20, (9, 11), (1, 1), (2, 2), (0, 0), (0, 0), (1, 1))),
        ("1x1 cropped", shape(1, 16, 16, (9, 11), (1, 1), (1, 1), (0, 0), (0, 0), (1, 1))),
        ("3x1 flat", shape(1, 17, 20, (9, 11), (3, 1), (1, 1), (1, 0), (1, 0), (1, 1))),
        // Filters past `PASS_BYTES` per group: three passes over `c_in`.
        ("7x7 passes", shape(1, 40, 20, (9, 9), (7, 7), (1, 1), (3, 3), (3, 3), (1, 1))),
        ("5x5", shape(1, 17, 20, (9, 13), (5, 5), (1, 1), (2, 2), (2, 2), (1, 1))),
        // At most 8 output channels: the half-block kernel.
        ("LeNet conv1", shape(1, 1, 6, (32, 32), (5, 5), (1, 1), (0, 0), (0, 0), (1, 1))),
        ("half 7x7 passes", shape(1, 40, 8, (9, 9), (7, 7), (1, 1), (3, 3), (3, 3), (1, 1))),
        ("half 1x1 flat", shape(1, 33, 5, (11, 13), (1, 1), (1, 1), (0, 0), (0, 0), (1, 1))),
        ("half 3x3/2", shape(1, 3, 7, (13, 15), (3, 3), (2, 2), (1, 1), (1, 1), (1, 1))),
        ("stem 7x7/2 p3", shape(1, 3, 64, (23, 21), (7, 7), (2, 2), (3, 3), (3, 3), (1, 1))),
        ("3x3/2", shape(1, 17, 48, (13, 15), (3, 3), (2, 2), (1, 1), (1, 1), (1, 1))),
        ("3x3 dilation 2", shape(1, 17, 20, (11, 13), (3, 3), (1, 1), (2, 2), (2, 2), (2, 2))),
        ("trailing only", shape(1, 16, 20, (7, 9), (3, 3), (1, 1), (0, 0), (2, 1), (1, 1))),
        ("leading only", shape(1, 16, 20, (7, 9), (3, 3), (1, 2), (2, 1), (0, 0), (1, 1))),
        ("2x5/(2,3) dil (3,1)", shape(1, 20, 33, (12, 17), (2, 5), (2, 3), (1, 2), (0, 3), (3, 1))),
        ("two images", same3(2, 17, 20, (6, 7))),
        ("two images 1x1", shape(2, 33, 20, (7, 7), (1, 1), (1, 1), (0, 0), (0, 0), (1, 1))),
        ("big pad", shape(1, 3, 16, (2, 3), (3, 3), (1, 1), (4, 5), (4, 5), (1, 1))),
    ];
    for (i, (name, s)) in cases.into_iter().enumerate() {
        for (a, act) in [ActKind::Identity, ActKind::Relu].into_iter().enumerate() {
            Case::new(s, (i + a) % 2 == 0, act, 100 + i as u64).check(&format!("{name} {act:?}"));
        }
    }
}

#[test]
fn unit_step_half_tiles_pair_pixels() {
    // At most 8 output channels of an NCHW input at stride 1: two pixels per
    // vector. Every tile width up to 28 and past it (odd ones end in a
    // lone pixel), 1 to 3 input channels, padding, dilation, input channel
    // passes, a residual, two images.
    for (i, w_out) in [1, 2, 3, 4, 5, 8, 13, 16, 27, 28, 29, 30, 57].into_iter().enumerate() {
        let s = shape(1 + i % 2, 1 + i % 3, 1 + i % 8, (6, w_out + 4), (5, 5), (1, 1), (0, 0), (0, 0), (1, 1));
        for act in ACTS {
            Case::new(s, i % 2 == 0, act, 200 + i as u64).check(&format!("w_out {w_out} {act:?}"));
        }
    }
    let cases = [
        ("padded", shape(1, 3, 6, (9, 11), (3, 3), (1, 1), (1, 2), (2, 1), (1, 1))),
        ("dilated", shape(1, 2, 8, (9, 20), (3, 3), (2, 1), (0, 0), (0, 0), (2, 3))),
        ("passes", shape(1, 40, 8, (9, 9), (7, 7), (1, 1), (3, 3), (3, 3), (1, 1))),
    ];
    for (i, (name, s)) in cases.into_iter().enumerate() {
        Case::new(s, i % 2 == 0, ActKind::Relu, 220 + i as u64).check(name);
        Case::new(s, true, ActKind::Clip { min: 0.0, max: 6.0 }, 230 + i as u64).with_residual(5).check(name);
    }
}

#[test]
fn empty_outputs_write_nothing() {
    let base = same3(1, 17, 20, (5, 7));
    for s in [Conv2dShape { h_out: 0, ..base }, Conv2dShape { w_out: 0, ..base }, Conv2dShape { n: 0, ..base }] {
        let w = vec![1.0f32; rlx_core::blocked::conv_filter_len(s.c_out, s.c_in, s.kh, s.kw).unwrap()];
        let x = vec![1.0f32; 2 * 5 * 7 * B];
        let mut out = [7.0f32; 4];
        for kernel in supported_kernels() {
            // SAFETY: an empty output reads and writes nothing; the
            // buffers are valid anyway.
            unsafe {
                run(
                    &kernel,
                    Input::Blocked,
                    x.as_ptr(),
                    Filter::F32(w.as_ptr()),
                    std::ptr::null(),
                    std::ptr::null(),
                    out.as_mut_ptr(),
                    &s,
                    ActKind::Relu,
                    std::ptr::null_mut(),
                    true,
                )
            };
        }
        assert_eq!(out, [7.0; 4]);
    }
}

#[test]
fn padded_input_lanes_are_never_read() {
    for (i, s) in [
        same3(1, 17, 20, (5, 7)),
        same3(2, 3, 16, (4, 13)),
        shape(1, 33, 48, (11, 13), (1, 1), (1, 1), (0, 0), (0, 0), (1, 1)),
    ]
    .into_iter()
    .enumerate()
    {
        let case = Case::new(s, true, ActKind::Identity, 200 + i as u64);
        let clean = case.run_blocked(&SCALAR, false, 0.0);
        for par in [false, true] {
            check_variants(&clean, &supported_variants(), identical, &format!("par {par} case {i}"), |k| {
                case.run_blocked(&k, par, f32::NAN)
            });
        }
    }
}

/// GF/s of the blocked kernel and of the NCHW path `conv2d_path` picks,
/// one thread (`cargo test --release -p rlx-runtime blocked_conv_timing
/// -- --ignored --nocapture`); prints only. Interleaved, so a busy
/// machine slows both alike.
#[test]
#[ignore]
fn blocked_conv_timing() {
    let pw = |c_in, c_out, hw| shape(1, c_in, c_out, (hw, hw), (1, 1), (1, 1), (0, 0), (0, 0), (1, 1));
    let shapes = [
        ("3x3 64 56", same3(1, 64, 64, (56, 56))),
        ("3x3 128 28", same3(1, 128, 128, (28, 28))),
        ("3x3 256 14", same3(1, 256, 256, (14, 14))),
        ("3x3 512 7", same3(1, 512, 512, (7, 7))),
        ("7x7/2 3->64 224", shape(1, 3, 64, (224, 224), (7, 7), (2, 2), (3, 3), (3, 3), (1, 1))),
        ("3x3/2 64->128 56", shape(1, 64, 128, (56, 56), (3, 3), (2, 2), (1, 1), (1, 1), (1, 1))),
        ("1x1 16->96 112", pw(16, 96, 112)),
        ("1x1 32->16 112", pw(32, 16, 112)),
        ("1x1 96->24 56", pw(96, 24, 56)),
        ("1x1 24->144 56", pw(24, 144, 56)),
        ("1x1 144->24 56", pw(144, 24, 56)),
        ("1x1 672->112 14", pw(672, 112, 14)),
        ("1x1 1152->320 7", pw(1152, 320, 7)),
        ("1x1 320->1280 7", pw(320, 1280, 7)),
    ];
    let k = kernel();
    println!("blocked kernel: {}", k.name);
    for (name, s) in shapes {
        let case = Case::new(s, true, ActKind::Identity, 7);
        let flops = 2.0 * (s.c_out * s.out_plane() * s.patch_len()) as f64;
        let path = conv2d_path(&s);
        // Buffers made once, outside the timing.
        let xb = to_blocked(&case.x, s.n, s.c_in, s.h * s.w_in, 0.0);
        let wb = pack_conv_filter(&case.w, s.c_out, s.c_in, s.kh, s.kw);
        let bb = pad_channels(case.bias.as_ref().unwrap());
        let mut ob = vec![0.0f32; s.n * channel_blocks(s.c_out) * s.out_plane() * B];
        let mut sb = vec![0.0f32; conv_blocked_scratch_bytes(&s) / 4 + 1];
        let mut on = vec![0.0f32; s.n * s.c_out * s.out_plane()];
        let mut sn = vec![0.0f32; conv2d_scratch_bytes(&s, path) / 4 + 1];
        let bias = case.bias.as_ref().unwrap();
        // The same filter in f16 bits, read by `BlockedConv2DHalf`'s path.
        let wh: Vec<u16> = wb.iter().map(|&v| half::f16::from_f32(v).to_bits()).collect();
        let mut best = [f64::MAX; 3];
        for _ in 0..25 {
            let t = std::time::Instant::now();
            for _ in 0..3 {
                // SAFETY: buffers sized for the shape.
                unsafe {
                    run(
                        k,
                        Input::Blocked,
                        xb.as_ptr(),
                        Filter::F32(wb.as_ptr()),
                        bb.as_ptr(),
                        std::ptr::null(),
                        ob.as_mut_ptr(),
                        &s,
                        ActKind::Identity,
                        sb.as_mut_ptr(),
                        false,
                    )
                };
                std::hint::black_box(&ob);
            }
            best[0] = best[0].min(t.elapsed().as_secs_f64() / 3.0);
            let t = std::time::Instant::now();
            for _ in 0..3 {
                // SAFETY: buffers sized for the shape and path.
                unsafe {
                    conv2d_f32(
                        case.x.as_ptr(),
                        case.w.as_ptr(),
                        bias.as_ptr(),
                        on.as_mut_ptr(),
                        &s,
                        path,
                        ActKind::Identity,
                        sn.as_mut_ptr(),
                        false,
                    )
                };
                std::hint::black_box(&on);
            }
            best[1] = best[1].min(t.elapsed().as_secs_f64() / 3.0);
            let t = std::time::Instant::now();
            for _ in 0..3 {
                // SAFETY: as the first run, the filter in 16 bits.
                unsafe {
                    run(
                        k,
                        Input::Blocked,
                        xb.as_ptr(),
                        Filter::Half(wh.as_ptr(), widen_f16),
                        bb.as_ptr(),
                        std::ptr::null(),
                        ob.as_mut_ptr(),
                        &s,
                        ActKind::Identity,
                        sb.as_mut_ptr(),
                        false,
                    )
                };
                std::hint::black_box(&ob);
            }
            best[2] = best[2].min(t.elapsed().as_secs_f64() / 3.0);
        }
        println!(
            "{name:20} blocked {:6.1} GF/s   f16 filter {:6.1} GF/s   NCHW {:?} {:6.1} GF/s",
            flops / best[0] / 1e9,
            flops / best[2] / 1e9,
            path,
            flops / best[1] / 1e9
        );
    }
}

/// Groups of whole blocks (RegNet's 16-channel groups, wider ones, a
/// residual, stride 2, several images): each group runs as a one-group
/// convolution over its own blocks, bit-identical to the NCHW grouped
/// product path, every kernel, serial and split.
#[test]
fn groups_of_whole_blocks_match_the_nchw_grouped_convolution() {
    let grouped = |s: Conv2dShape, groups: usize| Conv2dShape { groups, ..s };
    let cases = [
        ("regnet 3x3 g2", grouped(same3(1, 32, 32, (9, 7)), 2)),
        ("regnet 3x3 g4 stride 2", grouped(shape(1, 64, 64, (10, 9), (3, 3), (2, 2), (1, 1), (1, 1), (1, 1)), 4)),
        ("wide groups 32 -> 48, two images", grouped(same3(2, 64, 96, (6, 5)), 2)),
        ("pointwise g3", grouped(shape(1, 48, 48, (5, 5), (1, 1), (1, 1), (0, 0), (0, 0), (1, 1)), 3)),
        ("dilated g2", grouped(shape(1, 32, 32, (8, 8), (3, 3), (1, 1), (2, 2), (2, 2), (2, 2)), 2)),
    ];
    for (i, (what, s)) in cases.into_iter().enumerate() {
        assert!(blocked_grouped(&s), "{what}");
        Case::new(s, true, ActKind::Relu, 40 + i as u64).check(what);
        Case::new(s, false, ActKind::Identity, 50 + i as u64).check(&format!("{what}, no bias"));
        Case::new(s, true, ActKind::Identity, 60 + i as u64)
            .with_residual(70 + i as u64)
            .check(&format!("{what}, residual"));
    }
}
