//! The gemm-family arms run through `exec_thunk` on a real `Memory`,
//! against naive f64 computations written here. Tolerances as in
//! `kernels::gemm::tests`: `(k + 4) * 2^-24 * (sum|a||b| + |bias|)` bounds
//! every correct summation order, so only wrong indexing can miss it.

use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};
use rlx_sched::{ActKind, Operand, Params, Segment, Thunk};

use rlx_runtime::arena::Arena;
use rlx_runtime::kernels::gemm::half_weight_scratch_elems;
use rlx_sched::thunk::{
    BatchedSgemm, BiasAdd, DynamicQuantize, FusedMmBiasAct, IntConv2D, IntGemm, IntGemmPacked, PackedGemm,
    PackedGemmHalf, PackedGemmQ8, QLinearConv2D, Requantize, Sgemm, SgemmBf16, SgemmF16, SgemmT,
};

const U: f64 = 1.0 / (1u64 << 24) as f64;

fn arena(off: usize) -> Operand {
    Operand { segment: Segment::Arena, offset: off, buffer: None }
}

fn weights(off: usize) -> Operand {
    Operand { segment: Segment::Weights, offset: off, buffer: None }
}

fn params() -> Params {
    Params { mask_threshold: 0.5, mask_neg_inf: -1e9, score_skip: 0.0 }
}

/// An arena, a weights segment and scratch, all 64-byte aligned.
struct Fixture {
    arena: Arena,
    weights: Arena,
    scratch: Arena,
}

impl Fixture {
    fn new(arena_bytes: usize, weight_bytes: usize, scratch_bytes: usize) -> Fixture {
        Fixture {
            arena: Arena::new(arena_bytes),
            weights: Arena::new(weight_bytes),
            scratch: Arena::new(scratch_bytes),
        }
    }

    fn put_f32(&mut self, segment: Segment, off: usize, data: &[f32]) {
        let bytes: Vec<u8> = data.iter().flat_map(|x| x.to_le_bytes()).collect();
        self.put_bytes(segment, off, &bytes);
    }

    fn put_u16(&mut self, off: usize, data: &[u16]) {
        let bytes: Vec<u8> = data.iter().flat_map(|x| x.to_le_bytes()).collect();
        self.put_bytes(Segment::Weights, off, &bytes);
    }

    fn put_bytes(&mut self, segment: Segment, off: usize, bytes: &[u8]) {
        let seg = match segment {
            Segment::Arena => self.arena.as_mut_slice(),
            Segment::Weights => self.weights.as_mut_slice(),
        };
        seg[off..off + bytes.len()].copy_from_slice(bytes);
    }

    fn get_f32(&self, off: usize, len: usize) -> Vec<f32> {
        self.arena.as_slice()[off..off + 4 * len]
            .chunks_exact(4)
            .map(|b| f32::from_le_bytes(b.try_into().unwrap()))
            .collect()
    }

    fn run(&mut self, t: &Thunk<Operand>) {
        super::common::exec(
            self.arena.as_mut_slice(),
            self.weights.as_slice(),
            self.scratch.as_mut_slice(),
            params(),
            t,
        );
    }
}

fn random(rng: &mut StdRng, len: usize) -> Vec<f32> {
    (0..len).map(|_| rng.gen_range(-1.0f32..1.0)).collect()
}

/// Naive `op(a) @ op(b) + bias` with its error bound per element.
fn naive(
    a: &[f32],
    b: &[f32],
    bias: Option<&[f32]>,
    m: usize,
    k: usize,
    n: usize,
    ta: bool,
    tb: bool,
) -> Vec<(f64, f64)> {
    let mut out = Vec::with_capacity(m * n);
    for i in 0..m {
        for j in 0..n {
            let (mut s, mut mag) = (0.0f64, 0.0f64);
            for p in 0..k {
                let x = f64::from(if ta { a[p * m + i] } else { a[i * k + p] });
                let y = f64::from(if tb { b[j * k + p] } else { b[p * n + j] });
                s += x * y;
                mag += (x * y).abs();
            }
            if let Some(bias) = bias {
                s += f64::from(bias[j]);
                mag += f64::from(bias[j]).abs();
            }
            out.push((s, (k as f64 + 4.0) * U * mag));
        }
    }
    out
}

fn assert_close(got: &[f32], want: &[(f64, f64)], what: &str) {
    assert_eq!(got.len(), want.len(), "{what}");
    for (i, (g, (w, e))) in got.iter().zip(want).enumerate() {
        assert!((f64::from(*g) - w).abs() <= *e, "{what}: [{i}] = {g}, want {w} (bound {e})");
    }
}

/// Offsets (in bytes) of `c` relative to `a` that exercise the aliasing
/// guard: disjoint, `c` exactly on `a`, `c` strictly inside `a`'s range and
/// `a` strictly inside `c`'s range (a start-only comparison misses it).
const C_PLACEMENTS: [(&str, usize, usize); 4] =
    [("disjoint", 0, 4096), ("same", 1024, 1024), ("c inside a", 1024, 1032), ("a inside c", 1032, 1024)];

#[test]
fn sgemm_and_sgemm_t_with_every_overlap() {
    let mut rng = StdRng::seed_from_u64(11);
    let (m, k, n) = (5, 5, 5);
    for (place, a_off, c_off) in C_PLACEMENTS {
        for (ta, tb, plain) in [
            (false, false, true),
            (false, false, false),
            (true, false, false),
            (false, true, false),
            (true, true, false),
        ] {
            let a = random(&mut rng, m * k);
            let b = random(&mut rng, k * n);
            let mut fx = Fixture::new(8192, 0, m * n * 4);
            fx.put_f32(Segment::Arena, a_off, &a);
            fx.put_f32(Segment::Arena, 6000, &b);
            let t = if plain {
                Thunk::Sgemm(Sgemm { a: arena(a_off), b: arena(6000), c: arena(c_off), m, k, n })
            } else {
                Thunk::SgemmT(SgemmT { a: arena(a_off), b: arena(6000), c: arena(c_off), m, k, n, ta, tb })
            };
            fx.run(&t);
            let what = format!("{:?} {place} ta={ta} tb={tb}", t.kind());
            assert_close(&fx.get_f32(c_off, m * n), &naive(&a, &b, None, m, k, n, ta, tb), &what);
        }
    }
}

#[test]
fn sgemm_with_b_in_weights_and_c_over_b_region() {
    // `c` overlaps `b` in the arena; also a weights-segment `b` at the same
    // offset as `c` must NOT count as overlap (different segments).
    let mut rng = StdRng::seed_from_u64(12);
    let (m, k, n) = (3, 4, 6);
    let a = random(&mut rng, m * k);
    let b = random(&mut rng, k * n);
    let mut fx = Fixture::new(4096, 4096, 0);
    fx.put_f32(Segment::Arena, 0, &a);
    fx.put_f32(Segment::Weights, 256, &b);
    fx.run(&Thunk::Sgemm(Sgemm { a: arena(0), b: weights(256), c: arena(256), m, k, n }));
    assert_close(&fx.get_f32(256, m * n), &naive(&a, &b, None, m, k, n, false, false), "weights b");

    let mut fx = Fixture::new(4096, 0, m * n * 4);
    fx.put_f32(Segment::Arena, 0, &a);
    fx.put_f32(Segment::Arena, 512, &b);
    fx.run(&Thunk::Sgemm(Sgemm { a: arena(0), b: arena(512), c: arena(520), m, k, n }));
    assert_close(&fx.get_f32(520, m * n), &naive(&a, &b, None, m, k, n, false, false), "c inside b");
}

#[test]
fn half_weight_gemms_on_both_paths_and_overlaps() {
    let mut rng = StdRng::seed_from_u64(13);
    for (m, k, n) in [(3, 7, 9), (12, 7, 9)] {
        for bf16 in [false, true] {
            for (place, a_off, c_off) in C_PLACEMENTS {
                let a = random(&mut rng, m * k);
                let w = random(&mut rng, k * n);
                let (bits, widened): (Vec<u16>, Vec<f32>) = if bf16 {
                    w.iter().map(|&x| half::bf16::from_f32(x)).map(|h| (h.to_bits(), h.to_f32())).unzip()
                } else {
                    w.iter().map(|&x| half::f16::from_f32(x)).map(|h| (h.to_bits(), h.to_f32())).unzip()
                };
                let scratch = (m * n + half_weight_scratch_elems(m, k, n)) * 4;
                let mut fx = Fixture::new(8192, 1024, scratch);
                fx.put_f32(Segment::Arena, a_off, &a);
                fx.put_u16(64, &bits);
                let t = if bf16 {
                    Thunk::SgemmBf16(SgemmBf16 { a: arena(a_off), b: weights(64), c: arena(c_off), m, k, n })
                } else {
                    Thunk::SgemmF16(SgemmF16 { a: arena(a_off), b: weights(64), c: arena(c_off), m, k, n })
                };
                fx.run(&t);
                let what = format!("{:?} {m}x{k}x{n} {place}", t.kind());
                assert_close(&fx.get_f32(c_off, m * n), &naive(&a, &widened, None, m, k, n, false, false), &what);
            }
        }
    }
}

#[test]
fn batched_sgemm_broadcasts_and_overlap() {
    let mut rng = StdRng::seed_from_u64(14);
    let (batch, m, k, n) = (3, 4, 5, 4);
    for (a_bcast, b_bcast) in [(false, false), (true, false), (false, true), (true, true)] {
        for (place, a_off, c_off) in [("disjoint", 0, 4096), ("c on a", 0, 0), ("c inside a", 0, 16)] {
            let a_count = if a_bcast { 1 } else { batch };
            let b_count = if b_bcast { 1 } else { batch };
            let a = random(&mut rng, a_count * m * k);
            let b = random(&mut rng, b_count * k * n);
            let mut fx = Fixture::new(8192, 0, batch * m * n * 4);
            fx.put_f32(Segment::Arena, a_off, &a);
            fx.put_f32(Segment::Arena, 6000, &b);
            fx.run(&Thunk::BatchedSgemm(BatchedSgemm {
                a: arena(a_off),
                b: arena(6000),
                c: arena(c_off),
                batch,
                m,
                k,
                n,
                a_bcast,
                b_bcast,
            }));
            let got = fx.get_f32(c_off, batch * m * n);
            for i in 0..batch {
                let ai = if a_bcast { 0 } else { i * m * k };
                let bi = if b_bcast { 0 } else { i * k * n };
                let want = naive(&a[ai..ai + m * k], &b[bi..bi + k * n], None, m, k, n, false, false);
                let what = format!("batch {i} bcast {a_bcast}/{b_bcast} {place}");
                assert_close(&got[i * m * n..(i + 1) * m * n], &want, &what);
            }
        }
    }
}

#[test]
fn fused_mm_bias_act_with_overlap() {
    let mut rng = StdRng::seed_from_u64(15);
    let (m, k, n) = (4, 4, 4);
    for (place, a_off, c_off) in C_PLACEMENTS {
        let a = random(&mut rng, m * k);
        let w = random(&mut rng, k * n);
        let bias = random(&mut rng, n);
        let mut fx = Fixture::new(8192, 1024, m * n * 4);
        fx.put_f32(Segment::Arena, a_off, &a);
        fx.put_f32(Segment::Weights, 0, &w);
        fx.put_f32(Segment::Weights, 512, &bias);
        fx.run(&Thunk::FusedMmBiasAct(FusedMmBiasAct {
            a: arena(a_off),
            w: weights(0),
            bias: weights(512),
            c: arena(c_off),
            m,
            k,
            n,
            act: ActKind::Relu,
        }));
        let want: Vec<(f64, f64)> =
            naive(&a, &w, Some(&bias), m, k, n, false, false).into_iter().map(|(x, e)| (x.max(0.0), e)).collect();
        assert_close(&fx.get_f32(c_off, m * n), &want, place);
    }
}

/// `PackedGemm` is exact: `bias[j]` (or 0), then one `mul_add` per `p`
/// in order, whatever the CPU's microkernel, then the activation kernel;
/// checked bit for bit over row
/// and column tails, a `k` across the kernel's pass length, no bias, and
/// `a` overlapping `c` every way.
#[test]
fn packed_gemm_is_the_ordered_fma_chain() {
    let mut rng = StdRng::seed_from_u64(17);
    let cases =
        [(7, 300, 33, true, ActKind::Gelu), (1, 1, 1, false, ActKind::Identity), (13, 9, 16, true, ActKind::Relu)];
    for (m, k, n, with_bias, act) in cases {
        let a = random(&mut rng, m * k);
        let b = random(&mut rng, k * n);
        let bias = random(&mut rng, n);
        let mut want = vec![0.0f32; m * n];
        for i in 0..m {
            for j in 0..n {
                let mut acc = if with_bias { bias[j] } else { 0.0 };
                for p in 0..k {
                    acc = a[i * k + p].mul_add(b[p * n + j], acc);
                }
                want[i * n + j] = acc;
            }
        }
        // The epilogue is the activation family's kernel (held to its
        // scalar reference by that family's tests).
        // SAFETY: `want` holds `m*n` f32, in place.
        unsafe { rlx_runtime::kernels::activation::act_f32_slice(act, want.as_ptr(), want.as_mut_ptr(), m * n, false) };
        let packed = rlx_sched::pack::pack_b(&b, k, n, false);
        let bias_off = packed.len() * 4;
        let placements: &[(&str, usize, usize)] =
            if m * k == m * n || m * k <= 64 { &C_PLACEMENTS } else { &[("disjoint", 0, 16384)] };
        for &(place, a_off, c_off) in placements {
            let mut fx = Fixture::new(32768, bias_off + 4 * n, m * n * 4);
            fx.put_f32(Segment::Arena, a_off, &a);
            fx.put_f32(Segment::Weights, 0, &packed);
            fx.put_f32(Segment::Weights, bias_off, &bias);
            fx.run(&Thunk::PackedGemm(PackedGemm {
                a: arena(a_off),
                w: weights(0),
                bias: with_bias.then(|| weights(bias_off)),
                c: arena(c_off),
                m,
                k,
                n,
                act,
            }));
            let got = fx.get_f32(c_off, m * n);
            let bits = |v: &[f32]| v.iter().map(|x| x.to_bits()).collect::<Vec<_>>();
            assert_eq!(bits(&got), bits(&want), "m={m} k={k} n={n} {act:?} {place}");
        }
    }
}

/// `PackedGemmHalf` is `PackedGemm` over the widened weights, bit for
/// bit: the same ordered FMA chain, the weight widened from f16 / bf16
/// exactly. Row and column tails, `k` across the pass length, a product
/// large enough to split over threads, no bias, `a` overlapping `c`.
#[test]
fn packed_gemm_half_is_packed_gemm_over_the_widened_weights() {
    let mut rng = StdRng::seed_from_u64(18);
    let cases = [
        (1, 300, 33, true, ActKind::Silu),
        (1, 1, 1, false, ActKind::Identity),
        (13, 9, 16, true, ActKind::Relu),
        (16, 64, 130, false, ActKind::Identity),
        (2, 70, 100, true, ActKind::Silu),
        (1, 0, 20, true, ActKind::Relu),
        (2, 600, 300, false, ActKind::Identity),
        (64, 512, 256, true, ActKind::Gelu),
    ];
    for bf16 in [false, true] {
        for (m, k, n, with_bias, act) in cases {
            let a = random(&mut rng, m * k);
            let b = random(&mut rng, k * n);
            let bias = random(&mut rng, n);
            let (bits, widened): (Vec<u16>, Vec<f32>) = if bf16 {
                b.iter().map(|&x| half::bf16::from_f32(x)).map(|h| (h.to_bits(), h.to_f32())).unzip()
            } else {
                b.iter().map(|&x| half::f16::from_f32(x)).map(|h| (h.to_bits(), h.to_f32())).unzip()
            };
            let packed_half = rlx_sched::pack::pack_b(&bits, k, n, false);
            let packed_f32 = rlx_sched::pack::pack_b(&widened, k, n, false);
            let bias_off = (packed_f32.len() * 4).div_ceil(64) * 64;
            let run = |fx: &mut Fixture, thunk: Thunk<Operand>, c_off: usize| {
                fx.run(&thunk);
                fx.get_f32(c_off, m * n).iter().map(|x| x.to_bits()).collect::<Vec<_>>()
            };
            let placements: &[(&str, usize, usize)] =
                if m * k == m * n || m * k <= 64 { &C_PLACEMENTS } else { &[("disjoint", 0, 1 << 20)] };
            for &(place, a_off, c_off) in placements {
                let arena_len = (2 << 20).max(c_off + m * n * 4);
                let mut want_fx = Fixture::new(arena_len, bias_off + 4 * n, m * n * 4);
                want_fx.put_f32(Segment::Arena, a_off, &a);
                want_fx.put_f32(Segment::Weights, 0, &packed_f32);
                want_fx.put_f32(Segment::Weights, bias_off, &bias);
                let bias_op = with_bias.then(|| weights(bias_off));
                let want = run(
                    &mut want_fx,
                    Thunk::PackedGemm(PackedGemm {
                        a: arena(a_off),
                        w: weights(0),
                        bias: bias_op,
                        c: arena(c_off),
                        m,
                        k,
                        n,
                        act,
                    }),
                    c_off,
                );
                let mut fx = Fixture::new(arena_len, bias_off + 4 * n, m * n * 4);
                fx.put_f32(Segment::Arena, a_off, &a);
                fx.put_u16(0, &packed_half);
                fx.put_f32(Segment::Weights, bias_off, &bias);
                let w_dtype = if bf16 { rlx_sched::DType::Bf16 } else { rlx_sched::DType::F16 };
                let got = run(
                    &mut fx,
                    Thunk::PackedGemmHalf(PackedGemmHalf {
                        a: arena(a_off),
                        w: weights(0),
                        bias: bias_op,
                        c: arena(c_off),
                        m,
                        k,
                        n,
                        act,
                        w_dtype,
                    }),
                    c_off,
                );
                assert_eq!(got, want, "bf16={bf16} m={m} k={k} n={n} {act:?} {place}");
            }
        }
    }
}

/// `PackedGemmQ8` is the product over the dequantized weights (`d * q`,
/// `rlx_core::q8::dequantize_q8`) within the bound of any summation order:
/// `k` one block and several, across the 256-step pass, row counts of a
/// decode step, a prefill chunk and past it, column tails, `n` 1, no
/// bias, `a` overlapping `c`, an activation, split over threads.
#[test]
fn packed_gemm_q8_is_the_product_over_the_dequantized_weights() {
    let mut rng = StdRng::seed_from_u64(19);
    let cases = [
        (1, 32, 1, true, ActKind::Identity),
        (1, 96, 33, true, ActKind::Silu),
        (2, 64, 64, false, ActKind::Identity),
        (16, 320, 70, true, ActKind::Relu),
        (17, 32, 32, false, ActKind::Identity),
        (1, 0, 20, true, ActKind::Identity),
        (64, 512, 256, true, ActKind::Identity),
    ];
    for (m, k, n, with_bias, act) in cases {
        let a = random(&mut rng, m * k);
        let b = random(&mut rng, k * n);
        let bias = random(&mut rng, n);
        // Blocks of scales near the values' size and every i8 value.
        let scales = random(&mut rng, n * (k / 32));
        let packed = rlx_core::q8::pack_q8_blocks(k, n, |j, blk| {
            let q = std::array::from_fn(|i| (b[(blk * 32 + i) * n + j] * 127.0) as i8);
            (scales[j * (k / 32) + blk] / 64.0, q)
        });
        let wide = rlx_core::q8::dequantize_q8(&packed, k, n);
        let want: Vec<(f64, f64)> = naive(&a, &wide, with_bias.then_some(&bias[..]), m, k, n, false, false)
            .into_iter()
            .map(|(x, e)| match act {
                ActKind::Identity => (x, e),
                ActKind::Relu => (x.max(0.0), e),
                // SiLU's slope is below 1.1: the bound carries over, plus
                // the activation's own rounding.
                _ => (x / (1.0 + (-x).exp()), 1.1 * e + 4.0 * U * x.abs().max(1e-30)),
            })
            .collect();
        let bias_off = packed.len().div_ceil(64) * 64;
        let placements: &[(&str, usize, usize)] =
            if m * k == m * n || m * k <= 64 { &C_PLACEMENTS } else { &[("disjoint", 0, 1 << 20)] };
        for &(place, a_off, c_off) in placements {
            let arena_len = (2 << 20).max(c_off + m * n * 4);
            let mut fx = Fixture::new(arena_len, bias_off + 4 * n, m * n * 4);
            fx.put_f32(Segment::Arena, a_off, &a);
            fx.put_bytes(Segment::Weights, 0, &packed);
            fx.put_f32(Segment::Weights, bias_off, &bias);
            fx.run(&Thunk::PackedGemmQ8(PackedGemmQ8 {
                a: arena(a_off),
                w: weights(0),
                bias: with_bias.then(|| weights(bias_off)),
                c: arena(c_off),
                m,
                k,
                n,
                act,
            }));
            assert_close(&fx.get_f32(c_off, m * n), &want, &format!("m={m} k={k} n={n} {act:?} {place}"));
        }
    }
}

#[test]
fn bias_add_in_place_and_out_of_place() {
    let mut rng = StdRng::seed_from_u64(16);
    let (rows, cols) = (7, 13);
    let src = random(&mut rng, rows * cols);
    let bias = random(&mut rng, cols);
    // One rounded add per element: exact agreement.
    let want: Vec<f32> = (0..rows * cols).map(|i| src[i] + bias[i % cols]).collect();
    for dst_off in [0, 1024] {
        let mut fx = Fixture::new(2048, 64, 0);
        fx.put_f32(Segment::Arena, 0, &src);
        fx.put_f32(Segment::Weights, 0, &bias);
        fx.run(&Thunk::BiasAdd(BiasAdd { src: arena(0), bias: weights(0), dst: arena(dst_off), rows, cols }));
        assert_eq!(fx.get_f32(dst_off, rows * cols), want, "dst at {dst_off}");
    }
}

#[test]
fn dynamic_quantize_matches_the_reference_through_the_call_table() {
    use rlx_runtime::kernels::quant::dynamic_quantize_reference;
    // 40,000 elements: over `plan::parallel`'s threshold, so split.
    let len = 40_000usize;
    let x: Vec<f32> = (0..len).map(|i| ((i * 7919 % 10_007) as f32 - 3000.0) * 1e-3).collect();
    let (mut y, mut scale, mut zero) = (vec![0u8; len], 0f32, 0u8);
    // SAFETY: the buffers hold the extents named.
    unsafe { dynamic_quantize_reference(x.as_ptr(), y.as_mut_ptr(), &mut scale, &mut zero, len) };
    let mut fx = Fixture::new(4 * len + len + 256, 0, 0);
    fx.put_f32(Segment::Arena, 0, &x);
    let at = |offset| Operand { segment: Segment::Arena, offset, buffer: None };
    let (y_at, scale_at, zero_at) = (4 * len, 5 * len + 64, 5 * len + 128);
    fx.run(&Thunk::DynamicQuantize(DynamicQuantize {
        x: at(0),
        y: at(y_at),
        scale: at(scale_at),
        zero: at(zero_at),
        len,
    }));
    let arena = fx.arena.as_slice();
    assert_eq!(&arena[y_at..y_at + len], &y[..]);
    assert_eq!(arena[scale_at..scale_at + 4], scale.to_le_bytes());
    assert_eq!(arena[zero_at], zero);
    assert!(y.iter().any(|&v| v != y[0]), "a constant output proves little");
}

#[test]
fn packed_int_gemm_matches_the_reference_through_the_call_table() {
    use rlx_core::qconv::{pack_qgemm_weight, qgemm_column_sums};
    use rlx_runtime::kernels::quant::int_gemm_packed_reference;
    use rlx_sched::DType;
    // 11 rows (a tile and a tail), k 7 (a partial quad), n 19 (a partial block).
    let (m, k, n) = (11usize, 7usize, 19usize);
    let a: Vec<i8> = (0..m * k).map(|i| (i * 37 % 256) as u8 as i8).collect();
    let w: Vec<i8> = (0..k * n).map(|i| (i * 91 % 256) as u8 as i8).collect();
    let packed = pack_qgemm_weight(&w, k, n);
    let le = |v: &[i32]| v.iter().flat_map(|x| x.to_le_bytes()).collect::<Vec<u8>>();
    let za = [-5i8];
    let zw: Vec<i32> = (0..n as i32).map(|j| j * 13 % 255 - 127).collect();
    let scale: Vec<f32> = (0..n).map(|j| 0.01 * (j + 1) as f32).collect();
    let bias: Vec<f32> = (0..n).map(|j| j as f32 - 9.5).collect();
    let mut want = vec![0i32; m * n];
    // SAFETY: the vectors hold the extents the shape names.
    unsafe {
        int_gemm_packed_reference(a.as_ptr(), packed.as_ptr(), za.as_ptr(), zw.as_ptr(), want.as_mut_ptr(), m, k, n, n)
    };
    let at = |offset| Operand { segment: Segment::Arena, offset, buffer: None };
    for dequantize in [false, true] {
        let mut fx = Fixture::new(8192, 0, rlx_core::plan::int_gemm_packed_scratch_bytes(m, k, true));
        fx.put_bytes(Segment::Arena, 0, &a.iter().map(|&x| x as u8).collect::<Vec<u8>>());
        fx.put_bytes(Segment::Arena, 128, &packed.iter().map(|&x| x as u8).collect::<Vec<u8>>());
        fx.put_bytes(Segment::Arena, 512, &le(&qgemm_column_sums(&w, k, n)));
        fx.put_bytes(Segment::Arena, 640, &za.map(|x| x as u8));
        fx.put_bytes(Segment::Arena, 704, &le(&zw));
        fx.put_f32(Segment::Arena, 832, &scale);
        fx.put_f32(Segment::Arena, 960, &bias);
        fx.run(&Thunk::IntGemmPacked(IntGemmPacked {
            a: at(0),
            w: at(128),
            w_sums: at(512),
            a_zero: Some(at(640)),
            w_zero: Some(at(704)),
            scale: dequantize.then(|| at(832)),
            bias: dequantize.then(|| at(960)),
            c: at(2048),
            m,
            k,
            n,
            a_dtype: DType::I8,
            w_zero_len: n,
            scale_len: n,
        }));
        let words = fx.arena.as_slice()[2048..2048 + 4 * m * n].chunks_exact(4).map(|c| c.try_into().unwrap());
        if dequantize {
            let got: Vec<u32> = words.map(|c| f32::from_le_bytes(c).to_bits()).collect();
            let expected: Vec<u32> =
                want.iter().enumerate().map(|(i, &s)| (bias[i % n] + s as f32 * scale[i % n]).to_bits()).collect();
            assert_eq!(got, expected);
        } else {
            assert_eq!(words.map(i32::from_le_bytes).collect::<Vec<_>>(), want);
        }
    }
}

#[test]
fn int_gemm_matches_the_reference_through_the_call_table() {
    use rlx_runtime::kernels::quant::{int_gemm_reference, int_gemm_scratch_bytes};
    use rlx_sched::DType;
    let (batch, m, k, n) = (2usize, 5usize, 7usize, 19usize);
    let a: Vec<u8> = (0..batch * m * k).map(|i| (i * 37 % 256) as u8).collect();
    let b: Vec<i8> = (0..batch * k * n).map(|i| (i * 91 % 256) as u8 as i8).collect();
    let za = [200u8];
    let zb: Vec<i8> = (0..n).map(|j| (j * 29 % 256) as u8 as i8).collect();
    let mut fx = Fixture::new(4096, 0, int_gemm_scratch_bytes(batch, m, k, n));
    let bytes = |v: &[i8]| v.iter().map(|&x| x as u8).collect::<Vec<u8>>();
    fx.put_bytes(Segment::Arena, 0, &a);
    fx.put_bytes(Segment::Arena, 128, &bytes(&b));
    fx.put_bytes(Segment::Arena, 448, &za);
    fx.put_bytes(Segment::Arena, 512, &bytes(&zb));
    let at = |offset| Operand { segment: Segment::Arena, offset, buffer: None };
    fx.run(&Thunk::IntGemm(IntGemm {
        a: at(0),
        b: at(128),
        a_zero: Some(at(448)),
        b_zero: Some(at(512)),
        c: at(1024),
        batch,
        m,
        k,
        n,
        a_dtype: DType::U8,
        b_dtype: DType::I8,
        b_zero_len: n,
        b_bcast: false,
    }));
    let mut want = vec![0i32; batch * m * n];
    // SAFETY: the vectors hold the extents the shape names.
    unsafe {
        int_gemm_reference(
            a.as_ptr(),
            b.as_ptr(),
            za.as_ptr(),
            zb.as_ptr(),
            want.as_mut_ptr(),
            batch,
            m,
            k,
            n,
            n,
            false,
        )
    };
    let got: Vec<i32> = fx.arena.as_slice()[1024..1024 + 4 * batch * m * n]
        .chunks_exact(4)
        .map(|c| i32::from_le_bytes(c.try_into().unwrap()))
        .collect();
    assert_eq!(got, want);
}

#[test]
fn int_conv2d_matches_the_reference_through_the_call_table() {
    use rlx_core::shapes::Conv2dShape;
    use rlx_runtime::kernels::quant::int_conv2d_reference;
    use rlx_sched::DType;
    // Both paths: im2col (groups 1) and depthwise (groups == c_in).
    for groups in [1usize, 3] {
        let (n, c_in, h, w_in, c_out, k) = (2usize, 3usize, 6usize, 7usize, 6usize, 3usize);
        let s = Conv2dShape {
            n,
            c_in,
            h,
            w_in,
            c_out,
            h_out: 3,
            w_out: 4,
            kh: k,
            kw: k,
            sh: 2,
            sw: 2,
            ph: 1,
            pw: 1,
            dh: 1,
            dw: 1,
            groups,
        };
        let x: Vec<u8> = (0..n * c_in * h * w_in).map(|i| (i * 37 % 256) as u8).collect();
        let w: Vec<i8> = (0..c_out * (c_in / groups) * k * k).map(|i| (i * 91 % 256) as u8 as i8).collect();
        let zx = [131u8];
        let zw: Vec<i8> = (0..c_out).map(|j| (j * 29 % 256) as u8 as i8).collect();
        let scratch = rlx_core::plan::int_conv2d_scratch_bytes(&s);
        let mut fx = Fixture::new(8192, 0, scratch);
        fx.put_bytes(Segment::Arena, 0, &x);
        fx.put_bytes(Segment::Arena, 1024, &w.iter().map(|&v| v as u8).collect::<Vec<u8>>());
        fx.put_bytes(Segment::Arena, 1600, &zx);
        fx.put_bytes(Segment::Arena, 1664, &zw.iter().map(|&v| v as u8).collect::<Vec<u8>>());
        let at = |offset| Operand { segment: Segment::Arena, offset, buffer: None };
        fx.run(&Thunk::IntConv2D(IntConv2D {
            x: at(0),
            w: at(1024),
            x_zero: Some(at(1600)),
            w_zero: Some(at(1664)),
            out: at(2048),
            n,
            c_in,
            h,
            w_in,
            c_out,
            h_out: s.h_out,
            w_out: s.w_out,
            kh: k,
            kw: k,
            sh: 2,
            sw: 2,
            ph: 1,
            pw: 1,
            dh: 1,
            dw: 1,
            groups,
            x_dtype: DType::U8,
            w_dtype: DType::I8,
            w_zero_len: c_out,
        }));
        let len = n * c_out * s.out_plane();
        let mut want = vec![0i32; len];
        // SAFETY: the vectors hold the extents the shape names.
        unsafe { int_conv2d_reference(x.as_ptr(), w.as_ptr(), zx.as_ptr(), zw.as_ptr(), want.as_mut_ptr(), &s, c_out) };
        let got: Vec<i32> = fx.arena.as_slice()[2048..2048 + 4 * len]
            .chunks_exact(4)
            .map(|c| i32::from_le_bytes(c.try_into().unwrap()))
            .collect();
        assert_eq!(got, want, "groups {groups}");
    }
}

#[test]
fn requantize_matches_the_reference_through_the_call_table() {
    use rlx_runtime::kernels::quant::requantize_reference;
    use rlx_sched::DType;
    let (outer, channels, inner) = (2usize, 3usize, 7usize);
    let len = outer * channels * inner;
    let acc: Vec<i32> = (0..len).map(|i| (i as i32 - 20) * 977).collect();
    let bias = [5i32, -70_000, 123];
    let scale = [0.5f32, 0.003, -0.0125];
    let zero = [17u8];
    let mut fx = Fixture::new(1024, 0, 0);
    let le = |v: &[i32]| v.iter().flat_map(|x| x.to_le_bytes()).collect::<Vec<u8>>();
    fx.put_bytes(Segment::Arena, 0, &le(&acc));
    fx.put_bytes(Segment::Arena, 256, &le(&bias));
    fx.put_f32(Segment::Arena, 320, &scale);
    fx.put_bytes(Segment::Arena, 384, &zero);
    let at = |offset| Operand { segment: Segment::Arena, offset, buffer: None };
    fx.run(&Thunk::Requantize(Requantize {
        acc: at(0),
        bias: Some(at(256)),
        scale: at(320),
        zero: Some(at(384)),
        out: at(448),
        outer,
        channels,
        inner,
        scale_len: channels,
        out_dtype: DType::U8,
    }));
    let mut want = vec![0u8; len];
    // SAFETY: the arrays hold the extents the sizes name.
    unsafe {
        requantize_reference(
            acc.as_ptr(),
            bias.as_ptr(),
            scale.as_ptr(),
            zero.as_ptr(),
            want.as_mut_ptr(),
            outer,
            channels,
            inner,
            channels,
        )
    };
    assert_eq!(&fx.arena.as_slice()[448..448 + len], &want[..]);
}

#[test]
fn qlinear_conv2d_matches_the_reference_through_the_call_table() {
    use rlx_core::qconv::{pack_qconv_filter, qconv_scratch_bytes};
    use rlx_core::shapes::Conv2dShape;
    use rlx_runtime::kernels::quant::qlinear_conv2d_reference;
    // c_in 5 (two quads), c_out 18 (two blocks), stride 2, padding 1; the
    // packed filter in the weights segment, as the importer writes it.
    let (n, c_in, h, w_in, c_out, k) = (2usize, 5usize, 6usize, 7usize, 18usize, 3usize);
    let s = Conv2dShape {
        n,
        c_in,
        h,
        w_in,
        c_out,
        h_out: 3,
        w_out: 4,
        kh: k,
        kw: k,
        sh: 2,
        sw: 2,
        ph: 1,
        pw: 1,
        dh: 1,
        dw: 1,
        groups: 1,
    };
    let x: Vec<u8> = (0..n * c_in * h * w_in).map(|i| (i * 37 % 256) as u8).collect();
    let w: Vec<i8> = (0..c_out * c_in * k * k).map(|i| (i * 91 % 256) as u8 as i8).collect();
    let packed = pack_qconv_filter(&w, c_out, c_in, k, k);
    let bias: Vec<i32> = (0..c_out).map(|j| (j as i32 - 9) * 1_013).collect();
    let scale: Vec<f32> = (0..c_out).map(|j| if j % 3 == 0 { 0.5 } else { 0.002 * (j as f32 - 8.0) }).collect();
    let zero = [117u8];
    let len = n * c_out * s.out_plane();
    // Per-channel scale with bias and zero point; then one scale, neither.
    for (full, x_pad) in [(true, 131usize), (false, 0)] {
        let mut fx = Fixture::new(2048, packed.len(), qconv_scratch_bytes(&s));
        fx.put_bytes(Segment::Arena, 0, &x);
        fx.put_bytes(Segment::Weights, 0, &packed.iter().map(|&v| v as u8).collect::<Vec<u8>>());
        fx.put_bytes(Segment::Arena, 512, &bias.iter().flat_map(|v| v.to_le_bytes()).collect::<Vec<u8>>());
        fx.put_f32(Segment::Arena, 640, &scale);
        fx.put_bytes(Segment::Arena, 768, &zero);
        let scale_len = if full { c_out } else { 1 };
        fx.run(&Thunk::QLinearConv2D(QLinearConv2D {
            x: arena(0),
            w: weights(0),
            bias: full.then(|| arena(512)),
            scale: arena(640),
            zero: full.then(|| arena(768)),
            out: arena(832),
            n,
            c_in,
            h,
            w_in,
            c_out,
            h_out: s.h_out,
            w_out: s.w_out,
            kh: k,
            kw: k,
            sh: 2,
            sw: 2,
            ph: 1,
            pw: 1,
            dh: 1,
            dw: 1,
            groups: 1,
            x_pad,
            scale_len,
            x_nhwc: false,
            out_nhwc: false,
        }));
        let mut want = vec![0u8; len];
        let (bias_ptr, zero_ptr) =
            if full { (bias.as_ptr(), zero.as_ptr()) } else { (std::ptr::null(), std::ptr::null()) };
        // SAFETY: the vectors hold the extents the shape names.
        unsafe {
            qlinear_conv2d_reference(
                x.as_ptr(),
                packed.as_ptr(),
                bias_ptr,
                scale.as_ptr(),
                zero_ptr,
                want.as_mut_ptr(),
                &s,
                x_pad,
                scale_len,
            )
        };
        assert_eq!(&fx.arena.as_slice()[832..832 + len], &want[..], "per-channel {full}, x_pad {x_pad}");
    }
}
