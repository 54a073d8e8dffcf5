//! The reference: ONNX's equations one output element at a time, on
//! slices, every offset computed from the layout where it is used and the
//! packed weight read through its index formula. Each product term is its
//! bias (or 0) followed by one fused multiply-add per `k` in increasing
//! order, which is what the tiled GEMM computes, and every other operation
//! is the one the entry performs, so the two agree bit for bit. The gate
//! activations are `activation::act_f32_fast`: the bits the entry's fast
//! activation path gives each element on this CPU (the vector forms of
//! sigmoid and tanh where they exist, `math` elsewhere); the activations
//! themselves are tested against f64 references in the activation family.

use rlx_core::pack::{packed_len, PANEL};
use rlx_core::{ActKind, RecurrentCell};

use super::RecurrentShape;
use crate::kernels::activation::act_f32_fast;

/// The inputs of one call (`None`: absent).
#[derive(Clone, Copy, Debug)]
pub struct Inputs<'a> {
    pub x: &'a [f32],
    pub r: &'a [f32],
    pub bias: Option<&'a [f32]>,
    pub p: Option<&'a [f32]>,
    pub h0: Option<&'a [f32]>,
    pub c0: Option<&'a [f32]>,
}

/// The outputs of one call (`None`: not written).
#[derive(Debug)]
pub struct Outputs<'a> {
    pub y: Option<&'a mut [f32]>,
    pub y_h: Option<&'a mut [f32]>,
    pub y_c: Option<&'a mut [f32]>,
}

/// Column `j` of the product of `a` (one row of `k`) with the packed
/// `k x n` matrix at `w[at..]`: `bias`, then `a[p] * W[p, j]` fused in, `p`
/// from 0.
fn dot(a: &[f32], w: &[f32], at: usize, j: usize, bias: f32) -> f32 {
    let k = a.len();
    let mut acc = bias;
    for (p, &ap) in a.iter().enumerate() {
        acc = ap.mul_add(w[at + (j / PANEL) * PANEL * k + p * PANEL + j % PANEL], acc);
    }
    acc
}

/// `act(clamp(v))`, the clamp to `[-clip, clip]` letting NaN through.
fn gate(v: f32, clip: f32, act: ActKind) -> f32 {
    let v = if v < -clip {
        -clip
    } else if v > clip {
        clip
    } else {
        v
    };
    act_f32_fast(act, v)
}

/// One direction of the layer, as `super::recurrent_f32` (see
/// `Thunk::Recurrent`).
pub fn recurrent(s: &RecurrentShape, inp: &Inputs<'_>, out: Outputs<'_>) {
    let (n, batch, dirs, dir) = (s.hidden, s.batch, s.dirs, s.dir);
    let cols = s.cell.gates() * n;
    let state_row = |b: usize| if s.batch_major { b * dirs + dir } else { dir * batch + b };
    let load = |src: Option<&[f32]>, b: usize| match src {
        Some(v) => v[state_row(b) * n..][..n].to_vec(),
        None => vec![0.0; n],
    };
    let mut h: Vec<Vec<f32>> = (0..batch).map(|b| load(inp.h0, b)).collect();
    let mut c: Vec<Vec<f32>> = (0..batch).map(|b| load(inp.c0, b)).collect();
    let Outputs { mut y, y_h, y_c } = out;
    let bias = |j: usize| inp.bias.map_or(0.0, |v| v[j]);
    let peep = |j: usize| inp.p.map_or(0.0, |v| v[j]);
    for i in 0..s.seq {
        let t = if s.reverse { s.seq - 1 - i } else { i };
        let mut next_h = h.clone();
        for b in 0..batch {
            let x_row = if s.batch_major { b * s.seq + t } else { t * batch + b };
            let x = &inp.x[(x_row * dirs + dir) * cols..][..cols];
            let hb = &h[b];
            // The projection plus the recurrent product of gate column `j`.
            let pre = |j: usize| x[j] + dot(hb, inp.r, 0, j, bias(j));
            match s.cell {
                RecurrentCell::Lstm => {
                    for j in 0..n {
                        let old = c[b][j];
                        let with_peephole = |v: f32, p: usize, cell: f32| match inp.p {
                            Some(_) => v + peep(p) * cell,
                            None => v,
                        };
                        let ig = gate(with_peephole(pre(j), j, old), s.clip, s.act_f);
                        let fg = gate(with_peephole(pre(2 * n + j), 2 * n + j, old), s.clip, s.act_f);
                        let cand = gate(pre(3 * n + j), s.clip, s.act_g);
                        let new = fg * old + ig * cand;
                        let og = gate(with_peephole(pre(n + j), n + j, new), s.clip, s.act_f);
                        c[b][j] = new;
                        next_h[b][j] = og * act_f32_fast(s.act_h, new);
                    }
                }
                RecurrentCell::Gru | RecurrentCell::GruLinearBeforeReset => {
                    let z: Vec<f32> = (0..n).map(|j| gate(pre(j), s.clip, s.act_f)).collect();
                    let r: Vec<f32> = (0..n).map(|j| gate(pre(n + j), s.clip, s.act_f)).collect();
                    for j in 0..n {
                        let cand_pre = if s.cell == RecurrentCell::Gru {
                            // The `h` columns: their own packed matrix after
                            // the `z, r` ones, applied to `r (.) H`.
                            let rh: Vec<f32> = (0..n).map(|k| r[k] * hb[k]).collect();
                            x[2 * n + j] + dot(&rh, inp.r, packed_len(n, 2 * n).unwrap_or(0), j, bias(2 * n + j))
                        } else {
                            x[2 * n + j] + r[j] * dot(hb, inp.r, 0, 2 * n + j, bias(2 * n + j))
                        };
                        let cand = gate(cand_pre, s.clip, s.act_g);
                        next_h[b][j] = (1.0 - z[j]) * cand + z[j] * hb[j];
                    }
                }
                RecurrentCell::Rnn => {
                    for (j, v) in next_h[b].iter_mut().enumerate() {
                        *v = gate(pre(j), s.clip, s.act_f);
                    }
                }
            }
        }
        h = next_h;
        if let Some(y) = y.as_deref_mut() {
            for (b, hb) in h.iter().enumerate() {
                let row = if s.batch_major { (b * s.seq + t) * dirs + dir } else { (t * dirs + dir) * batch + b };
                y[row * n..][..n].copy_from_slice(hb);
            }
        }
    }
    for (dst, state) in [(y_h, &h), (y_c, &c)] {
        if let Some(dst) = dst {
            for (b, v) in state.iter().enumerate() {
                dst[state_row(b) * n..][..n].copy_from_slice(v);
            }
        }
    }
}
