//! Every norm arm and `Rope` through `exec_thunk` against naive
//! computations.

use rlx_sched::thunk::{BatchNormInference, FusedResidualLN, FusedResidualRmsNorm, LayerNorm, RmsNorm, Rope, RopeAt};
use rlx_sched::{Operand, Params, Segment, Thunk};

/// A 4-byte aligned f32 arena.
struct Arena(Vec<f32>);

impl Arena {
    fn run(&mut self, t: &Thunk<Operand>) {
        let n = self.0.len() * 4;
        // SAFETY: a `Vec<f32>` is `n` initialised bytes.
        let bytes = unsafe { std::slice::from_raw_parts_mut(self.0.as_mut_ptr().cast::<u8>(), n) };
        let params = Params { mask_threshold: 0.5, mask_neg_inf: -1e9, score_skip: 0.0 };
        super::common::exec(bytes, &[], &mut [], params, t);
    }
}

/// The operand at f32 index `i`.
fn at(i: usize) -> Operand {
    Operand { segment: Segment::Arena, offset: i * 4, buffer: None }
}

fn values(n: usize, seed: u32) -> Vec<f32> {
    // A small deterministic generator is enough for these shapes.
    (0..n as u32).map(|i| ((i.wrapping_mul(2_654_435_761) ^ seed) % 2000) as f32 / 500.0 - 2.0).collect()
}

/// f64 normalisation of one row: `(v - mean) / sqrt(var + eps)` with
/// `mean = 0` and `var = mean(v^2)` for RMS.
fn normalize_row(v: &[f64], rms: bool, eps: f64) -> Vec<f64> {
    let n = v.len() as f64;
    let mean = if rms { 0.0 } else { v.iter().sum::<f64>() / n };
    let var = v.iter().map(|a| (a - mean) * (a - mean)).sum::<f64>() / n;
    v.iter().map(|a| (a - mean) / (var + eps).sqrt()).collect()
}

/// Rows of 37: sums of at most `37 / 32 + 16 = 17` additions, so the
/// kernel's bound (see the kernel tests) is `4 * 17 * eps * (1 + |r|)`,
/// about 8.1e-6 relative to `1 + |r|`.
fn close(got: &[f32], want: &[f64]) {
    assert_eq!(got.len(), want.len());
    for (i, (&g, &w)) in got.iter().zip(want).enumerate() {
        let tol = 4.0 * 17.0 * f32::EPSILON as f64 * (1.0 + w.abs());
        assert!((g as f64 - w).abs() <= tol, "elem {i}: {g} vs {w}");
    }
}

const ROWS: usize = 3;
const H: usize = 37;
const N: usize = ROWS * H;
// Layout (f32 indices): x, res, bias, g, b, out.
const X: usize = 0;
const RES: usize = N;
const BIAS: usize = 2 * N;
const G: usize = 2 * N + H;
const B: usize = 2 * N + 2 * H;
const OUT: usize = 2 * N + 3 * H;
const LEN: usize = 3 * N + 3 * H;

fn arena() -> Arena {
    let mut v = values(LEN, 7);
    for g in &mut v[G..G + H] {
        *g = 0.5 + g.abs() / 2.0;
    }
    Arena(v)
}

/// `normalize(rows of pre) * g + b?` in f64.
fn reference(a: &Arena, pre: &[f64], rms: bool, shift: bool) -> Vec<f64> {
    let mut out = Vec::new();
    for r in 0..ROWS {
        let n = normalize_row(&pre[r * H..(r + 1) * H], rms, 1e-5);
        for (i, ni) in n.iter().enumerate() {
            let b = if shift { a.0[B + i] as f64 } else { 0.0 };
            out.push(ni * a.0[G + i] as f64 + b);
        }
    }
    out
}

fn x_plus(a: &Arena, res: bool, bias: bool) -> Vec<f64> {
    (0..N)
        .map(|i| {
            let mut v = a.0[X + i] as f64;
            if res {
                v += a.0[RES + i] as f64;
            }
            if bias {
                v += a.0[BIAS + i % H] as f64;
            }
            v
        })
        .collect()
}

#[test]
fn layer_norm_with_and_without_shift() {
    for shift in [false, true] {
        let mut a = arena();
        let want = reference(&a, &x_plus(&a, false, false), false, shift);
        let b = shift.then_some(at(B));
        a.run(&Thunk::LayerNorm(LayerNorm { x: at(X), g: at(G), b, out: at(OUT), rows: ROWS, h: H, eps: 1e-5 }));
        close(&a.0[OUT..OUT + N], &want);
        // In place.
        a.run(&Thunk::LayerNorm(LayerNorm { x: at(X), g: at(G), b, out: at(X), rows: ROWS, h: H, eps: 1e-5 }));
        assert_eq!(a.0[X..X + N], a.0[OUT..OUT + N]);
    }
}

#[test]
fn rms_norm() {
    let mut a = arena();
    let want = reference(&a, &x_plus(&a, false, false), true, false);
    a.run(&Thunk::RmsNorm(RmsNorm { x: at(X), g: at(G), out: at(OUT), rows: ROWS, h: H, eps: 1e-5 }));
    close(&a.0[OUT..OUT + N], &want);
}

#[test]
fn fused_residual_ln_with_and_without_bias() {
    for bias in [false, true] {
        let mut a = arena();
        let want = reference(&a, &x_plus(&a, true, bias), false, true);
        let bias_op = bias.then_some(at(BIAS));
        let t = |out| {
            Thunk::FusedResidualLN(FusedResidualLN {
                x: at(X),
                res: at(RES),
                bias: bias_op,
                g: at(G),
                b: at(B),
                out: at(out),
                rows: ROWS,
                h: H,
                eps: 1e-5,
            })
        };
        a.run(&t(OUT));
        close(&a.0[OUT..OUT + N], &want);
        // In place over the residual.
        a.run(&t(RES));
        assert_eq!(a.0[RES..RES + N], a.0[OUT..OUT + N]);
    }
}

#[test]
fn fused_residual_rms_norm_options() {
    for (bias, shift) in [(false, false), (true, true), (false, true)] {
        let mut a = arena();
        let want = reference(&a, &x_plus(&a, true, bias), true, shift);
        let t = |out| {
            Thunk::FusedResidualRmsNorm(FusedResidualRmsNorm {
                x: at(X),
                res: at(RES),
                bias: bias.then_some(at(BIAS)),
                g: at(G),
                b: shift.then_some(at(B)),
                out: at(out),
                rows: ROWS,
                h: H,
                eps: 1e-5,
            })
        };
        a.run(&t(OUT));
        close(&a.0[OUT..OUT + N], &want);
        a.run(&t(X));
        assert_eq!(a.0[X..X + N], a.0[OUT..OUT + N]);
    }
}

#[test]
fn batch_norm_inference() {
    let (n, c, hw) = (2, 3, 5);
    let len = n * c * hw;
    // x, scale, bias, mean, var, out.
    let (scale, bias, mean, var, out) = (len, len + c, len + 2 * c, len + 3 * c, len + 4 * c);
    let mut a = Arena(values(2 * len + 4 * c, 3));
    for v in &mut a.0[var..var + c] {
        *v = v.abs() + 0.1;
    }
    let want: Vec<f64> = (0..len)
        .map(|i| {
            let ch = (i / hw) % c;
            let f = |k: usize| a.0[k + ch] as f64;
            (a.0[i] as f64 - f(mean)) / (f(var) + 1e-5).sqrt() * f(scale) + f(bias)
        })
        .collect();
    a.run(&Thunk::BatchNormInference(BatchNormInference {
        x: at(0),
        scale: at(scale),
        bias: at(bias),
        mean: at(mean),
        var: at(var),
        out: at(out),
        n,
        c,
        hw,
        eps: 1e-5,
    }));
    // Six roundings on outputs below 2 / sqrt(0.1) * 2 + 2 < 16.
    for (i, (&g, &w)) in a.0[out..out + len].iter().zip(&want).enumerate() {
        assert!((g as f64 - w).abs() <= 8.0 * 16.0 * f32::EPSILON as f64, "elem {i}: {g} vs {w}");
    }
}

#[test]
fn rope_both_layouts_in_place() {
    let (batch, seq, heads, hd) = (2, 3, 2, 6);
    let (half, len) = (hd / 2, batch * seq * heads * hd);
    // x, cos, sin, out.
    let (cos, sin, out) = (len, len + seq * half, len + 2 * seq * half);
    for interleaved in [false, true] {
        let mut a = Arena(values(2 * len + 2 * seq * half, 11));
        let x = a.0[..len].to_vec();
        let mut want = x.clone();
        for r in 0..batch * seq * heads {
            let s = (r / heads) % seq;
            for i in 0..half {
                let (p, q) = if interleaved { (2 * i, 2 * i + 1) } else { (i, i + half) };
                let (x1, x2) = (x[r * hd + p], x[r * hd + q]);
                let (c, sn) = (a.0[cos + s * half + i], a.0[sin + s * half + i]);
                want[r * hd + p] = x1 * c - x2 * sn;
                want[r * hd + q] = x2 * c + x1 * sn;
            }
        }
        let t = |o| {
            Thunk::Rope(Rope {
                x: at(0),
                cos: at(cos),
                sin: at(sin),
                out: at(o),
                batch,
                seq,
                heads,
                head_dim: hd,
                interleaved,
            })
        };
        a.run(&t(out));
        // Rounded like the naive formula: exact.
        assert_eq!(a.0[out..out + len], want[..]);
        a.run(&t(0));
        assert_eq!(a.0[..len], want[..]);
    }
}

/// `RopeAt` rotates by table rows `pos..pos + seq`: the bits of `Rope`
/// handed those rows; a position past the tables writes zeros.
#[test]
fn rope_at_reads_the_table_rows_at_its_position() {
    let (seq, heads, hd, max_len) = (3, 2, 6, 7);
    let (half, len) = (hd / 2, seq * heads * hd);
    // x, cos, sin, pos (as two f32 words), out, reference.
    let (cos, sin) = (len, len + max_len * half);
    let pos = sin + max_len * half;
    let (out, want_at) = (pos + 2, pos + 2 + len);
    for interleaved in [false, true] {
        for p in [0i64, 2, (max_len - seq) as i64, (max_len - seq + 1) as i64, -3] {
            let mut a = Arena(values(want_at + len, 17));
            let bits = p.to_le_bytes();
            a.0[pos] = f32::from_le_bytes(bits[..4].try_into().unwrap());
            a.0[pos + 1] = f32::from_le_bytes(bits[4..].try_into().unwrap());
            a.run(&Thunk::RopeAt(RopeAt {
                x: at(0),
                cos: at(cos),
                sin: at(sin),
                pos: at(pos),
                out: at(out),
                seq,
                heads,
                head_dim: hd,
                max_len,
                interleaved,
            }));
            let got = a.0[out..out + len].to_vec();
            let Some(p) = usize::try_from(p).ok().filter(|p| p + seq <= max_len) else {
                assert!(got.iter().all(|&x| x == 0.0), "pos {p}: out of range must write zeros");
                continue;
            };
            a.run(&Thunk::Rope(Rope {
                x: at(0),
                cos: at(cos + p * half),
                sin: at(sin + p * half),
                out: at(want_at),
                batch: 1,
                seq,
                heads,
                head_dim: hd,
                interleaved,
            }));
            assert_eq!(got, a.0[want_at..want_at + len], "pos {p} interleaved {interleaved}");
        }
    }
}
