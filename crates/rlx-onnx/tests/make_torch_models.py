"""Writes small torch-exported fixtures for `tests/torch_exports.rs`.

The real end-to-end models (MiniLM, LeNet-5) need torch and large downloads,
so CI cannot run them; these two are the same exporter output in miniature,
small enough to commit, with the outputs onnxruntime gave recorded next to
them, so every CI run imports real torch graphs:

- `tiny_bert`: a 2-layer BERT (hidden 32, 4 heads, eager attention) with
  masked mean pooling and L2 normalisation, exported exactly as
  `models/onnx/export_minilm.py` exports all-MiniLM-L6-v2 (TorchScript
  exporter, opset 17), fed a sequence whose last tokens are padding;
- `tiny_cnn`: conv-relu-maxpool twice, then two linear layers (LeNet's
  shape, narrower), batch 2.

Weights are random with a fixed seed. Needs torch, transformers, onnx and
onnxruntime (`models/onnx/requirements.txt`); CI only reads the output.

Usage: python3 crates/rlx-onnx/tests/make_torch_models.py
"""

import json
import os

import numpy as np
import onnxruntime as ort
import torch
from transformers import BertConfig, BertModel

HERE = os.path.join(os.path.dirname(os.path.abspath(__file__)), "data")


class Pooled(torch.nn.Module):
    """BERT + masked mean pooling + L2 normalisation (sentence-transformers)."""

    def __init__(self, bert):
        super().__init__()
        self.bert = bert

    def forward(self, input_ids, attention_mask, token_type_ids):
        tokens = self.bert(
            input_ids=input_ids, attention_mask=attention_mask, token_type_ids=token_type_ids
        ).last_hidden_state
        mask = attention_mask.unsqueeze(-1).to(tokens.dtype)
        summed = (tokens * mask).sum(dim=1)
        counts = mask.sum(dim=1).clamp(min=1e-9)
        return torch.nn.functional.normalize(summed / counts, p=2.0, dim=1)


class TinyCnn(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.c1 = torch.nn.Conv2d(1, 4, 5)
        self.c2 = torch.nn.Conv2d(4, 8, 5)
        self.f1 = torch.nn.Linear(8 * 5 * 5, 24)
        self.f2 = torch.nn.Linear(24, 10)

    def forward(self, x):
        x = torch.max_pool2d(torch.relu(self.c1(x)), 2)
        x = torch.max_pool2d(torch.relu(self.c2(x)), 2)
        x = torch.relu(self.f1(torch.flatten(x, 1)))
        return self.f2(x)


def record(name, model, args, input_names, output_names):
    path = os.path.join(HERE, name + ".onnx")
    torch.onnx.export(model, args, path, input_names=input_names, output_names=output_names,
                      opset_version=17, dynamo=False)
    feeds = {n: a.numpy() for n, a in zip(input_names, args)}
    outs = ort.InferenceSession(path, providers=["CPUExecutionProvider"]).run(output_names, feeds)
    tensor = lambda a: {"dtype": str(a.dtype), "shape": list(a.shape), "data": a.ravel().tolist()}
    rec = {"inputs": {n: tensor(a) for n, a in feeds.items()},
           "outputs": {n: tensor(o) for n, o in zip(output_names, outs)}}
    with open(os.path.join(HERE, name + ".expected.json"), "w") as f:
        json.dump(rec, f, indent=0)
    print(f"wrote {path} ({os.path.getsize(path)} bytes)")


def main():
    torch.manual_seed(0)
    config = BertConfig(vocab_size=64, hidden_size=32, num_hidden_layers=2, num_attention_heads=4,
                        intermediate_size=64, max_position_embeddings=32)
    bert = BertModel(config, add_pooling_layer=False).eval()
    bert.config._attn_implementation = "eager"
    seq, pad = 12, 3
    ids = torch.randint(1, 64, (1, seq), dtype=torch.int64)
    ids[0, seq - pad:] = 0
    mask = torch.ones(1, seq, dtype=torch.int64)
    mask[0, seq - pad:] = 0
    types = torch.zeros(1, seq, dtype=torch.int64)
    with torch.no_grad():
        record("tiny_bert", Pooled(bert).eval(), (ids, mask, types),
               ["input_ids", "attention_mask", "token_type_ids"], ["embedding"])
        record("tiny_cnn", TinyCnn().eval(), (torch.randn(2, 1, 32, 32),), ["x"], ["logits"])


if __name__ == "__main__":
    main()
