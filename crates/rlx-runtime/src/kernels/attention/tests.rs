use proptest::prelude::*;
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};

use super::*;
use crate::kernels::softmax::EXP_MAX_REL_ERR;

use crate::kernels::test_support::{check_variants, identical, LENGTHS};
const U: f64 = f32::EPSILON as f64 / 2.0;

type DotFn = unsafe fn(*const f32, *const f32, usize) -> f32;
type AxpyFn = unsafe fn(f32, *const f32, *mut f32, usize);

fn variants() -> Vec<(&'static str, DotFn, AxpyFn)> {
    VEC_OPS.supported().into_iter().map(|(name, ops)| (name, ops.dot, ops.axpy)).collect()
}

fn random(rng: &mut StdRng, n: usize) -> Vec<f32> {
    (0..n).map(|_| rng.gen_range(-1.0f32..1.0)).collect()
}

#[test]
fn dot_matches_exact_over_tail_lengths() {
    let mut rng = StdRng::seed_from_u64(10);
    for (name, dot, _) in variants() {
        for &n in &LENGTHS {
            let (a, b) = (random(&mut rng, n), random(&mut rng, n));
            // SAFETY: both hold n.
            let got = unsafe { dot(a.as_ptr(), b.as_ptr(), n) } as f64;
            let want: f64 = a.iter().zip(&b).map(|(&x, &y)| x as f64 * y as f64).sum();
            let mag: f64 = a.iter().zip(&b).map(|(&x, &y)| (x as f64 * y as f64).abs()).sum();
            // Any summation order of n products: |err| <= n u sum|a b|.
            let tol = (n as f64 + 1.0) * U * mag;
            assert!((got - want).abs() <= tol, "{name} n={n}: {got} vs {want}");
        }
    }
}

#[test]
fn axpy_is_bit_identical_to_fused_reference() {
    let mut rng = StdRng::seed_from_u64(11);
    let axpys: Vec<(&'static str, AxpyFn)> = variants().into_iter().map(|(name, _, axpy)| (name, axpy)).collect();
    for &n in &LENGTHS {
        let (x, y0) = (random(&mut rng, n), random(&mut rng, n));
        let alpha = rng.gen_range(-2.0f32..2.0);
        let want: Vec<f32> = x.iter().zip(&y0).map(|(&x, &y)| alpha.mul_add(x, y)).collect();
        check_variants(&want, &axpys, identical, &format!("n={n}"), |axpy| {
            let mut y = y0.clone();
            // SAFETY: both hold n; distinct vectors.
            unsafe { axpy(alpha, x.as_ptr(), y.as_mut_ptr(), n) };
            y
        });
    }
}

#[test]
fn visible_keys_follow_the_end_aligned_rule() {
    // Brute force against the definition.
    for seq in 0..6 {
        for kv in 0..7 {
            for window in [None, Some(0), Some(1), Some(3)] {
                for i in 0..seq {
                    let qpos = i as i64 + kv as i64 - seq as i64;
                    let want: Vec<usize> = (0..kv)
                        .filter(|&j| (j as i64) <= qpos && window.is_none_or(|w| j as i64 + w as i64 >= qpos))
                        .collect();
                    let (lo, hi) = unit::visible_keys(i, seq, kv, window);
                    assert_eq!((lo..hi).collect::<Vec<_>>(), want, "seq={seq} kv={kv} w={window:?} i={i}");
                }
            }
        }
    }
}

/// One attention problem with its buffers.
struct Case {
    shape: AttentionShape,
    sc: AttentionScores,
    q: Vec<f32>,
    k: Vec<f32>,
    v: Vec<f32>,
    mask: Vec<f32>,
    /// Offsets of Q, K and V inside their buffers (fused QKV slices).
    q_off: usize,
    k_off: usize,
    v_off: usize,
}

fn scores(mask_kind: MaskKind, scale: f32) -> AttentionScores {
    AttentionScores { mask_kind, scale, softcap: 0.0, mask_threshold: 0.5, mask_neg_inf: -1e9, score_skip: 0.0 }
}

fn dense_shape(
    batch: usize,
    seq: usize,
    kv_seq: usize,
    heads: usize,
    kv_heads: usize,
    dh: usize,
    dv: usize,
    bhsd: bool,
) -> AttentionShape {
    AttentionShape {
        batch,
        seq,
        kv_seq,
        heads,
        kv_heads,
        head_dim: dh,
        v_head_dim: dv,
        q_row_stride: heads * dh,
        k_row_stride: kv_heads.max(1) * dh,
        v_row_stride: kv_heads.max(1) * dv,
        bhsd,
    }
}

impl Case {
    fn new(shape: AttentionShape, sc: AttentionScores, seed: u64) -> Case {
        let mut rng = StdRng::seed_from_u64(seed);
        let s = &shape;
        let nkv = s.kv_heads.max(1);
        let (q_len, k_len, v_len) = if s.bhsd {
            (
                s.batch * s.heads * s.seq * s.head_dim,
                s.batch * nkv * s.kv_seq * s.head_dim,
                s.batch * nkv * s.kv_seq * s.v_head_dim,
            )
        } else {
            (s.batch * s.seq * s.q_row_stride, s.batch * s.kv_seq * s.k_row_stride, s.batch * s.kv_seq * s.v_row_stride)
        };
        let mask = match sc.mask_kind {
            MaskKind::Custom => (0..s.batch * s.kv_seq).map(|_| if rng.gen_bool(0.7) { 1.0 } else { 0.0 }).collect(),
            MaskKind::Bias => (0..s.batch * s.heads * s.seq * s.kv_seq)
                .map(|_| if rng.gen_bool(0.2) { f32::NEG_INFINITY } else { rng.gen_range(-2.0..2.0) })
                .collect(),
            _ => Vec::new(),
        };
        Case {
            shape,
            sc,
            q: random(&mut rng, q_len),
            k: random(&mut rng, k_len),
            v: random(&mut rng, v_len),
            mask,
            q_off: 0,
            k_off: 0,
            v_off: 0,
        }
    }

    fn q_at(&self, b: usize, i: usize, h: usize, d: usize) -> f64 {
        let s = &self.shape;
        let idx = if s.bhsd {
            ((b * s.heads + h) * s.seq + i) * s.head_dim + d
        } else {
            (b * s.seq + i) * s.q_row_stride + h * s.head_dim + d
        };
        self.q[self.q_off + idx] as f64
    }

    fn k_at(&self, b: usize, j: usize, kvh: usize, d: usize) -> f64 {
        let s = &self.shape;
        let idx = if s.bhsd {
            ((b * s.kv_heads.max(1) + kvh) * s.kv_seq + j) * s.head_dim + d
        } else {
            (b * s.kv_seq + j) * s.k_row_stride + kvh * s.head_dim + d
        };
        self.k[self.k_off + idx] as f64
    }

    fn v_at(&self, b: usize, j: usize, kvh: usize, e: usize) -> f64 {
        let s = &self.shape;
        let idx = if s.bhsd {
            ((b * s.kv_heads.max(1) + kvh) * s.kv_seq + j) * s.v_head_dim + e
        } else {
            (b * s.kv_seq + j) * s.v_row_stride + kvh * s.v_head_dim + e
        };
        self.v[self.v_off + idx] as f64
    }

    fn out_index(&self, b: usize, i: usize, h: usize, e: usize) -> usize {
        let s = &self.shape;
        if s.bhsd {
            ((b * s.heads + h) * s.seq + i) * s.v_head_dim + e
        } else {
            ((b * s.seq + i) * s.heads + h) * s.v_head_dim + e
        }
    }

    fn out_len(&self) -> usize {
        let s = &self.shape;
        s.batch * s.seq * s.heads * s.v_head_dim
    }

    /// The exact probabilities of row `(b, h, i)`, with the rounding-error
    /// bound of the kernel's scores (absolute) and `sum_j p_j |s_j - max|`.
    fn naive_probs(&self, b: usize, h: usize, i: usize) -> (Vec<f64>, Vec<f64>, f64) {
        let (s, sc) = (&self.shape, &self.sc);
        let kvh = h / (s.heads / s.kv_heads.max(1)).max(1);
        let qpos = i as i64 + s.kv_seq as i64 - s.seq as i64;
        let mut sco = vec![0.0f64; s.kv_seq];
        let mut err = 0.0f64;
        for (j, x) in sco.iter_mut().enumerate() {
            let mut dot = 0.0;
            let mut mag = 0.0;
            for d in 0..s.head_dim {
                dot += self.q_at(b, i, h, d) * self.k_at(b, j, kvh, d);
                mag += (self.q_at(b, i, h, d) * self.k_at(b, j, kvh, d)).abs();
            }
            let mut v = dot * sc.scale as f64;
            // The dot in any order, then the scale multiply.
            let mut e = (s.head_dim as f64 + 2.0) * U * mag * (sc.scale as f64).abs() + U * v.abs();
            if sc.softcap > 0.0 {
                let c = sc.softcap as f64;
                v = c * (v / c).tanh();
                // tanh' <= 1 keeps the error; libm tanh and the two
                // roundings add 3 u |v|.
                e += 3.0 * U * v.abs();
            }
            match sc.mask_kind {
                MaskKind::Custom if self.mask[b * s.kv_seq + j] < sc.mask_threshold => v = sc.mask_neg_inf as f64,
                MaskKind::Bias => {
                    v += self.mask[((b * s.heads + h) * s.seq + i) * s.kv_seq + j] as f64;
                    e += U * v.abs();
                }
                MaskKind::Causal if j as i64 > qpos => v = f64::NEG_INFINITY,
                MaskKind::SlidingWindow(w) if j as i64 > qpos || (j as i64) + (w as i64) < qpos => {
                    v = f64::NEG_INFINITY
                }
                _ => {}
            }
            *x = v;
            err = err.max(e);
        }
        let m = sco.iter().cloned().fold(f64::NEG_INFINITY, f64::max);
        if m == f64::NEG_INFINITY {
            return (vec![0.0; s.kv_seq], vec![0.0; s.kv_seq], 0.0);
        }
        let e: Vec<f64> = sco.iter().map(|&x| (x - m).exp()).collect();
        let sum: f64 = e.iter().sum();
        let p: Vec<f64> = e.iter().map(|x| x / sum).collect();
        let spread: f64 = p.iter().zip(&sco).map(|(p, x)| if *p > 0.0 { p * (x - m).abs() } else { 0.0 }).sum();
        // Per key: the shift rounding and twice the score error; keys with
        // no weight (masked to -inf) contribute nothing.
        let dist: Vec<f64> =
            sco.iter().zip(&p).map(|(x, p)| if *p > 0.0 { (x - m).abs() * U + 2.0 * err } else { 0.0 }).collect();
        (p, dist, spread)
    }

    /// Checks `got` against the exact attention, element by element, with
    /// a first-order bound: each probability is off relatively by twice the
    /// score error, the shift rounding `|s_j - max| u`, `exp`
    /// (`EXP_MAX_REL_ERR`), the softmax sum (`sum_j p_j |s_j - max| u +
    /// EXP_MAX_REL_ERR + kv u`) and the reciprocal and multiply (`2 u`);
    /// the `PV` sum adds `(kv + 1) u` relative to `sum_j p_j |v_j|`. SIMD
    /// `exp` flushes results below `f32::MIN_POSITIVE` to 0, at most that
    /// much per key absolutely.
    fn check(&self, got: &[f32], what: &str) {
        let s = &self.shape;
        let kv = s.kv_seq as f64;
        for b in 0..s.batch {
            for h in 0..s.heads {
                let kvh = h / (s.heads / s.kv_heads.max(1)).max(1);
                for i in 0..s.seq {
                    let (p, dist, spread) = self.naive_probs(b, h, i);
                    let common = 2.0 * EXP_MAX_REL_ERR as f64 + spread * U + kv * U + 2.0 * U + (kv + 1.0) * U;
                    for e in 0..s.v_head_dim {
                        let mut want = 0.0;
                        let mut tol = 0.0;
                        for j in 0..s.kv_seq {
                            let v = self.v_at(b, j, kvh, e);
                            if p[j] > self.sc.score_skip as f64 {
                                want += p[j] * v;
                            }
                            tol += p[j] * v.abs() * (common + dist[j]) + f32::MIN_POSITIVE as f64 * v.abs();
                        }
                        let g = got[self.out_index(b, i, h, e)] as f64;
                        assert!(
                            (g - want).abs() <= tol,
                            "{what}: b={b} h={h} i={i} e={e}: got {g} want {want} tol {tol:e}"
                        );
                    }
                }
            }
        }
    }

    fn run(&self, path: AttentionPath, par: bool) -> Vec<f32> {
        self.run_rows(unit::rows_kernel(), path, par)
    }

    /// [`Case::run`] with the score rows' variant `rows`.
    fn run_rows(&self, rows: unit::RowsFn, path: AttentionPath, par: bool) -> Vec<f32> {
        let s = &self.shape;
        let mut out = vec![f32::NAN; self.out_len()];
        let mut scratch = vec![f32::NAN; attention_scratch_bytes(s) / 4];
        let mask = if self.mask.is_empty() { std::ptr::null() } else { self.mask.as_ptr() };
        // SAFETY: the buffers were sized for this shape above; `rows` is a
        // variant this CPU runs.
        unsafe {
            attention_with(
                rows,
                self.q.as_ptr().add(self.q_off),
                self.k.as_ptr().add(self.k_off),
                self.v.as_ptr().add(self.v_off),
                mask,
                out.as_mut_ptr(),
                s,
                &self.sc,
                path,
                scratch.as_mut_ptr(),
                par,
            )
        };
        out
    }

    /// Both paths against the exact result; `par` bit-identical to serial;
    /// every variant of the score rows bit-identical to the scalar one.
    fn check_all(&self, what: &str) {
        let rows = unit::ROWS_KERNELS.supported();
        let scalar = rows.last().expect("the scalar rows").1;
        for path in [AttentionPath::Direct, AttentionPath::Gemm] {
            let serial = self.run(path, false);
            self.check(&serial, &format!("{what} {path:?}"));
            let parallel = self.run(path, true);
            assert_eq!(bits(&serial), bits(&parallel), "{what} {path:?}: par differs");
            let reference = self.run_rows(scalar, path, false);
            check_variants(&reference, &rows, identical, &format!("{what} {path:?} rows"), |r| {
                self.run_rows(r, path, false)
            });
        }
    }
}

fn bits(v: &[f32]) -> Vec<u32> {
    v.iter().map(|x| x.to_bits()).collect()
}

#[test]
fn no_mask_bshd_and_bhsd() {
    for bhsd in [false, true] {
        let c = Case::new(dense_shape(2, 5, 5, 3, 3, 8, 8, bhsd), scores(MaskKind::None, 0.35), 20);
        c.check_all(&format!("none bhsd={bhsd}"));
    }
}

#[test]
fn causal_square_decode_and_more_queries_than_keys() {
    for (seq, kv) in [(7, 7), (3, 9), (1, 6), (6, 4)] {
        for bhsd in [false, true] {
            let c = Case::new(dense_shape(2, seq, kv, 2, 2, 9, 9, bhsd), scores(MaskKind::Causal, 0.3), 21);
            c.check_all(&format!("causal seq={seq} kv={kv} bhsd={bhsd}"));
        }
    }
}

#[test]
fn rows_seeing_no_key_are_zero() {
    let c = Case::new(dense_shape(1, 6, 4, 2, 2, 4, 4, false), scores(MaskKind::Causal, 0.5), 22);
    for path in [AttentionPath::Direct, AttentionPath::Gemm] {
        let out = c.run(path, false);
        // Queries 0 and 1 sit at positions -2 and -1.
        for i in 0..2 {
            for h in 0..2 {
                for e in 0..4 {
                    assert_eq!(out[c.out_index(0, i, h, e)], 0.0, "{path:?} i={i}");
                }
            }
        }
    }
}

#[test]
fn sliding_window() {
    for (seq, kv, w) in [(9, 9, 2), (3, 10, 4), (5, 5, 0), (4, 4, 10)] {
        let c = Case::new(dense_shape(1, seq, kv, 2, 1, 8, 8, false), scores(MaskKind::SlidingWindow(w), 0.4), 23);
        c.check_all(&format!("window {w} seq={seq} kv={kv}"));
    }
}

#[test]
fn custom_key_padding_mask_including_a_fully_padded_batch() {
    let mut c = Case::new(dense_shape(3, 4, 7, 2, 2, 8, 8, false), scores(MaskKind::Custom, 0.3), 24);
    // Batch 1 hides every key: all scores are mask_neg_inf, a finite
    // value, so the row is uniform (the masked scores stay finite).
    for j in 0..7 {
        c.mask[7 + j] = 0.0;
    }
    c.check_all("custom");
    let mut bh = Case::new(dense_shape(2, 4, 7, 2, 2, 8, 8, true), scores(MaskKind::Custom, 0.3), 25);
    bh.mask[0] = 0.49;
    bh.check_all("custom bhsd");
}

#[test]
fn bias_mask_with_neg_inf_entries() {
    for bhsd in [false, true] {
        let c = Case::new(dense_shape(2, 5, 6, 3, 3, 8, 8, bhsd), scores(MaskKind::Bias, 0.3), 26);
        c.check_all(&format!("bias bhsd={bhsd}"));
    }
}

#[test]
fn grouped_and_multi_query_kv_heads() {
    for (heads, kv_heads) in [(6, 2), (6, 3), (4, 1)] {
        for bhsd in [false, true] {
            let c = Case::new(dense_shape(2, 4, 5, heads, kv_heads, 8, 8, bhsd), scores(MaskKind::Causal, 0.3), 27);
            c.check_all(&format!("gqa {heads}/{kv_heads} bhsd={bhsd}"));
        }
    }
}

#[test]
fn softcap_with_masks_keeps_masked_keys_out() {
    for kind in [MaskKind::Causal, MaskKind::Custom, MaskKind::Bias, MaskKind::None] {
        let mut sc = scores(kind, 4.0);
        sc.softcap = 3.0;
        let c = Case::new(dense_shape(2, 5, 5, 2, 2, 8, 8, false), sc, 28);
        c.check_all(&format!("softcap {kind:?}"));
    }
    // Masked keys get exactly zero weight: V rows hidden by the causal mask
    // can be poisoned without changing row 0.
    let mut sc = scores(MaskKind::Causal, 4.0);
    sc.softcap = 3.0;
    let mut c = Case::new(dense_shape(1, 3, 3, 1, 1, 4, 4, false), sc, 29);
    let clean = c.run(AttentionPath::Direct, false);
    for x in &mut c.v[4..] {
        *x = 1e30;
    }
    let poisoned = c.run(AttentionPath::Direct, false);
    assert_eq!(bits(&clean[..4]), bits(&poisoned[..4]));
}

#[test]
fn score_skip_drops_small_probabilities() {
    let mut c = Case::new(dense_shape(2, 6, 9, 2, 2, 8, 8, false), scores(MaskKind::None, 2.0), 30);
    // Put the threshold in the widest gap between the exact probabilities,
    // so rounding cannot flip a decision.
    let mut all = Vec::new();
    for b in 0..2 {
        for h in 0..2 {
            for i in 0..6 {
                all.extend(c.naive_probs(b, h, i).0);
            }
        }
    }
    all.sort_by(f64::total_cmp);
    let (gap, mid) = all
        .windows(2)
        .filter(|w| w[0] > 0.02 && w[1] < 0.3)
        .map(|w| (w[1] - w[0], (w[0] + w[1]) / 2.0))
        .fold((0.0, 0.0), |a, b| if b.0 > a.0 { b } else { a });
    assert!(gap > 1e-4, "test data has no usable gap");
    c.sc.score_skip = mid as f32;
    let skipped = all.iter().filter(|&&p| p > 0.0 && p <= mid).count();
    assert!(skipped > 0, "the threshold skips nothing");
    c.check_all("score skip");
}

#[test]
fn fused_qkv_slices_with_padded_row_strides() {
    let (b, s, h, kvh, dh) = (2, 5, 4, 2, 8);
    let row = (h + 2 * kvh) * dh + 3; // 3 pad elements per row
    let mut shape = dense_shape(b, s, s, h, kvh, dh, dh, false);
    shape.q_row_stride = row;
    shape.k_row_stride = row;
    shape.v_row_stride = row;
    let mut rng = StdRng::seed_from_u64(31);
    let qkv = random(&mut rng, b * s * row);
    let c = Case {
        shape,
        sc: scores(MaskKind::Causal, 0.3),
        q: qkv.clone(),
        k: qkv.clone(),
        v: qkv,
        mask: Vec::new(),
        q_off: 0,
        k_off: h * dh,
        v_off: (h + kvh) * dh,
    };
    c.check_all("fused qkv");
}

#[test]
fn v_head_dim_differs_from_head_dim() {
    for (dh, dv) in [(16, 8), (5, 12)] {
        for bhsd in [false, true] {
            let mut shape = dense_shape(2, 4, 6, 3, 3, dh, dv, bhsd);
            if !bhsd {
                shape.q_row_stride += 2;
                shape.v_row_stride += 1;
            }
            let c = Case::new(shape, scores(MaskKind::Causal, 0.25), 32);
            c.check_all(&format!("dh={dh} dv={dv} bhsd={bhsd}"));
        }
    }
}

#[test]
fn odd_and_degenerate_sizes() {
    for (seq, kv, dh) in [(3, 3, 1), (2, 5, 33), (4, 4, 0), (3, 0, 8), (1, 1, 1)] {
        let c = Case::new(dense_shape(1, seq, kv, 2, 2, dh, 3, false), scores(MaskKind::None, 0.5), 33);
        c.check_all(&format!("seq={seq} kv={kv} dh={dh}"));
    }
}

#[test]
fn path_choice_is_a_pure_function_of_shape() {
    let decode = dense_shape(1, 1, 512, 8, 8, 64, 64, false);
    assert_eq!(attention_path(&decode), AttentionPath::Gemm);
    let prefill = dense_shape(1, 128, 128, 8, 8, 64, 64, false);
    assert_eq!(attention_path(&prefill), AttentionPath::Gemm);
    let tiny = dense_shape(1, 4, 4, 8, 8, 8, 8, false);
    assert_eq!(attention_path(&tiny), AttentionPath::Direct);
    let edge = dense_shape(1, 4, 4, 8, 8, 32, 32, false);
    assert_eq!(attention_path(&edge), AttentionPath::Gemm);
}

#[test]
fn the_chosen_path_on_a_prefill_shape() {
    let c = Case::new(dense_shape(1, 32, 32, 2, 2, 64, 64, false), scores(MaskKind::Causal, 0.125), 34);
    assert_eq!(attention_path(&c.shape), AttentionPath::Gemm);
    c.check_all("prefill");
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(24))]

    #[test]
    fn random_shapes_match_exact(
        batch in 1usize..3, seq in 1usize..7, kv in 0usize..9, kv_heads in 1usize..3, group in 1usize..3,
        dh in 1usize..20, dv in 1usize..12, bhsd in any::<bool>(), mask in 0usize..5, seed in any::<u64>(),
    ) {
        let kind = [MaskKind::None, MaskKind::Causal, MaskKind::SlidingWindow(2), MaskKind::Custom, MaskKind::Bias][mask];
        let c = Case::new(dense_shape(batch, seq, kv, kv_heads * group, kv_heads, dh, dv, bhsd), scores(kind, 0.4), seed);
        c.check_all("prop");
    }
}

/// MiniLM-L6's attention (seq 128, 12 heads of 32, a per-head bias mask),
/// one thread: `cargo test --release -p rlx-runtime attention_timing --
/// --ignored --nocapture`.
#[test]
#[ignore = "timing; run by hand"]
fn attention_timing() {
    let shape = dense_shape(1, 128, 128, 12, 12, 32, 32, false);
    let sc = scores(MaskKind::Bias, 32f32.sqrt().recip());
    let case = Case::new(shape, sc, 7);
    for path in [AttentionPath::Gemm, AttentionPath::Direct] {
        let mut best = f64::INFINITY;
        for _ in 0..5 {
            let t = std::time::Instant::now();
            for _ in 0..20 {
                std::hint::black_box(case.run(path, false));
            }
            best = best.min(t.elapsed().as_secs_f64() / 20.0);
        }
        println!("{path:?}: {:.1} us per call", best * 1e6);
    }
}
