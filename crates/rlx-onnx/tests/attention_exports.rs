//! Attention as exporters write it (`tests/make_attention_exports.py`,
//! `tests/make_attention_tf.py`): torch's SDPA with a causal mask built in
//! the graph, BERT's eager form with a padding mask, `nn.MultiheadAttention`
//! (ViT, two images in its sequence-first layout), GPT-2's boolean causal
//! mask from `Range` comparisons, T5's unscaled scores with a position bias
//! and a mask. Each must become exactly one `Attention` thunk, with no
//! softmax or batched product left, and match onnxruntime fused and
//! unfused. Keras `MultiHeadAttention` through tf2onnx imports and matches
//! onnxruntime but stays unfused (`docs/onnx-fusion.md`: tf2onnx writes the
//! mask's select as `s * mask + (1 - mask) * -1e9`, which is not an
//! additive bias).

use crate::torch_exports::{check, count};

fn one_attention(model: &str) {
    let fused = check(model, true);
    check(model, false);
    let text = &fused.sched_text;
    assert_eq!(count(&fused, "Attention"), 1, "{model}: {text}");
    for left in ["Softmax", "BatchedSgemm", "Sgemm"] {
        assert_eq!(count(&fused, left), 0, "{model}: a {left} is left: {text}");
    }
}

#[test]
fn torch_sdpa_with_an_in_graph_causal_mask_is_one_attention() {
    one_attention("attn_sdpa");
}

#[test]
fn bert_eager_attention_is_one_attention() {
    one_attention("attn_bert");
}

#[test]
fn multihead_attention_module_is_one_attention() {
    one_attention("attn_vit");
}

#[test]
fn gpt2_boolean_causal_mask_is_one_attention() {
    one_attention("attn_gpt2");
}

#[test]
fn t5_position_bias_and_mask_are_one_attention() {
    one_attention("attn_t5");
}

#[test]
fn keras_multihead_attention_through_tf2onnx_matches_onnxruntime() {
    check("attn_tf", true);
    check("attn_tf", false);
}
