"""Builds `bert_tiny`: a 2-layer transformer encoder (hidden 128, 2 heads,
sequence 16, FFN 512, exact GELU, post-LayerNorm residuals) with fixed-seed
random weights, and writes models/bert_tiny/. Expected outputs come from an
independent float64 numpy implementation.

Run from the workspace root: python3 models/make/make_bert_tiny.py
"""

import math
from pathlib import Path

import numpy as np

from schedwriter import Sched, save_npy

OUT = Path(__file__).resolve().parents[1] / "bert_tiny"
VOCAB, HIDDEN, HEADS, SEQ, FFN, LAYERS = 256, 128, 2, 16, 512, 2
HEAD_DIM = HIDDEN // HEADS
EPS = 1e-5
MASK_THRESHOLD, MASK_NEG = 0.5, -1e9
N_SAMPLES = 8

erf = np.vectorize(math.erf)


def layer_norm(x, g, b):
    mu = x.mean(-1, keepdims=True)
    var = ((x - mu) ** 2).mean(-1, keepdims=True)
    return (x - mu) / np.sqrt(var + EPS) * g + b


def reference(ids, mask, p):
    """float64 forward pass of one sequence: ids [SEQ], mask [SEQ]."""
    f = {k: v.astype(np.float64) for k, v in p.items()}
    h = layer_norm(f["tok_emb"][ids] + f["pos_emb"], f["emb_ln.g"], f["emb_ln.b"])
    for l in range(LAYERS):
        pre = f"layer{l}."
        qkv = h @ f[pre + "qkv.weight"] + f[pre + "qkv.bias"]
        ctx = np.zeros((SEQ, HIDDEN))
        for hd in range(HEADS):
            q = qkv[:, hd * HEAD_DIM:(hd + 1) * HEAD_DIM]
            k = qkv[:, HIDDEN + hd * HEAD_DIM:HIDDEN + (hd + 1) * HEAD_DIM]
            v = qkv[:, 2 * HIDDEN + hd * HEAD_DIM:2 * HIDDEN + (hd + 1) * HEAD_DIM]
            s = q @ k.T / math.sqrt(HEAD_DIM)
            s[:, mask < MASK_THRESHOLD] = MASK_NEG
            s = np.exp(s - s.max(-1, keepdims=True))
            s /= s.sum(-1, keepdims=True)
            ctx[:, hd * HEAD_DIM:(hd + 1) * HEAD_DIM] = s @ v
        attn = ctx @ f[pre + "out.weight"] + f[pre + "out.bias"]
        h1 = layer_norm(attn + h, f[pre + "ln1.g"], f[pre + "ln1.b"])
        u = h1 @ f[pre + "fc1.weight"] + f[pre + "fc1.bias"]
        u = 0.5 * u * (1.0 + erf(u / math.sqrt(2.0)))
        d = u @ f[pre + "fc2.weight"] + f[pre + "fc2.bias"]
        h = layer_norm(d + h1, f[pre + "ln2.g"], f[pre + "ln2.b"])
    return h


def main():
    rng = np.random.default_rng(1234)
    n = lambda *shape, s=0.05: rng.normal(0.0, s, size=shape).astype(np.float32)
    p = {"tok_emb": n(VOCAB, HIDDEN, s=0.5), "pos_emb": n(SEQ, HIDDEN, s=0.1),
         "emb_ln.g": 1.0 + n(HIDDEN, s=0.1), "emb_ln.b": n(HIDDEN, s=0.1)}
    for l in range(LAYERS):
        pre = f"layer{l}."
        p |= {pre + "qkv.weight": n(HIDDEN, 3 * HIDDEN, s=0.1), pre + "qkv.bias": n(3 * HIDDEN),
              pre + "out.weight": n(HIDDEN, HIDDEN, s=0.1), pre + "out.bias": n(HIDDEN),
              pre + "ln1.g": 1.0 + n(HIDDEN, s=0.1), pre + "ln1.b": n(HIDDEN, s=0.1),
              pre + "fc1.weight": n(HIDDEN, FFN, s=0.1), pre + "fc1.bias": n(FFN),
              pre + "fc2.weight": n(FFN, HIDDEN, s=0.05), pre + "fc2.bias": n(HIDDEN),
              pre + "ln2.g": 1.0 + n(HIDDEN, s=0.1), pre + "ln2.b": n(HIDDEN, s=0.1)}

    s = Sched("bert_tiny", mask_threshold=MASK_THRESHOLD, mask_neg_inf=MASK_NEG)
    s.arena("input", "input_ids", "i64", [1, SEQ])
    s.arena("input", "attention_mask", "f32", [1, SEQ])
    for name, arr in p.items():
        s.param(name, arr)
    s.arena("scratch", "emb", "f32", [1, SEQ, HIDDEN])
    s.arena("scratch", "emb_pos", "f32", [1, SEQ, HIDDEN])
    hs = [s.arena("scratch", "h0", "f32", [1, SEQ, HIDDEN])]
    s.arena("scratch", "qkv", "f32", [1, SEQ, 3 * HIDDEN])
    s.arena("scratch", "ctx", "f32", [1, SEQ, HIDDEN])
    s.arena("scratch", "attn", "f32", [1, SEQ, HIDDEN])
    s.arena("scratch", "h_mid", "f32", [1, SEQ, HIDDEN])
    s.arena("scratch", "ffn_up", "f32", [1, SEQ, FFN])
    s.arena("scratch", "ffn_down", "f32", [1, SEQ, HIDDEN])
    for l in range(1, LAYERS):
        hs.append(s.arena("scratch", f"h{l}", "f32", [1, SEQ, HIDDEN]))
    hs.append(s.arena("output", "hidden", "f32", [1, SEQ, HIDDEN]))

    rows, elems = SEQ, SEQ * HIDDEN
    s.thunk("Gather", "token embeddings", table="tok_emb", indices="input_ids", dst="emb", num_indices=SEQ,
            row_len=HIDDEN, vocab=VOCAB, index_dtype="i64")
    s.thunk("BinaryFull", lhs="emb", rhs="pos_emb", dst="emb_pos", len=elems, lhs_len=elems, rhs_len=elems,
            op="add", out_dims_bcast=[], bcast_lhs_strides=[], bcast_rhs_strides=[], elem_bytes=4)
    s.thunk("LayerNorm", x="emb_pos", g="emb_ln.g", b="emb_ln.b", out="h0", rows=rows, h=HIDDEN, eps=EPS)
    for l in range(LAYERS):
        pre = f"layer{l}."
        h_in, h_out = hs[l], hs[l + 1]
        s.thunk("FusedMmBiasAct", f"layer {l}: attention", a=h_in, w=pre + "qkv.weight", bias=pre + "qkv.bias",
                c="qkv", m=rows, k=HIDDEN, n=3 * HIDDEN, act="identity")
        s.thunk("Attention", q="qkv", k=f"qkv+{HIDDEN * 4}", v=f"qkv+{2 * HIDDEN * 4}", mask="attention_mask",
                out="ctx", batch=1, seq=SEQ, kv_seq=SEQ, heads=HEADS, head_dim=HEAD_DIM, v_head_dim=HEAD_DIM,
                mask_kind="custom", scale=1.0 / math.sqrt(HEAD_DIM), softcap=0.0, q_row_stride=3 * HIDDEN,
                k_row_stride=3 * HIDDEN, v_row_stride=3 * HIDDEN, bhsd=False, kv_heads=HEADS)
        s.thunk("FusedMmBiasAct", a="ctx", w=pre + "out.weight", bias=pre + "out.bias", c="attn", m=rows,
                k=HIDDEN, n=HIDDEN, act="identity")
        s.thunk("FusedResidualLN", x="attn", res=h_in, bias="none", g=pre + "ln1.g", b=pre + "ln1.b",
                out="h_mid", rows=rows, h=HIDDEN, eps=EPS)
        s.thunk("FusedMmBiasAct", f"layer {l}: feed-forward", a="h_mid", w=pre + "fc1.weight",
                bias=pre + "fc1.bias", c="ffn_up", m=rows, k=HIDDEN, n=FFN, act="gelu")
        s.thunk("FusedMmBiasAct", a="ffn_up", w=pre + "fc2.weight", bias=pre + "fc2.bias", c="ffn_down",
                m=rows, k=FFN, n=HIDDEN, act="identity")
        s.thunk("FusedResidualLN", x="ffn_down", res="h_mid", bias="none", g=pre + "ln2.g", b=pre + "ln2.b",
                out=h_out, rows=rows, h=HIDDEN, eps=EPS)
    s.write(OUT, ["A 2-layer transformer encoder with fixed-seed weights.",
                  "Regenerate: python3 models/make/make_bert_tiny.py"])

    ids = rng.integers(0, VOCAB, size=(N_SAMPLES, SEQ)).astype(np.int64)
    masks = np.ones((N_SAMPLES, SEQ), np.float32)
    for i in range(N_SAMPLES):
        masks[i, SEQ - (i * 2) % (SEQ - 1):] = 0.0  # padding of varied length, never all masked
    hidden = np.stack([reference(ids[i], masks[i], p) for i in range(N_SAMPLES)])
    save_npy(OUT / "samples" / "input_ids.npy", ids.reshape(N_SAMPLES, 1, SEQ))
    save_npy(OUT / "samples" / "attention_mask.npy", masks.reshape(N_SAMPLES, 1, SEQ))
    save_npy(OUT / "expected" / "hidden.npy", hidden.astype(np.float32).reshape(N_SAMPLES, 1, SEQ, HIDDEN))
    print(f"bert_tiny: wrote {N_SAMPLES} samples")


if __name__ == "__main__":
    main()
