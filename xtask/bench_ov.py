#!/usr/bin/env python3
"""Times an ONNX model in OpenVINO for `cargo xtask bench --zoo`.

    python3 xtask/bench_ov.py model.onnx RUNS THREADS[,THREADS...] NAME=input.npy ... [--expected DIR]

The command line and output of `bench_ort.py`. For each thread count: the
model compiled afresh for the CPU device with f32 inference forced
(INFERENCE_PRECISION_HINT f32: OpenVINO would otherwise run bf16 or f16
where the CPU has them), INFERENCE_NUM_THREADS = that count, one stream,
the latency hint; warm-up runs, then RUNS timed runs; prints one line per
count:

    threads 1 median_ms 41.234

With `--expected DIR`, also prints `max_abs_diff NAME X` for every output
NAME that DIR holds as NAME.npy (the outputs of the first thread count).

Exits with 3 when OpenVINO or numpy cannot be imported, 2 on bad arguments,
1 when the compiled model does not report the forced properties.
"""

import os
import statistics
import sys
import time

OV_MISSING = 3

try:
    import numpy as np
    import openvino as ov
except ImportError as e:
    print(f"skipped: openvino is not installed (pip install openvino numpy): {e}", file=sys.stderr)
    sys.exit(OV_MISSING)


def fail(msg, code=2):
    print(f"bench_ov: {msg}", file=sys.stderr)
    sys.exit(code)


def compile_for(core, model, threads):
    config = {
        "INFERENCE_PRECISION_HINT": "f32",
        "INFERENCE_NUM_THREADS": str(threads),
        "NUM_STREAMS": "1",
        "PERFORMANCE_HINT": "LATENCY",
    }
    compiled = core.compile_model(model, "CPU", config)
    # An unknown or ignored property would silently time another setting.
    got = {k: str(compiled.get_property(k)) for k in config}
    if got["INFERENCE_NUM_THREADS"] != str(threads) or "32" not in got["INFERENCE_PRECISION_HINT"]:
        fail(f"the compiled model reports {got}, not {config}", 1)
    return compiled


def median_ms(core, model, threads, feeds, runs):
    request = compile_for(core, model, threads).create_infer_request()
    # The same warm-up rule as the model CLI's --bench: a tenth, 1 to 10 runs.
    for _ in range(min(max(-(-runs // 10), 1), 10)):
        request.infer(feeds)
    times = []
    for _ in range(runs):
        start = time.perf_counter()
        request.infer(feeds)
        times.append(time.perf_counter() - start)
    # An output may carry several tensor names (OpenVINO keeps aliases).
    outputs = {frozenset(o.get_names()): np.array(request.get_tensor(o).data) for o in request.model_outputs}
    return statistics.median(times) * 1e3, outputs


def main(argv):
    expected = None
    if "--expected" in argv:
        i = argv.index("--expected")
        if i + 1 >= len(argv):
            fail("--expected needs a directory")
        expected = argv[i + 1]
        argv = argv[:i] + argv[i + 2 :]
    if len(argv) < 3:
        fail("usage: bench_ov.py model.onnx RUNS THREADS[,THREADS...] NAME=input.npy ... [--expected DIR]")
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
    core = ov.Core()
    read = core.read_model(model)
    first = None
    for t in counts:
        ms, outputs = median_ms(core, read, t, feeds, runs)
        first = first or outputs
        print(f"threads {t} median_ms {ms:.4f}", flush=True)
    if expected is not None:
        for names, value in first.items():
            for name in sorted(names):
                path = os.path.join(expected, f"{name}.npy")
                if os.path.isfile(path):
                    want = np.load(path)
                    diff = float(np.abs(value.astype(np.float64) - want.astype(np.float64)).max())
                    print(f"max_abs_diff {name} {diff:.6e}", flush=True)
                    break


if __name__ == "__main__":
    main(sys.argv[1:])
