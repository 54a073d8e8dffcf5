//! `Recurrent`: one direction of an LSTM, GRU or RNN. Its operands hold
//! every direction; the thunk touches only its own, so the accesses are
//! strided and a bidirectional layer's two thunks write disjoint bytes.

use super::{product, Extents, Rules};
use crate::ops::RecurrentCell;
use crate::shapes::RecurrentShape;
use crate::thunk::Recurrent;
use crate::validate::access::{Dir, Pattern, F32};
use crate::validate::messages;

const B: usize = 4;

/// Direction `dir`'s rows of a `[outer, dirs, inner]` f32 tensor (`inner`
/// elements per direction per outer index).
fn per_direction(outer: usize, dirs: usize, dir: usize, inner: usize) -> Option<Pattern> {
    let chunk = inner.checked_mul(B)?;
    Pattern::strided(dir.checked_mul(chunk)?, outer, dirs.checked_mul(chunk)?, chunk)
}

impl<O> Extents<O> for Recurrent<O> {
    fn rules<'a>(&'a self, r: &mut Rules<'a, O>) {
        let Recurrent {
            x,
            r: weights,
            bias,
            p,
            h0,
            c0,
            y,
            y_h,
            y_c,
            cell,
            seq,
            batch,
            hidden,
            dirs,
            dir,
            reverse: _,
            batch_major,
            clip,
            act_f: _,
            act_g: _,
            act_h: _,
        } = self;
        let (seq, batch, hidden, dirs, dir) = (*seq, *batch, *hidden, *dirs, *dir);
        r.require(matches!(dirs, 1 | 2), "dirs", || format!("`dirs` is {dirs}; it must be 1 or 2"));
        r.require(dir < dirs, "dir", || format!("`dir` is {dir}; it must be below `dirs` ({dirs})"));
        r.require(!clip.is_nan() && *clip > 0.0, "clip", || {
            format!("`clip` is {clip}; it must be positive (`inf` for no clamp)")
        });
        let lstm = *cell == RecurrentCell::Lstm;
        for (field, op) in [("p", p), ("c0", c0), ("y_c", y_c)] {
            r.require(lstm || op.is_none(), field, || format!("`{field}` is for `cell: lstm` only; it must be `none`"));
        }
        if !matches!(dirs, 1 | 2) || dir >= dirs {
            return;
        }
        let gate_cols = hidden.checked_mul(cell.gates());
        let steps = seq.checked_mul(batch);
        // `x`: every (step, batch row) row, this direction's gate columns.
        let xp = gate_cols.zip(steps).and_then(|(g, rows)| per_direction(rows, dirs, dir, g));
        r.strided(Dir::Read, "x", x, F32, xp, "seq*batch*dirs*gates*hidden");
        match cell.packed_r_len(hidden) {
            Some(len) => r.read("r", weights, F32, &[len], "packed_r_len(cell, hidden)"),
            None => r.strided(Dir::Read, "r", weights, F32, None, "packed_r_len(cell, hidden)"),
        }
        match gate_cols {
            Some(g) => r.read_opt("bias", bias, F32, &[g], "gates*hidden"),
            None => r.issue("hidden", messages::field_overflow("hidden"), None),
        }
        r.read_opt("p", p, F32, &[3, hidden], "3*hidden");
        // States: `[dirs, batch, hidden]`, or `[batch, dirs, hidden]`.
        let state = if *batch_major {
            per_direction(batch, dirs, dir, hidden)
        } else {
            batch.checked_mul(hidden).and_then(|n| per_direction(1, dirs, dir, n))
        };
        let formula = "dirs*batch*hidden";
        for (field, op) in [("h0", h0), ("c0", c0)] {
            if let Some(op) = op {
                r.strided(Dir::Read, field, op, F32, state, formula);
            }
        }
        // `y`: `[seq, dirs, batch, hidden]`, or `[batch, seq, dirs, hidden]`.
        let yp = if *batch_major {
            steps.and_then(|rows| per_direction(rows, dirs, dir, hidden))
        } else {
            batch.checked_mul(hidden).and_then(|n| per_direction(seq, dirs, dir, n))
        };
        if let Some(op) = y {
            r.strided(Dir::Write, "y", op, F32, yp, "seq*dirs*batch*hidden");
        }
        for (field, op) in [("y_h", y_h), ("y_c", y_c)] {
            if let Some(op) = op {
                r.strided(Dir::Write, field, op, F32, state, formula);
            }
        }
        let scratch = RecurrentShape::scratch_elems(*cell, batch, hidden).and_then(|n| product(&[n, B]));
        r.scratch("hidden", scratch, "batch*hidden*(gates+extra_rows)*4");
    }
}
