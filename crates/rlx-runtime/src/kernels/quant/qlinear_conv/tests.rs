//! `qlinear_conv2d` and every tile body this CPU runs (the list of
//! `quant/shared.rs`; serial and split) against `qlinear_conv2d_reference`,
//! bit for bit, over awkward shapes and every requantization form; the
//! scratch is filled with garbage before each call, the packing's padded
//! slots with garbage where the layout says they cannot matter, and the
//! bytes around the output and past the scratch are checked untouched.
//! Rounding, saturation and `x_pad` are also checked against values
//! computed here by hand, independently of the reference.

use rlx_core::qconv::{pack_qconv_filter, qconv_filter_len, qconv_scratch_bytes, QCONV_IN_QUAD, QCONV_OUT_BLOCK};

use super::qlinear_conv2d_body;
use crate::kernels::conv::Conv2dShape;
use crate::kernels::quant::shared::{bytes, Body, BODIES};
use crate::kernels::quant::*;
use crate::kernels::test_support::check_variants;

fn signed(v: &[u8]) -> Vec<i8> {
    v.iter().map(|&b| b as i8).collect()
}

/// A one-group shape from `[n, c_in, h, w_in, c_out, kh, kw, sh, sw, ph,
/// pw, dh, dw]`, the output sizes by ONNX's rule with trailing padding
/// `trail` (per axis).
fn shape(d: [usize; 13], trail: [usize; 2]) -> Conv2dShape {
    let mut with_groups = [1; 14];
    with_groups[..13].copy_from_slice(&d);
    crate::kernels::quant::int_conv::tests::shape(with_groups, trail)
}

/// The requantization operands of one call.
#[derive(Clone, Debug)]
struct Requant {
    bias: Option<Vec<i32>>,
    /// One element or one per output channel (`scale_len`).
    scale: Vec<f32>,
    zero: Option<u8>,
    x_pad: u8,
}

/// Bytes kept around the output and after the scratch, which no call may
/// touch.
const GUARD: usize = 64;
const GUARD_BYTE: u8 = 0xa7;

/// The reference, then the kernel serial and split (each on a scratch of
/// fresh garbage and an output of a different fill, so a byte it does not
/// write shows); returns the reference's output.
fn check(s: &Conv2dShape, x: &[u8], packed: &[i8], q: &Requant, what: &str) -> Vec<u8> {
    assert_eq!(x.len(), s.n * s.c_in * s.h * s.w_in);
    assert_eq!(Some(packed.len()), qconv_filter_len(s.c_out, s.c_in_g(), s.kh, s.kw));
    assert!(q.scale.len() == 1 || q.scale.len() == s.c_out);
    let len = s.n * s.c_out * s.h_out * s.w_out;
    let bias_ptr = q.bias.as_ref().map_or(std::ptr::null(), |b| b.as_ptr());
    let zero_ptr = q.zero.as_ref().map_or(std::ptr::null(), |z| z as *const u8);
    let mut want = vec![0u8; len];
    // SAFETY: the vectors hold exactly the extents the shape names.
    unsafe {
        qlinear_conv2d_reference(
            x.as_ptr(),
            packed.as_ptr(),
            bias_ptr,
            q.scale.as_ptr(),
            zero_ptr,
            want.as_mut_ptr(),
            s,
            usize::from(q.x_pad),
            q.scale.len(),
        );
    }
    let scratch_len = qconv_scratch_bytes(s);
    // The dispatching entry (AVX-512 VNNI here when the CPU has it) and
    // every body the CPU runs, each serial and split, in every layout:
    // channels last input, output or both (compared after conversion).
    let runs: Vec<(&'static str, Option<Body>)> =
        std::iter::once(("the entry", None)).chain(BODIES.supported().into_iter().map(|(n, b)| (n, Some(b)))).collect();
    let layouts = [(false, false), (true, false), (false, true), (true, true)];
    let pixels = s.h_out * s.w_out;
    let x_channels_last = transpose_images(x, s.n, s.c_in, s.h * s.w_in);
    // Each call's scratch garbage is different.
    let calls = std::cell::Cell::new(0u32);
    for par in [false, true] {
        for (x_nhwc, out_nhwc) in layouts {
            // An output element `at` is image `at / (c_out * pixels)`,
            // channel `at / pixels % c_out`, pixel `at % pixels`.
            let context = format!("{what}, par {par}, x_nhwc {x_nhwc}, out_nhwc {out_nhwc}, {s:?}, {q:?}");
            check_variants(
                &want,
                &runs,
                |g, w| g == w,
                &context,
                |body| {
                    calls.set(calls.get() + 1);
                    let mut scratch = bytes(scratch_len, 1000 + calls.get() + len as u32);
                    scratch.extend_from_slice(&[GUARD_BYTE; GUARD]);
                    let mut out = vec![GUARD_BYTE; GUARD];
                    out.extend(std::iter::repeat_n(if par { 0x3c } else { 0xc3 }, len));
                    out.extend_from_slice(&[GUARD_BYTE; GUARD]);
                    // SAFETY: as above; the scratch holds `qconv_scratch_bytes`
                    // bytes and the output pointer is `len` bytes inside its
                    // guards; the body runs on this CPU.
                    unsafe {
                        let x = if x_nhwc { x_channels_last.as_ptr() } else { x.as_ptr() };
                        let (scratch, w, scale) = (scratch.as_mut_ptr(), packed.as_ptr(), q.scale.as_ptr());
                        let (out, x_pad, scale_len) =
                            (out.as_mut_ptr().add(GUARD), usize::from(q.x_pad), q.scale.len());
                        match body {
                            None => qlinear_conv2d(
                                scratch, x, w, bias_ptr, scale, zero_ptr, out, s, x_pad, scale_len, x_nhwc, out_nhwc,
                                par,
                            ),
                            Some(body) => qlinear_conv2d_body(
                                body, scratch, x, w, bias_ptr, scale, zero_ptr, out, s, x_pad, scale_len, x_nhwc,
                                out_nhwc, par,
                            ),
                        }
                    }
                    assert!(
                        out[..GUARD].iter().chain(&out[GUARD + len..]).all(|&b| b == GUARD_BYTE),
                        "{body:?} wrote outside out: {context}"
                    );
                    assert!(
                        scratch[scratch_len..].iter().all(|&b| b == GUARD_BYTE),
                        "{body:?} wrote past the scratch: {context}"
                    );
                    let written = &out[GUARD..GUARD + len];
                    if out_nhwc {
                        transpose_images(written, s.n, pixels, s.c_out)
                    } else {
                        written.to_vec()
                    }
                },
            );
        }
    }
    want
}

/// Each of `n` images `[rows, cols]` transposed to `[cols, rows]`: NCHW
/// to channels last with `(c, pixels)`, back with `(pixels, c)`.
fn transpose_images(v: &[u8], n: usize, rows: usize, cols: usize) -> Vec<u8> {
    assert_eq!(v.len(), n * rows * cols);
    let mut t = vec![0; v.len()];
    for (i, &b) in v.iter().enumerate() {
        let (img, r, c) = (i / (rows * cols), i / cols % rows, i % cols);
        t[(img * cols + c) * rows + r] = b;
    }
    t
}

/// Every packed slot that holds no weight (an output lane past `c_out` or
/// an input channel past `c_in`), as indices into the packed filter.
fn padded_slots(s: &Conv2dShape) -> Vec<usize> {
    let (blocks, taps, quads) = (s.c_out.div_ceil(QCONV_OUT_BLOCK), s.kh * s.kw, s.c_in_g().div_ceil(QCONV_IN_QUAD));
    let mut slots = Vec::new();
    for block in 0..blocks {
        for tap in 0..taps {
            for q in 0..quads {
                for lane in 0..QCONV_OUT_BLOCK {
                    for slot in 0..QCONV_IN_QUAD {
                        if block * QCONV_OUT_BLOCK + lane >= s.c_out || q * QCONV_IN_QUAD + slot >= s.c_in_g() {
                            let at =
                                (((block * taps + tap) * quads + q) * QCONV_OUT_BLOCK + lane) * QCONV_IN_QUAD + slot;
                            slots.push(at);
                        }
                    }
                }
            }
        }
    }
    slots
}

/// A scale that spreads the sums of a window of `patch` random products
/// over a few dozen steps.
fn spread(patch: usize) -> f32 {
    30.0 / (9_400.0 * (patch.max(1) as f32).sqrt())
}

/// The requantization forms one shape runs with: bias or none, one scale
/// or one per channel (negative, saturating, zero, ties), zero point or
/// none, `x_pad` 0, 128 and 255.
fn forms(s: &Conv2dShape, seed: u32) -> Vec<Requant> {
    let base = spread(s.c_in * s.kh * s.kw);
    let bias: Vec<i32> = bytes(4 * s.c_out, seed)
        .chunks_exact(4)
        .enumerate()
        .map(|(c, b)| {
            let v = i32::from_le_bytes(b.try_into().unwrap()) >> 16;
            // Channel 1 wraps in i32 whenever its sum is positive.
            if c == 1 {
                i32::MAX - 3
            } else {
                v
            }
        })
        .collect();
    let per_channel: Vec<f32> = (0..s.c_out)
        .map(|c| match c % 7 {
            0 => base,
            1 => -base * 0.7,
            2 => base * 3.0,
            // Saturates at 0 and 255 (and the wrapped channel 1's).
            3 => 1000.0,
            4 => -1000.0,
            5 => 0.0,
            _ => 0.5,
        })
        .collect();
    vec![
        Requant { bias: Some(bias.clone()), scale: per_channel.clone(), zero: Some(131), x_pad: 0 },
        Requant { bias: None, scale: vec![base], zero: None, x_pad: 128 },
        Requant { bias: Some(bias.clone()), scale: vec![-base * 2.0], zero: Some(255), x_pad: 255 },
        Requant { bias: None, scale: per_channel, zero: Some(0), x_pad: 255 },
        Requant { bias: Some(bias), scale: vec![0.5], zero: Some(17), x_pad: 128 },
    ]
}

/// One shape: random u8 `x` and i8 OIHW weights, every requantization
/// form, and the same with garbage in the packing's padded slots.
fn check_shape(s: &Conv2dShape, seed: u32) {
    let x = bytes(s.n * s.c_in * s.h * s.w_in, seed);
    let w = signed(&bytes(s.c_out * s.c_in_g() * s.kh * s.kw, seed + 1));
    let packed = pack_qconv_filter(&w, s.c_out, s.c_in_g(), s.kh, s.kw);
    // The same filter with every padded slot nonzero: padded input
    // channels meet the plane's zeros, padded output lanes are not stored.
    let slots = padded_slots(s);
    let mut dirty = packed.clone();
    for (&at, g) in slots.iter().zip(bytes(slots.len(), seed + 2)) {
        dirty[at] = if g == 0 { -128 } else { g as i8 };
    }
    assert!(slots.iter().all(|&at| packed[at] == 0), "the packing pads with 0");
    for (i, q) in forms(s, seed + 3).iter().enumerate() {
        let want = check(s, &x, &packed, q, &format!("form {i}"));
        let dirty_want = check(s, &x, &dirty, q, &format!("form {i}, garbage in {} padded slots", slots.len()));
        assert_eq!(want, dirty_want, "the reference reads no padded slot");
    }
}

#[test]
fn matches_the_reference_over_awkward_shapes() {
    let cases: &[([usize; 13], [usize; 2])] = &[
        // n, c_in, h, w, c_out, kh, kw, sh, sw, ph, pw, dh, dw
        // One pixel, one channel each way.
        ([1, 1, 1, 1, 1, 1, 1, 1, 1, 0, 0, 1, 1], [0, 0]),
        // 3x3 pad 1, c_in 3, c_out 17 (one lane in the second block), 99 pixels.
        ([1, 3, 9, 11, 17, 3, 3, 1, 1, 1, 1, 1, 1], [1, 1]),
        // Two images, c_in 5 (two quads, three padded channels), c_out 33, 49 pixels.
        ([2, 5, 7, 7, 33, 3, 3, 1, 1, 1, 1, 1, 1], [1, 1]),
        // A 7x7 stride-2 stem over 3 channels (90 pixels).
        ([1, 3, 20, 18, 16, 7, 7, 2, 2, 3, 3, 1, 1], [3, 3]),
        // 1x1 stride 2 (25 pixels), c_out 20.
        ([1, 8, 9, 9, 20, 1, 1, 2, 2, 0, 0, 1, 1], [0, 0]),
        // 1x1: 15 pixels, then 17 pixels (a full tile and one pixel).
        ([1, 4, 3, 5, 16, 1, 1, 1, 1, 0, 0, 1, 1], [0, 0]),
        ([1, 6, 1, 17, 31, 1, 1, 1, 1, 0, 0, 1, 1], [0, 0]),
        // Strided, asymmetric padding (ph 2, pw 0), dilated rows.
        ([1, 4, 15, 17, 8, 3, 5, 2, 3, 2, 0, 2, 1], [0, 3]),
        // Trailing padding larger than the leading (h_out past what ph implies).
        ([1, 5, 6, 6, 3, 3, 3, 1, 1, 0, 1, 1, 1], [2, 2]),
        // Dilation 2 both ways, padding 2.
        ([1, 3, 8, 8, 5, 3, 3, 1, 1, 2, 2, 2, 2], [2, 2]),
        // Windows larger than the image.
        ([1, 2, 2, 3, 3, 5, 5, 1, 1, 2, 2, 1, 1], [2, 2]),
        ([2, 1, 1, 1, 17, 7, 7, 1, 1, 3, 3, 1, 1], [3, 3]),
        // A border of outputs that read padding only.
        ([1, 3, 2, 2, 4, 1, 1, 1, 1, 1, 1, 1, 1], [1, 1]),
        // An input of no rows, then of no columns: every window reads padding only.
        ([1, 3, 0, 4, 5, 3, 3, 1, 1, 1, 1, 1, 1], [2, 1]),
        ([2, 5, 3, 0, 18, 3, 3, 1, 1, 1, 1, 1, 1], [1, 2]),
        // The plane stops before the input's last column (stride 3, 1x1).
        ([1, 3, 4, 10, 5, 1, 1, 3, 3, 1, 1, 1, 1], [0, 0]),
        // Many quads and blocks over few pixels.
        ([1, 32, 3, 3, 70, 3, 3, 1, 1, 1, 1, 1, 1], [1, 1]),
        // Rows wide enough for the plane's 16-channel by 16-column squares:
        // exactly one square; 35 channels by 40 columns (two squares per
        // row, edges both ways); stride 2 with a plane that stops before
        // the input's last column.
        ([2, 16, 4, 16, 16, 1, 1, 1, 1, 0, 0, 1, 1], [0, 0]),
        ([1, 35, 5, 40, 20, 3, 3, 1, 1, 1, 1, 1, 1], [1, 1]),
        ([1, 16, 6, 37, 17, 3, 3, 2, 2, 1, 1, 1, 1], [0, 0]),
        // No padding over whole quads: a channels-last input is read in
        // place (3x3 valid, and 1x1 with stride 2 above).
        ([1, 8, 6, 7, 20, 3, 3, 1, 1, 0, 0, 1, 1], [0, 0]),
        // Enough work for the split to give several tasks (3 blocks x 25 tiles).
        ([2, 12, 20, 20, 40, 3, 3, 1, 1, 1, 1, 1, 1], [1, 1]),
        // Empty: no output channels.
        ([1, 2, 4, 4, 0, 3, 3, 1, 1, 1, 1, 1, 1], [1, 1]),
    ];
    for (i, &(d, trail)) in cases.iter().enumerate() {
        check_shape(&shape(d, trail), 60 + 5 * i as u32);
    }
}

#[test]
fn depthwise_matches_the_reference_over_awkward_shapes() {
    let cases: &[([usize; 13], [usize; 2])] = &[
        // n, c, h, w, c (again), kh, kw, sh, sw, ph, pw, dh, dw
        ([1, 1, 1, 1, 1, 1, 1, 1, 1, 0, 0, 1, 1], [0, 0]),
        // 3x3 pad 1 over 32 channels (two blocks: the 2-block tiles), 112 pixels.
        ([1, 32, 8, 14, 32, 3, 3, 1, 1, 1, 1, 1, 1], [1, 1]),
        // 17 and 33 channels (a lane in the last block; 2 + 1 blocks), stride 2.
        ([2, 17, 9, 9, 17, 3, 3, 2, 2, 1, 1, 1, 1], [1, 1]),
        ([1, 33, 7, 7, 33, 5, 5, 1, 1, 2, 2, 1, 1], [2, 2]),
        // 5x5 stride 2 with asymmetric padding, dilation, a window past the image.
        ([1, 20, 11, 6, 20, 5, 5, 2, 2, 2, 1, 1, 1], [2, 3]),
        ([1, 48, 6, 5, 48, 3, 3, 1, 1, 2, 2, 2, 2], [2, 2]),
        ([1, 16, 2, 2, 16, 5, 5, 1, 1, 2, 2, 1, 1], [2, 2]),
        // Enough work for several tasks.
        ([1, 64, 20, 20, 64, 3, 3, 1, 1, 1, 1, 1, 1], [1, 1]),
        // No padding over whole blocks (read in place when channels last);
        // then 20 channels, whose plane rounds up to 32.
        ([2, 32, 5, 6, 32, 3, 3, 1, 1, 0, 0, 1, 1], [0, 0]),
        ([1, 20, 5, 6, 20, 3, 3, 2, 1, 0, 0, 1, 1], [0, 0]),
    ];
    for (i, &(d, trail)) in cases.iter().enumerate() {
        let s = Conv2dShape { groups: d[1], ..shape(d, trail) };
        check_shape(&s, 300 + 5 * i as u32);
    }
}

/// `c_in` 0 (the validator accepts it): every sum is 0 and each output is
/// its channel's bias requantized.
#[test]
fn no_input_channels_requantize_the_bias() {
    let s = shape([1, 0, 3, 3, 5, 3, 3, 1, 1, 1, 1, 1, 1], [1, 1]);
    let bias: Vec<i32> = vec![-300, -1, 0, 7, 1_000];
    let q = Requant { bias: Some(bias.clone()), scale: vec![0.5], zero: Some(10), x_pad: 200 };
    let want = check(&s, &[], &pack_qconv_filter(&[], 5, 0, 3, 3), &q, "c_in 0");
    let pixels = s.h_out * s.w_out;
    for (c, &b) in bias.iter().enumerate() {
        let v = (half_even(i64::from(b)) + 10).clamp(0, 255) as u8;
        assert!(want[c * pixels..(c + 1) * pixels].iter().all(|&o| o == v), "channel {c}");
    }
}

/// `k / 2` rounded half to even.
fn half_even(k: i64) -> i64 {
    let q = k.div_euclid(2);
    if k.rem_euclid(2) == 1 && q % 2 != 0 {
        q + 1
    } else {
        q
    }
}

/// Ties and saturation against values computed here: a 1x1 filter of ones
/// over one channel holding every byte value, so each sum is the pixel's
/// value `k`; scales 0.5, -0.5 and 1.5 put every odd `k` on a tie.
#[test]
fn ties_round_to_even_and_saturate() {
    let s = shape([1, 1, 16, 16, 3, 1, 1, 1, 1, 0, 0, 1, 1], [0, 0]);
    let x: Vec<u8> = (0..=255).collect();
    let packed = pack_qconv_filter(&[1, 1, 1], 3, 1, 1, 1);
    for (bias, zero) in [(0i32, 128u8), (1, 128), (-1, 0), (0, 255)] {
        let q = Requant { bias: Some(vec![bias; 3]), scale: vec![0.5, -0.5, 1.5], zero: Some(zero), x_pad: 0 };
        let got = check(&s, &x, &packed, &q, "ties");
        for k in 0..256i64 {
            let sum = k + i64::from(bias);
            let z = i64::from(zero);
            let want = [half_even(sum), -half_even(sum), half_even(3 * sum)].map(|v| (v + z).clamp(0, 255) as u8);
            for (c, &w) in want.iter().enumerate() {
                assert_eq!(got[c * 256 + k as usize], w, "channel {c}, k {k}, bias {bias}, zero {zero}");
            }
        }
    }
}

/// `x_pad` counts at padded taps and the channels that round `c_in` up to
/// a quad count 0: a 3x3 window of ones over five channels of zeros, so
/// each output is `x_pad * 5 * (padded taps)`.
#[test]
fn padding_reads_x_pad_in_real_channels_only() {
    let s = shape([1, 5, 4, 6, 2, 3, 3, 1, 1, 1, 1, 1, 1], [1, 1]);
    let x = vec![0u8; 5 * 4 * 6];
    let mut packed = pack_qconv_filter(&[1; 2 * 5 * 9], 2, 5, 3, 3);
    for at in padded_slots(&s) {
        packed[at] = 1;
    }
    let q = Requant { bias: None, scale: vec![1.0], zero: None, x_pad: 3 };
    let got = check(&s, &x, &packed, &q, "x_pad");
    for c in 0..2 {
        for oy in 0..4 {
            for ox in 0..6 {
                let rows = 3 - usize::from(oy == 0) - usize::from(oy == 3);
                let cols = 3 - usize::from(ox == 0) - usize::from(ox == 5);
                let want = (9 - rows * cols) * 5 * 3;
                assert_eq!(usize::from(got[(c * 4 + oy) * 6 + ox]), want, "channel {c}, ({oy}, {ox})");
            }
        }
    }
}

/// Non-finite scales: both paths saturate NaN to 0 (`max` with 0 first)
/// and infinities to the ends.
#[test]
fn non_finite_scales_match_the_reference() {
    let s = shape([1, 3, 5, 5, 4, 3, 3, 1, 1, 1, 1, 1, 1], [1, 1]);
    let x = bytes(3 * 25, 5);
    let packed = pack_qconv_filter(&signed(&bytes(4 * 3 * 9, 6)), 4, 3, 3, 3);
    let q = Requant {
        bias: Some(vec![0, 1, -1, 0]),
        scale: vec![f32::NAN, f32::INFINITY, f32::NEG_INFINITY, f32::MIN_POSITIVE],
        zero: Some(7),
        x_pad: 9,
    };
    check(&s, &x, &packed, &q, "non-finite scales");
}

/// Best of `ROUNDS` (20) calls per body on a ResNet block's and a
/// depthwise-separable block's shapes, channels last in and out as
/// between two such convolutions (`cargo test --release -p rlx-runtime
/// qlinear_conv_timing -- --ignored --nocapture`; `CASE=text` keeps the
/// cases whose name has it, `BODY=name` one body (`vnni`, `avx2`, ...),
/// `PAR=1` splits over `RLX_NUM_THREADS`); prints only.
#[test]
#[ignore = "timing; run by hand"]
fn qlinear_conv_timing() {
    let env = |name: &str| std::env::var(name).ok();
    let rounds: usize = env("ROUNDS").and_then(|r| r.parse().ok()).unwrap_or(20);
    let par = env("PAR").is_some();
    let cases: [(&str, [usize; 14]); 6] = [
        // n, c_in, h, w, c_out, kh, kw, sh, sw, ph, pw, dh, dw, groups
        ("dw 3x3 144 56 pad", [1, 144, 56, 56, 144, 3, 3, 1, 1, 1, 1, 1, 1, 144]),
        ("dw 3x3 144 56 nopad", [1, 144, 58, 58, 144, 3, 3, 1, 1, 0, 0, 1, 1, 144]),
        ("3x3 64->64 56x56", [1, 64, 56, 56, 64, 3, 3, 1, 1, 1, 1, 1, 1, 1]),
        ("1x1 256->64 56x56", [1, 256, 56, 56, 64, 1, 1, 1, 1, 0, 0, 1, 1, 1]),
        ("7x7 s2 3->64 224", [1, 3, 224, 224, 64, 7, 7, 2, 2, 3, 3, 1, 1, 1]),
        ("dw 3x3 96 112x112", [1, 96, 112, 112, 96, 3, 3, 1, 1, 1, 1, 1, 1, 96]),
    ];
    let only = env("CASE");
    for (name, d) in cases {
        if only.as_deref().is_some_and(|o| !name.contains(o)) {
            continue;
        }
        let trail = [d[9], d[10]];
        let s = crate::kernels::quant::int_conv::tests::shape(d, trail);
        let x = bytes(s.n * s.c_in * s.h * s.w_in, 7);
        let w = signed(&bytes(s.c_out * s.c_in_g() * s.kh * s.kw, 8));
        let packed = pack_qconv_filter(&w, s.c_out, s.c_in_g(), s.kh, s.kw);
        let scale = vec![0.001f32; s.c_out];
        let mut scratch = vec![0u8; qconv_scratch_bytes(&s)];
        let mut out = vec![0u8; s.n * s.c_out * s.h_out * s.w_out];
        let only_body = env("BODY");
        let line: Vec<String> = BODIES
            .supported()
            .into_iter()
            .filter(|(name, _)| only_body.as_deref().is_none_or(|b| b == *name))
            .map(|(name, body)| {
                let mut best = f64::MAX;
                for _ in 0..rounds {
                    let t = std::time::Instant::now();
                    // SAFETY: buffers sized for the shape.
                    unsafe {
                        qlinear_conv2d_body(
                            body,
                            scratch.as_mut_ptr(),
                            x.as_ptr(),
                            packed.as_ptr(),
                            std::ptr::null(),
                            scale.as_ptr(),
                            std::ptr::null(),
                            out.as_mut_ptr(),
                            &s,
                            0,
                            s.c_out,
                            true,
                            true,
                            par,
                        )
                    };
                    best = best.min(t.elapsed().as_secs_f64());
                }
                format!("{name}: {:8.3} ms", best * 1e3)
            })
            .collect();
        println!("{name:<20} {}", line.join("  "));
    }
}
