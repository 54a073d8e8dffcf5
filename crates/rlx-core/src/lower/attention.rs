//! Attention: the path (direct or through GEMMs) and its scratch are
//! decided here, from the shape and the schedule's score parameters.

use super::Lower;
use crate::call::KernelCall as K;
use crate::operand::{Operand, Params};
use crate::plan::{attention_path, attention_scratch_bytes, parallel};
use crate::shapes::AttentionScores;
use crate::thunk::{Attention, CachedAttention, SlidingCachedAttention};
use crate::MaskKind;

impl Lower for Attention<Operand> {
    fn lower(&self, params: &Params) -> Option<K> {
        let Attention { q, k, v, mask, out, batch, seq, kv_seq, heads, mask_kind, scale, softcap, .. } = *self;
        let shape = self.shape();
        let scores = AttentionScores {
            mask_kind,
            scale,
            softcap,
            mask_threshold: params.mask_threshold,
            mask_neg_inf: params.mask_neg_inf,
            score_skip: params.score_skip,
        };
        let (path, scratch) = (attention_path(&shape), attention_scratch_bytes(&shape));
        let par = parallel(batch * heads * seq * kv_seq);
        Some(K::AttentionF32 { q, k, v, mask, out, shape, scores, path, scratch, par })
    }
}

impl Lower for CachedAttention<Operand> {
    fn lower(&self, params: &Params) -> Option<K> {
        let CachedAttention { q, k, v, pos, out, scale, .. } = *self;
        Some(cached_attention(q, k, v, pos, out, self.shape(), MaskKind::Causal, scale, params))
    }
}

/// The same kernel as `CachedAttention`, whose sliding-window mask also
/// lets it skip the cache rows before every query's window.
impl Lower for SlidingCachedAttention<Operand> {
    fn lower(&self, params: &Params) -> Option<K> {
        let SlidingCachedAttention { q, k, v, pos, out, scale, window, .. } = *self;
        let mask = MaskKind::SlidingWindow(window);
        Some(cached_attention(q, k, v, pos, out, self.shape(), mask, scale, params))
    }
}

#[allow(clippy::too_many_arguments)]
fn cached_attention(
    q: Operand,
    k: Operand,
    v: Operand,
    pos: Operand,
    out: Operand,
    shape: crate::shapes::AttentionShape,
    mask_kind: MaskKind,
    scale: f32,
    params: &Params,
) -> K {
    let scores = AttentionScores {
        mask_kind,
        scale,
        softcap: 0.0,
        mask_threshold: params.mask_threshold,
        mask_neg_inf: params.mask_neg_inf,
        score_skip: params.score_skip,
    };
    let (path, scratch) = (attention_path(&shape), attention_scratch_bytes(&shape));
    let par = parallel(shape.heads * shape.seq * shape.kv_seq);
    K::CachedAttentionF32 { q, k, v, pos, out, shape, scores, path, scratch, par }
}
