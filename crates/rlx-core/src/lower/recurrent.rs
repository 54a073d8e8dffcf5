//! Recurrent family: `Recurrent`, one direction of an LSTM, GRU or RNN.

use super::{Lower, F32};
use crate::call::KernelCall as K;
use crate::operand::{Operand, Params};
use crate::plan::packed_gemm_parallel;
use crate::shapes::RecurrentShape;
use crate::thunk::Recurrent;

impl Lower for Recurrent<Operand> {
    fn lower(&self, _: &Params) -> Option<K> {
        let Recurrent {
            x,
            r,
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
            reverse,
            batch_major,
            clip,
            act_f,
            act_g,
            act_h,
        } = *self;
        let shape =
            RecurrentShape { cell, seq, batch, hidden, dirs, dir, reverse, batch_major, clip, act_f, act_g, act_h };
        // The validator checked that this does not overflow.
        let scratch = RecurrentShape::scratch_elems(cell, batch, hidden).unwrap_or(0) * F32;
        // Steps are sequential: only one step's product `H R^T` can be split,
        // and it pays for a large batch and hidden size alone.
        let par = packed_gemm_parallel(batch, hidden, shape.gate_cols());
        Some(K::RecurrentF32 { x, r, bias, p, h0, c0, y, y_h, y_c, shape, scratch, par })
    }
}
