#!/usr/bin/env python3
"""Writes the ONNX fixtures under tests/data/ with the `onnx` package and
records onnxruntime's outputs for fixed inputs next to them.

    pip install onnx onnxruntime numpy
    python3 crates/rlx-onnx/tests/make_models.py

The Rust tests (tests/onnxruntime.rs) read the committed files and never
need Python. Rerun this only to change a fixture.
"""

import json
import os

import numpy as np
import onnx
import onnxruntime as ort
from onnx import TensorProto, helper, numpy_helper

HERE = os.path.join(os.path.dirname(os.path.abspath(__file__)), "data")
RNG = np.random.default_rng(1234)


def rand(*shape):
    return RNG.uniform(-1.0, 1.0, size=shape).astype(np.float32)


def init(name, array):
    return numpy_helper.from_array(np.asarray(array), name)


def mlp_external():
    """Gemm(transB) + Relu + Gemm + Softmax, weights in an external file."""
    nodes = [
        helper.make_node("Gemm", ["x", "fc1.weight", "fc1.bias"], ["h"], name="fc1", transB=1),
        helper.make_node("Relu", ["h"], ["hr"], name="relu"),
        helper.make_node("Gemm", ["hr", "fc2.weight", "fc2.bias"], ["logits"], name="fc2", transB=1),
        helper.make_node("Softmax", ["logits"], ["probs"], name="softmax", axis=-1),
    ]
    inits = [
        init("fc1.weight", rand(16, 8)),
        init("fc1.bias", rand(16)),
        init("fc2.weight", rand(4, 16)),
        init("fc2.bias", rand(4)),
    ]
    graph = helper.make_graph(
        nodes,
        "mlp_external",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["batch", 8])],
        [helper.make_tensor_value_info("probs", TensorProto.FLOAT, ["batch", 4])],
        inits,
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    return model, {"x": rand(3, 8)}, True


def attention_block():
    """Single-head-pair self-attention with exporter-style shape arithmetic
    and an erf GELU: MatMul, Add, Shape/Gather/Unsqueeze/Concat, Reshape,
    Transpose, batched MatMul, Div, Softmax, Erf, Mul."""
    seq, hidden, heads = 4, 8, 2
    hd = hidden // heads
    nodes = [
        helper.make_node("MatMul", ["x", "wq"], ["q0"], name="q_proj"),
        helper.make_node("Add", ["q0", "bq"], ["q1"], name="q_bias"),
        helper.make_node("Shape", ["x"], ["xs"], name="shape"),
        helper.make_node("Gather", ["xs", "idx0"], ["b"], name="batch_dim", axis=0),
        helper.make_node("Gather", ["xs", "idx1"], ["s"], name="seq_dim", axis=0),
        helper.make_node("Unsqueeze", ["b", "axes0"], ["bu"], name="unsq_b"),
        helper.make_node("Unsqueeze", ["s", "axes0"], ["su"], name="unsq_s"),
        helper.make_node("Concat", ["bu", "su", "heads_hd"], ["qshape"], name="cat", axis=0),
        helper.make_node("Reshape", ["q1", "qshape"], ["q2"], name="split_heads"),
        helper.make_node("Transpose", ["q2"], ["q"], name="bhsd", perm=[0, 2, 1, 3]),
        helper.make_node("Transpose", ["q"], ["kt"], name="kt", perm=[0, 1, 3, 2]),
        helper.make_node("MatMul", ["q", "kt"], ["sc0"], name="scores"),
        helper.make_node("Div", ["sc0", "scale"], ["sc"], name="scale"),
        helper.make_node("Softmax", ["sc"], ["p"], name="softmax", axis=-1),
        helper.make_node("MatMul", ["p", "q"], ["ctx0"], name="context"),
        helper.make_node("Transpose", ["ctx0"], ["ctx1"], name="bshd", perm=[0, 2, 1, 3]),
        helper.make_node("Reshape", ["ctx1", "merge"], ["ctx"], name="merge_heads"),
        helper.make_node("Div", ["ctx", "sqrt2"], ["g0"], name="gelu_div"),
        helper.make_node("Erf", ["g0"], ["g1"], name="gelu_erf"),
        helper.make_node("Add", ["g1", "one"], ["g2"], name="gelu_add"),
        helper.make_node("Mul", ["ctx", "g2"], ["g3"], name="gelu_mul"),
        helper.make_node("Mul", ["g3", "half"], ["y"], name="gelu_half"),
    ]
    inits = [
        init("wq", rand(hidden, hidden)),
        init("bq", rand(hidden)),
        init("idx0", np.array(0, dtype=np.int64)),
        init("idx1", np.array(1, dtype=np.int64)),
        init("axes0", np.array([0], dtype=np.int64)),
        init("heads_hd", np.array([heads, hd], dtype=np.int64)),
        init("merge", np.array([0, 0, -1], dtype=np.int64)),
        init("scale", np.array(np.sqrt(hd), dtype=np.float32)),
        init("sqrt2", np.array(np.sqrt(2.0), dtype=np.float32)),
        init("one", np.array(1.0, dtype=np.float32)),
        init("half", np.array(0.5, dtype=np.float32)),
    ]
    graph = helper.make_graph(
        nodes,
        "attention_block",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, seq, hidden])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, seq, hidden])],
        inits,
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])
    return model, {"x": rand(1, seq, hidden)}, False


def main():
    os.makedirs(HERE, exist_ok=True)
    for make in (mlp_external, attention_block):
        name = make.__name__
        model, inputs, external = make()
        onnx.checker.check_model(model)
        path = os.path.join(HERE, name + ".onnx")
        if external:
            onnx.save_model(
                model,
                path,
                save_as_external_data=True,
                all_tensors_to_one_file=True,
                location=name + ".bin",
                size_threshold=0,
            )
        else:
            onnx.save_model(model, path)
        session = ort.InferenceSession(path, providers=["CPUExecutionProvider"])
        outputs = session.run(None, inputs)
        names = [o.name for o in session.get_outputs()]
        record = {
            "onnxruntime": ort.__version__,
            "inputs": {k: {"shape": list(v.shape), "data": v.ravel().tolist()} for k, v in inputs.items()},
            "outputs": {k: {"shape": list(v.shape), "data": v.ravel().tolist()} for k, v in zip(names, outputs)},
        }
        with open(os.path.join(HERE, name + ".expected.json"), "w") as f:
            json.dump(record, f, indent=1)
            f.write("\n")
        print("wrote", path)


if __name__ == "__main__":
    main()
