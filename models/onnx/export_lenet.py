"""Trains LeNet-5 briefly on scikit-learn's digits and exports it to ONNX.

The end-to-end test needs a small CNN from torch whose outputs mean
something. scikit-learn ships 1,797 8x8 digits (no download): each is scaled
to [0, 1], upsampled 3x (nearest) to 24x24 and zero-padded to 1x32x32, the
input size of the classic LeNet-5:

    conv5x5(6) - relu - maxpool2 - conv5x5(16) - relu - maxpool2
    - fc120 - relu - fc84 - relu - fc10   (logits)

Training: fixed seed, Adam, a few epochs on 80% of the digits (a few seconds
on one CPU core); the held-out accuracy is printed. Export: the TorchScript
exporter (`dynamo=False`), opset 17, static shapes.

Writes, under OUT_DIR (default `.cache/onnx-models/lenet`, git-ignored):
  lenet.onnx, input.npy, expected.npy            batch 1: a held-out digit, torch's logits
  lenet_b4.onnx, input_b4.npy, expected_b4.npy   batch 4: four held-out digits
  labels_b4.npy                                  the true digits of the batch-4 input

Usage: python3 models/onnx/export_lenet.py [OUT_DIR]
"""

import sys
import warnings
from pathlib import Path

import numpy as np
import torch
from sklearn.datasets import load_digits

# The TorchScript exporter is the one chosen (static shapes, plain ops); its
# deprecation notice says nothing about this model.
warnings.filterwarnings("ignore", message=".*legacy TorchScript-based ONNX export", category=DeprecationWarning)

SEED = 5
EPOCHS = 8
BATCH = 32


class LeNet5(torch.nn.Module):
    """LeNet-5 with ReLU and max pooling (the common modern form)."""

    def __init__(self):
        super().__init__()
        self.conv1 = torch.nn.Conv2d(1, 6, 5)
        self.conv2 = torch.nn.Conv2d(6, 16, 5)
        self.fc1 = torch.nn.Linear(16 * 5 * 5, 120)
        self.fc2 = torch.nn.Linear(120, 84)
        self.fc3 = torch.nn.Linear(84, 10)

    def forward(self, x):
        x = torch.nn.functional.max_pool2d(torch.relu(self.conv1(x)), 2)
        x = torch.nn.functional.max_pool2d(torch.relu(self.conv2(x)), 2)
        # torch.flatten exports as one ONNX Flatten (no shape arithmetic).
        x = torch.flatten(x, 1)
        x = torch.relu(self.fc1(x))
        x = torch.relu(self.fc2(x))
        return self.fc3(x)


def digits_32x32():
    """The digits as float32 [n, 1, 32, 32] in [0, 1], and their labels."""
    digits = load_digits()
    images = digits.images.astype(np.float32) / 16.0
    big = images.repeat(3, axis=1).repeat(3, axis=2)
    padded = np.pad(big, ((0, 0), (4, 4), (4, 4)))
    return padded[:, None, :, :].astype(np.float32), digits.target.astype(np.int64)


def train(model, x, y):
    generator = torch.Generator().manual_seed(SEED)
    opt = torch.optim.Adam(model.parameters(), lr=2e-3)
    xs, ys = torch.from_numpy(x), torch.from_numpy(y)
    for _ in range(EPOCHS):
        order = torch.randperm(len(xs), generator=generator)
        for start in range(0, len(xs), BATCH):
            idx = order[start : start + BATCH]
            opt.zero_grad()
            loss = torch.nn.functional.cross_entropy(model(xs[idx]), ys[idx])
            loss.backward()
            opt.step()


def export(model, sample, path):
    torch.onnx.export(
        model,
        (torch.from_numpy(sample),),
        str(path),
        input_names=["input"],
        output_names=["logits"],
        opset_version=17,
        dynamo=False,
    )


def main():
    out = Path(sys.argv[1] if len(sys.argv) > 1 else ".cache/onnx-models/lenet")
    out.mkdir(parents=True, exist_ok=True)
    torch.manual_seed(SEED)
    torch.set_num_threads(1)
    x, y = digits_32x32()
    order = np.random.default_rng(SEED).permutation(len(x))
    split = int(0.8 * len(x))
    train_idx, test_idx = order[:split], order[split:]

    model = LeNet5()
    model.train()
    train(model, x[train_idx], y[train_idx])
    model.eval()
    with torch.no_grad():
        predicted = model(torch.from_numpy(x[test_idx])).argmax(dim=1).numpy()
    accuracy = float((predicted == y[test_idx]).mean())
    print(f"lenet: held-out accuracy {accuracy:.3f} on {len(test_idx)} digits")

    for suffix, count in (("", 1), ("_b4", 4)):
        sample = np.ascontiguousarray(x[test_idx[:count]])
        with torch.no_grad():
            logits = model(torch.from_numpy(sample)).numpy().astype(np.float32)
        export(model, sample, out / f"lenet{suffix}.onnx")
        np.save(out / f"input{suffix}.npy", sample)
        np.save(out / f"expected{suffix}.npy", logits)
        if count > 1:
            np.save(out / f"labels{suffix}.npy", y[test_idx[:count]])
    print(f"wrote {out / 'lenet.onnx'} and {out / 'lenet_b4.onnx'}")


if __name__ == "__main__":
    main()
