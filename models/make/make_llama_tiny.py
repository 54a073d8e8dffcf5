"""Builds `llama_tiny`: a Llama-architecture decoder (RMSNorm, RoPE,
grouped-query attention, SwiGLU, tied embeddings) with fixed-seed weights,
as one decoder-step schedule over a persistent KV cache, and the reference
of a 64-token greedy generation by `transformers`' own LlamaForCausalLM.

The config is documented in docs/decoding.md. The step schedule runs `SEQ`
tokens at the run-time position `pos` (an i64 input): the KV cache of each
layer is a `state` buffer of `MAX_LEN` rows.

Writes models/llama_tiny/{model.sched, weights.safetensors, config.json,
expected/{prompt_ids,tokens,logits}.npy}.

Run from the workspace root: python3 models/make/make_llama_tiny.py
(needs torch and transformers: models/onnx/requirements.txt)
"""

import json
import math
from pathlib import Path

import numpy as np
import torch
from transformers import LlamaConfig, LlamaForCausalLM

from schedwriter import Sched, save_npy

OUT = Path(__file__).resolve().parents[1] / "llama_tiny"
CONFIG = dict(
    vocab_size=512,
    hidden_size=64,
    intermediate_size=172,
    num_hidden_layers=2,
    num_attention_heads=4,
    num_key_value_heads=2,
    head_dim=16,
    max_position_embeddings=128,
    rms_norm_eps=1e-5,
    rope_theta=10000.0,
    tie_word_embeddings=True,
    hidden_act="silu",
    attention_bias=False,
    mlp_bias=False,
    # Wider than the usual 0.02 so that greedy choices are clear-cut: a
    # reference whose top two logits tie would make "same tokens" a coin toss.
    initializer_range=0.2,
)
SEQ = 1
PROMPT = [1, 17, 93, 211, 5, 400, 64]
STEPS = 64


def build_model():
    torch.manual_seed(0)
    cfg = LlamaConfig(**CONFIG)
    model = LlamaForCausalLM(cfg).eval()
    with torch.no_grad():
        # Norm weights start at 1; perturb them so a wiring mistake shows.
        for name, p in model.named_parameters():
            if "norm" in name:
                p.copy_(1.0 + 0.1 * torch.randn_like(p))
    return model


@torch.no_grad()
def greedy_reference(model):
    """Logits of every step of a greedy generation, token by token with
    transformers' KV cache: row 0 is the logits after the prompt."""
    out = model(torch.tensor([PROMPT]), use_cache=True)
    cache, logits, tokens = out.past_key_values, [], []
    row = out.logits[0, -1]
    for _ in range(STEPS):
        logits.append(row.numpy().copy())
        tok = int(torch.argmax(row))
        tokens.append(tok)
        out = model(torch.tensor([[tok]]), past_key_values=cache, use_cache=True)
        cache, row = out.past_key_values, out.logits[0, -1]
    return np.stack(logits).astype(np.float32), np.array(tokens, dtype=np.int64)


@torch.no_grad()
def rope_tables(model):
    """cos/sin of every position as transformers computes them (f32), first
    half of each row (the rotate-half pairing repeats it)."""
    c = model.config
    ids = torch.arange(c.max_position_embeddings)[None, :]
    x = torch.zeros(1, dtype=torch.float32)
    cos, sin = model.model.rotary_emb(x, ids)
    half = c.head_dim // 2
    return cos[0, :, :half].numpy(), sin[0, :, :half].numpy()


def write_schedule(model):
    c = model.config
    h, hd, heads, kvh, inter, vocab = (c.hidden_size, c.head_dim, c.num_attention_heads,
                                       c.num_key_value_heads, c.intermediate_size, c.vocab_size)
    max_len, eps = c.max_position_embeddings, float(c.rms_norm_eps)
    sd = {k: v.detach().numpy().astype(np.float32) for k, v in model.state_dict().items()}
    s = Sched("llama_tiny")
    # Products take weights as [in, out]: torch's Linear stores [out, in].
    lin = lambda name: np.ascontiguousarray(sd[name].T)
    s.param("embed", sd["model.embed_tokens.weight"])
    cos, sin = rope_tables(model)
    s.param("rope.cos", cos)
    s.param("rope.sin", sin)
    for l in range(c.num_hidden_layers):
        p = f"model.layers.{l}."
        s.param(f"layer{l}.attn_norm", sd[p + "input_layernorm.weight"])
        s.param(f"layer{l}.wq", lin(p + "self_attn.q_proj.weight"))
        s.param(f"layer{l}.wk", lin(p + "self_attn.k_proj.weight"))
        s.param(f"layer{l}.wv", lin(p + "self_attn.v_proj.weight"))
        s.param(f"layer{l}.wo", lin(p + "self_attn.o_proj.weight"))
        s.param(f"layer{l}.mlp_norm", sd[p + "post_attention_layernorm.weight"])
        s.param(f"layer{l}.w_gate", lin(p + "mlp.gate_proj.weight"))
        s.param(f"layer{l}.w_up", lin(p + "mlp.up_proj.weight"))
        s.param(f"layer{l}.w_down", lin(p + "mlp.down_proj.weight"))
    s.param("final_norm", sd["model.norm.weight"])

    s.arena("input", "tokens", "i64", [SEQ])
    s.arena("input", "pos", "i64", [1])
    for l in range(c.num_hidden_layers):
        s.arena("state", f"layer{l}.k_cache", "f32", [max_len, kvh * hd])
        s.arena("state", f"layer{l}.v_cache", "f32", [max_len, kvh * hd])
    s.arena("output", "logits", "f32", [SEQ, vocab])
    for name, width in [("h", h), ("x", h), ("q", heads * hd), ("k", kvh * hd), ("v", kvh * hd),
                        ("ctx", heads * hd), ("proj", h), ("gate", inter), ("up", inter), ("act", inter)]:
        s.arena("scratch", name, "f32", [SEQ, width])

    s.thunk("Gather", "token embeddings", table="embed", indices="tokens", dst="h", num_indices=SEQ, row_len=h,
            vocab=vocab, index_dtype="i64")
    for l in range(c.num_hidden_layers):
        pre = f"layer{l}."
        s.thunk("RmsNorm", f"layer {l}: attention", x="h", g=pre + "attn_norm", out="x", rows=SEQ, h=h, eps=eps)
        for w, out, n in [("wq", "q", heads * hd), ("wk", "k", kvh * hd), ("wv", "v", kvh * hd)]:
            s.thunk("Sgemm", a="x", b=pre + w, c=out, m=SEQ, k=h, n=n)
        for x, nh in [("q", heads), ("k", kvh)]:
            s.thunk("RopeAt", x=x, cos="rope.cos", sin="rope.sin", pos="pos", out=x, seq=SEQ, heads=nh,
                    head_dim=hd, max_len=max_len, interleaved=False)
        for x in ["k", "v"]:
            s.thunk("KvWrite", src=x, cache=f"{pre}{x}_cache", pos="pos", new_len=SEQ, max_len=max_len,
                    row=kvh * hd, elem_bytes=4)
        s.thunk("CachedAttention", q="q", k=pre + "k_cache", v=pre + "v_cache", pos="pos", out="ctx", seq=SEQ,
                max_len=max_len, heads=heads, kv_heads=kvh, head_dim=hd, scale=1.0 / math.sqrt(hd),
                q_row_stride=heads * hd)
        s.thunk("Sgemm", a="ctx", b=pre + "wo", c="proj", m=SEQ, k=heads * hd, n=h)
        s.thunk("ElementwiseRegion", "residual", inputs=["h", "proj"], dst="h", len=SEQ * h, steps=["add(in1)"])
        s.thunk("RmsNorm", f"layer {l}: feed-forward (SwiGLU)", x="h", g=pre + "mlp_norm", out="x", rows=SEQ, h=h,
                eps=eps)
        s.thunk("Sgemm", a="x", b=pre + "w_gate", c="gate", m=SEQ, k=h, n=inter)
        s.thunk("Sgemm", a="x", b=pre + "w_up", c="up", m=SEQ, k=h, n=inter)
        s.thunk("ElementwiseRegion", inputs=["gate", "up"], dst="act", len=SEQ * inter, steps=["silu", "mul(in1)"])
        s.thunk("Sgemm", a="act", b=pre + "w_down", c="proj", m=SEQ, k=inter, n=h)
        s.thunk("ElementwiseRegion", "residual", inputs=["h", "proj"], dst="h", len=SEQ * h, steps=["add(in1)"])
    s.thunk("RmsNorm", "final norm, then the logits through the tied embedding", x="h", g="final_norm", out="x",
            rows=SEQ, h=h, eps=eps)
    s.thunk("SgemmT", a="x", b="embed", c="logits", m=SEQ, k=h, n=vocab, ta=False, tb=True)
    s.write(OUT, [
        "A Llama-architecture decoder step (2 layers, hidden 64, 4 query heads over 2",
        "key/value heads, SwiGLU 172, tied embeddings, vocab 512) with fixed-seed weights:",
        "SEQ tokens at position `pos` over a persistent KV cache of 128 rows.",
        "Regenerate: python3 models/make/make_llama_tiny.py",
    ])


def main():
    model = build_model()
    write_schedule(model)
    logits, tokens = greedy_reference(model)
    save_npy(OUT / "expected" / "prompt_ids.npy", np.array(PROMPT, dtype=np.int64))
    save_npy(OUT / "expected" / "tokens.npy", tokens)
    save_npy(OUT / "expected" / "logits.npy", logits)
    (OUT / "config.json").write_text(json.dumps(CONFIG, indent=2, sort_keys=True) + "\n")
    gaps = np.sort(logits, axis=1)
    print(f"wrote {OUT}: {STEPS} steps, smallest top-2 logit gap {float((gaps[:, -1] - gaps[:, -2]).min()):.4f}")


if __name__ == "__main__":
    main()
