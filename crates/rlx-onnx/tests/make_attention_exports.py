"""Attention as five exporters write it, for `tests/attention_exports.rs`:
each model is one self-attention with its projections, small enough to
check in, and the test asserts that it imports to exactly one `Attention`
thunk and matches onnxruntime.

- `attn_sdpa`: torch's `F.scaled_dot_product_attention` with
  `is_causal=True` (the exporter builds the causal mask in the graph from
  `Trilu` and `Where`, and splits the scale over q and k).
- `attn_bert`: BERT's eager form: `Q @ K^T / sqrt(d)` plus
  `(1 - mask) * min` from a padding-mask input, softmax, `@ V`.
- `attn_vit`: `nn.MultiheadAttention` (batch first, as torchvision's ViT
  uses it): one stacked in-projection, heads split from its rows.
- `attn_gpt2`: GPT-2's older eager form: the causal mask from `Range`
  comparisons, applied with `torch.where(causal, scores, finfo.min)` (a
  boolean mask on the scores), then a padding mask added.
- `attn_t5`: T5's form: no scale, a learned position bias and a padding
  mask both added to the scores.
- `attn_tf`: Keras `MultiHeadAttention` converted by tf2onnx (einsum
  projections, the scale on the query, a `(1 - mask) * -1e9` adder):
  written by `make_attention_tf.py` under a Python with tensorflow and
  tf2onnx, then recorded here with `--record attn_tf`.

Usage: python3 tests/make_attention_exports.py [--record NAME]
Writes tests/data/NAME.onnx and NAME.expected.json (onnxruntime's outputs).
"""

import json
import math
import os
import sys

import numpy as np
import onnxruntime as ort

HERE = os.path.join(os.path.dirname(os.path.abspath(__file__)), "data")
B, S, E, H = 2, 8, 16, 4
D = E // H


def record(name, feeds, output_names=None):
    path = os.path.join(HERE, name + ".onnx")
    sess = ort.InferenceSession(path, providers=["CPUExecutionProvider"])
    output_names = output_names or [o.name for o in sess.get_outputs()]
    outs = sess.run(output_names, feeds)
    tensor = lambda a: {"dtype": str(a.dtype), "shape": list(a.shape), "data": a.ravel().tolist()}
    rec = {"inputs": {n: tensor(a) for n, a in feeds.items()},
           "outputs": {n: tensor(o) for n, o in zip(output_names, outs)}}
    with open(os.path.join(HERE, name + ".expected.json"), "w") as f:
        json.dump(rec, f, indent=0)
    print(f"wrote {path} ({os.path.getsize(path)} bytes)")


def padding_mask():
    mask = np.ones((B, S), dtype=np.int64)
    mask[1, S - 3:] = 0
    return mask


def torch_models():
    import torch
    import torch.nn.functional as F
    from torch import nn

    class Heads(nn.Module):
        def __init__(self):
            super().__init__()
            self.q, self.k, self.v, self.o = (nn.Linear(E, E) for _ in range(4))

        def split(self, x):
            return x.view(x.shape[0], x.shape[1], H, D).transpose(1, 2)

        def merge(self, x):
            return self.o(x.transpose(1, 2).reshape(x.shape[0], -1, E))

    class Sdpa(Heads):
        def forward(self, x):
            q, k, v = self.split(self.q(x)), self.split(self.k(x)), self.split(self.v(x))
            return self.merge(F.scaled_dot_product_attention(q, k, v, is_causal=True))

    class Bert(Heads):
        def forward(self, x, mask):
            q, k, v = self.split(self.q(x)), self.split(self.k(x)), self.split(self.v(x))
            scores = torch.matmul(q, k.transpose(-1, -2)) / math.sqrt(D)
            ext = (1.0 - mask[:, None, None, :].to(torch.float32)) * torch.finfo(torch.float32).min
            probs = torch.softmax(scores + ext, dim=-1)
            return self.merge(torch.matmul(probs, v))

    class Vit(nn.Module):
        def __init__(self):
            super().__init__()
            self.mha = nn.MultiheadAttention(E, H, batch_first=True)

        def forward(self, x):
            return self.mha(x, x, x, need_weights=False)[0]

    class Gpt2(Heads):
        def forward(self, x, mask):
            q, k, v = self.split(self.q(x)), self.split(self.k(x)), self.split(self.v(x))
            scores = torch.matmul(q, k.transpose(-1, -2)) / math.sqrt(D)
            pos = torch.arange(x.shape[1])
            causal = pos[None, :] <= pos[:, None]
            scores = torch.where(causal, scores, torch.tensor(torch.finfo(torch.float32).min))
            ext = (1.0 - mask[:, None, None, :].to(torch.float32)) * -10000.0
            probs = torch.softmax(scores + ext, dim=-1)
            return self.merge(torch.matmul(probs, v))

    class T5(Heads):
        def __init__(self):
            super().__init__()
            self.bias = nn.Parameter(torch.randn(1, H, S, S))

        def forward(self, x, mask):
            q, k, v = self.split(self.q(x)), self.split(self.k(x)), self.split(self.v(x))
            scores = torch.matmul(q, k.transpose(3, 2))
            ext = (1.0 - mask[:, None, None, :].to(torch.float32)) * torch.finfo(torch.float32).min
            scores = scores + (self.bias + ext)
            probs = torch.softmax(scores.float(), dim=-1).type_as(scores)
            return self.merge(torch.matmul(probs, v))

    # The fused fast path of `nn.MultiheadAttention` has no ONNX export; the
    # exporter writes the module's own ops without it.
    torch.backends.mha.set_fastpath_enabled(False)
    torch.manual_seed(0)
    x = torch.randn(B, S, E)
    mask = torch.from_numpy(padding_mask())
    with torch.no_grad():
        for name, model, args, names in [
            ("attn_sdpa", Sdpa(), (x,), ["x"]),
            ("attn_bert", Bert(), (x, mask), ["x", "attention_mask"]),
            ("attn_vit", Vit(), (x,), ["x"]),
            ("attn_gpt2", Gpt2(), (x, mask), ["x", "attention_mask"]),
            ("attn_t5", T5(), (x, mask), ["x", "attention_mask"]),
        ]:
            path = os.path.join(HERE, name + ".onnx")
            torch.onnx.export(model.eval(), args, path, input_names=names, output_names=["y"],
                              opset_version=17, dynamo=False)
            record(name, {n: a.numpy() for n, a in zip(names, args)}, ["y"])


def main():
    if sys.argv[1:2] == ["--record"]:
        name = sys.argv[2]
        x = np.random.default_rng(0).standard_normal((B, S, E)).astype(np.float32)
        record(name, {"x": x, "attention_mask": padding_mask()})
    else:
        torch_models()


if __name__ == "__main__":
    main()
