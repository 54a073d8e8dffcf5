//! Scaled dot-product attention.

use rlx_core::plan::attention_scratch_bytes_checked;
use rlx_core::shapes::AttentionShape;

use super::{product, Extents, Rules};
use crate::ops::MaskKind;
use crate::thunk::{Attention, CachedAttention, SlidingCachedAttention};
use crate::validate::access::{Dir, Pattern, F32, I64};
use crate::validate::messages;

/// `rows` rows of `width` f32, `stride` f32 apart: one `[*, heads, d]` row
/// per (batch, position) in the `[B, S, H, D]` layout.
fn rows(rows: Option<usize>, stride: usize, width: Option<usize>) -> Option<Pattern> {
    Pattern::strided(0, rows?, stride.checked_mul(4)?, width?.checked_mul(4)?)
}

impl<O> Extents<O> for Attention<O> {
    fn rules<'a>(&'a self, r: &mut Rules<'a, O>) {
        let Attention {
            q,
            k,
            v,
            mask,
            out,
            batch,
            seq,
            kv_seq,
            heads,
            head_dim,
            v_head_dim,
            mask_kind,
            scale,
            softcap,
            q_row_stride,
            k_row_stride,
            v_row_stride,
            bhsd,
            kv_heads,
        } = self;
        let (b, s, kvs, h, kvh, d, dv) = (*batch, *seq, *kv_seq, *heads, *kv_heads, *head_dim, *v_head_dim);
        // Query head `i` reads key/value head `i / (heads / kv_heads)`.
        r.require_hint(kvh > 0, "kv_heads", messages::zero_kv_heads, messages::kv_heads_hint);
        r.require_hint(
            kvh == 0 || h % kvh == 0,
            "kv_heads",
            || messages::kv_heads_grouping(h, kvh),
            messages::kv_heads_hint,
        );
        r.finite("scale", *scale, false);
        r.finite("softcap", *softcap, true);
        match (mask_kind.reads_mask(), mask) {
            (true, None) => {
                r.issue("mask", messages::mask_missing(mask_kind.name()), Some(messages::mask_hint(*mask_kind)))
            }
            (false, Some(_)) => r.issue("mask", messages::mask_unused(mask_kind.name()), None),
            _ => {}
        }
        if *bhsd {
            // Dense per-(batch, head) tiles; the row strides are not used.
            r.read("q", q, F32, &[b, h, s, d], "batch*heads*seq*head_dim");
            r.read("k", k, F32, &[b, kvh, kvs, d], "batch*kv_heads*kv_seq*head_dim");
            r.read("v", v, F32, &[b, kvh, kvs, dv], "batch*kv_heads*kv_seq*v_head_dim");
        } else {
            let q_rows = product(&[b, s]);
            let kv_rows = product(&[b, kvs]);
            let q_width = product(&[h, d]);
            let k_width = product(&[kvh, d]);
            let v_width = product(&[kvh, dv]);
            for (field, stride, rows, width, formula) in [
                ("q_row_stride", *q_row_stride, q_rows, q_width, "heads*head_dim"),
                ("k_row_stride", *k_row_stride, kv_rows, k_width, "kv_heads*head_dim"),
                ("v_row_stride", *v_row_stride, kv_rows, v_width, "kv_heads*v_head_dim"),
            ] {
                // With one row the stride is never stepped.
                if let (Some(rows), Some(width)) = (rows, width) {
                    r.require(rows <= 1 || stride >= width, field, || {
                        messages::row_stride_too_small(field, stride, formula, width)
                    });
                }
            }
            let q_formula = "(batch*seq-1)*q_row_stride + heads*head_dim";
            r.strided(Dir::Read, "q", q, F32, rows(q_rows, *q_row_stride, q_width), q_formula);
            let k_formula = "(batch*kv_seq-1)*k_row_stride + kv_heads*head_dim";
            r.strided(Dir::Read, "k", k, F32, rows(kv_rows, *k_row_stride, k_width), k_formula);
            let v_formula = "(batch*kv_seq-1)*v_row_stride + kv_heads*v_head_dim";
            r.strided(Dir::Read, "v", v, F32, rows(kv_rows, *v_row_stride, v_width), v_formula);
        }
        if let Some(mask) = mask {
            match mask_kind {
                MaskKind::Custom => r.read("mask", mask, F32, &[b, kvs], "batch*kv_seq"),
                MaskKind::Bias => r.read("mask", mask, F32, &[b, h, s, kvs], "batch*heads*seq*kv_seq"),
                // Reported above: these kinds take no mask operand.
                MaskKind::None | MaskKind::Causal | MaskKind::SlidingWindow(_) => {}
            }
        }
        r.write("out", out, F32, &[b, s, h, dv], "batch*seq*heads*v_head_dim");
        // Per (batch, head): a score matrix, and K^T and V packed (columns
        // rounded up to 16) for the GEMM path.
        r.scratch(
            "seq",
            attention_scratch_bytes_checked(&self.shape()),
            "batch*heads*(seq*kv_seq + head_dim*ceil(kv_seq/16)*16 + kv_seq*ceil(v_head_dim/16)*16)*4",
        );
    }
}

impl<O> Extents<O> for CachedAttention<O> {
    fn rules<'a>(&'a self, r: &mut Rules<'a, O>) {
        let CachedAttention { q, k, v, pos, out, seq, max_len, heads, kv_heads, head_dim, scale, q_row_stride } = self;
        let step = CachedStep {
            q,
            k,
            v,
            pos,
            out,
            seq: *seq,
            max_len: *max_len,
            heads: *heads,
            kv_heads: *kv_heads,
            head_dim: *head_dim,
            scale: *scale,
            q_row_stride: *q_row_stride,
        };
        step.rules(self.shape(), r);
    }
}

/// Any window is valid: `0` lets a query see only its own row.
impl<O> Extents<O> for SlidingCachedAttention<O> {
    fn rules<'a>(&'a self, r: &mut Rules<'a, O>) {
        let SlidingCachedAttention {
            q,
            k,
            v,
            pos,
            out,
            seq,
            max_len,
            heads,
            kv_heads,
            head_dim,
            scale,
            q_row_stride,
            window: _,
        } = self;
        let step = CachedStep {
            q,
            k,
            v,
            pos,
            out,
            seq: *seq,
            max_len: *max_len,
            heads: *heads,
            kv_heads: *kv_heads,
            head_dim: *head_dim,
            scale: *scale,
            q_row_stride: *q_row_stride,
        };
        step.rules(self.shape(), r);
    }
}

/// The fields `CachedAttention` and `SlidingCachedAttention` share.
struct CachedStep<'a, O> {
    q: &'a O,
    k: &'a O,
    v: &'a O,
    pos: &'a O,
    out: &'a O,
    seq: usize,
    max_len: usize,
    heads: usize,
    kv_heads: usize,
    head_dim: usize,
    scale: f32,
    q_row_stride: usize,
}

impl<'a, O> CachedStep<'a, O> {
    fn rules(&self, shape: AttentionShape, r: &mut Rules<'a, O>) {
        let CachedStep { q, k, v, pos, out, seq, max_len, heads, kv_heads, head_dim, scale, q_row_stride } = *self;
        let (s, m, h, kvh, d) = (seq, max_len, heads, kv_heads, head_dim);
        r.require_hint(kvh > 0, "kv_heads", messages::zero_kv_heads, messages::kv_heads_hint);
        r.require_hint(
            kvh == 0 || h % kvh == 0,
            "kv_heads",
            || messages::kv_heads_grouping(h, kvh),
            messages::kv_heads_hint,
        );
        r.require(s <= m, "seq", || messages::step_longer_than_cache(s, m));
        r.finite("scale", scale, false);
        r.read("pos", pos, I64, &[1], "1");
        let q_width = product(&[h, d]);
        if let Some(width) = q_width {
            r.require(s <= 1 || q_row_stride >= width, "q_row_stride", || {
                messages::row_stride_too_small("q_row_stride", q_row_stride, "heads*head_dim", width)
            });
        }
        let q_formula = "(seq-1)*q_row_stride + heads*head_dim";
        r.strided(Dir::Read, "q", q, F32, rows(Some(s), q_row_stride, q_width), q_formula);
        r.read("k", k, F32, &[m, kvh, d], "max_len*kv_heads*head_dim");
        r.read("v", v, F32, &[m, kvh, d], "max_len*kv_heads*head_dim");
        r.write("out", out, F32, &[s, h, d], "seq*heads*head_dim");
        r.scratch(
            "seq",
            attention_scratch_bytes_checked(&shape),
            "heads*(seq*max_len + head_dim*ceil(max_len/16)*16 + max_len*ceil(head_dim/16)*16)*4",
        );
    }
}
