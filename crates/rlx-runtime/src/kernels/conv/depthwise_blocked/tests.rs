//! Every variant against the NCHW depthwise path (`conv2d_f32` on
//! `ConvPath::Depthwise`), bit for bit per real lane, over awkward shapes;
//! padded input lanes hold NaN and must not reach a real lane.

use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};
use rlx_core::blocked::{channel_blocks, conv_blocked_scratch_bytes, pack_depthwise_filter, pad_channels};

use super::super::{conv2d_f32, ConvPath};
use super::*;
use crate::kernels::conv::test_util::{from_blocked, to_blocked};
use crate::kernels::test_support::{check_variants, same};

/// A depthwise shape from input size, kernel, stride, leading and trailing
/// padding and dilation; `None` when the output would be empty by underflow.
fn shape(
    n: usize,
    c: usize,
    (h, w): (usize, usize),
    k: usize,
    st: usize,
    (p, pe): (usize, usize),
    d: usize,
) -> Conv2dShape {
    let span = d * (k - 1) + 1;
    let out = |len: usize| if len + p + pe >= span { (len + p + pe - span) / st + 1 } else { 0 };
    Conv2dShape {
        n,
        c_in: c,
        h,
        w_in: w,
        c_out: c,
        h_out: out(h),
        w_out: out(w),
        kh: k,
        kw: k,
        sh: st,
        sw: st,
        ph: p,
        pw: p,
        dh: d,
        dw: d,
        groups: c,
    }
}

struct Case {
    s: Conv2dShape,
    x: Vec<f32>,
    w: Vec<f32>,
    bias: Option<Vec<f32>>,
    act: ActKind,
}

impl Case {
    fn new(s: Conv2dShape, with_bias: bool, act: ActKind, seed: u64) -> Case {
        let mut rng = StdRng::seed_from_u64(seed);
        let mut r = |n: usize| (0..n).map(|_| rng.gen_range(-2.0f32..2.0)).collect::<Vec<_>>();
        let x = r(s.n * s.c_in * s.h * s.w_in);
        let w = r(s.c_out * s.kh * s.kw);
        let bias = with_bias.then(|| r(s.c_out));
        Case { s, x, w, bias, act }
    }

    /// The NCHW path.
    fn reference(&self) -> Vec<f32> {
        let s = &self.s;
        let mut out = vec![f32::NAN; s.n * s.c_out * s.h_out * s.w_out];
        let bias = self.bias.as_ref().map_or(std::ptr::null(), |b| b.as_ptr());
        // SAFETY: buffers sized for the shape; the depthwise path uses no
        // scratch.
        unsafe {
            conv2d_f32(
                self.x.as_ptr(),
                self.w.as_ptr(),
                bias,
                out.as_mut_ptr(),
                s,
                ConvPath::Depthwise,
                self.act,
                std::ptr::null_mut(),
                false,
            )
        };
        out
    }

    /// The blocked kernel on `kernel`, back in NCHW.
    fn blocked(&self, kernel: Kernel, par: bool) -> Vec<f32> {
        let s = &self.s;
        let cb = channel_blocks(s.c_in);
        let x = to_blocked(&self.x, s.n, s.c_in, s.h * s.w_in, f32::NAN);
        let w = pack_depthwise_filter(&self.w, s.c_in, s.kh, s.kw);
        let bias = self.bias.as_deref().map(pad_channels);
        let mut out = vec![f32::NAN; s.n * cb * s.h_out * s.w_out * L];
        let mut scratch = vec![f32::NAN; conv_blocked_scratch_bytes(s) / 4];
        let scratch_ptr = if scratch.is_empty() { std::ptr::null_mut() } else { scratch.as_mut_ptr() };
        // SAFETY: buffers sized for the shape.
        unsafe {
            depthwise_blocked_with(
                x.as_ptr(),
                w.as_ptr(),
                bias.as_ref().map_or(std::ptr::null(), |b| b.as_ptr()),
                out.as_mut_ptr(),
                s,
                self.act,
                scratch_ptr,
                par,
                kernel,
            )
        };
        from_blocked(&out, s.n, s.c_out, s.h_out * s.w_out)
    }
}

fn check(case: &Case, what: &str) {
    let want = case.reference();
    for par in [false, true] {
        check_variants(&want, &KERNELS.supported(), same, &format!("{what} par {par}"), |k| case.blocked(k, par));
    }
}

const ACTS: [ActKind; 4] = [ActKind::Identity, ActKind::Relu, ActKind::Clip { min: 0.0, max: 6.0 }, ActKind::Gelu];

#[test]
fn awkward_channels_widths_and_windows() {
    let mut seed = 0;
    for c in [1, 3, 16, 17, 40, 33] {
        for w in [1, 5, 7, 13, 31] {
            for (k, st, d) in [(3, 1, 1), (3, 2, 1), (5, 1, 1), (5, 2, 1), (7, 1, 1), (3, 1, 2), (3, 2, 2)] {
                seed += 1;
                let p = (seed as usize) % 3;
                let pe = (seed as usize / 3) % 3;
                let s = shape(1, c, (6, w), k, st, (p, pe), d);
                let act = ACTS[seed as usize % 4];
                let case = Case::new(s, seed % 2 == 0, act, seed);
                check(&case, &format!("c {c} w {w} k {k} s {st} d {d} p {p}/{pe} {act:?}"));
            }
        }
    }
}

#[test]
fn clamps_in_registers_give_the_activation_kernels_bits() {
    // Inputs of signed zeros, infinities, NaN and large values drive the
    // sums onto and past the bounds; ReLU and Clip (an inverted one too)
    // run in registers and must match the activation kernel.
    let specials = [0.0, -0.0, f32::INFINITY, f32::NEG_INFINITY, f32::NAN, 6.0, -6.0, 0.25, 1e30];
    let acts = [ActKind::Relu, ActKind::Clip { min: -0.5, max: 0.25 }, ActKind::Clip { min: 2.0, max: -2.0 }];
    for (i, act) in acts.into_iter().enumerate() {
        // Both microkernels: 3x3 stride 1 slides, dilation 2 does not.
        for (k, st, d) in [(3, 1, 1), (3, 1, 2), (5, 2, 1)] {
            let s = shape(1, 20, (7, 11), k, st, (1, 1), d);
            let mut case = Case::new(s, i % 2 == 0, act, 50 + i as u64);
            for (j, x) in case.x.iter_mut().enumerate().filter(|(j, _)| j % 5 == 0) {
                *x = specials[j / 5 % specials.len()];
            }
            check(&case, &format!("{act:?} k {k} s {st} d {d}"));
        }
    }
}

#[test]
fn images_bias_activations_and_in_place_reads() {
    for (i, act) in ACTS.into_iter().enumerate() {
        for bias in [false, true] {
            // Padded, then unpadded (read in place, with a cropped trailing edge).
            for (p, pe) in [(1, 1), (0, 0), (2, 0), (0, 2)] {
                let s = shape(2, 40, (9, 13), 3, 1 + i % 2, (p, pe), 1);
                check(&Case::new(s, bias, act, 7 + i as u64), &format!("{act:?} bias {bias} p {p}/{pe}"));
            }
        }
    }
}

#[test]
fn model_shapes_and_long_rows() {
    for (c, hw, k, st) in [(32, 40, 3, 1), (96, 41, 3, 2), (144, 14, 5, 2), (48, 7, 5, 1), (33, 70, 7, 1)] {
        let p = k / 2;
        let s = shape(1, c, (hw, hw), k, st, (p, p), 1);
        check(&Case::new(s, true, ActKind::Relu, c as u64), &format!("c {c} hw {hw} k {k} s {st}"));
    }
}

#[test]
fn empty_outputs_write_nothing() {
    for s in [shape(1, 17, (2, 2), 5, 1, (0, 0), 1), shape(0, 17, (5, 5), 3, 1, (1, 1), 1)] {
        let case = Case::new(s, true, ActKind::Relu, 3);
        for k in supported_kernels() {
            assert!(case.blocked(k, false).is_empty() || s.n == 0);
        }
    }
    // Zero rows but some columns: the output buffer is untouched.
    let s = Conv2dShape { h_out: 0, ..shape(1, 17, (5, 5), 3, 1, (1, 1), 1) };
    let mut out = [7.0f32; 4];
    // SAFETY: nothing is read or written for an empty output.
    unsafe {
        depthwise_blocked_f32(
            [0.0f32; 4].as_ptr(),
            [0.0f32; 4].as_ptr(),
            std::ptr::null(),
            out.as_mut_ptr(),
            &s,
            ActKind::Identity,
            std::ptr::null_mut(),
            true,
        )
    };
    assert_eq!(out, [7.0; 4]);
}

#[test]
fn non_finite_weights_and_inputs() {
    let s = shape(1, 20, (6, 6), 3, 1, (1, 1), 1);
    let mut case = Case::new(s, true, ActKind::Identity, 11);
    case.w[0] = f32::INFINITY;
    case.w[9 + 4] = f32::NAN;
    case.x[6 * 6 * 5 + 7] = f32::NEG_INFINITY;
    check(&case, "non-finite");
}

/// MobileNetV2 / EfficientNet-lite depthwise shapes, blocked vs NCHW,
/// single thread (`cargo test --release -p rlx-runtime
/// depthwise_blocked_timing -- --ignored --nocapture`); prints only.
/// `DW_UNPADDED=1` times the same outputs from an input already padded
/// (read in place: no copy).
#[test]
#[ignore]
fn depthwise_blocked_timing() {
    let best_of = |f: &mut dyn FnMut()| {
        let mut best = f64::MAX;
        for _ in 0..30 {
            let t = std::time::Instant::now();
            f();
            best = best.min(t.elapsed().as_secs_f64());
        }
        best * 1e6
    };
    println!("{:<22} {:>10} {:>10} {:>6}", "shape", "nchw us", "blocked us", "x");
    for (c, hw, k, st) in [
        (32, 112, 3, 1),
        (96, 112, 3, 2),
        (144, 56, 3, 1),
        (144, 56, 5, 2),
        (240, 28, 5, 1),
        (480, 14, 3, 1),
        (672, 14, 5, 1),
        (672, 14, 5, 2),
        (1152, 7, 3, 1),
    ] {
        let p = k / 2;
        let s = shape(1, c, (hw, hw), k, st, (p, p), 1);
        let s = if std::env::var_os("DW_UNPADDED").is_some() {
            shape(1, c, (hw + 2 * p, hw + 2 * p), k, st, (0, 0), 1)
        } else {
            s
        };
        let hw = s.h;
        let case = Case::new(s, true, ActKind::Identity, 1);
        let cb = channel_blocks(c);
        let x = to_blocked(&case.x, 1, c, hw * hw, 0.0);
        let w = pack_depthwise_filter(&case.w, c, k, k);
        let bias = pad_channels(case.bias.as_ref().unwrap());
        let mut out = vec![0.0f32; cb * s.h_out * s.w_out * L];
        let mut scratch = vec![0.0f32; conv_blocked_scratch_bytes(&s) / 4];
        let mut nchw = vec![0.0f32; c * s.h_out * s.w_out];
        let t_nchw = best_of(&mut || {
            // SAFETY: buffers sized for the shape.
            unsafe {
                conv2d_f32(
                    case.x.as_ptr(),
                    case.w.as_ptr(),
                    case.bias.as_ref().unwrap().as_ptr(),
                    nchw.as_mut_ptr(),
                    &s,
                    ConvPath::Depthwise,
                    ActKind::Identity,
                    std::ptr::null_mut(),
                    false,
                )
            }
        });
        let t_blocked = best_of(&mut || {
            // SAFETY: buffers sized for the shape.
            unsafe {
                depthwise_blocked_f32(
                    x.as_ptr(),
                    w.as_ptr(),
                    bias.as_ptr(),
                    out.as_mut_ptr(),
                    &s,
                    ActKind::Identity,
                    scratch.as_mut_ptr(),
                    false,
                )
            }
        });
        let name = format!("{k}x{k} s{st} {c}ch {hw}->{}", s.h_out);
        println!("{name:<22} {t_nchw:>10.1} {t_blocked:>10.1} {:>6.2}", t_nchw / t_blocked);
    }
}
