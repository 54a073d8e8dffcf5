use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};
use rlx_sched::{MaskKind, Operand, Params, Segment, Thunk};

use rlx_runtime::arena::Arena;
use rlx_sched::thunk::{Attention, CachedAttention, SlidingCachedAttention, Softmax};

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

/// Runs `t` with the scratch its lowering reserves, checked to be at least
/// `scores_bytes` (the score matrices every attention needs).
fn run(arena: &mut Arena, weights: &Arena, scores_bytes: usize, params: Params, t: &Thunk<Operand>) {
    let reserved = rlx_core::lower::scratch_bytes(t, &params);
    assert!(reserved >= scores_bytes, "the lowering reserves {reserved} scratch bytes, fewer than {scores_bytes}");
    let mut scratch = Arena::new(reserved.max(64));
    super::common::exec(arena.as_mut_slice(), weights.as_slice(), scratch.as_mut_slice(), params, t);
}

fn params() -> Params {
    Params { mask_threshold: 0.5, mask_neg_inf: -1e9, score_skip: 0.0 }
}

#[test]
fn softmax_out_of_place_and_in_place() {
    let (rows, cols) = (3, 37);
    let mut rng = StdRng::seed_from_u64(1);
    let x: Vec<f32> = (0..rows * cols).map(|_| rng.gen_range(-5.0..5.0)).collect();
    let mut arena = Arena::new(2 * rows * cols * 4);
    put(&mut arena, 0, &x);
    let weights = Arena::new(64);
    let dst = rows * cols * 4;
    let a = |o| at(Segment::Arena, o);
    run(&mut arena, &weights, 0, params(), &Thunk::Softmax(Softmax { src: a(0), dst: a(dst), rows, cols }));
    let out = get(&arena, dst, rows * cols);
    run(&mut arena, &weights, 0, params(), &Thunk::Softmax(Softmax { src: a(0), dst: a(0), rows, cols }));
    let in_place = get(&arena, 0, rows * cols);
    assert_eq!(out, in_place);
    for r in 0..rows {
        let row = &x[r * cols..(r + 1) * cols];
        let m = row.iter().cloned().fold(f32::NEG_INFINITY, f32::max) as f64;
        let s: f64 = row.iter().map(|&v| (v as f64 - m).exp()).sum();
        for j in 0..cols {
            let want = (row[j] as f64 - m).exp() / s;
            // Softmax bound of kernels::softmax::tests for spread <= 10
            // and 37 columns: 2 exp errors, (10 + 10) u shift, (n+1) u.
            let tol = want * (4e-7 + 20.0 * U + (cols as f64 + 1.0) * U);
            assert!((out[r * cols + j] as f64 - want).abs() <= tol, "r={r} j={j}");
        }
    }
}

/// Naive BSHD attention in f64 (no softcap), for the arm's wiring; every
/// query sees at least one key (no fully masked rows).
fn naive(
    q: &[f32],
    k: &[f32],
    v: &[f32],
    mask: &[f32],
    kind: MaskKind,
    b: usize,
    s: usize,
    kv: usize,
    h: usize,
    kvh: usize,
    d: usize,
    p: Params,
    scale: f32,
) -> Vec<f64> {
    let mut out = vec![0.0; b * s * h * d];
    for bi in 0..b {
        for hi in 0..h {
            let g = hi / (h / kvh);
            for i in 0..s {
                let mut sc: Vec<f64> = (0..kv)
                    .map(|j| {
                        let dot: f64 = (0..d)
                            .map(|e| {
                                q[(bi * s + i) * h * d + hi * d + e] as f64
                                    * k[(bi * kv + j) * kvh * d + g * d + e] as f64
                            })
                            .sum();
                        dot * scale as f64
                    })
                    .collect();
                for (j, x) in sc.iter_mut().enumerate() {
                    match kind {
                        MaskKind::Custom if mask[bi * kv + j] < p.mask_threshold => *x = p.mask_neg_inf as f64,
                        MaskKind::Causal if j + s > i + kv => *x = f64::NEG_INFINITY,
                        // Query `i` at position `i + kv - s`: itself and
                        // the `w` keys before it.
                        MaskKind::SlidingWindow(w) if j + s > i + kv || j + s + w < i + kv => *x = f64::NEG_INFINITY,
                        _ => {}
                    }
                }
                let m = sc.iter().cloned().fold(f64::NEG_INFINITY, f64::max);
                let e: Vec<f64> = sc.iter().map(|x| (x - m).exp()).collect();
                let sum: f64 = e.iter().sum();
                for j in 0..kv {
                    let pj = e[j] / sum;
                    if pj > p.score_skip as f64 {
                        for c in 0..d {
                            out[((bi * s + i) * h + hi) * d + c] += pj * v[(bi * kv + j) * kvh * d + g * d + c] as f64;
                        }
                    }
                }
            }
        }
    }
    out
}

#[test]
fn attention_reads_every_field_and_the_schedule_params() {
    let (b, s, kv, h, kvh, d) = (2, 3, 5, 4, 2, 8);
    let mut rng = StdRng::seed_from_u64(2);
    let mut r = |n: usize| (0..n).map(|_| rng.gen_range(-1.0f32..1.0)).collect::<Vec<_>>();
    let (q, k, v) = (r(b * s * h * d), r(b * kv * kvh * d), r(b * kv * kvh * d));
    let mask: Vec<f32> = vec![1.0, 0.2, 1.0, 0.9, 0.0, 0.6, 1.0, 0.1, 0.7, 1.0];
    // K and V live in the weights segment, Q, mask and out in the arena.
    let (q_off, m_off, out_off) = (0, q.len() * 4, (q.len() + mask.len()) * 4);
    let mut arena = Arena::new(out_off + b * s * h * d * 4);
    put(&mut arena, q_off, &q);
    put(&mut arena, m_off, &mask);
    let mut weights = Arena::new((k.len() + v.len()) * 4);
    put(&mut weights, 0, &k);
    put(&mut weights, k.len() * 4, &v);
    for (kind, threshold) in [(MaskKind::Custom, 0.5), (MaskKind::Custom, 0.8), (MaskKind::Causal, 0.5)] {
        let p = Params { mask_threshold: threshold, mask_neg_inf: -1e9, score_skip: 0.0 };
        let t = Thunk::Attention(Attention {
            q: at(Segment::Arena, q_off),
            k: at(Segment::Weights, 0),
            v: at(Segment::Weights, k.len() * 4),
            mask: kind.reads_mask().then(|| at(Segment::Arena, m_off)),
            out: at(Segment::Arena, out_off),
            batch: b,
            seq: s,
            kv_seq: kv,
            heads: h,
            head_dim: d,
            v_head_dim: d,
            mask_kind: kind,
            scale: 0.3,
            softcap: 0.0,
            q_row_stride: h * d,
            k_row_stride: kvh * d,
            v_row_stride: kvh * d,
            bhsd: false,
            kv_heads: kvh,
        });
        run(&mut arena, &weights, b * h * s * kv * 4, p, &t);
        let got = get(&arena, out_off, b * s * h * d);
        let want = naive(&q, &k, &v, &mask, kind, b, s, kv, h, kvh, d, p, 0.3);
        for (i, (&g, &w)) in got.iter().zip(&want).enumerate() {
            // The kernel tests' first-order bound, worst case here:
            // scores |s| <= 0.3 * 8 with error 2 * (d + 2) u * 2.4 = 48 u
            // on each probability, 2 exp errors (7 u), the shift and
            // sum ((4.8 + kv + 4) u) and the PV sum ((kv + 1) u): 75 u
            // relative to sum p|v| <= 1, under 5e-6 absolute.
            assert!((g as f64 - w).abs() <= 5e-6, "{kind:?} thr={threshold} at {i}: {g} vs {w}");
        }
    }
}

#[test]
fn score_skip_comes_from_the_schedule() {
    // One query, two keys with probabilities 0.1 / 0.9 exactly in f64:
    // scores ln(1/9) apart. A skip of 0.5 drops the first value row.
    let gap = (9.0f64).ln() as f32;
    let q = [1.0f32];
    let k = [0.0f32, gap];
    let v = [100.0f32, 1.0];
    let mut arena = Arena::new(64);
    put(&mut arena, 0, &q);
    put(&mut arena, 4, &k);
    put(&mut arena, 12, &v);
    let weights = Arena::new(64);
    let t = Thunk::Attention(Attention {
        q: at(Segment::Arena, 0),
        k: at(Segment::Arena, 4),
        v: at(Segment::Arena, 12),
        mask: None,
        out: at(Segment::Arena, 20),
        batch: 1,
        seq: 1,
        kv_seq: 2,
        heads: 1,
        head_dim: 1,
        v_head_dim: 1,
        mask_kind: MaskKind::None,
        scale: 1.0,
        softcap: 0.0,
        q_row_stride: 1,
        k_row_stride: 1,
        v_row_stride: 1,
        bhsd: false,
        kv_heads: 1,
    });
    run(&mut arena, &weights, 8, Params { score_skip: 0.5, ..params() }, &t);
    let skipped = get(&arena, 20, 1)[0];
    // Only the 0.9 row: 0.9 * 1.0. The probabilities are off by a few
    // ulp (exp, sum, reciprocal); 1e-6 is 8 ulp at 0.9 and 1e-5 about
    // 10 ulp at 10.9.
    assert!((skipped - 0.9).abs() < 1e-6, "{skipped}");
    run(&mut arena, &weights, 8, params(), &t);
    let full = get(&arena, 20, 1)[0];
    assert!((full - 10.9).abs() < 1e-5, "{full}");
}

/// `CachedAttention` at run-time positions against the naive causal
/// attention over the cache rows written so far, and against `Attention`
/// specialised for that length (the same bits: it is the same kernel on
/// the narrowed shape). Both paths: a one-token step (direct) and a chunk
/// whose full-cache shape takes the GEMM path. Out-of-range positions give
/// zeros.
#[test]
fn cached_attention_reads_the_rows_before_its_position() {
    for (seq, max_len, h, kvh, d) in [(1, 9, 4, 2, 8), (4, 16, 2, 1, 8), (3, 5, 1, 1, 3)] {
        let mut rng = StdRng::seed_from_u64(seq as u64 * 31 + max_len as u64);
        let mut r = |n: usize| (0..n).map(|_| rng.gen_range(-1.0f32..1.0)).collect::<Vec<_>>();
        // Q rows carry two extra columns (a fused-QKV-like stride).
        let q_stride = h * d + 2;
        let (q, k, v) = (r(seq * q_stride), r(max_len * kvh * d), r(max_len * kvh * d));
        let (q_off, k_off, v_off) = (0, q.len() * 4, (q.len() + k.len()) * 4);
        let pos_off = ((q.len() + 2 * k.len()) * 4).next_multiple_of(8);
        let (out_off, ref_off) = (pos_off + 64, pos_off + 64 + seq * h * d * 4);
        let mut arena = Arena::new(ref_off + seq * h * d * 4);
        put(&mut arena, q_off, &q);
        put(&mut arena, k_off, &k);
        put(&mut arena, v_off, &v);
        let weights = Arena::new(64);
        let a = |o| at(Segment::Arena, o);
        let cached = Thunk::CachedAttention(CachedAttention {
            q: a(q_off),
            k: a(k_off),
            v: a(v_off),
            pos: a(pos_off),
            out: a(out_off),
            seq,
            max_len,
            heads: h,
            kv_heads: kvh,
            head_dim: d,
            scale: 0.4,
            q_row_stride: q_stride,
        });
        for pos in [0i64, 1, (max_len - seq) as i64, (max_len - seq + 1) as i64, -1] {
            arena.as_mut_slice()[pos_off..pos_off + 8].copy_from_slice(&pos.to_le_bytes());
            put(&mut arena, out_off, &vec![f32::NAN; seq * h * d]);
            run(&mut arena, &weights, 0, params(), &cached);
            let got = get(&arena, out_off, seq * h * d);
            let Some(p) = usize::try_from(pos).ok().filter(|p| p + seq <= max_len) else {
                assert!(got.iter().all(|&x| x == 0.0), "pos {pos}: out of range must write zeros");
                continue;
            };
            let kv = p + seq;
            let dense_q: Vec<f32> = (0..seq).flat_map(|i| q[i * q_stride..i * q_stride + h * d].to_vec()).collect();
            let want = naive(
                &dense_q,
                &k[..kv * kvh * d],
                &v[..kv * kvh * d],
                &[],
                MaskKind::Causal,
                1,
                seq,
                kv,
                h,
                kvh,
                d,
                params(),
                0.4,
            );
            for (i, (&g, &w)) in got.iter().zip(&want).enumerate() {
                // The bound of `attention_reads_every_field_and_the_schedule_params`.
                assert!((g as f64 - w).abs() <= 5e-6, "seq {seq} pos {pos} at {i}: {g} vs {w}");
            }
            let specialised = Thunk::Attention(Attention {
                q: a(q_off),
                k: a(k_off),
                v: a(v_off),
                mask: None,
                out: a(ref_off),
                batch: 1,
                seq,
                kv_seq: kv,
                heads: h,
                head_dim: d,
                v_head_dim: d,
                mask_kind: MaskKind::Causal,
                scale: 0.4,
                softcap: 0.0,
                q_row_stride: q_stride,
                k_row_stride: kvh * d,
                v_row_stride: kvh * d,
                bhsd: false,
                kv_heads: kvh,
            });
            // The path is fixed for the full cache; pin `Attention` to it
            // by comparing only where both lowerings agree on the path.
            let full = rlx_core::plan::attention_uses_gemm(seq, max_len, d, d);
            if full == rlx_core::plan::attention_uses_gemm(seq, kv, d, d) {
                run(&mut arena, &weights, 0, params(), &specialised);
                assert_eq!(get(&arena, ref_off, seq * h * d), got, "seq {seq} pos {pos}: differs from Attention");
            }
        }
    }
}

/// `SlidingCachedAttention` against the naive attention with the
/// `sliding_window` mask over every cache row written so far: leaving out
/// the rows before the first query's window changes no query's result.
/// A one-token step (direct path) and a chunk whose full-cache shape
/// takes the GEMM path; windows of 0 (the query alone), shorter than the
/// rows written, and longer than the cache.
#[test]
fn sliding_cached_attention_reads_only_the_window() {
    for (seq, max_len, h, kvh, d, window) in
        [(1, 9, 4, 2, 8, 2), (1, 9, 4, 2, 8, 0), (4, 16, 2, 1, 8, 3), (3, 5, 1, 1, 3, 9)]
    {
        let mut rng = StdRng::seed_from_u64(seq as u64 * 31 + max_len as u64 + window as u64);
        let mut r = |n: usize| (0..n).map(|_| rng.gen_range(-1.0f32..1.0)).collect::<Vec<_>>();
        let q_stride = h * d + 2;
        let (q, k, v) = (r(seq * q_stride), r(max_len * kvh * d), r(max_len * kvh * d));
        let (q_off, k_off, v_off) = (0, q.len() * 4, (q.len() + k.len()) * 4);
        let pos_off = ((q.len() + 2 * k.len()) * 4).next_multiple_of(8);
        let out_off = pos_off + 64;
        let mut arena = Arena::new(out_off + seq * h * d * 4);
        put(&mut arena, q_off, &q);
        put(&mut arena, k_off, &k);
        put(&mut arena, v_off, &v);
        let weights = Arena::new(64);
        let a = |o| at(Segment::Arena, o);
        let sliding = Thunk::SlidingCachedAttention(SlidingCachedAttention {
            q: a(q_off),
            k: a(k_off),
            v: a(v_off),
            pos: a(pos_off),
            out: a(out_off),
            seq,
            max_len,
            heads: h,
            kv_heads: kvh,
            head_dim: d,
            scale: 0.4,
            q_row_stride: q_stride,
            window,
        });
        for pos in [0i64, 1, (max_len - seq) as i64, (max_len - seq + 1) as i64, -1] {
            arena.as_mut_slice()[pos_off..pos_off + 8].copy_from_slice(&pos.to_le_bytes());
            put(&mut arena, out_off, &vec![f32::NAN; seq * h * d]);
            run(&mut arena, &weights, 0, params(), &sliding);
            let got = get(&arena, out_off, seq * h * d);
            let Some(p) = usize::try_from(pos).ok().filter(|p| p + seq <= max_len) else {
                assert!(got.iter().all(|&x| x == 0.0), "pos {pos}: out of range must write zeros");
                continue;
            };
            let kv = p + seq;
            let dense_q: Vec<f32> = (0..seq).flat_map(|i| q[i * q_stride..i * q_stride + h * d].to_vec()).collect();
            let want = naive(
                &dense_q,
                &k[..kv * kvh * d],
                &v[..kv * kvh * d],
                &[],
                MaskKind::SlidingWindow(window),
                1,
                seq,
                kv,
                h,
                kvh,
                d,
                params(),
                0.4,
            );
            for (i, (&g, &w)) in got.iter().zip(&want).enumerate() {
                // The bound of `attention_reads_every_field_and_the_schedule_params`.
                assert!((g as f64 - w).abs() <= 5e-6, "seq {seq} window {window} pos {pos} at {i}: {g} vs {w}");
            }
        }
    }
}
