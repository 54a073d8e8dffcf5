"""Trains the `mlp` digit classifier (64-128-64-10, ReLU, softmax) with
scikit-learn and writes models/mlp/: model.sched, weights.safetensors,
samples (inputs, labels) and expected outputs computed with numpy.

Run from the workspace root: python3 models/make/make_mlp.py
"""

from pathlib import Path

import numpy as np
from sklearn.neural_network import MLPClassifier

from digits import N_SAMPLES, split
from schedwriter import Sched, save_npy

OUT = Path(__file__).resolve().parents[1] / "mlp"


def reference(x, layers):
    """Independent numpy forward pass in float64."""
    h = x.astype(np.float64)
    for i, (w, b) in enumerate(layers):
        h = h @ w.astype(np.float64) + b.astype(np.float64)
        if i + 1 < len(layers):
            h = np.maximum(h, 0.0)
    h = h - h.max(axis=-1, keepdims=True)
    e = np.exp(h)
    return e / e.sum(axis=-1, keepdims=True)


def main():
    x_train, x_test, y_train, y_test = split()
    clf = MLPClassifier(hidden_layer_sizes=(128, 64), activation="relu", max_iter=400, random_state=0)
    clf.fit(x_train, y_train)
    print(f"mlp: sklearn test accuracy {clf.score(x_test, y_test):.4f}")
    layers = [(w.astype(np.float32), b.astype(np.float32)) for w, b in zip(clf.coefs_, clf.intercepts_)]

    s = Sched("mlp")
    s.arena("input", "x", "f32", [1, 64])
    for i, (w, b) in enumerate(layers):
        s.param(f"fc{i + 1}.weight", w)
        s.param(f"fc{i + 1}.bias", b)
    s.arena("scratch", "h1", "f32", [1, 128])
    s.arena("scratch", "h2", "f32", [1, 64])
    s.arena("scratch", "logits", "f32", [1, 10])
    s.arena("output", "probs", "f32", [1, 10])
    s.thunk("FusedMmBiasAct", a="x", w="fc1.weight", bias="fc1.bias", c="h1", m=1, k=64, n=128, act="relu")
    s.thunk("FusedMmBiasAct", a="h1", w="fc2.weight", bias="fc2.bias", c="h2", m=1, k=128, n=64, act="relu")
    s.thunk("FusedMmBiasAct", a="h2", w="fc3.weight", bias="fc3.bias", c="logits", m=1, k=64, n=10, act="identity")
    s.thunk("Softmax", src="logits", dst="probs", rows=1, cols=10)
    s.write(OUT, ["Digit classifier trained on scikit-learn's 8x8 digits.",
                  "Regenerate: python3 models/make/make_mlp.py"])

    xs = x_test[:N_SAMPLES]
    ys = y_test[:N_SAMPLES]
    probs = reference(xs, layers).astype(np.float32)
    save_npy(OUT / "samples" / "x.npy", xs.reshape(N_SAMPLES, 1, 64))
    save_npy(OUT / "samples" / "labels.npy", ys)
    save_npy(OUT / "expected" / "probs.npy", probs.reshape(N_SAMPLES, 1, 10))
    acc = float((probs.argmax(-1) == ys).mean())
    (OUT / "expected" / "accuracy.txt").write_text(f"{acc:.6f}\n")
    print(f"mlp: reference accuracy on {N_SAMPLES} bundled samples {acc:.4f}")


if __name__ == "__main__":
    main()
