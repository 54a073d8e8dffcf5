"""Exports a small recurrent sequence classifier with seeded weights to ONNX,
for the end-to-end run against onnxruntime:

- `lstm`: input [batch 1, seq 32, features 16] (batch first) -> a 2-layer
  bidirectional nn.LSTM of hidden size 64 -> an nn.GRU of hidden size 32
  (torch's GRU is ONNX's `linear_before_reset = 1`) -> the last step's state
  -> nn.Linear to 10 classes.

Weights are torch's default initialisation drawn from a fixed seed (uniform
in +-1/sqrt(hidden) for the recurrent layers), the model is put in eval
mode and exported by the TorchScript exporter (`dynamo=False`, opset 17,
static shapes), which writes three `LSTM`/`GRU` nodes (two LSTM layers,
bidirectional, and the GRU), their weights reordered to ONNX's gate order by
constant `Slice`/`Concat` subgraphs that the importer folds. Trained weights
change nothing the comparison measures.

Writes, under OUT_DIR (default `.cache/onnx-models/lstm`, git-ignored):
  lstm.onnx, input.npy (one seeded sequence), expected.npy (torch's logits)

Usage: python3 models/onnx/export_lstm.py [OUT_DIR]
"""

import sys
import warnings
from pathlib import Path

import numpy as np
import torch
from torch import nn

warnings.filterwarnings("ignore", message=".*legacy TorchScript-based ONNX export", category=DeprecationWarning)
# The exporter warns that an LSTM exported with batch_first and a batch of 1
# may not generalise to other batches; the shapes here are static.
warnings.filterwarnings("ignore", category=UserWarning)

SEED = 13
SEQ, FEATURES, HIDDEN, GRU_HIDDEN, CLASSES = 32, 16, 64, 32, 10


class SeqClassifier(nn.Module):
    def __init__(self):
        super().__init__()
        self.lstm = nn.LSTM(FEATURES, HIDDEN, num_layers=2, bidirectional=True, batch_first=True)
        self.gru = nn.GRU(2 * HIDDEN, GRU_HIDDEN, batch_first=True)
        self.fc = nn.Linear(GRU_HIDDEN, CLASSES)

    def forward(self, x):
        y, _ = self.lstm(x)
        z, _ = self.gru(y)
        return self.fc(z[:, -1])


def main():
    out = Path(sys.argv[1] if len(sys.argv) > 1 else ".cache/onnx-models/lstm")
    out.mkdir(parents=True, exist_ok=True)
    torch.manual_seed(SEED)
    model = SeqClassifier().eval()
    x = torch.randn((1, SEQ, FEATURES))
    np.save(out / "input.npy", x.numpy().astype(np.float32))
    with torch.no_grad():
        expected = model(x)
    np.save(out / "expected.npy", expected.numpy().astype(np.float32))
    torch.onnx.export(
        model,
        (x,),
        str(out / "lstm.onnx"),
        input_names=["input"],
        output_names=["logits"],
        opset_version=17,
        dynamo=False,
    )
    print(f"lstm: wrote {out / 'lstm.onnx'}")


if __name__ == "__main__":
    main()
