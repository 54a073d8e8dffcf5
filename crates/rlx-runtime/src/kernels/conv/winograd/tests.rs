//! Every kernel against the scalar reference, bit for bit, serial and
//! split, over awkward shapes (partial edge tiles, channel and block
//! tails, every padding the kernel takes, cropped outputs, two images),
//! with and without bias, residual and activation, padded input lanes
//! full of NaN; the fused residual and activation against a separate add
//! and activation; and the result against an f64 direct convolution
//! within two bounds (below). Plus the timing against the direct blocked
//! kernel.
//!
//! **Error bounds**, against an f64 direct convolution, with `u = 2^-24`
//! and `n = c_in`. The direct kernel's scale, `S = sum |x| |w| + |bias|`
//! over an output's own window, does not bound Winograd's error: an
//! output's error comes from its whole 6x6 patch, through transform
//! coefficients up to 8 x 8 and the filter's up to 1/16... 1, so `|err| /
//! (u S)` is unbounded (over 10^6 at a border output whose window is
//! mostly padding next to large inputs; about 25 to 120 for interior
//! outputs of uniform inputs, against about 4 for the direct kernel:
//! `measure_error_constant`, and `docs/kernels/conv-winograd.md`). The
//! scale that does is the algorithm's own, `Yabs = |A^T| (sum over ci of
//! (|G||g||G^T|) ⊙ (|B^T||d||B|)) |A| + |bias|`:
//!
//! - *Guaranteed*: every op of the transforms is an add, a subtract or an
//!   fma whose product is exact or fused, with no cancellation inside
//!   (each intermediate is bounded by the absolute-value matrices times
//!   `|d|` or `|m|`), at depth 2 + 2 for `V` and 3 + 3 for `Y`; `U` is
//!   rounded once; the product is a chain of `n` fmas; the bias one add.
//!   So `|err| <= gamma(n + 12) Yabs`, `gamma(k) = k u / (1 - k u)`.
//! - *Measured*: `|err| <= WINO_K sqrt(n + 12) u Yabs`. The fma chain's
//!   rounding errors have random signs, so they grow like the square root
//!   of its length; over 5400 random cases (`measure_error_constant`,
//!   ignored: `c_in` 1 to 256, uniform and varied-exponent inputs, every
//!   padding) the largest `|err| / (sqrt(n + 12) u Yabs)` was 0.70;
//!   `WINO_K = 1.5` leaves a factor 2.1.

use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};

use rlx_core::blocked::{conv_blocked_scratch_bytes, pack_conv_filter, pad_channels};
use rlx_core::winograd::{transform_winograd_filter, winograd_applies, winograd_filter_len, winograd_scratch_bytes};

use super::*;
use crate::kernels::conv::conv2d_blocked_f32;
use crate::kernels::conv::test_util::{bits, from_blocked, to_blocked};
use crate::kernels::test_support::{check_variants, identical};

const U: f64 = f32::EPSILON as f64 / 2.0;

/// Values no kernel writes.
const CANARY: [f32; 16] = [1234.5; 16];

/// The measured bound's constant (see the module docs).
const WINO_K: f64 = 1.5;

/// A 3x3, stride-1 shape from input size and leading and trailing padding.
fn shape(
    n: usize,
    c_in: usize,
    c_out: usize,
    (h, w): (usize, usize),
    (ph, pw): (usize, usize),
    (eh, ew): (usize, usize),
) -> Conv2dShape {
    let out = ((h + ph + eh).saturating_sub(2), (w + pw + ew).saturating_sub(2));
    Conv2dShape::winograd(n, c_in, (h, w), c_out, out, (ph, pw))
}

/// Pad 1 on every side ("same").
fn same(n: usize, c_in: usize, c_out: usize, hw: (usize, usize)) -> Conv2dShape {
    shape(n, c_in, c_out, hw, (1, 1), (1, 1))
}

struct Case {
    s: Conv2dShape,
    /// NCHW input, OIHW filter.
    x: Vec<f32>,
    w: Vec<f32>,
    bias: Option<Vec<f32>>,
    /// Blocked, like the output (its padded lanes too).
    residual: Option<Vec<f32>>,
    act: ActKind,
}

impl Case {
    fn new(s: Conv2dShape, with_bias: bool, with_residual: bool, act: ActKind, seed: u64) -> Case {
        let mut rng = StdRng::seed_from_u64(seed);
        // Varied exponents, so a different summation order shows.
        let mut r = |n: usize| -> Vec<f32> {
            (0..n).map(|_| rng.gen_range(-1.0f32..1.0) * 2f32.powi(rng.gen_range(-6..4))).collect()
        };
        let x = r(s.n * s.c_in * s.h * s.w_in);
        let w = r(s.c_out * s.c_in * 9);
        let bias = with_bias.then(|| r(s.c_out));
        let residual = with_residual.then(|| r(s.n * channel_blocks(s.c_out) * s.out_plane() * B));
        Case { s, x, w, bias, residual, act }
    }

    /// The blocked output (padded lanes included) of `kernel`, padded
    /// input lanes set to `fill`, with the case's residual and activation
    /// or (`fused == false`) without either.
    fn run_with(&self, kernel: &Kernel, par: bool, fill: f32, fused: bool) -> Vec<f32> {
        let s = &self.s;
        assert!(winograd_applies(s), "{s:?}");
        let x = to_blocked(&self.x, s.n, s.c_in, s.h * s.w_in, fill);
        let u = transform_winograd_filter(&self.w, s.c_out, s.c_in);
        let bias = self.bias.as_ref().map(|b| pad_channels(b));
        let residual = self.residual.as_ref().filter(|_| fused);
        let act = if fused { self.act } else { ActKind::Identity };
        // Canaries past the output and the scratch: nothing is written
        // outside their sizes.
        let out_len = s.n * channel_blocks(s.c_out) * s.out_plane() * B;
        let scratch_len = winograd_scratch_bytes(s) / 4;
        let mut out = vec![f32::NAN; out_len + CANARY.len()];
        out[out_len..].copy_from_slice(&CANARY);
        let mut scratch = vec![f32::NAN; scratch_len + CANARY.len()];
        scratch[scratch_len..].copy_from_slice(&CANARY);
        // SAFETY: buffers sized for the shape; `kernel` is supported.
        unsafe {
            run(
                kernel,
                x.as_ptr(),
                u.as_ptr(),
                bias.as_ref().map_or(std::ptr::null(), |b| b.as_ptr()),
                residual.map_or(std::ptr::null(), |r| r.as_ptr()),
                out.as_mut_ptr(),
                s,
                act,
                scratch.as_mut_ptr(),
                par,
            )
        };
        assert_eq!(bits(&out[out_len..]), bits(&CANARY), "{}: write past the output", kernel.name);
        assert_eq!(bits(&scratch[scratch_len..]), bits(&CANARY), "{}: write past the scratch", kernel.name);
        out.truncate(out_len);
        out
    }

    fn run(&self, kernel: &Kernel, par: bool, fill: f32) -> Vec<f32> {
        self.run_with(kernel, par, fill, true)
    }

    /// The f64 direct convolution (bias included), `S` (see the module
    /// docs) and the guaranteed bound's `Yabs`, NCHW.
    fn reference(&self) -> (Vec<f64>, Vec<f64>, Vec<f64>) {
        let s = &self.s;
        let len = s.n * s.c_out * s.out_plane();
        let (mut out, mut scale, mut yabs) = (vec![0.0; len], vec![0.0; len], vec![0.0; len]);
        let xat = |b: usize, ci: usize, y: isize, x: isize| -> f64 {
            if y < 0 || x < 0 || y >= s.h as isize || x >= s.w_in as isize {
                0.0
            } else {
                self.x[((b * s.c_in + ci) * s.h + y as usize) * s.w_in + x as usize] as f64
            }
        };
        for b in 0..s.n {
            for co in 0..s.c_out {
                let bias = self.bias.as_ref().map_or(0.0, |v| v[co] as f64);
                for ho in 0..s.h_out {
                    for wo in 0..s.w_out {
                        let (mut acc, mut mag) = (bias, bias.abs());
                        for ci in 0..s.c_in {
                            for ki in 0..3 {
                                for kj in 0..3 {
                                    let xv = xat(
                                        b,
                                        ci,
                                        (ho + ki) as isize - s.ph as isize,
                                        (wo + kj) as isize - s.pw as isize,
                                    );
                                    let wv = self.w[(co * s.c_in + ci) * 9 + ki * 3 + kj] as f64;
                                    acc += xv * wv;
                                    mag += (xv * wv).abs();
                                }
                            }
                        }
                        let at = ((b * s.c_out + co) * s.h_out + ho) * s.w_out + wo;
                        out[at] = acc;
                        scale[at] = mag;
                        yabs[at] = bias.abs();
                    }
                }
            }
        }
        // Yabs per tile: |A^T| (sum over ci of Uabs ⊙ Vabs) |A|.
        let (tile_rows, tile_cols) = winograd_tiles(s);
        let uabs: Vec<[[f64; 6]; 6]> = self.w.chunks(9).map(|g| abs_sandwich(&G_ABS, g)).collect();
        for b in 0..s.n {
            for ty in 0..tile_rows {
                for tx in 0..tile_cols {
                    let vabs: Vec<[[f64; 6]; 6]> = (0..s.c_in)
                        .map(|ci| {
                            let mut d = [0.0f32; 36];
                            for (k, v) in d.iter_mut().enumerate() {
                                let y = (ty * 4 + k / 6) as isize - s.ph as isize;
                                let x = (tx * 4 + k % 6) as isize - s.pw as isize;
                                *v = xat(b, ci, y, x) as f32;
                            }
                            abs_sandwich(&BT_ABS, &d)
                        })
                        .collect();
                    for co in 0..s.c_out {
                        let mut m = [[0.0f64; 6]; 6];
                        for (ci, v) in vabs.iter().enumerate() {
                            let u = &uabs[co * s.c_in + ci];
                            for a in 0..6 {
                                for c in 0..6 {
                                    m[a][c] += u[a][c] * v[a][c];
                                }
                            }
                        }
                        for i in 0..4.min(s.h_out - ty * 4) {
                            for j in 0..4.min(s.w_out - tx * 4) {
                                let mut y = 0.0;
                                for a in 0..6 {
                                    for c in 0..6 {
                                        y += AT_ABS[i][a] * m[a][c] * AT_ABS[j][c];
                                    }
                                }
                                yabs[((b * s.c_out + co) * s.h_out + ty * 4 + i) * s.w_out + tx * 4 + j] += y;
                            }
                        }
                    }
                }
            }
        }
        (out, scale, yabs)
    }

    /// Every kernel, serial and split, bit-identical to the scalar
    /// reference (all lanes); with padded input lanes NaN too; the fused
    /// residual and activation as a separate add and activation; and the
    /// unfused result within both bounds.
    fn check(&self, what: &str) {
        let s = &self.s;
        let reference = self.run(&SCALAR, false, 0.0);
        for par in [false, true] {
            for fill in [0.0, f32::NAN] {
                let what = format!("{what}: par {par} fill {fill} vs scalar");
                check_variants(&reference, &KERNELS.supported(), identical, &what, |k| self.run(&k, par, fill));
            }
        }
        let plain = self.run_with(&SCALAR, false, 0.0, false);
        if self.residual.is_some() || !matches!(self.act, ActKind::Identity) {
            let mut separate = plain.clone();
            if let Some(r) = &self.residual {
                separate.iter_mut().zip(r).for_each(|(o, r)| *o += r);
            }
            // SAFETY: one buffer, in place.
            unsafe { act_f32_slice(self.act, separate.as_ptr(), separate.as_mut_ptr(), separate.len(), false) };
            assert_eq!(bits(&reference), bits(&separate), "{what}: fused vs separate add and activation");
        }
        let (want, _, yabs) = self.reference();
        let got = from_blocked(&plain, s.n, s.c_out, s.out_plane());
        let k = (s.c_in + 12) as f64 * U;
        let gamma = k / (1.0 - k);
        let measured = WINO_K * ((s.c_in + 12) as f64).sqrt() * U;
        for (i, &g) in got.iter().enumerate() {
            let (err, want) = ((g as f64 - want[i]).abs(), want[i]);
            assert!(err <= gamma * yabs[i], "{what} at {i}: got {g} want {want} err {err:e} > {:e}", gamma * yabs[i]);
            assert!(
                err <= measured * yabs[i],
                "{what} at {i}: got {g} want {want} err {err:e} > {:e}",
                measured * yabs[i]
            );
        }
    }
}

/// `|G|`, `|B^T|`, `|A^T|`.
const G_ABS: [[f64; 3]; 6] = [
    [0.25, 0.0, 0.0],
    [1.0 / 6.0, 1.0 / 6.0, 1.0 / 6.0],
    [1.0 / 6.0, 1.0 / 6.0, 1.0 / 6.0],
    [1.0 / 24.0, 1.0 / 12.0, 1.0 / 6.0],
    [1.0 / 24.0, 1.0 / 12.0, 1.0 / 6.0],
    [0.0, 0.0, 1.0],
];
const BT_ABS: [[f64; 6]; 6] = [
    [4.0, 0.0, 5.0, 0.0, 1.0, 0.0],
    [0.0, 4.0, 4.0, 1.0, 1.0, 0.0],
    [0.0, 4.0, 4.0, 1.0, 1.0, 0.0],
    [0.0, 2.0, 1.0, 2.0, 1.0, 0.0],
    [0.0, 2.0, 1.0, 2.0, 1.0, 0.0],
    [0.0, 4.0, 0.0, 5.0, 0.0, 1.0],
];
const AT_ABS: [[f64; 6]; 4] = [
    [1.0, 1.0, 1.0, 1.0, 1.0, 0.0],
    [0.0, 1.0, 1.0, 2.0, 2.0, 0.0],
    [0.0, 1.0, 1.0, 4.0, 4.0, 0.0],
    [0.0, 1.0, 1.0, 8.0, 8.0, 1.0],
];

/// `|M| |X| |M|^T` of a square `X` (`N x N`, row-major) by a `6 x N`
/// matrix of absolute values.
fn abs_sandwich<const N: usize>(m: &[[f64; N]; 6], x: &[f32]) -> [[f64; 6]; 6] {
    let mut out = [[0.0; 6]; 6];
    for a in 0..6 {
        for b in 0..6 {
            for r in 0..N {
                for c in 0..N {
                    out[a][b] += m[a][r] * (x[r * N + c] as f64).abs() * m[b][c];
                }
            }
        }
    }
    out
}

const ACTS: [ActKind; 3] = [ActKind::Identity, ActKind::Relu, ActKind::Gelu];

#[test]
fn resnet_stage_56x56_64() {
    Case::new(same(1, 64, 64, (56, 56)), true, true, ActKind::Relu, 1).check("56x56 64->64");
}

#[test]
fn sizes_not_multiples_of_four() {
    for (i, hw) in [1, 2, 5, 7, 13].into_iter().enumerate() {
        for (a, act) in ACTS.into_iter().enumerate() {
            let s = same(1, 17, 20, (hw, [13, 7, 1, 5, 2][i]));
            Case::new(s, (i + a) % 2 == 0, a == 1, act, 10 + i as u64).check(&format!("{hw} {act:?}"));
        }
    }
}

#[test]
fn channel_counts_and_block_tails() {
    for (i, c_in) in [1, 3, 17, 33].into_iter().enumerate() {
        for (j, c_out) in [1, 3, 17, 33].into_iter().enumerate() {
            let act = ACTS[(i + j) % ACTS.len()];
            let case = Case::new(same(1, c_in, c_out, (6, 9)), (i + j) % 2 == 0, j % 2 == 1, act, (i * 7 + j) as u64);
            case.check(&format!("c_in {c_in} c_out {c_out} {act:?}"));
        }
    }
}

#[test]
fn paddings_and_cropped_outputs() {
    let cases = [
        ("pad 0", shape(1, 17, 20, (9, 11), (0, 0), (0, 0))),
        ("pad 2", shape(1, 17, 20, (9, 11), (2, 2), (2, 2))),
        ("pad 2 leading, 0 trailing", shape(1, 16, 20, (7, 10), (2, 2), (0, 0))),
        ("pad 0 leading, 2 trailing", shape(1, 16, 20, (7, 10), (0, 0), (2, 2))),
        ("mixed pads", shape(1, 16, 20, (7, 10), (2, 0), (1, 2))),
        // Trailing padding below zero: the output stops short of the input.
        ("cropped", Conv2dShape { h_out: 3, w_out: 6, ..shape(1, 17, 20, (11, 13), (1, 1), (1, 1)) }),
        ("cropped pad 0", Conv2dShape { h_out: 5, w_out: 1, ..shape(1, 17, 20, (11, 13), (0, 0), (0, 0)) }),
        ("two images", same(2, 17, 33, (6, 7))),
        ("two images pad 2", shape(2, 3, 16, (5, 3), (2, 1), (2, 1))),
        ("one pixel", same(1, 33, 17, (1, 1))),
        // 15 tiles: groups of 8 + 7 (AVX-512), 5 x 3 (AVX2, NEON).
        ("15 tiles", same(1, 20, 48, (12, 20))),
        // 4 tiles, 7 output blocks: 4 parts (AVX-512: 1 block group each,
        // AVX2: 2, 2, 2, 1).
        ("split output blocks", same(1, 20, 100, (7, 7))),
        ("split output blocks, two images", same(2, 33, 100, (5, 6))),
    ];
    for (i, (name, s)) in cases.into_iter().enumerate() {
        for (a, act) in [ActKind::Identity, ActKind::Gelu].into_iter().enumerate() {
            Case::new(s, (i + a) % 2 == 0, (i + a) % 3 == 0, act, 100 + i as u64).check(&format!("{name} {act:?}"));
        }
    }
}

#[test]
fn empty_outputs_write_nothing() {
    let base = same(1, 17, 20, (5, 7));
    for s in [Conv2dShape { n: 0, ..base }, Conv2dShape { c_out: 0, ..base }] {
        let u = vec![1.0f32; winograd_filter_len(base.c_out, base.c_in).unwrap()];
        let x = vec![1.0f32; 2 * 5 * 7 * B];
        let mut out = [7.0f32; 4];
        for kernel in supported_kernels() {
            // SAFETY: an empty output reads and writes nothing; the
            // buffers are valid anyway.
            unsafe {
                run(
                    &kernel,
                    x.as_ptr(),
                    u.as_ptr(),
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

/// The largest `|err| / (u Yabs)` and `|err| / (u S)` over random cases,
/// by `c_in`, for inputs of varied exponents and of uniform ones, and the
/// direct kernel's `|err| / (u S)` (`cargo test --release -p rlx-runtime
/// measure_error_constant -- --ignored --nocapture`); prints only.
#[test]
#[ignore]
fn measure_error_constant() {
    for uniform in [false, true] {
        let mut worst_by_c = std::collections::BTreeMap::new();
        let mut rng = StdRng::seed_from_u64(99);
        for seed in 0..2700u64 {
            let c_in = [1, 2, 3, 8, 16, 17, 64, 128, 256][seed as usize % 9];
            let hw = (rng.gen_range(1..14), rng.gen_range(1..14));
            let pad = (rng.gen_range(0..3), rng.gen_range(0..3));
            let s = shape(1, c_in, 8, hw, pad, pad);
            if s.h_out == 0 || s.w_out == 0 {
                continue;
            }
            let mut case = Case::new(s, seed % 2 == 0, false, ActKind::Identity, 1000 + seed);
            if uniform {
                let mut r = StdRng::seed_from_u64(5000 + seed);
                case.x.iter_mut().chain(&mut case.w).for_each(|v| *v = r.gen_range(-1.0f32..1.0));
                case.bias = None;
            }
            let got = from_blocked(&case.run(kernel(), false, 0.0), s.n, s.c_out, s.out_plane());
            let (want, scale, yabs) = case.reference();
            let direct = {
                let x = to_blocked(&case.x, s.n, s.c_in, s.h * s.w_in, 0.0);
                let w = pack_conv_filter(&case.w, s.c_out, s.c_in, 3, 3);
                let bias = case.bias.as_ref().map(|b| pad_channels(b));
                let mut out = vec![0.0f32; s.n * channel_blocks(s.c_out) * s.out_plane() * B];
                let mut scratch = vec![0.0f32; conv_blocked_scratch_bytes(&s) / 4 + 1];
                // SAFETY: buffers sized for the shape.
                unsafe {
                    conv2d_blocked_f32(
                        x.as_ptr(),
                        w.as_ptr(),
                        bias.as_ref().map_or(std::ptr::null(), |b| b.as_ptr()),
                        std::ptr::null(),
                        out.as_mut_ptr(),
                        &s,
                        ActKind::Identity,
                        scratch.as_mut_ptr(),
                        false,
                    )
                };
                from_blocked(&out, s.n, s.c_out, s.out_plane())
            };
            let entry = worst_by_c.entry(c_in).or_insert([0.0f64; 5]);
            let root = ((c_in + 12) as f64).sqrt();
            for i in 0..got.len() {
                let err = (got[i] as f64 - want[i]).abs();
                let (ho, wo) = ((i / s.w_out) % s.h_out, i % s.w_out);
                let interior = ho >= s.ph && ho + 3 <= s.h + s.ph && wo >= s.pw && wo + 3 <= s.w_in + s.pw;
                entry[0] = entry[0].max(err / (U * yabs[i] * root));
                entry[1] = entry[1].max(err / (U * scale[i]));
                if interior {
                    entry[2] = entry[2].max(err / (U * scale[i]));
                }
                entry[3] = entry[3].max((direct[i] as f64 - want[i]).abs() / (U * scale[i]));
                entry[4] = entry[4].max(yabs[i] / scale[i]);
            }
        }
        println!("{} inputs:", if uniform { "uniform" } else { "varied-exponent" });
        for (c_in, [by_yabs, by_s, interior, direct, amp]) in worst_by_c {
            println!(
                "c_in {c_in:3}: |err|/(u Yabs sqrt(c_in+12)) {by_yabs:5.3}  |err|/(u S) {by_s:9.1} interior {interior:7.1}   direct {direct:5.2}   Yabs/S {amp:9.1}"
            );
        }
    }
}

/// Milliseconds and GF/s (direct-equivalent flops: `2 c_out h_out w_out
/// 9 c_in`) of the Winograd and the direct blocked kernel, one thread and
/// the pool, warm (best of 15 x 3 calls, interleaved, so a busy machine
/// slows both alike) and cold (best of 5 single calls after writing 64 MiB,
/// so filter, input and scratch come from memory, as in a network whose
/// weights exceed the last-level cache): `cargo test --release -p
/// rlx-runtime winograd_timing -- --ignored --nocapture`; prints only.
/// `WINO_ONLY=i` times shape `i` only, and warm only Winograd (for a
/// profiler).
#[test]
#[ignore]
fn winograd_timing() {
    // ResNet-18's four 3x3 stages, then shapes that place `winograd_pays`.
    let shapes = [
        same(1, 64, 64, (56, 56)),
        same(1, 128, 128, (28, 28)),
        same(1, 256, 256, (14, 14)),
        same(1, 512, 512, (7, 7)),
        same(1, 256, 256, (7, 7)),
        same(1, 128, 128, (7, 7)),
        same(1, 64, 64, (7, 7)),
        same(1, 64, 64, (12, 12)),
        same(1, 256, 256, (12, 12)),
        same(1, 512, 512, (12, 12)),
        same(1, 128, 128, (13, 13)),
        same(1, 512, 512, (14, 14)),
        same(1, 384, 384, (14, 14)),
        same(1, 16, 16, (56, 56)),
        same(1, 8, 8, (56, 56)),
        same(1, 32, 32, (112, 112)),
        same(1, 3, 16, (56, 56)),
    ];
    let only: Option<usize> = std::env::var("WINO_ONLY").ok().and_then(|v| v.parse().ok());
    println!("winograd kernel {}, pool of {} threads", kernel().name, crate::threads::num_threads());
    let mut flush = vec![0u8; 64 << 20];
    for (si, s) in shapes.into_iter().enumerate() {
        if only.is_some_and(|o| o != si) {
            continue;
        }
        let case = Case::new(s, true, false, ActKind::Relu, 7);
        let flops = 2.0 * (s.c_out * s.out_plane() * s.patch_len()) as f64;
        let xb = to_blocked(&case.x, s.n, s.c_in, s.h * s.w_in, 0.0);
        let u = transform_winograd_filter(&case.w, s.c_out, s.c_in);
        let w = pack_conv_filter(&case.w, s.c_out, s.c_in, 3, 3);
        let bias = pad_channels(case.bias.as_ref().unwrap());
        let mut out = vec![0.0f32; s.n * channel_blocks(s.c_out) * s.out_plane() * B];
        let mut ws = vec![0.0f32; winograd_scratch_bytes(&s) / 4];
        let mut ds = vec![0.0f32; conv_blocked_scratch_bytes(&s) / 4 + 1];
        let mut call = |wino: bool, par: bool| {
            // SAFETY: buffers sized for the shape.
            unsafe {
                if wino {
                    conv2d_winograd_f32(
                        xb.as_ptr(),
                        u.as_ptr(),
                        bias.as_ptr(),
                        std::ptr::null(),
                        out.as_mut_ptr(),
                        &s,
                        ActKind::Relu,
                        ws.as_mut_ptr(),
                        par,
                    )
                } else {
                    conv2d_blocked_f32(
                        xb.as_ptr(),
                        w.as_ptr(),
                        bias.as_ptr(),
                        std::ptr::null(),
                        out.as_mut_ptr(),
                        &s,
                        ActKind::Relu,
                        ds.as_mut_ptr(),
                        par,
                    )
                }
            };
            std::hint::black_box(&out);
        };
        let mut line = format!("[1,{},{},{}]->{:<3}", s.c_in, s.h, s.w_in, s.c_out);
        for par in [false, true] {
            let (mut warm, mut cold) = ([f64::MAX; 2], [f64::MAX; 2]);
            for _ in 0..15 {
                for (k, wino) in [true, false].into_iter().enumerate() {
                    if only.is_some() && !wino {
                        continue;
                    }
                    let t = std::time::Instant::now();
                    for _ in 0..3 {
                        call(wino, par);
                    }
                    warm[k] = warm[k].min(t.elapsed().as_secs_f64() / 3.0);
                }
            }
            for _ in 0..5 {
                for (k, wino) in [true, false].into_iter().enumerate() {
                    flush.iter_mut().for_each(|b| *b = b.wrapping_add(1));
                    std::hint::black_box(&flush);
                    let t = std::time::Instant::now();
                    call(wino, par);
                    cold[k] = cold[k].min(t.elapsed().as_secs_f64());
                }
            }
            line += &format!(
                " | {} thr: warm {:6.3} / {:6.3} ms ({:5.0} / {:4.0} GF/s) x{:.2}, cold {:6.3} / {:6.3} ms x{:.2}",
                if par { crate::threads::num_threads() } else { 1 },
                warm[0] * 1e3,
                warm[1] * 1e3,
                flops / warm[0] / 1e9,
                flops / warm[1] / 1e9,
                warm[1] / warm[0],
                cold[0] * 1e3,
                cold[1] * 1e3,
                cold[1] / cold[0],
            );
        }
        println!("{line}");
    }
}
