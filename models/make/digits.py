"""The scikit-learn 8x8 digits data set (bundled with scikit-learn, no
download), split the same way for every digits model."""

import numpy as np
from sklearn.datasets import load_digits
from sklearn.model_selection import train_test_split

N_SAMPLES = 64  # test samples bundled with each model


def split():
    d = load_digits()
    x = (d.data / 16.0).astype(np.float32)
    y = d.target.astype(np.int64)
    x_train, x_test, y_train, y_test = train_test_split(x, y, test_size=0.25, random_state=0, stratify=y)
    return x_train, x_test, y_train, y_test
