//! Rotary embeddings, at fixed positions or at a run-time position.

use super::Lower;
use crate::call::KernelCall as K;
use crate::operand::{Operand, Params};
use crate::plan::parallel;
use crate::thunk::{Rope, RopeAt};

impl Lower for Rope<Operand> {
    fn lower(&self, _: &Params) -> Option<K> {
        let Rope { x, cos, sin, out, batch, seq, heads, head_dim, interleaved } = *self;
        Some(K::RopeF32 {
            x,
            cos,
            sin,
            out,
            batch,
            seq,
            heads,
            head_dim,
            interleaved,
            par: parallel(batch * seq * heads * head_dim),
        })
    }
}

impl Lower for RopeAt<Operand> {
    fn lower(&self, _: &Params) -> Option<K> {
        let RopeAt { x, cos, sin, pos, out, seq, heads, head_dim, max_len, interleaved } = *self;
        Some(K::RopeAtF32 {
            x,
            cos,
            sin,
            pos,
            out,
            seq,
            heads,
            head_dim,
            max_len,
            interleaved,
            par: parallel(seq * heads * head_dim),
        })
    }
}
