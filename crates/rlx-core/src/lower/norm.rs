//! Normalisations, softmax, attention (path and scratch decided here) and
//! rotary embeddings.

use super::not_in_family;
use crate::call::KernelCall as K;
use crate::operand::{Operand, Params};
use crate::plan::{attention_path, attention_scratch_bytes, parallel};
use crate::shapes::{AttentionScores, AttentionShape};
use crate::thunk::Thunk;
use crate::MaskKind;

pub(super) fn lower(t: &Thunk<Operand>, params: &Params) -> K {
    match *t {
        Thunk::LayerNorm { x, g, b, out, rows, h, eps } => {
            K::LayerNormF32 { x, g, b, out, rows, h, eps, par: parallel(rows * h) }
        }
        Thunk::RmsNorm { x, g, out, rows, h, eps } => {
            K::RmsNormF32 { x, g, out, rows, h, eps, par: parallel(rows * h) }
        }
        Thunk::FusedResidualLN { x, res, bias, g, b, out, rows, h, eps } => {
            K::FusedResidualLnF32 { x, res, bias, g, b, out, rows, h, eps, par: parallel(rows * h) }
        }
        Thunk::FusedResidualRmsNorm { x, res, bias, g, b, out, rows, h, eps } => {
            K::FusedResidualRmsNormF32 { x, res, bias, g, b, out, rows, h, eps, par: parallel(rows * h) }
        }
        Thunk::BatchNormInference { x, scale, bias, mean, var, out, n, c, hw, eps } => {
            K::BatchNormInferenceF32 { x, scale, bias, mean, var, out, n, c, hw, eps, par: parallel(n * c * hw) }
        }
        Thunk::Softmax { src, dst, rows, cols } => K::SoftmaxF32 { src, dst, rows, cols, par: parallel(rows * cols) },
        Thunk::Attention {
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
        } => {
            let shape = AttentionShape {
                batch,
                seq,
                kv_seq,
                heads,
                kv_heads,
                head_dim,
                v_head_dim,
                q_row_stride,
                k_row_stride,
                v_row_stride,
                bhsd,
            };
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
            K::AttentionF32 { q, k, v, mask, out, shape, scores, path, scratch, par }
        }
        Thunk::Rope { x, cos, sin, out, batch, seq, heads, head_dim, interleaved } => K::RopeF32 {
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
        },
        Thunk::RopeAt { x, cos, sin, pos, out, seq, heads, head_dim, max_len, interleaved } => K::RopeAtF32 {
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
        },
        Thunk::CachedAttention { q, k, v, pos, out, seq, max_len, heads, kv_heads, head_dim, scale, q_row_stride } => {
            // The shape at the longest cache: the path and the scratch are
            // fixed for it at gen time; each run narrows `kv_seq` to the
            // rows written so far, which either path computes the same way.
            let kv_row = kv_heads * head_dim;
            let shape = AttentionShape {
                batch: 1,
                seq,
                kv_seq: max_len,
                heads,
                kv_heads,
                head_dim,
                v_head_dim: head_dim,
                q_row_stride,
                k_row_stride: kv_row,
                v_row_stride: kv_row,
                bhsd: false,
            };
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
            K::CachedAttentionF32 { q, k, v, pos, out, shape, scores, path, scratch, par }
        }
        _ => not_in_family("norm", t),
    }
}
