//! Attention: the path (direct or through GEMMs) and its scratch are
//! decided here, from the shape and the schedule's score parameters.

use super::Lower;
use crate::call::KernelCall as K;
use crate::operand::{Operand, Params};
use crate::plan::{attention_path, attention_scratch_bytes, parallel};
use crate::shapes::AttentionScores;
use crate::thunk::{Attention, CachedAttention};
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
        let CachedAttention { q, k, v, pos, out, seq, max_len, heads, scale, .. } = *self;
        let shape = self.shape();
        let scores = AttentionScores {
            mask_kind: MaskKind::Causal,
            scale,
            softcap: 0.0,
            mask_threshold: params.mask_threshold,
            mask_neg_inf: params.mask_neg_inf,
            score_skip: params.score_skip,
        };
        let (path, scratch) = (attention_path(&shape), attention_scratch_bytes(&shape));
        let par = parallel(heads * seq * max_len);
        Some(K::CachedAttentionF32 { q, k, v, pos, out, shape, scores, path, scratch, par })
    }
}
