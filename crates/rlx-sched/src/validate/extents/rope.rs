//! Rotary embeddings.

use super::{Extents, Rules};
use crate::thunk::{Rope, RopeAt};
use crate::validate::access::{Alias, F32, I64};
use crate::validate::messages;

impl<O> Extents<O> for Rope<O> {
    fn rules<'a>(&'a self, r: &mut Rules<'a, O>) {
        let Rope { x, cos, sin, out, batch, seq, heads, head_dim, interleaved: _ } = self;
        // Rotation pairs two halves (or neighbours) of each head.
        r.require(head_dim % 2 == 0, "head_dim", || messages::odd_head_dim(*head_dim));
        let half = head_dim / 2;
        r.read_alias(Alias::Exact, "x", x, F32, &[*batch, *seq, *heads, *head_dim], "batch*seq*heads*head_dim");
        r.read("cos", cos, F32, &[*seq, half], "seq*head_dim/2");
        r.read("sin", sin, F32, &[*seq, half], "seq*head_dim/2");
        r.write("out", out, F32, &[*batch, *seq, *heads, *head_dim], "batch*seq*heads*head_dim");
    }
}

impl<O> Extents<O> for RopeAt<O> {
    fn rules<'a>(&'a self, r: &mut Rules<'a, O>) {
        let RopeAt { x, cos, sin, pos, out, seq, heads, head_dim, max_len, interleaved: _ } = self;
        r.require(head_dim % 2 == 0, "head_dim", || messages::odd_head_dim(*head_dim));
        r.require(seq <= max_len, "seq", || messages::step_longer_than_cache(*seq, *max_len));
        let half = head_dim / 2;
        r.read("pos", pos, I64, &[1], "1");
        r.read_alias(Alias::Exact, "x", x, F32, &[*seq, *heads, *head_dim], "seq*heads*head_dim");
        r.read("cos", cos, F32, &[*max_len, half], "max_len*head_dim/2");
        r.read("sin", sin, F32, &[*max_len, half], "max_len*head_dim/2");
        r.write("out", out, F32, &[*seq, *heads, *head_dim], "seq*heads*head_dim");
    }
}
