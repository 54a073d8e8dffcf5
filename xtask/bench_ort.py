#!/usr/bin/env python3
"""Times an ONNX model in onnxruntime for `cargo xtask bench`.

    python3 xtask/bench_ort.py model.onnx RUNS THREADS[,THREADS...] NAME=input.npy ...

For each thread count: a fresh session (CPU provider, intra_op_num_threads
= that count, inter_op_num_threads = 1, sequential execution), warm-up
runs, then RUNS timed runs; prints one line per count:

    threads 1 median_ms 41.234

Exits with 3 when onnxruntime or numpy cannot be imported, 2 on bad
arguments.
"""

import statistics
import sys
import time

ORT_MISSING = 3

try:
    import numpy as np
    import onnxruntime as ort
except ImportError as e:
    print(f"skipped: onnxruntime is not installed (pip install onnxruntime numpy): {e}", file=sys.stderr)
    sys.exit(ORT_MISSING)


def fail(msg):
    print(f"bench_ort: {msg}", file=sys.stderr)
    sys.exit(2)


def median_ms(model, threads, feeds, runs):
    opts = ort.SessionOptions()
    opts.intra_op_num_threads = threads
    opts.inter_op_num_threads = 1
    opts.execution_mode = ort.ExecutionMode.ORT_SEQUENTIAL
    sess = ort.InferenceSession(model, sess_options=opts, providers=["CPUExecutionProvider"])
    # The same warm-up rule as the model CLI's --bench: a tenth, 1 to 10 runs.
    for _ in range(min(max(-(-runs // 10), 1), 10)):
        sess.run(None, feeds)
    times = []
    for _ in range(runs):
        start = time.perf_counter()
        sess.run(None, feeds)
        times.append(time.perf_counter() - start)
    return statistics.median(times) * 1e3


def main(argv):
    if len(argv) < 3:
        fail("usage: bench_ort.py model.onnx RUNS THREADS[,THREADS...] NAME=input.npy ...")
    model, runs, threads, specs = argv[0], argv[1], argv[2], argv[3:]
    try:
        runs = int(runs)
        counts = [int(t) for t in threads.split(",")]
    except ValueError:
        fail(f"RUNS and THREADS must be integers, found `{argv[1]}` and `{argv[2]}`")
    if runs < 1 or any(t < 1 for t in counts):
        fail("RUNS and every thread count must be at least 1")
    feeds = {}
    for spec in specs:
        name, sep, path = spec.partition("=")
        if not sep or not name or not path:
            fail(f"expected NAME=PATH, found `{spec}`")
        feeds[name] = np.load(path)
    for t in counts:
        print(f"threads {t} median_ms {median_ms(model, t, feeds, runs):.4f}", flush=True)


if __name__ == "__main__":
    main(sys.argv[1:])
