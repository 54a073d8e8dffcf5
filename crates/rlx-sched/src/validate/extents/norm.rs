//! Normalisations and the rotary embedding.

use super::Rules;
use crate::thunk::Thunk;
use crate::validate::access::{Alias, F32, I64};
use crate::validate::messages;

pub(super) fn layer_norm<'a, O>(r: &mut Rules<'a, O>, t: &'a Thunk<O>) {
    let Thunk::LayerNorm { x, g, b, out, rows, h, eps } = t else {
        unreachable!("layer_norm called on {:?}", t.kind())
    };
    r.finite("eps", *eps, true);
    r.read_alias(Alias::Exact, "x", x, F32, &[*rows, *h], "rows*h");
    r.read("g", g, F32, &[*h], "h");
    r.read_opt("b", b, F32, &[*h], "h");
    r.write("out", out, F32, &[*rows, *h], "rows*h");
}

pub(super) fn rms_norm<'a, O>(r: &mut Rules<'a, O>, t: &'a Thunk<O>) {
    let Thunk::RmsNorm { x, g, out, rows, h, eps } = t else { unreachable!("rms_norm called on {:?}", t.kind()) };
    r.finite("eps", *eps, true);
    r.read_alias(Alias::Exact, "x", x, F32, &[*rows, *h], "rows*h");
    r.read("g", g, F32, &[*h], "h");
    r.write("out", out, F32, &[*rows, *h], "rows*h");
}

pub(super) fn fused_residual_ln<'a, O>(r: &mut Rules<'a, O>, t: &'a Thunk<O>) {
    let Thunk::FusedResidualLN { x, res, bias, g, b, out, rows, h, eps } = t else {
        unreachable!("fused_residual_ln called on {:?}", t.kind())
    };
    r.finite("eps", *eps, true);
    r.read_alias(Alias::Exact, "x", x, F32, &[*rows, *h], "rows*h");
    r.read_alias(Alias::Exact, "res", res, F32, &[*rows, *h], "rows*h");
    r.read_opt("bias", bias, F32, &[*h], "h");
    r.read("g", g, F32, &[*h], "h");
    r.read("b", b, F32, &[*h], "h");
    r.write("out", out, F32, &[*rows, *h], "rows*h");
}

pub(super) fn fused_residual_rms_norm<'a, O>(r: &mut Rules<'a, O>, t: &'a Thunk<O>) {
    let Thunk::FusedResidualRmsNorm { x, res, bias, g, b, out, rows, h, eps } = t else {
        unreachable!("fused_residual_rms_norm called on {:?}", t.kind())
    };
    r.finite("eps", *eps, true);
    r.read_alias(Alias::Exact, "x", x, F32, &[*rows, *h], "rows*h");
    r.read_alias(Alias::Exact, "res", res, F32, &[*rows, *h], "rows*h");
    r.read_opt("bias", bias, F32, &[*h], "h");
    r.read("g", g, F32, &[*h], "h");
    r.read_opt("b", b, F32, &[*h], "h");
    r.write("out", out, F32, &[*rows, *h], "rows*h");
}

pub(super) fn batch_norm_inference<'a, O>(r: &mut Rules<'a, O>, t: &'a Thunk<O>) {
    let Thunk::BatchNormInference { x, scale, bias, mean, var, out, n, c, hw, eps } = t else {
        unreachable!("batch_norm_inference called on {:?}", t.kind())
    };
    r.finite("eps", *eps, true);
    r.read_alias(Alias::Exact, "x", x, F32, &[*n, *c, *hw], "n*c*hw");
    for (field, op) in [("scale", scale), ("bias", bias), ("mean", mean), ("var", var)] {
        r.read(field, op, F32, &[*c], "c");
    }
    r.write("out", out, F32, &[*n, *c, *hw], "n*c*hw");
}

pub(super) fn rope<'a, O>(r: &mut Rules<'a, O>, t: &'a Thunk<O>) {
    let Thunk::Rope { x, cos, sin, out, batch, seq, heads, head_dim, interleaved: _ } = t else {
        unreachable!("rope called on {:?}", t.kind())
    };
    // Rotation pairs two halves (or neighbours) of each head.
    r.require(head_dim % 2 == 0, "head_dim", || messages::odd_head_dim(*head_dim));
    let half = head_dim / 2;
    r.read_alias(Alias::Exact, "x", x, F32, &[*batch, *seq, *heads, *head_dim], "batch*seq*heads*head_dim");
    r.read("cos", cos, F32, &[*seq, half], "seq*head_dim/2");
    r.read("sin", sin, F32, &[*seq, half], "seq*head_dim/2");
    r.write("out", out, F32, &[*batch, *seq, *heads, *head_dim], "batch*seq*heads*head_dim");
}

pub(super) fn rope_at<'a, O>(r: &mut Rules<'a, O>, t: &'a Thunk<O>) {
    let Thunk::RopeAt { x, cos, sin, pos, out, seq, heads, head_dim, max_len, interleaved: _ } = t else {
        unreachable!("rope_at called on {:?}", t.kind())
    };
    r.require(head_dim % 2 == 0, "head_dim", || messages::odd_head_dim(*head_dim));
    r.require(seq <= max_len, "seq", || messages::step_longer_than_cache(*seq, *max_len));
    let half = head_dim / 2;
    r.read("pos", pos, I64, &[1], "1");
    r.read_alias(Alias::Exact, "x", x, F32, &[*seq, *heads, *head_dim], "seq*heads*head_dim");
    r.read("cos", cos, F32, &[*max_len, half], "max_len*head_dim/2");
    r.read("sin", sin, F32, &[*max_len, half], "max_len*head_dim/2");
    r.write("out", out, F32, &[*seq, *heads, *head_dim], "seq*heads*head_dim");
}
