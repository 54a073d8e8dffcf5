#!/usr/bin/env python3
"""Runs an ONNX model in onnxruntime for `cargo xtask verify`.

    python3 xtask/verify_ort.py model.onnx OUT_DIR NAME=input.npy ...

NAME is an input's ONNX name or its `.sched` name (the importer's
sanitized form). Each output is written as OUT_DIR/<sched name>.npy, so the
Rust side finds it under the schedule's output name. Exits with 3 when
onnxruntime or numpy cannot be imported, 2 on bad arguments.
"""

import os
import re
import sys

ORT_MISSING = 3

try:
    import numpy as np
    import onnxruntime as ort
except ImportError as e:
    print(f"skipped: onnxruntime is not installed (pip install onnxruntime numpy): {e}", file=sys.stderr)
    sys.exit(ORT_MISSING)


def sanitize(name):
    """The `.sched` identifier rlx-onnx makes of an ONNX name (names.rs)."""
    s = re.sub(r"[^A-Za-z0-9_.]", "_", name)
    reserved = s in ("none", "true", "false", "inf", "nan") or (
        len(s) > 2 and s.startswith("in") and s[2:].isdigit()
    )
    if not re.match(r"[A-Za-z_]", s) or reserved:
        s = "_" + s
    return s


def fail(msg):
    print(f"verify_ort: {msg}", file=sys.stderr)
    sys.exit(2)


def main(argv):
    if len(argv) < 2:
        fail("usage: verify_ort.py model.onnx OUT_DIR NAME=input.npy ...")
    model, out_dir, specs = argv[0], argv[1], argv[2:]
    given = {}
    for spec in specs:
        name, sep, path = spec.partition("=")
        if not sep or not name or not path:
            fail(f"expected NAME=PATH, found `{spec}`")
        given[name] = path
    # Single-threaded and deterministic; the default optimizations stay on
    # (they are what users of onnxruntime get).
    opts = ort.SessionOptions()
    opts.intra_op_num_threads = 1
    sess = ort.InferenceSession(model, sess_options=opts, providers=["CPUExecutionProvider"])
    feeds = {}
    for meta in sess.get_inputs():
        path = given.get(meta.name, given.get(sanitize(meta.name)))
        if path is None:
            fail(f"no input given for `{meta.name}`")
        feeds[meta.name] = np.load(path)
    results = sess.run(None, feeds)
    os.makedirs(out_dir, exist_ok=True)
    for meta, value in zip(sess.get_outputs(), results):
        np.save(os.path.join(out_dir, sanitize(meta.name) + ".npy"), np.ascontiguousarray(value))


if __name__ == "__main__":
    main(sys.argv[1:])
