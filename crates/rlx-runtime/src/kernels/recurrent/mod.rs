//! Recurrent layers: one direction of an ONNX `LSTM`, `GRU` or `RNN` over a
//! whole sequence (the `Recurrent` thunk).
//!
//! The input projections `X W^T` with their biases arrive precomputed in
//! `x`: the importer emits one matrix product over every step before this
//! thunk. What is left is sequential. Per step: the product of the state
//! with the recurrence weight, `H R^T`, on the tiled GEMM (`R^T` prepacked
//! by the importer, `rlx_core::pack`); then, row by row, the projections
//! added, the peepholes, the clamp, the activations (the activation
//! family's fast path, [`act_f32_slice`]: the vector forms of sigmoid and
//! tanh, within a few ulp of the exact functions), the new cell and
//! state. The state lives in scratch; each step's is copied to
//! `y`, the last one to `y_h` (and the cell to `y_c`). Nothing allocates.
//!
//! [`scalar`] is the reference: the same equations one element at a time,
//! the products as plain loops of fused multiply-adds in increasing `k`,
//! which is the order of every tiled GEMM microkernel, and the gate
//! activations through `activation::act_f32_fast`, the per-element bits of
//! the same fast path, so the two agree bit for bit and the tests compare
//! them exactly (`docs/decisions.md`, "Recurrent gates run the fast
//! activations"). Equations and the
//! layouts: `docs/kernels/recurrent.md`.

pub mod scalar;

#[cfg(test)]
mod tests;

use std::slice;

use rlx_core::pack::packed_len;
pub use rlx_core::shapes::RecurrentShape;
use rlx_core::{ActKind, RecurrentCell};

use crate::kernels::activation::act_f32_slice;
use crate::kernels::gemm::packed_gemm_cols_f32;

/// Element offset of step `t`, batch row `b` of this direction's gate
/// columns in `x`.
fn x_at(s: &RecurrentShape, t: usize, b: usize) -> usize {
    let row = if s.batch_major { b * s.seq + t } else { t * s.batch + b };
    (row * s.dirs + s.dir) * s.gate_cols()
}

/// Element offset of step `t`, batch row `b` of this direction in `y`.
fn y_at(s: &RecurrentShape, t: usize, b: usize) -> usize {
    let row = if s.batch_major { (b * s.seq + t) * s.dirs + s.dir } else { (t * s.dirs + s.dir) * s.batch + b };
    row * s.hidden
}

/// Element offset of batch row `b` of this direction in a state
/// (`h0`, `c0`, `y_h`, `y_c`).
fn state_at(s: &RecurrentShape, b: usize) -> usize {
    let row = if s.batch_major { b * s.dirs + s.dir } else { s.dir * s.batch + b };
    row * s.hidden
}

/// The optional operand `p` as `len` values.
///
/// # Safety
///
/// `p` is null or valid for `len` reads that nothing writes meanwhile.
unsafe fn opt<'a>(p: *const f32, len: usize) -> Option<&'a [f32]> {
    // SAFETY: forwarded contract.
    (!p.is_null()).then(|| unsafe { slice::from_raw_parts(p, len) })
}

/// One direction of a recurrent layer over the sequence; see
/// `Thunk::Recurrent` for the operands and `docs/kernels/recurrent.md`.
/// `par` splits each step's product over threads (the bits do not change).
///
/// # Safety
///
/// With `G = shape.cell.gates()`, `H = shape.hidden`: `x` valid for
/// `seq * batch * dirs * G * H` reads; `r` for
/// `shape.cell.packed_r_len(H)`; `bias` null or valid for `G * H`, `p`
/// null or valid for `3 * H` (LSTM only); `h0` and `c0` null or valid for
/// `dirs * batch * H` reads, `y_h` and `y_c` likewise for writes, `y` null
/// or valid for `seq * dirs * batch * H` writes (`c0` and `y_c` null but
/// for an LSTM); `scratch` valid for
/// `RecurrentShape::scratch_elems(cell, batch, H)` writes. No output
/// overlaps an input, another output or the scratch (the validator's
/// rules); `dir < dirs`.
#[allow(clippy::too_many_arguments)]
pub unsafe fn recurrent_f32(
    x: *const f32,
    r: *const f32,
    bias: *const f32,
    p: *const f32,
    h0: *const f32,
    c0: *const f32,
    y: *mut f32,
    y_h: *mut f32,
    y_c: *mut f32,
    shape: &RecurrentShape,
    scratch: *mut f32,
    par: bool,
) {
    let s = *shape;
    let (batch, hidden, cols) = (s.batch, s.hidden, s.gate_cols());
    if batch == 0 || hidden == 0 {
        return;
    }
    let bh = batch * hidden;
    let lstm = s.cell == RecurrentCell::Lstm;
    let scratch_len = RecurrentShape::scratch_elems(s.cell, batch, hidden).expect("validated: scratch fits");
    // SAFETY: the caller's extents; the scratch is this call's alone.
    let (bias, p, scratch) =
        unsafe { (opt(bias, cols), opt(p, 3 * hidden), slice::from_raw_parts_mut(scratch, scratch_len)) };
    let (h, rest) = scratch.split_at_mut(bh);
    let (gates, rest) = rest.split_at_mut(batch * cols);
    let (c, tmp) = if lstm { rest.split_at_mut(bh) } else { (&mut [][..], rest) };
    for b in 0..batch {
        let at = state_at(&s, b);
        // SAFETY: `h0`/`c0` are null or hold row `b` of this direction.
        unsafe {
            load_state(&mut h[b * hidden..][..hidden], h0, at);
            if lstm {
                load_state(&mut c[b * hidden..][..hidden], c0, at);
            }
        }
    }
    let step = Step { s, r, bias, p, par };
    for i in 0..s.seq {
        let t = if s.reverse { s.seq - 1 - i } else { i };
        // SAFETY: `x` holds every step's rows (the caller's extents).
        let xt = |b: usize| unsafe { slice::from_raw_parts(x.add(x_at(&s, t, b)), cols) };
        // SAFETY: `r` holds the packed weight the cell reads.
        unsafe {
            match s.cell {
                RecurrentCell::Lstm => step.lstm(xt, h, c, gates, tmp),
                RecurrentCell::Gru | RecurrentCell::GruLinearBeforeReset => step.gru(xt, h, gates, tmp),
                RecurrentCell::Rnn => step.rnn(xt, h, gates),
            }
        }
        if !y.is_null() {
            for b in 0..batch {
                // SAFETY: `y` holds this direction's row `(t, b)`, apart
                // from the scratch.
                unsafe { std::ptr::copy_nonoverlapping(h[b * hidden..].as_ptr(), y.add(y_at(&s, t, b)), hidden) };
            }
        }
    }
    for b in 0..batch {
        let at = state_at(&s, b);
        // SAFETY: `y_h`/`y_c` are null or hold row `b` of this direction.
        unsafe {
            store_state(&h[b * hidden..][..hidden], y_h, at);
            if lstm {
                store_state(&c[b * hidden..][..hidden], y_c, at);
            }
        }
    }
}

/// `dst` from `src + at`, or zeros for a null `src`.
///
/// # Safety
///
/// `src` null or valid for `dst.len()` reads from `at`.
unsafe fn load_state(dst: &mut [f32], src: *const f32, at: usize) {
    if src.is_null() {
        dst.fill(0.0);
    } else {
        // SAFETY: forwarded contract; `dst` is scratch, apart from inputs.
        unsafe { std::ptr::copy_nonoverlapping(src.add(at), dst.as_mut_ptr(), dst.len()) };
    }
}

/// `src` to `dst + at` unless `dst` is null.
///
/// # Safety
///
/// `dst` null or valid for `src.len()` writes from `at`, apart from `src`.
unsafe fn store_state(src: &[f32], dst: *mut f32, at: usize) {
    if !dst.is_null() {
        // SAFETY: forwarded contract.
        unsafe { std::ptr::copy_nonoverlapping(src.as_ptr(), dst.add(at), src.len()) };
    }
}

/// What every step of one call shares.
struct Step<'a> {
    s: RecurrentShape,
    r: *const f32,
    bias: Option<&'a [f32]>,
    p: Option<&'a [f32]>,
    par: bool,
}

/// `g[j] + x[j]`: the projections added to the recurrent product.
fn add_projections(g: &mut [f32], x: &[f32]) {
    for (g, &x) in g.iter_mut().zip(x) {
        *g += x;
    }
}

/// `g[j] + p[j] * c[j]`: a peephole.
fn add_peephole(g: &mut [f32], p: &[f32], c: &[f32]) {
    for ((g, &p), &c) in g.iter_mut().zip(p).zip(c) {
        *g += p * c;
    }
}

/// Clamps to `[-clip, clip]` (NaN passes); nothing for an infinite clip.
fn clamp(g: &mut [f32], clip: f32) {
    if clip.is_finite() {
        for v in g {
            *v = if *v < -clip {
                -clip
            } else if *v > clip {
                clip
            } else {
                *v
            };
        }
    }
}

/// `act` in place over `g`, serially (a row of gates is short, and the
/// step is already inside the caller's threads when there are any).
fn activate(g: &mut [f32], act: ActKind) {
    let p = g.as_mut_ptr();
    // SAFETY: `g` is one slice, read and written in place (the exact alias).
    unsafe { act_f32_slice(act, p, p, g.len(), false) }
}

impl Step<'_> {
    /// `gates[:, col0 .. col0 + n] = a @ W + bias[col0 ..]`, `W` the
    /// packed `hidden x n` matrix at `r + w_at`.
    ///
    /// # Safety
    ///
    /// `r + w_at` holds `packed_len(hidden, n)` values.
    unsafe fn product(&self, a: &[f32], w_at: usize, gates: &mut [f32], col0: usize, n: usize) {
        let (s, cols) = (&self.s, self.s.gate_cols());
        debug_assert!(a.len() == s.batch * s.hidden && gates.len() == s.batch * cols && col0 + n <= cols);
        let bias = self.bias.map(|b| b[col0..].as_ptr());
        // SAFETY: `a` is `batch` rows of `hidden`, `gates` `batch` rows of
        // `cols` from which columns `col0 .. col0 + n` are written; the
        // weight is the caller's; scratch and inputs do not overlap.
        unsafe {
            let c = gates.as_mut_ptr().add(col0);
            packed_gemm_cols_f32(
                a.as_ptr(),
                s.hidden,
                self.r.add(w_at),
                bias,
                c,
                cols,
                (s.batch, s.hidden, n),
                self.par,
            )
        }
    }

    /// One LSTM step (gates `i, o, f, c`): `C = f * C + i * g`, `H = o *
    /// h(C)`, the peepholes reading the old `C` for `i` and `f` and the new
    /// one for `o`.
    ///
    /// # Safety
    ///
    /// `r` holds the packed `hidden x 4 hidden` weight.
    unsafe fn lstm<'x>(
        &self,
        x: impl Fn(usize) -> &'x [f32],
        h: &mut [f32],
        c: &mut [f32],
        gates: &mut [f32],
        tmp: &mut [f32],
    ) {
        let (s, n) = (&self.s, self.s.hidden);
        // SAFETY: forwarded contract.
        unsafe { self.product(h, 0, gates, 0, 4 * n) };
        for b in 0..s.batch {
            let g = &mut gates[b * 4 * n..][..4 * n];
            let (cb, hb, tb) = (&mut c[b * n..][..n], &mut h[b * n..][..n], &mut tmp[b * n..][..n]);
            add_projections(g, x(b));
            match self.p {
                None => {
                    clamp(g, s.clip);
                    activate(&mut g[..3 * n], s.act_f);
                }
                Some(p) => {
                    add_peephole(&mut g[..n], &p[..n], cb);
                    add_peephole(&mut g[2 * n..3 * n], &p[2 * n..], cb);
                    clamp(&mut g[..n], s.clip);
                    clamp(&mut g[2 * n..], s.clip);
                    activate(&mut g[..n], s.act_f);
                    activate(&mut g[2 * n..3 * n], s.act_f);
                }
            }
            activate(&mut g[3 * n..], s.act_g);
            let (i, rest) = g.split_at_mut(n);
            let (o, rest) = rest.split_at_mut(n);
            let (f, cand) = rest.split_at_mut(n);
            for j in 0..n {
                cb[j] = f[j] * cb[j] + i[j] * cand[j];
            }
            if let Some(p) = self.p {
                add_peephole(o, &p[n..2 * n], cb);
                clamp(o, s.clip);
                activate(o, s.act_f);
            }
            tb.copy_from_slice(cb);
            activate(tb, s.act_h);
            for j in 0..n {
                hb[j] = o[j] * tb[j];
            }
        }
    }

    /// One GRU step (gates `z, r, h`): `H = (1 - z) * h~ + z * H`, the
    /// reset gate applied to the state before its product with `R_h`, or
    /// with `linear_before_reset` to the product (with its bias).
    ///
    /// # Safety
    ///
    /// `r` holds the packed weight of `RecurrentCell::packed_r_len`.
    unsafe fn gru<'x>(&self, x: impl Fn(usize) -> &'x [f32], h: &mut [f32], gates: &mut [f32], tmp: &mut [f32]) {
        let (s, n) = (&self.s, self.s.hidden);
        let before_reset = s.cell == RecurrentCell::Gru;
        // SAFETY: forwarded contract: the `z, r` columns (or all three).
        unsafe { self.product(h, 0, gates, 0, if before_reset { 2 * n } else { 3 * n }) };
        for b in 0..s.batch {
            let g = &mut gates[b * 3 * n..][..3 * n];
            let xb = x(b);
            add_projections(&mut g[..2 * n], &xb[..2 * n]);
            clamp(&mut g[..2 * n], s.clip);
            activate(&mut g[..2 * n], s.act_f);
            let (hb, tb) = (&h[b * n..][..n], &mut tmp[b * n..][..n]);
            let (reset, cand) = (&g[n..2 * n], &g[2 * n..]);
            if before_reset {
                for j in 0..n {
                    tb[j] = reset[j] * hb[j];
                }
            } else {
                for j in 0..n {
                    tb[j] = xb[2 * n + j] + reset[j] * cand[j];
                }
            }
        }
        if before_reset {
            // SAFETY: the `h` columns' weight follows the `z, r` ones.
            unsafe { self.product(tmp, packed_len(n, 2 * n).unwrap_or(0), gates, 2 * n, n) };
        }
        for b in 0..s.batch {
            let g = &mut gates[b * 3 * n..][..3 * n];
            let (zr, cand) = g.split_at_mut(2 * n);
            let z = &zr[..n];
            if before_reset {
                add_projections(cand, &x(b)[2 * n..]);
            } else {
                cand.copy_from_slice(&tmp[b * n..][..n]);
            }
            clamp(cand, s.clip);
            activate(cand, s.act_g);
            let hb = &mut h[b * n..][..n];
            for j in 0..n {
                hb[j] = (1.0 - z[j]) * cand[j] + z[j] * hb[j];
            }
        }
    }

    /// One RNN step: `H = f(x + H R^T)`.
    ///
    /// # Safety
    ///
    /// `r` holds the packed `hidden x hidden` weight.
    unsafe fn rnn<'x>(&self, x: impl Fn(usize) -> &'x [f32], h: &mut [f32], gates: &mut [f32]) {
        let (s, n) = (&self.s, self.s.hidden);
        // SAFETY: forwarded contract.
        unsafe { self.product(h, 0, gates, 0, n) };
        for b in 0..s.batch {
            let g = &mut gates[b * n..][..n];
            add_projections(g, x(b));
            clamp(g, s.clip);
            activate(g, s.act_f);
        }
        h.copy_from_slice(gates);
    }
}
