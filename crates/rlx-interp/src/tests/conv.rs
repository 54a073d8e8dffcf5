use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};
use rlx_sched::{ActKind, Operand, Params, PoolKind, Segment, Thunk};

use rlx_runtime::arena::Arena;
use rlx_sched::thunk::{
    BlockedConv2D, BlockedConv2DHalf, BlockedPool2D, Col2Im, Conv2D, FromBlocked, Pool2D, Resize, ToBlocked,
};

const U: f64 = f32::EPSILON as f64 / 2.0;

fn at(segment: Segment, offset: usize) -> Operand {
    Operand { segment, offset, buffer: None }
}

fn put(seg: &mut Arena, off: usize, data: &[f32]) {
    for (i, x) in data.iter().enumerate() {
        seg.as_mut_slice()[off + 4 * i..off + 4 * i + 4].copy_from_slice(&x.to_le_bytes());
    }
}

fn get(seg: &Arena, off: usize, len: usize) -> Vec<f32> {
    (0..len).map(|i| f32::from_le_bytes(seg.as_slice()[off + 4 * i..off + 4 * i + 4].try_into().unwrap())).collect()
}

fn run(arena: &mut Arena, weights: &Arena, t: &Thunk<Operand>) {
    // Exactly what the plan reserves for this thunk.
    let params = Params { mask_threshold: 0.5, mask_neg_inf: -1e9, score_skip: 0.0 };
    let mut scratch = Arena::new(rlx_core::lower::scratch_bytes(t, &params).max(64));
    super::common::exec(arena.as_mut_slice(), weights.as_slice(), scratch.as_mut_slice(), params, t);
}

fn random(n: usize, seed: u64) -> Vec<f32> {
    let mut rng = StdRng::seed_from_u64(seed);
    (0..n).map(|_| rng.gen_range(-1.0f32..1.0)).collect()
}

/// (n, c_in, h, w_in, c_out, h_out, w_out, kh, kw, sh, sw, ph, pw, dh, dw, groups)
type Dims = [usize; 16];

#[test]
fn conv2d_on_each_path_with_weights_segment() {
    let cases: [(Dims, bool); 4] = [
        // Im2col: 3x3, stride 2, padding 1, dilation 1, bias.
        ([2, 3, 7, 8, 4, 4, 4, 3, 3, 2, 2, 1, 1, 1, 1, 1], true),
        // Grouped with dilation and a trailing pad implied by w_out.
        ([1, 4, 6, 6, 2, 4, 7, 2, 2, 1, 1, 0, 1, 2, 1, 2], false),
        // Pointwise 1x1.
        ([1, 5, 3, 4, 3, 3, 4, 1, 1, 1, 1, 0, 0, 1, 1, 1], true),
        // Depthwise 3x3, stride 2.
        ([2, 3, 9, 9, 3, 5, 5, 3, 3, 2, 2, 1, 1, 1, 1, 3], true),
    ];
    for (case, (d, with_bias)) in cases.iter().enumerate() {
        let [n, ci, h, wi, co, ho, wo, kh, kw, sh, sw, ph, pw, dh, dw, g] = *d;
        let x = random(n * ci * h * wi, 10 + case as u64);
        let w = random(co * (ci / g) * kh * kw, 20 + case as u64);
        let b = random(co, 30 + case as u64);
        let out_off = x.len() * 4;
        let mut arena = Arena::new(out_off + n * co * ho * wo * 4);
        put(&mut arena, 0, &x);
        let mut weights = Arena::new((w.len() + b.len()) * 4);
        put(&mut weights, 0, &w);
        put(&mut weights, w.len() * 4, &b);
        let t = Thunk::Conv2D(Conv2D {
            x: at(Segment::Arena, 0),
            w: at(Segment::Weights, 0),
            bias: with_bias.then(|| at(Segment::Weights, w.len() * 4)),
            out: at(Segment::Arena, out_off),
            n,
            c_in: ci,
            h,
            w_in: wi,
            c_out: co,
            h_out: ho,
            w_out: wo,
            kh,
            kw,
            sh,
            sw,
            ph,
            pw,
            dh,
            dw,
            groups: g,
            act: ActKind::Identity,
        });
        run(&mut arena, &weights, &t);
        let got = get(&arena, out_off, n * co * ho * wo);
        let (cig, cog) = (ci / g, co / g);
        for bi in 0..n {
            for o in 0..co {
                for y in 0..ho {
                    for xo in 0..wo {
                        let mut acc = if *with_bias { b[o] as f64 } else { 0.0 };
                        let mut mag = acc.abs();
                        for cl in 0..cig {
                            for ki in 0..kh {
                                for kj in 0..kw {
                                    let hi = (y * sh + ki * dh) as i64 - ph as i64;
                                    let wj = (xo * sw + kj * dw) as i64 - pw as i64;
                                    if (0..h as i64).contains(&hi) && (0..wi as i64).contains(&wj) {
                                        let c = o / cog * cig + cl;
                                        let xv = x[((bi * ci + c) * h + hi as usize) * wi + wj as usize] as f64;
                                        let wv = w[((o * cig + cl) * kh + ki) * kw + kj] as f64;
                                        acc += xv * wv;
                                        mag += (xv * wv).abs();
                                    }
                                }
                            }
                        }
                        // Any summation order of K products plus bias.
                        let tol = ((cig * kh * kw) as f64 + 2.0) * U * mag;
                        let g = got[((bi * co + o) * ho + y) * wo + xo] as f64;
                        assert!((g - acc).abs() <= tol, "case {case} at ({bi},{o},{y},{xo}): {g} vs {acc}");
                    }
                }
            }
        }
    }
}

#[test]
fn pool2d_mean_ceil_overhang_and_max() {
    // 259 frames, kernel = stride = 100, ceil mode: the third window
    // holds 59 real frames and averages over them.
    let x: Vec<f32> = (0..259).map(|i| i as f32).collect();
    let mut arena = Arena::new(259 * 4 + 64);
    put(&mut arena, 0, &x);
    let weights = Arena::new(64);
    for (kind, cip, want) in [
        (PoolKind::Mean, false, [49.5, 149.5, 229.0]),
        (PoolKind::Mean, true, [49.5, 149.5, 229.0]),
        (PoolKind::Max, false, [99.0, 199.0, 258.0]),
    ] {
        let t = Thunk::Pool2D(Pool2D {
            src: at(Segment::Arena, 0),
            dst: at(Segment::Arena, 259 * 4),
            n: 1,
            c: 1,
            h: 1,
            w: 259,
            h_out: 1,
            w_out: 3,
            kh: 1,
            kw: 100,
            sh: 1,
            sw: 100,
            ph: 0,
            pw: 0,
            kind,
            count_include_pad: cip,
        });
        run(&mut arena, &weights, &t);
        assert_eq!(get(&arena, 259 * 4, 3), want.to_vec(), "{kind:?} cip={cip}");
    }
}

#[test]
fn pool2d_count_include_pad() {
    // 3x3 ones, kernel 3, stride 1, padding 1: the corner window has 4
    // real elements among 9 padded positions.
    let mut arena = Arena::new(9 * 4 * 2);
    put(&mut arena, 0, &[1.0; 9]);
    let weights = Arena::new(64);
    for (cip, corner, centre) in [(false, 1.0, 1.0), (true, 4.0 / 9.0, 1.0)] {
        let t = Thunk::Pool2D(Pool2D {
            src: at(Segment::Arena, 0),
            dst: at(Segment::Arena, 36),
            n: 1,
            c: 1,
            h: 3,
            w: 3,
            h_out: 3,
            w_out: 3,
            kh: 3,
            kw: 3,
            sh: 1,
            sw: 1,
            ph: 1,
            pw: 1,
            kind: PoolKind::Mean,
            count_include_pad: cip,
        });
        run(&mut arena, &weights, &t);
        let out = get(&arena, 36, 9);
        assert_eq!(out[0], corner, "cip={cip}");
        assert_eq!(out[4], centre, "cip={cip}");
        assert_eq!(out[1], if cip { 6.0 / 9.0 } else { 1.0 }, "cip={cip}");
    }
}

/// Runs `thunks` in order on one arena.
fn run_all(arena: &mut Arena, weights: &Arena, thunks: &[Thunk<Operand>]) {
    for t in thunks {
        run(arena, weights, t);
    }
}

#[test]
fn blocked_convolutions_and_poolings_give_the_nchw_bits() {
    use rlx_core::blocked::{blocked_len, pack_conv_filter, pack_depthwise_filter, pad_channels};
    let cases: [(Dims, bool, ActKind); 4] = [
        // 3x3, stride 2, padding 1, a partial output block.
        ([2, 3, 7, 8, 20, 4, 4, 3, 3, 2, 2, 1, 1, 1, 1, 1], true, ActKind::Relu),
        // Pointwise across two input blocks, no bias.
        ([1, 17, 3, 5, 16, 3, 5, 1, 1, 1, 1, 0, 0, 1, 1, 1], false, ActKind::Identity),
        // Dilated, trailing pad implied by w_out.
        ([1, 16, 6, 6, 18, 4, 7, 2, 2, 1, 1, 0, 1, 2, 1, 1], true, ActKind::Gelu),
        // Depthwise 5x5, stride 2.
        ([1, 18, 9, 9, 18, 5, 5, 5, 5, 2, 2, 2, 2, 1, 1, 18], true, ActKind::Relu),
    ];
    for (case, &(d, with_bias, act)) in cases.iter().enumerate() {
        let [n, ci, h, wi, co, ho, wo, kh, kw, sh, sw, ph, pw, dh, dw, g] = d;
        let x = random(n * ci * h * wi, 40 + case as u64);
        let w = random(co * (ci / g) * kh * kw, 50 + case as u64);
        let b = random(co, 60 + case as u64);
        let packed = if g == 1 { pack_conv_filter(&w, co, ci, kh, kw) } else { pack_depthwise_filter(&w, co, kh, kw) };
        let padded_bias = pad_channels(&b);
        // Weights: NCHW filter, bias, packed filter, padded bias.
        let mut weights = Arena::new((w.len() + b.len() + packed.len() + padded_bias.len()) * 4);
        let (w_off, b_off, pw_off) = (0, w.len() * 4, (w.len() + b.len()) * 4);
        let pb_off = pw_off + packed.len() * 4;
        put(&mut weights, w_off, &w);
        put(&mut weights, b_off, &b);
        put(&mut weights, pw_off, &packed);
        put(&mut weights, pb_off, &padded_bias);
        // Arena: x, NCHW out, blocked x, blocked out, out read back,
        // pooled NCHW, pooled blocked, pooled read back.
        let out_len = n * co * ho * wo;
        let (po_h, po_w) = (ho.div_ceil(2), wo.div_ceil(2));
        let pool_len = n * co * po_h * po_w;
        let sizes = [
            x.len(),
            out_len,
            blocked_len(n, ci, h * wi).unwrap(),
            blocked_len(n, co, ho * wo).unwrap(),
            out_len,
            pool_len,
            blocked_len(n, co, po_h * po_w).unwrap(),
            pool_len,
            blocked_len(n, co, ho * wo).unwrap(),
            out_len,
        ];
        let offs: Vec<usize> = sizes.iter().scan(0, |acc, &len| Some(std::mem::replace(acc, *acc + len * 4))).collect();
        let mut arena = Arena::new(sizes.iter().sum::<usize>() * 4);
        put(&mut arena, 0, &x);
        let a = |i: usize| at(Segment::Arena, offs[i]);
        let bias = |off: usize| with_bias.then(|| at(Segment::Weights, off));
        let conv = |x, w, bias, out| {
            Thunk::Conv2D(Conv2D {
                x,
                w,
                bias,
                out,
                n,
                c_in: ci,
                h,
                w_in: wi,
                c_out: co,
                h_out: ho,
                w_out: wo,
                kh,
                kw,
                sh,
                sw,
                ph,
                pw,
                dh,
                dw,
                groups: g,
                act,
            })
        };
        let blocked = Thunk::BlockedConv2D(BlockedConv2D {
            residual: None,
            x: a(2),
            w: at(Segment::Weights, pw_off),
            bias: bias(pb_off),
            out: a(3),
            n,
            c_in: ci,
            h,
            w_in: wi,
            c_out: co,
            h_out: ho,
            w_out: wo,
            kh,
            kw,
            sh,
            sw,
            ph,
            pw,
            dh,
            dw,
            groups: g,
            act,
            x_nchw: false,
        });
        // The same convolution reading the NCHW input (one group only).
        let from_nchw = (g == 1).then(|| {
            Thunk::BlockedConv2D(BlockedConv2D {
                residual: None,
                x: a(0),
                w: at(Segment::Weights, pw_off),
                bias: bias(pb_off),
                out: a(8),
                n,
                c_in: ci,
                h,
                w_in: wi,
                c_out: co,
                h_out: ho,
                w_out: wo,
                kh,
                kw,
                sh,
                sw,
                ph,
                pw,
                dh,
                dw,
                groups: g,
                act,
                x_nchw: true,
            })
        });
        let pool = |src, dst| {
            Thunk::Pool2D(Pool2D {
                src,
                dst,
                n,
                c: co,
                h: ho,
                w: wo,
                h_out: po_h,
                w_out: po_w,
                kh: 2,
                kw: 2,
                sh: 2,
                sw: 2,
                ph: 0,
                pw: 0,
                kind: PoolKind::Max,
                count_include_pad: false,
            })
        };
        let blocked_pool = Thunk::BlockedPool2D(BlockedPool2D {
            src: a(3),
            dst: a(6),
            n,
            c: co,
            h: ho,
            w: wo,
            h_out: po_h,
            w_out: po_w,
            kh: 2,
            kw: 2,
            sh: 2,
            sw: 2,
            ph: 0,
            pw: 0,
            kind: PoolKind::Max,
            count_include_pad: false,
        });
        run_all(
            &mut arena,
            &weights,
            &[
                conv(a(0), at(Segment::Weights, w_off), bias(b_off), a(1)),
                pool(a(1), a(5)),
                Thunk::ToBlocked(ToBlocked { src: a(0), dst: a(2), n, c: ci, hw: h * wi }),
                blocked,
                Thunk::FromBlocked(FromBlocked { src: a(3), dst: a(4), n, c: co, hw: ho * wo }),
                blocked_pool,
                Thunk::FromBlocked(FromBlocked { src: a(6), dst: a(7), n, c: co, hw: po_h * po_w }),
            ],
        );
        let one_group = from_nchw.is_some();
        if let Some(t) = from_nchw {
            run_all(
                &mut arena,
                &weights,
                &[t, Thunk::FromBlocked(FromBlocked { src: a(8), dst: a(9), n, c: co, hw: ho * wo })],
            );
        }
        let bits = |off, len| get(&arena, off, len).into_iter().map(f32::to_bits).collect::<Vec<_>>();
        assert_eq!(bits(offs[4], out_len), bits(offs[1], out_len), "case {case}: convolution");
        assert_eq!(bits(offs[7], pool_len), bits(offs[5], pool_len), "case {case}: pooling");
        if one_group {
            assert_eq!(bits(offs[9], out_len), bits(offs[1], out_len), "case {case}: convolution from NCHW");
        }
    }
}

#[test]
fn blocked_convolution_with_a_16_bit_filter_gives_the_nchw_bits() {
    use rlx_core::blocked::{blocked_len, pack_conv_filter, pad_channels};
    use rlx_sched::DType;
    // [n, c_in, h, w_in, c_out, h_out, w_out, kh, kw, sh, sw, ph, pw]:
    // 3x3 with a partial output block; a 7x7 stem whose filter takes one
    // output block per pass; a pointwise one over two input blocks.
    let cases: [[usize; 13]; 3] = [
        [2, 3, 7, 8, 20, 4, 4, 3, 3, 2, 2, 1, 1],
        [1, 40, 9, 9, 20, 9, 9, 7, 7, 1, 1, 3, 3],
        [1, 17, 3, 5, 33, 3, 5, 1, 1, 1, 1, 0, 0],
    ];
    for (case, &[n, ci, h, wi, co, ho, wo, kh, kw, sh, sw, ph, pw]) in cases.iter().enumerate() {
        for (w_dtype, x_nchw) in [(DType::F16, false), (DType::Bf16, true), (DType::F16, true)] {
            let round = |v: f32| match w_dtype {
                DType::Bf16 => half::bf16::from_f32(v).to_f32(),
                _ => half::f16::from_f32(v).to_f32(),
            };
            let bits16 = |v: f32| match w_dtype {
                DType::Bf16 => half::bf16::from_f32(v).to_bits(),
                _ => half::f16::from_f32(v).to_bits(),
            };
            let x = random(n * ci * h * wi, 70 + case as u64);
            let w: Vec<f32> = random(co * ci * kh * kw, 80 + case as u64).into_iter().map(round).collect();
            let b = random(co, 90 + case as u64);
            let packed: Vec<u16> = pack_conv_filter(&w, co, ci, kh, kw).into_iter().map(bits16).collect();
            let padded_bias = pad_channels(&b);
            // Weights: NCHW filter, bias, 16-bit packed filter, padded bias.
            let (w_off, b_off, pw_off) = (0, w.len() * 4, (w.len() + b.len()) * 4);
            let pb_off = (pw_off + packed.len() * 2).next_multiple_of(4);
            let mut weights = Arena::new(pb_off + padded_bias.len() * 4);
            put(&mut weights, w_off, &w);
            put(&mut weights, b_off, &b);
            let bytes: Vec<u8> = packed.iter().flat_map(|v| v.to_le_bytes()).collect();
            weights.as_mut_slice()[pw_off..pw_off + bytes.len()].copy_from_slice(&bytes);
            put(&mut weights, pb_off, &padded_bias);
            // Arena: x, NCHW out, blocked x, blocked out, out read back.
            let out_len = n * co * ho * wo;
            let sizes =
                [x.len(), out_len, blocked_len(n, ci, h * wi).unwrap(), blocked_len(n, co, ho * wo).unwrap(), out_len];
            let offs: Vec<usize> =
                sizes.iter().scan(0, |acc, &len| Some(std::mem::replace(acc, *acc + len * 4))).collect();
            let mut arena = Arena::new(sizes.iter().sum::<usize>() * 4);
            put(&mut arena, 0, &x);
            let a = |i: usize| at(Segment::Arena, offs[i]);
            let (dh, dw, act) = (1, 1, ActKind::Relu);
            let conv = Thunk::Conv2D(Conv2D {
                x: a(0),
                w: at(Segment::Weights, w_off),
                bias: Some(at(Segment::Weights, b_off)),
                out: a(1),
                n,
                c_in: ci,
                h,
                w_in: wi,
                c_out: co,
                h_out: ho,
                w_out: wo,
                kh,
                kw,
                sh,
                sw,
                ph,
                pw,
                dh,
                dw,
                groups: 1,
                act,
            });
            let half = Thunk::BlockedConv2DHalf(BlockedConv2DHalf {
                x: if x_nchw { a(0) } else { a(2) },
                w: at(Segment::Weights, pw_off),
                bias: Some(at(Segment::Weights, pb_off)),
                residual: None,
                out: a(3),
                n,
                c_in: ci,
                h,
                w_in: wi,
                c_out: co,
                h_out: ho,
                w_out: wo,
                kh,
                kw,
                sh,
                sw,
                ph,
                pw,
                dh,
                dw,
                act,
                x_nchw,
                w_dtype,
            });
            run_all(
                &mut arena,
                &weights,
                &[
                    conv,
                    Thunk::ToBlocked(ToBlocked { src: a(0), dst: a(2), n, c: ci, hw: h * wi }),
                    half,
                    Thunk::FromBlocked(FromBlocked { src: a(3), dst: a(4), n, c: co, hw: ho * wo }),
                ],
            );
            let bits = |off, len| get(&arena, off, len).into_iter().map(f32::to_bits).collect::<Vec<_>>();
            assert_eq!(bits(offs[4], out_len), bits(offs[1], out_len), "case {case} {w_dtype:?} x_nchw {x_nchw}");
        }
    }
}

#[test]
fn col2im_sums_overlapping_windows_from_the_bias() {
    // One channel, a 2x2 window, stride 1, no padding: 2x2 columns land on
    // a 3x3 image; the centre pixel gets one value from each of the four
    // rows. Column rows hold 1, 10, 100, 1000 at every position, so each
    // pixel is the bias plus the rows whose window covers it.
    let cols: Vec<f32> = [1.0f32, 10.0, 100.0, 1000.0].iter().flat_map(|&v| [v; 4]).collect();
    let mut arena = Arena::new(64 * 4);
    put(&mut arena, 0, &cols);
    let mut weights = Arena::new(64);
    put(&mut weights, 0, &[0.5]);
    let t = Thunk::Col2Im(Col2Im {
        src: at(Segment::Arena, 0),
        bias: Some(at(Segment::Weights, 0)),
        dst: at(Segment::Arena, 16 * 4),
        n: 1,
        c: 1,
        h: 3,
        w: 3,
        h_cols: 2,
        w_cols: 2,
        kh: 2,
        kw: 2,
        sh: 1,
        sw: 1,
        ph: 0,
        pw: 0,
        dh: 1,
        dw: 1,
    });
    run(&mut arena, &weights, &t);
    let want = [1.5, 11.5, 10.5, 101.5, 1111.5, 1010.5, 100.5, 1100.5, 1000.5];
    assert_eq!(get(&arena, 16 * 4, 9), want.to_vec());

    // Stride 2 and padding 1 with a 3x3 window over 2x2 columns: the image
    // is 3x3, pixel (y, x) = (iy * 2 + ki - 1, ix * 2 + kj - 1); with a
    // single non-zero row (ki = kj = 1, the window centre) each column
    // value lands on one pixel, and the rest stay 0 (no bias).
    let mut cols = vec![0.0f32; 9 * 4];
    cols[4 * 4..5 * 4].copy_from_slice(&[1.0, 2.0, 3.0, 4.0]);
    put(&mut arena, 0, &cols);
    let t = Thunk::Col2Im(Col2Im {
        src: at(Segment::Arena, 0),
        bias: None,
        dst: at(Segment::Arena, 40 * 4),
        n: 1,
        c: 1,
        h: 3,
        w: 3,
        h_cols: 2,
        w_cols: 2,
        kh: 3,
        kw: 3,
        sh: 2,
        sw: 2,
        ph: 1,
        pw: 1,
        dh: 1,
        dw: 1,
    });
    run(&mut arena, &weights, &t);
    assert_eq!(get(&arena, 40 * 4, 9), vec![1.0, 0.0, 2.0, 0.0, 0.0, 0.0, 3.0, 0.0, 4.0]);
}

#[test]
fn resize_linear_and_nearest_on_hand_computed_values() {
    use rlx_sched::{ResizeCoord, ResizeMode};
    // [1, 2, 4] resized along the last axis to 8 with scale 2.
    let x = [0.0f32, 1.0, 2.0, 3.0, 10.0, 20.0, 30.0, 40.0];
    let mut arena = Arena::new(64 * 4);
    put(&mut arena, 0, &x);
    let weights = Arena::new(64);
    let resize = |mode, coord| {
        Thunk::Resize(Resize {
            src: at(Segment::Arena, 0),
            dst: at(Segment::Arena, 16 * 4),
            outer: 2,
            in_len: 4,
            out_len: 8,
            inner: 1,
            scale: 2.0,
            by_size: false,
            mode,
            coord,
            cubic_a: -0.75,
            exclude_outside: false,
            antialias: false,
            roi_start: 0.0,
            roi_end: 1.0,
            extrapolation: 0.0,
        })
    };
    // half_pixel: x = (o + 0.5) / 2 - 0.5 = -0.25, 0.25, 0.75, ..., 3.25;
    // the edges clamp.
    run(&mut arena, &weights, &resize(ResizeMode::Linear, ResizeCoord::HalfPixel));
    let want = [0.0, 0.25, 0.75, 1.25, 1.75, 2.25, 2.75, 3.0, 10.0, 12.5, 17.5, 22.5, 27.5, 32.5, 37.5, 40.0];
    assert_eq!(get(&arena, 16 * 4, 16), want.to_vec());
    // asymmetric nearest, round half down: x = o / 2 = 0, 0.5, 1, 1.5, ...
    run(&mut arena, &weights, &resize(ResizeMode::NearestRoundPreferFloor, ResizeCoord::Asymmetric));
    let want = [0.0, 0.0, 1.0, 1.0, 2.0, 2.0, 3.0, 3.0, 10.0, 10.0, 20.0, 20.0, 30.0, 30.0, 40.0, 40.0];
    assert_eq!(get(&arena, 16 * 4, 16), want.to_vec());
}

#[test]
fn resize_cubic_and_crop_on_hand_computed_values() {
    use rlx_sched::{ResizeCoord, ResizeMode};
    let x = [1.0f32, 2.0, 4.0, 8.0];
    let mut arena = Arena::new(64 * 4);
    put(&mut arena, 0, &x);
    let weights = Arena::new(64);
    let resize = |mode, coord, out_len, scale, roi_start, roi_end| {
        Thunk::Resize(Resize {
            src: at(Segment::Arena, 0),
            dst: at(Segment::Arena, 16 * 4),
            outer: 1,
            in_len: 4,
            out_len,
            inner: 1,
            scale,
            by_size: false,
            mode,
            coord,
            cubic_a: -0.75,
            exclude_outside: false,
            antialias: false,
            roi_start,
            roi_end,
            extrapolation: -1.0,
        })
    };
    // Cubic, asymmetric 2x: x = o / 2. Integral coordinates read their
    // sample; x = k + 0.5 weighs samples k-1 ..= k+2 (clamped) by the
    // kernel at 1.5, 0.5, 0.5, 1.5: -0.09375, 0.59375, 0.59375, -0.09375.
    run(&mut arena, &weights, &resize(ResizeMode::Cubic, ResizeCoord::Asymmetric, 8, 2.0, 0.0, 1.0));
    let want = [1.0, 1.3125, 2.0, 2.71875, 4.0, 6.1875, 8.0, 8.375];
    assert_eq!(get(&arena, 16 * 4, 8), want.to_vec());
    // tf_crop_and_resize over roi [-0.5, 1] of 4 outputs: x = 1.5 o - 1.5 =
    // -1.5 (outside: the extrapolation value), 0, 1.5, 3.
    run(&mut arena, &weights, &resize(ResizeMode::Linear, ResizeCoord::TfCropAndResize, 4, 1.0, -0.5, 1.0));
    assert_eq!(get(&arena, 16 * 4, 4), vec![-1.0, 1.0, 3.0, 8.0]);
}
