#!/usr/bin/env python3
"""The onnxruntime side of `cargo xtask bench --decode-vs-ort`.

    python3 xtask/decode_ort.py make-checkpoint DIR
    python3 xtask/decode_ort.py generate DIR --prompt 1,2,3 --tokens N --threads T

`make-checkpoint` writes a memory-bound Llama (CONFIG below: ~160 MB of
f32 weights, far more than any L3) with transformers' own
LlamaForCausalLM and a fixed seed as a Hugging Face checkpoint
(DIR/config.json, DIR/model.safetensors), and the ONE decode-step graph
onnxruntime runs (DIR/step.onnx: input_ids [1, 1], position_ids [1, 1] and
the past keys / values of every layer [1, kv_heads, past, head_dim], past
a dynamic axis -> logits [1, 1, vocab] and the presents, one row longer).
DIR/key.txt holds a hash of CONFIG, the seed and this script's format
version: a DIR whose key matches is reused as it is. Always prints

    weights_bytes N

the bytes of the checkpoint's tensors (the tied embedding once): what a
decode step reads (every product reads its whole weight; the embedding is
the logits' weight, the lookup reads one row of it).

`generate` is the generate loop users write around such a graph: one
session (CPU provider, intra_op_num_threads = T, sequential execution,
graph optimisations on), the prompt fed one token per step (as the rlx
decoder's S = 1 schedule does), then N - 1 greedy decode steps, the
presents fed back as the next step's past. Prints

    threads T decode_tokens N decode_ms X     (the N - 1 timed steps)
    tokens ID ID ...                          (the N greedy ids)
    min_top2_gap G                            (the smallest top-2 logit gap)

Exits with 3 when a module is missing, 2 on bad arguments.
"""

import hashlib
import json
import struct
import sys
import time
from pathlib import Path

MISSING = 3

try:
    import numpy as np
    import onnxruntime as ort
    import torch
    from transformers import DynamicCache, LlamaConfig, LlamaForCausalLM
except ImportError as e:
    print(f"skipped: python modules missing (pip install -r models/onnx/requirements.txt): {e}", file=sys.stderr)
    sys.exit(MISSING)

# hidden 768, 6 layers, GQA 12/4 heads of 64, SwiGLU 2048, vocab 4096:
# 37.7M parameters, 151 MB of f32 weights per token in the layers plus
# 12.6 MB of tied embedding (the logits' weight).
CONFIG = dict(
    vocab_size=4096,
    hidden_size=768,
    intermediate_size=2048,
    num_hidden_layers=6,
    num_attention_heads=12,
    num_key_value_heads=4,
    head_dim=64,
    max_position_embeddings=256,
    rms_norm_eps=1e-5,
    rope_theta=10000.0,
    tie_word_embeddings=True,
    hidden_act="silu",
    attention_bias=False,
    mlp_bias=False,
    # Wider than the usual 0.02 so that greedy choices are clear-cut (as
    # llama_tiny's 0.2): rlx and onnxruntime sum in other orders, and a
    # near tie would make "same tokens" a coin toss.
    initializer_range=0.1,
)
SEED = 0
# Bump when the files written change, so cached directories are rebuilt.
FORMAT = 1
OPSET = 17


def fail(msg):
    print(f"decode_ort: {msg}", file=sys.stderr)
    sys.exit(2)


def config_key():
    text = json.dumps({"config": CONFIG, "seed": SEED, "format": FORMAT, "opset": OPSET}, sort_keys=True)
    return hashlib.sha256(text.encode()).hexdigest()


def weights_bytes(path):
    """Sum of the tensor sizes in a safetensors header."""
    with open(path, "rb") as f:
        (n,) = struct.unpack("<Q", f.read(8))
        header = json.loads(f.read(n))
    return sum(end - start for name, t in header.items() if name != "__metadata__" for start, end in [t["data_offsets"]])


class Step(torch.nn.Module):
    """One decode step with the KV cache as explicit inputs and outputs."""

    def __init__(self, model):
        super().__init__()
        self.model = model
        self.layers = model.config.num_hidden_layers

    def forward(self, input_ids, position_ids, *past):
        cache = DynamicCache(config=self.model.config)
        for i in range(self.layers):
            cache.update(past[2 * i], past[2 * i + 1], i)
        out = self.model(input_ids=input_ids, position_ids=position_ids, cache=cache, use_cache=True)
        presents = []
        for layer in out.cache.layers:
            presents += [layer.keys, layer.values]
        return (out.logits, *presents)


def io_names(layers):
    past = [f"past_{kind}_{i}" for i in range(layers) for kind in ("key", "value")]
    present = [f"present_{kind}_{i}" for i in range(layers) for kind in ("key", "value")]
    return past, present


def export_step(model, path):
    cfg = model.config
    past_names, present_names = io_names(cfg.num_hidden_layers)
    # Exported at a past length of 3; the axis is dynamic.
    past = [torch.randn(1, cfg.num_key_value_heads, 3, cfg.head_dim) for _ in past_names]
    args = (torch.tensor([[7]]), torch.tensor([[3]]), *past)
    axes = {n: {2: "past"} for n in past_names}
    axes.update({n: {2: "past_plus_1"} for n in present_names})
    with torch.no_grad():
        torch.onnx.export(
            Step(model),
            args,
            str(path),
            input_names=["input_ids", "position_ids", *past_names],
            output_names=["logits", *present_names],
            dynamic_axes=axes,
            opset_version=OPSET,
            dynamo=False,
        )


def check_step(model, path):
    """The exported step against transformers on 5 greedy steps from a
    2-token prompt: the dynamic past axis must really be dynamic."""
    sess = ort.InferenceSession(str(path), providers=["CPUExecutionProvider"])
    with torch.no_grad():
        out = model(torch.tensor([[5, 9]]), use_cache=True)
        cache, want = out.cache, out.logits[0, -1].numpy()
        ids = [5, 9]
        feeds = empty_past(model.config)
        for pos, tok in enumerate(ids):
            got, feeds = ort_step(sess, model.config, feeds, tok, pos)
        for pos in range(len(ids), len(ids) + 5):
            err = float(np.abs(got - want).max())
            if err > 1e-3 * max(1.0, float(np.abs(want).max())):
                fail(f"the exported step differs from transformers at position {pos}: max abs err {err}")
            tok = int(want.argmax())
            out = model(torch.tensor([[tok]]), cache=cache, use_cache=True)
            cache, want = out.cache, out.logits[0, -1].numpy()
            got, feeds = ort_step(sess, model.config, feeds, tok, pos)


def empty_past(cfg):
    past_names, _ = io_names(cfg.num_hidden_layers)
    shape = (1, cfg.num_key_value_heads, 0, cfg.head_dim)
    return {n: np.zeros(shape, dtype=np.float32) for n in past_names}


def ort_step(sess, cfg, past, token, pos):
    """One step: the next-token logits and the next step's past."""
    feeds = dict(past)
    feeds["input_ids"] = np.array([[token]], dtype=np.int64)
    feeds["position_ids"] = np.array([[pos]], dtype=np.int64)
    outs = sess.run(None, feeds)
    past_names, _ = io_names(cfg.num_hidden_layers)
    return outs[0][0, -1], dict(zip(past_names, outs[1:]))


def make_checkpoint(out):
    out.mkdir(parents=True, exist_ok=True)
    key = config_key()
    files = [out / "config.json", out / "model.safetensors", out / "step.onnx"]
    key_file = out / "key.txt"
    if key_file.is_file() and key_file.read_text().strip() == key and all(f.is_file() for f in files):
        print(f"reusing {out}")
    else:
        key_file.unlink(missing_ok=True)
        torch.manual_seed(SEED)
        model = LlamaForCausalLM(LlamaConfig(**CONFIG)).eval()
        with torch.no_grad():
            # Norm weights start at 1; perturb them so a wiring slip shows.
            for name, p in model.named_parameters():
                if "norm" in name:
                    p.copy_(1.0 + 0.1 * torch.randn_like(p))
        model.save_pretrained(out, safe_serialization=True)
        export_step(model, out / "step.onnx")
        check_step(model, out / "step.onnx")
        # Written last: an interrupted run leaves no key and is redone.
        key_file.write_text(key + "\n")
        print(f"wrote {out}")
    print(f"weights_bytes {weights_bytes(out / 'model.safetensors')}")


def generate(out, prompt, tokens, threads):
    cfg = LlamaConfig.from_pretrained(out)
    opts = ort.SessionOptions()
    opts.intra_op_num_threads = threads
    opts.inter_op_num_threads = 1
    opts.execution_mode = ort.ExecutionMode.ORT_SEQUENTIAL
    opts.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
    sess = ort.InferenceSession(str(out / "step.onnx"), sess_options=opts, providers=["CPUExecutionProvider"])
    past = empty_past(cfg)
    # Prefill, one token per step; its last logits give the first token.
    for pos, tok in enumerate(prompt):
        logits, past = ort_step(sess, cfg, past, tok, pos)
    ids, rows = [int(logits.argmax())], [logits]
    start = time.perf_counter()
    for pos in range(len(prompt), len(prompt) + tokens - 1):
        logits, past = ort_step(sess, cfg, past, ids[-1], pos)
        ids.append(int(logits.argmax()))
        rows.append(logits)
    elapsed = time.perf_counter() - start
    print(f"threads {threads} decode_tokens {tokens - 1} decode_ms {elapsed * 1e3:.3f}", flush=True)
    print("tokens " + " ".join(map(str, ids)))
    # After the timing: how close the greedy choices were.
    print(f"min_top2_gap {min(top2_gap(r) for r in rows):.4f}")


def top2_gap(logits):
    top = np.partition(logits, -2)[-2:]
    return float(top[1] - top[0])


def main(argv):
    if len(argv) >= 2 and argv[0] == "make-checkpoint":
        make_checkpoint(Path(argv[1]))
        return
    if len(argv) >= 2 and argv[0] == "generate":
        out, rest = Path(argv[1]), argv[2:]
        opts = {"--prompt": None, "--tokens": None, "--threads": None}
        if len(rest) % 2 or any(k not in opts for k in rest[::2]):
            fail(f"bad arguments {argv[2:]}")
        opts.update(zip(rest[::2], rest[1::2]))
        try:
            prompt = [int(t) for t in opts["--prompt"].split(",")]
            tokens, threads = int(opts["--tokens"]), int(opts["--threads"])
        except (AttributeError, TypeError, ValueError):
            fail("generate needs --prompt ID,ID,... --tokens N --threads T (integers)")
        if not prompt or tokens < 1 or threads < 1:
            fail("the prompt must be non-empty and --tokens, --threads at least 1")
        generate(out, prompt, tokens, threads)
        return
    fail("usage: decode_ort.py make-checkpoint DIR | generate DIR --prompt ID,... --tokens N --threads T")


if __name__ == "__main__":
    main(sys.argv[1:])
