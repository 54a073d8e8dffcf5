"""Builds the `cnn` digit classifier and writes models/cnn/.

Conv2D(1->8, 3x3, pad 1) -> BatchNorm -> ReLU -> MaxPool(2x2) -> GEMM(128->10)
-> softmax on the 8x8 digits. The conv filters are fixed-seed random
features; the BatchNorm statistics are measured on the training set and the
classifier head is trained with scikit-learn's logistic regression on the
pooled features. The expected outputs come from an independent numpy
implementation.

Run from the workspace root: python3 models/make/make_cnn.py
"""

from pathlib import Path

import numpy as np
from sklearn.linear_model import LogisticRegression

from digits import N_SAMPLES, split
from schedwriter import Sched, save_npy

OUT = Path(__file__).resolve().parents[1] / "cnn"
C = 8
EPS = 1e-5


def conv3x3_pad1(x, w, b):
    """x [n,1,8,8], w [c,1,3,3] -> [n,c,8,8], direct loops in float64."""
    n = x.shape[0]
    xp = np.zeros((n, 1, 10, 10))
    xp[:, :, 1:9, 1:9] = x
    out = np.zeros((n, w.shape[0], 8, 8))
    for i in range(3):
        for j in range(3):
            out += xp[:, :, i:i + 8, j:j + 8] * w[None, :, 0, i, j, None, None]
    return out + b[None, :, None, None]


def features(x, w, b, mean, var, gamma, beta):
    y = conv3x3_pad1(x, w, b)
    y = (y - mean[None, :, None, None]) / np.sqrt(var[None, :, None, None] + EPS) * gamma[None, :, None, None] \
        + beta[None, :, None, None]
    y = np.maximum(y, 0.0)
    y = y.reshape(y.shape[0], C, 4, 2, 4, 2).max(axis=(3, 5))
    return y.reshape(y.shape[0], C * 16)


def main():
    rng = np.random.default_rng(0)
    x_train, x_test, y_train, y_test = split()
    x_train = x_train.reshape(-1, 1, 8, 8).astype(np.float64)
    x_test = x_test.reshape(-1, 1, 8, 8).astype(np.float64)
    w = rng.normal(0.0, 0.5, size=(C, 1, 3, 3)).astype(np.float32)
    b = rng.normal(0.0, 0.1, size=(C,)).astype(np.float32)
    pre = conv3x3_pad1(x_train, w.astype(np.float64), b.astype(np.float64))
    mean = pre.mean(axis=(0, 2, 3)).astype(np.float32)
    var = pre.var(axis=(0, 2, 3)).astype(np.float32)
    gamma = np.ones(C, np.float32)
    beta = np.zeros(C, np.float32)
    f64 = lambda a: a.astype(np.float64)
    ftrain = features(x_train, f64(w), f64(b), f64(mean), f64(var), f64(gamma), f64(beta))
    clf = LogisticRegression(max_iter=2000, C=1.0)
    clf.fit(ftrain, y_train)
    fc_w = clf.coef_.T.astype(np.float32).copy()  # [128, 10]
    fc_b = clf.intercept_.astype(np.float32)

    s = Sched("cnn")
    s.arena("input", "x", "f32", [1, 1, 8, 8])
    s.param("conv.weight", w)
    s.param("conv.bias", b)
    s.param("bn.scale", gamma)
    s.param("bn.bias", beta)
    s.param("bn.mean", mean)
    s.param("bn.var", var)
    s.param("fc.weight", fc_w)
    s.param("fc.bias", fc_b)
    s.arena("scratch", "conv", "f32", [1, C, 8, 8])
    s.arena("scratch", "bn", "f32", [1, C, 8, 8])
    s.arena("scratch", "pool", "f32", [1, C * 16])
    s.arena("scratch", "logits", "f32", [1, 10])
    s.arena("output", "probs", "f32", [1, 10])
    s.thunk("Conv2D", x="x", w="conv.weight", bias="conv.bias", out="conv", n=1, c_in=1, h=8, w_in=8, c_out=C,
            h_out=8, w_out=8, kh=3, kw=3, sh=1, sw=1, ph=1, pw=1, dh=1, dw=1, groups=1)
    s.thunk("BatchNormInference", x="conv", scale="bn.scale", bias="bn.bias", mean="bn.mean", var="bn.var",
            out="bn", n=1, c=C, hw=64, eps=EPS)
    s.thunk("ActivationInPlace", data="bn", len=C * 64, act="relu")
    s.thunk("Pool2D", src="bn", dst="pool", n=1, c=C, h=8, w=8, h_out=4, w_out=4, kh=2, kw=2, sh=2, sw=2, ph=0,
            pw=0, kind="max", count_include_pad=False)
    s.thunk("FusedMmBiasAct", a="pool", w="fc.weight", bias="fc.bias", c="logits", m=1, k=C * 16, n=10,
            act="identity")
    s.thunk("Softmax", src="logits", dst="probs", rows=1, cols=10)
    s.write(OUT, ["Small conv net on scikit-learn's 8x8 digits.",
                  "Regenerate: python3 models/make/make_cnn.py"])

    xs = x_test[:N_SAMPLES]
    ys = y_test[:N_SAMPLES]
    logits = features(xs, f64(w), f64(b), f64(mean), f64(var), f64(gamma), f64(beta)) @ f64(fc_w) + f64(fc_b)
    logits -= logits.max(axis=-1, keepdims=True)
    probs = np.exp(logits) / np.exp(logits).sum(axis=-1, keepdims=True)
    save_npy(OUT / "samples" / "x.npy", xs.astype(np.float32).reshape(N_SAMPLES, 1, 1, 8, 8))
    save_npy(OUT / "samples" / "labels.npy", ys)
    save_npy(OUT / "expected" / "probs.npy", probs.astype(np.float32).reshape(N_SAMPLES, 1, 10))
    acc = float((probs.argmax(-1) == ys).mean())
    (OUT / "expected" / "accuracy.txt").write_text(f"{acc:.6f}\n")
    print(f"cnn: reference accuracy on {N_SAMPLES} bundled samples {acc:.4f}")


if __name__ == "__main__":
    main()
