#!/usr/bin/env python3
"""The llama.cpp side of `cargo xtask bench --decode-vs-llamacpp`.

    python3 xtask/decode_llamacpp.py make-gguf HF_DIR TOKENIZER_JSON OUT_DIR
    python3 xtask/decode_llamacpp.py generate FILE.gguf --prompt 1,2,3 --tokens N --threads T

`make-gguf` converts the Hugging Face Llama checkpoint in HF_DIR (the one
`xtask/decode_ort.py make-checkpoint` writes: config.json and an f32
model.safetensors) into the GGUF files llama.cpp users download:
OUT_DIR/bench.f32.gguf and bench.f16.gguf written here with the `gguf`
package (llama.cpp's tensor names, query and key rows permuted as its
converter does, the vocabulary of TOKENIZER_JSON as a `gpt2` byte-level
BPE padded with unused tokens to the checkpoint's vocabulary size), and
bench.q8_0.gguf, bench.q4_0.gguf and bench.q4_k.gguf quantized from the
f32 file by llama.cpp itself (`llama_model_quantize`, its default mixes:
Q4_K_M keeps some tensors in Q6_K). OUT_DIR/key.txt holds a hash of the
checkpoint, the tokenizer and this script's format version; a directory
whose key matches is reused. Prints one line per file:

    gguf TYPE PATH weights_bytes N

N being the bytes of its tensors: what a decode step reads (every
product reads its whole weight; the tied embedding is the logits' weight).

`generate` is the loop a llama-cpp-python user writes: one `Llama` (CPU,
n_threads = n_threads_batch = T, a context of the checkpoint's length),
the prompt evaluated as one batch (timed: prefill), then N - 1 greedy
decode steps of one token each (timed: decode), the first token taken
from the prompt's logits. Prints

    threads T prefill_tokens P prefill_ms X decode_tokens N decode_ms Y
    tokens ID ID ...                          (the N greedy ids)
    min_top2_gap G                            (the smallest top-2 logit gap)
    top2_gaps G G ...                         (each token's top-2 logit gap)

Exits with 3 when a module is missing, 2 on bad arguments.
"""

import hashlib
import json
import sys
import time
from pathlib import Path

MISSING = 3

try:
    import numpy as np
    import gguf
    import llama_cpp
    from safetensors.numpy import load_file
except ImportError as e:
    print(
        "skipped: python modules missing (pip install -r models/onnx/requirements.txt gguf llama-cpp-python; "
        f"llama-cpp-python builds llama.cpp from source): {e}",
        file=sys.stderr,
    )
    sys.exit(MISSING)

# Bump when the files written change, so cached directories are rebuilt.
FORMAT = 1
# What `llama_model_quantize` makes of the f32 file (llama.h's
# `enum llama_ftype`): LLAMA_FTYPE_MOSTLY_Q8_0, _Q4_0 and _Q4_K_M.
QUANTIZED = {"q8_0": 7, "q4_0": 2, "q4_k": 15}
TYPES = ["f32", "f16", *QUANTIZED]


def permute(w, heads):
    """HF's rotate-half rows into GGML's interleaved pairs, per head (what
    llama.cpp's convert_hf_to_gguf.py does to q_proj and k_proj)."""
    return w.reshape(heads, 2, w.shape[0] // heads // 2, *w.shape[1:]).swapaxes(1, 2).reshape(w.shape)


def gguf_name(hf):
    """llama.cpp's tensor name of a Hugging Face Llama tensor."""
    fixed = {
        "model.embed_tokens.weight": "token_embd.weight",
        "model.norm.weight": "output_norm.weight",
        "lm_head.weight": "output.weight",
    }
    if hf in fixed:
        return fixed[hf]
    parts = hf.split(".")
    if parts[:2] != ["model", "layers"]:
        raise ValueError(f"unexpected tensor {hf}")
    layer, rest = parts[2], ".".join(parts[3:])
    names = {
        "input_layernorm.weight": "attn_norm.weight",
        "self_attn.q_proj.weight": "attn_q.weight",
        "self_attn.k_proj.weight": "attn_k.weight",
        "self_attn.v_proj.weight": "attn_v.weight",
        "self_attn.o_proj.weight": "attn_output.weight",
        "post_attention_layernorm.weight": "ffn_norm.weight",
        "mlp.gate_proj.weight": "ffn_gate.weight",
        "mlp.up_proj.weight": "ffn_up.weight",
        "mlp.down_proj.weight": "ffn_down.weight",
    }
    return f"blk.{layer}.{names[rest]}"


def write_gguf(path, config, tensors, tokenizer, half):
    heads, kv_heads = config["num_attention_heads"], config["num_key_value_heads"]
    head_dim = config.get("head_dim") or config["hidden_size"] // heads
    w = gguf.GGUFWriter(str(path), "llama")
    w.add_name("rlx decode bench")
    w.add_context_length(config["max_position_embeddings"])
    w.add_embedding_length(config["hidden_size"])
    w.add_block_count(config["num_hidden_layers"])
    w.add_feed_forward_length(config["intermediate_size"])
    w.add_head_count(heads)
    w.add_head_count_kv(kv_heads)
    w.add_key_length(head_dim)
    w.add_value_length(head_dim)
    w.add_rope_dimension_count(head_dim)
    # transformers 5 writes the rotary settings under `rope_parameters`.
    rope = config.get("rope_parameters") or {}
    w.add_rope_freq_base(rope.get("rope_theta", config.get("rope_theta", 10000.0)))
    w.add_layer_norm_rms_eps(config["rms_norm_eps"])
    w.add_vocab_size(config["vocab_size"])
    w.add_file_type(gguf.LlamaFileType.MOSTLY_F16 if half else gguf.LlamaFileType.ALL_F32)

    vocab = tokenizer["model"]["vocab"]
    for added in tokenizer.get("added_tokens", []):
        vocab[added["content"]] = added["id"]
    specials = {a["content"] for a in tokenizer.get("added_tokens", [])}
    by_id = {i: t for t, i in vocab.items()}
    tokens, types = [], []
    for i in range(config["vocab_size"]):
        if i in by_id:
            tokens.append(by_id[i])
            types.append(gguf.TokenType.CONTROL if by_id[i] in specials else gguf.TokenType.NORMAL)
        else:
            tokens.append(f"[PAD{i}]")
            types.append(gguf.TokenType.UNUSED)
    merges = [m if isinstance(m, str) else " ".join(m) for m in tokenizer["model"]["merges"]]
    w.add_tokenizer_model("gpt2")
    w.add_tokenizer_pre("gpt-2")  # llama.cpp's name for GPT-2's regex
    w.add_token_list(tokens)
    w.add_token_types(types)
    w.add_token_merges(merges)
    w.add_bos_token_id(config.get("bos_token_id") or 0)
    w.add_eos_token_id(config.get("eos_token_id") or 0)

    for name in sorted(tensors, key=tensor_order):
        t = tensors[name]
        if name.endswith("q_proj.weight"):
            t = permute(t, heads)
        elif name.endswith("k_proj.weight"):
            t = permute(t, kv_heads)
        # Norm gains stay f32 in every file, as llama.cpp's converter keeps 1-d tensors.
        if half and t.ndim == 2:
            t = t.astype(np.float16)
        w.add_tensor(gguf_name(name), np.ascontiguousarray(t))
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()


def tensor_order(name):
    """Embedding, the layers in order, then the final norm and head."""
    parts = name.split(".")
    if parts[:2] == ["model", "layers"]:
        return (1, int(parts[2]), name)
    return (0 if "embed" in name else 2, 0, name)


def weights_bytes(path):
    reader = gguf.GGUFReader(str(path))
    return sum(int(t.n_bytes) for t in reader.tensors)


def make_gguf(hf_dir, tokenizer_path, out_dir):
    hf_dir, out_dir = Path(hf_dir), Path(out_dir)
    config_text = (hf_dir / "config.json").read_bytes()
    tok_text = Path(tokenizer_path).read_bytes()
    digest = hashlib.sha256()
    for part in (config_text, (hf_dir / "key.txt").read_bytes(), tok_text, f"format {FORMAT}".encode()):
        digest.update(hashlib.sha256(part).digest())
    key = digest.hexdigest()
    paths = {t: out_dir / f"bench.{t}.gguf" for t in TYPES}
    key_path = out_dir / "key.txt"
    if not (key_path.exists() and key_path.read_text() == key and all(p.exists() for p in paths.values())):
        out_dir.mkdir(parents=True, exist_ok=True)
        key_path.unlink(missing_ok=True)
        config = json.loads(config_text)
        tensors = load_file(str(hf_dir / "model.safetensors"))
        tokenizer = json.loads(tok_text)
        write_gguf(paths["f32"], config, tensors, tokenizer, half=False)
        write_gguf(paths["f16"], config, tensors, tokenizer, half=True)
        for name, ftype in QUANTIZED.items():
            params = llama_cpp.llama_model_quantize_default_params()
            params.ftype = ftype
            params.nthread = 2
            status = llama_cpp.llama_model_quantize(
                str(paths["f32"]).encode(), str(paths[name]).encode(), llama_cpp.byref(params)
            )
            if status != 0:
                print(f"llama_model_quantize to {name} failed ({status})", file=sys.stderr)
                sys.exit(1)
        key_path.write_text(key)
        print(f"wrote {', '.join(p.name for p in paths.values())} in {out_dir}")
    else:
        print(f"reusing {out_dir}")
    for t, p in paths.items():
        print(f"gguf {t} {p} weights_bytes {weights_bytes(p)}")


def generate(path, prompt, tokens, threads):
    llm = llama_cpp.Llama(
        model_path=str(path),
        n_ctx=0,  # the model's own context length
        n_batch=len(prompt),
        n_threads=threads,
        n_threads_batch=threads,
        n_gpu_layers=0,
        logits_all=False,
        verbose=False,
    )
    if len(prompt) + tokens > llm.n_ctx():
        print(f"{len(prompt)} prompt ids and {tokens} tokens do not fit a context of {llm.n_ctx()}", file=sys.stderr)
        sys.exit(2)
    ids, gaps = [], []

    vocab = llm.n_vocab()

    def pick():
        # The last evaluated token's logits (`Llama.eval` keeps none unless
        # every position's are asked for).
        row = np.ctypeslib.as_array(llama_cpp.llama_get_logits_ith(llm.ctx, -1), shape=(vocab,))
        top2 = np.partition(row, -2)[-2:]
        gaps.append(float(abs(top2[1] - top2[0])))
        ids.append(int(np.argmax(row)))

    start = time.perf_counter()
    llm.eval(prompt)
    prefill_ms = (time.perf_counter() - start) * 1e3
    pick()
    start = time.perf_counter()
    for _ in range(tokens - 1):
        llm.eval([ids[-1]])
        pick()
    decode_ms = (time.perf_counter() - start) * 1e3
    print(
        f"threads {threads} prefill_tokens {len(prompt)} prefill_ms {prefill_ms:.3f} "
        f"decode_tokens {tokens - 1} decode_ms {decode_ms:.3f}"
    )
    print("tokens " + " ".join(map(str, ids)))
    print(f"min_top2_gap {min(gaps):.4f}")
    print("top2_gaps " + " ".join(f"{g:.4f}" for g in gaps))


def main(argv):
    if len(argv) == 4 and argv[0] == "make-gguf":
        make_gguf(argv[1], argv[2], argv[3])
        return
    if len(argv) == 8 and argv[0] == "generate" and argv[2::2] == ["--prompt", "--tokens", "--threads"]:
        try:
            prompt = [int(t) for t in argv[3].split(",")]
            tokens, threads = int(argv[5]), int(argv[7])
        except ValueError:
            print(__doc__, file=sys.stderr)
            sys.exit(2)
        generate(argv[1], prompt, tokens, threads)
        return
    print(__doc__, file=sys.stderr)
    sys.exit(2)


if __name__ == "__main__":
    main(sys.argv[1:])
