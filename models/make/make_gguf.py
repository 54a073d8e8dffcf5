"""Builds the GGUF test files.

1. `models/llama_tiny/gguf/llama_tiny.{f32,f16,q8_0}.gguf`: the
   `llama_tiny` checkpoint (models/llama_tiny/hf plus its tokenizer.json)
   converted by llama.cpp's own `convert_hf_to_gguf.py`. Its tokenizer is
   a byte-level BPE with GPT-2's pre-tokenizer that no released model
   has, so the converter cannot recognise it by hash: this script tells
   it `gpt-2` (the pre-tokenizer it is, under llama.cpp's name) and skips
   the sentencepiece probe (there is no tokenizer.model), the path a
   Llama 3 checkpoint takes. (The checked-in files were written with
   `gpt2`, which llama.cpp's loader refuses and rlx reads as `gpt-2`.)
   Beside each, `llama_tiny.TYPE.sha256.json`: per tensor, the sha256 of
   `gguf.quants.dequantize` of it as little-endian f32 (the reference of
   the Rust dequantization of every tensor of the file, small enough to
   check in).
   For the Q8_0 file, `llama_tiny.q8_0.{tokens,logits}.npy`: the 64-step
   greedy generation of transformers' LlamaForCausalLM (as
   make_llama_tiny.py runs it) with the file's weights, dequantized by
   `gguf.quants.dequantize` and their query/key rows unpermuted.
2. `crates/rlx-gguf/tests/data/quants.gguf`: for every tensor type the
   reader dequantizes, a tensor of random blocks (quantized from random
   values where the `gguf` package quantizes that type, random bytes with
   finite scales otherwise) and beside it, as an F32 tensor named
   `NAME.expected`, `gguf.quants.dequantize` of it: the reference the
   Rust dequantizers must match bit for bit.
3. `crates/rlx-gguf/tests/data/llama_micro{,_untied}.gguf`: Llamas of one
   layer, hidden size 32 and 16 tokens with random weights (F32, F16,
   Q8_0, Q4_0, Q4_1; the second with BF16 tensors, its own `output.weight`
   and as many key/value heads as query heads) and a byte-level BPE
   vocabulary: a few kilobytes that import in milliseconds, the `gguf`
   fuzz target's seeds.

Run from the workspace root:
    python3 models/make/make_gguf.py LLAMA_CPP_DIR
where LLAMA_CPP_DIR holds llama.cpp's `convert_hf_to_gguf.py` and its
`conversion/` package: `vendor/llama.cpp` of the llama-cpp-python sdist
(`pip download llama-cpp-python==0.3.36 --no-deps --no-binary
llama-cpp-python`, then untar it; `--no-binary :all:` would also build
its build tools, cmake among them, from source). Packages: gguf==0.19.0,
numpy, torch, transformers. Without LLAMA_CPP_DIR only steps 2 and 3 run.
"""

import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[2]
LLAMA_TINY = ROOT / "models" / "llama_tiny"
QUANTS = ROOT / "crates" / "rlx-gguf" / "tests" / "data" / "quants.gguf"


def convert(llama_cpp: Path, outtype: str, out: Path) -> None:
    """convert_hf_to_gguf.py over llama_tiny, in this process so that the
    two patches above apply."""
    with tempfile.TemporaryDirectory() as tmp:
        hf = Path(tmp) / "hf"
        shutil.copytree(LLAMA_TINY / "hf", hf)
        shutil.copy(LLAMA_TINY / "tokenizer.json", hf / "tokenizer.json")
        code = (
            "import sys, runpy\n"
            f"sys.path.insert(0, {str(llama_cpp)!r})\n"
            "import conversion.base as base\n"
            "def no_file(self):\n"
            "    raise FileNotFoundError('no sentencepiece model')\n"
            "base.TextModel._set_vocab_sentencepiece = no_file\n"
            "base.TextModel._set_vocab_llama_hf = no_file\n"
            "base.TextModel.get_vocab_base_pre = lambda self, tokenizer: 'gpt-2'\n"
            f"sys.argv = ['convert_hf_to_gguf.py', {str(hf)!r}, '--outtype', {outtype!r}, '--outfile', {str(out)!r}]\n"
            f"runpy.run_path({str(llama_cpp / 'convert_hf_to_gguf.py')!r}, run_name='__main__')\n"
        )
        # A process of its own: the converter loads the gguf package it
        # vendors (gguf-py), not the installed one the fixtures use.
        subprocess.run([sys.executable, "-c", code], check=True)


def dequantized_hashes(path: Path) -> None:
    import hashlib
    import json

    import gguf
    from gguf import quants

    reader = gguf.GGUFReader(str(path))
    hashes = {}
    for t in reader.tensors:
        values = quants.dequantize(np.asarray(t.data), t.tensor_type).astype("<f4")
        hashes[t.name] = hashlib.sha256(values.tobytes()).hexdigest()
    out = path.with_suffix(".sha256.json")
    out.write_text(json.dumps(hashes, indent=1, sort_keys=True) + "\n")
    print(f"wrote {out.relative_to(ROOT)}")


def unpermute(w: np.ndarray, heads: int) -> np.ndarray:
    """The inverse of the converter's `LlamaModel.permute`."""
    rows = w.shape[0]
    return w.reshape(heads, rows // heads // 2, 2, *w.shape[1:]).swapaxes(1, 2).reshape(w.shape)


def q8_0_reference(path: Path) -> None:
    import gguf
    import torch
    from gguf import quants
    from transformers import LlamaForCausalLM

    import make_llama_tiny
    from schedwriter import save_npy

    model = LlamaForCausalLM.from_pretrained(LLAMA_TINY / "hf", dtype=torch.float32).eval()
    cfg = model.config
    names = {
        "token_embd": "model.embed_tokens",
        "output_norm": "model.norm",
        "attn_norm": "input_layernorm",
        "attn_q": "self_attn.q_proj",
        "attn_k": "self_attn.k_proj",
        "attn_v": "self_attn.v_proj",
        "attn_output": "self_attn.o_proj",
        "ffn_norm": "post_attention_layernorm",
        "ffn_gate": "mlp.gate_proj",
        "ffn_up": "mlp.up_proj",
        "ffn_down": "mlp.down_proj",
    }
    params = dict(model.named_parameters())
    reader = gguf.GGUFReader(str(path))
    with torch.no_grad():
        for t in reader.tensors:
            parts = t.name.split(".")
            if parts[0] == "blk":
                hf = f"model.layers.{parts[1]}.{names[parts[2]]}.weight"
                kind = parts[2]
            else:
                hf, kind = f"{names[parts[0]]}.weight", parts[0]
            values = quants.dequantize(np.asarray(t.data), t.tensor_type).astype(np.float32)
            values = values.reshape(params[hf].shape)
            if kind == "attn_q":
                values = unpermute(values, cfg.num_attention_heads)
            elif kind == "attn_k":
                values = unpermute(values, cfg.num_key_value_heads)
            params[hf].copy_(torch.from_numpy(values))
    logits, tokens = make_llama_tiny.greedy_reference(model)
    stem = path.with_suffix("")
    save_npy(Path(f"{stem}.tokens.npy"), tokens)
    save_npy(Path(f"{stem}.logits.npy"), logits)
    f32_tokens = np.load(LLAMA_TINY / "expected" / "tokens.npy")
    same = int(np.argmax(tokens != f32_tokens)) if (tokens != f32_tokens).any() else len(tokens)
    print(f"wrote {stem.relative_to(ROOT)}.{{tokens,logits}}.npy: the first {same} of {len(tokens)} tokens are the f32 model's")


def quants_fixture() -> None:
    import gguf
    from gguf import GGMLQuantizationType as T
    from gguf import quants

    rng = np.random.default_rng(20261207)
    writer = gguf.GGUFWriter(str(QUANTS), arch="quants")
    rows = 3
    for ty, blocks_per_row in [
        (T.F32, 40),
        (T.F16, 40),
        (T.BF16, 40),
        (T.Q4_0, 2),
        (T.Q4_1, 2),
        (T.Q8_0, 2),
        (T.Q4_K, 2),
        (T.Q6_K, 2),
    ]:
        block_len, block_bytes = gguf.GGML_QUANT_SIZES[ty]
        cols = block_len * blocks_per_row
        values = rng.standard_normal((rows, cols)).astype(np.float32)
        if ty in (T.F32, T.F16, T.BF16, T.Q4_0, T.Q4_1, T.Q8_0):
            quantized = quants.quantize(values, ty)
            variants = [("quantized", quantized)]
        else:
            variants = []
        # Random bytes exercise every bit pattern of the quants and the
        # packed scales; the f16 scales are drawn as finite values.
        raw = rng.integers(0, 256, size=(rows, blocks_per_row, block_bytes), dtype=np.uint8)
        scale_fields = {
            T.Q4_0: [0],
            T.Q4_1: [0, 2],
            T.Q8_0: [0],
            T.Q4_K: [0, 2],
            T.Q6_K: [208],
            T.F16: [],
            T.BF16: [],
            T.F32: [],
        }[ty]
        for at in scale_fields:
            scale = rng.uniform(-2.0, 2.0, size=(rows, blocks_per_row)).astype(np.float16)
            raw[:, :, at : at + 2] = scale.view(np.uint8).reshape(rows, blocks_per_row, 2)
        if ty in (T.F32, T.F16, T.BF16):
            # Random bytes would hold NaNs, whose payloads numpy may not
            # keep: the plain types take the quantized values only.
            pass
        else:
            variants.append(("random", raw.reshape(rows, blocks_per_row * block_bytes)))
        for label, data in variants:
            name = f"{ty.name.lower()}.{label}"
            writer.add_tensor(name, data, raw_dtype=ty)
            expected = quants.dequantize(data, ty).astype(np.float32).reshape(rows, cols)
            writer.add_tensor(f"{name}.expected", expected)
    writer.write_header_to_file()
    writer.write_kv_data_to_file()
    writer.write_tensors_to_file()
    writer.close()
    print(f"wrote {QUANTS.relative_to(ROOT)}")


def llama_micro(untied: bool) -> None:
    import gguf
    from gguf import GGMLQuantizationType as T
    from gguf import quants

    rng = np.random.default_rng(7 + untied)
    path = QUANTS.parent / ("llama_micro_untied.gguf" if untied else "llama_micro.gguf")
    w = gguf.GGUFWriter(str(path), arch="llama")
    hidden, heads, kv_heads, ffn, vocab, context = 32, 2, 2 if untied else 1, 32, 16, 16
    w.add_block_count(1)
    w.add_context_length(context)
    w.add_embedding_length(hidden)
    w.add_feed_forward_length(ffn)
    w.add_head_count(heads)
    w.add_head_count_kv(kv_heads)
    w.add_rope_freq_base(10000.0)
    w.add_layer_norm_rms_eps(1e-5)
    w.add_rope_dimension_count(hidden // heads)
    tokens = ["<|endoftext|>"] + [chr(c) for c in range(ord("a"), ord("a") + vocab - 2)] + ["ab"]
    w.add_tokenizer_model("gpt2")
    w.add_tokenizer_pre("gpt-2")
    w.add_token_list(tokens)
    w.add_token_types([3] + [1] * (vocab - 1))
    w.add_token_merges(["a b"])
    w.add_eos_token_id(0)
    w.add_chat_template("{% for m in messages %}{{ m['content'] }}{% endfor %}")

    def tensor(name, shape, ty):
        values = (0.3 * rng.standard_normal(shape)).astype(np.float32)
        if "norm" in name:
            values += 1.0
        w.add_tensor(name, quants.quantize(values, ty), raw_dtype=ty)

    tensor("token_embd.weight", (vocab, hidden), T.Q8_0)
    tensor("blk.0.attn_norm.weight", (hidden,), T.F32)
    tensor("blk.0.attn_q.weight", (hidden, hidden), T.Q8_0)
    tensor("blk.0.attn_k.weight", (hidden // heads * kv_heads, hidden), T.Q8_0)
    tensor("blk.0.attn_v.weight", (hidden // heads * kv_heads, hidden), T.BF16 if untied else T.F16)
    tensor("blk.0.attn_output.weight", (hidden, hidden), T.Q4_0)
    tensor("blk.0.ffn_norm.weight", (hidden,), T.F32)
    tensor("blk.0.ffn_gate.weight", (ffn, hidden), T.F16)
    tensor("blk.0.ffn_up.weight", (ffn, hidden), T.Q4_1)
    tensor("blk.0.ffn_down.weight", (hidden, ffn), T.Q8_0)
    tensor("output_norm.weight", (hidden,), T.F32)
    if untied:
        tensor("output.weight", (vocab, hidden), T.F32)
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()
    print(f"wrote {path.relative_to(ROOT)}")


def main() -> None:
    QUANTS.parent.mkdir(parents=True, exist_ok=True)
    quants_fixture()
    llama_micro(untied=False)
    llama_micro(untied=True)
    if len(sys.argv) > 1:
        llama_cpp = Path(sys.argv[1]).resolve()
        out_dir = LLAMA_TINY / "gguf"
        out_dir.mkdir(exist_ok=True)
        for outtype in ["f32", "f16", "q8_0"]:
            out = out_dir / f"llama_tiny.{outtype}.gguf"
            convert(llama_cpp, outtype, out)
            print(f"wrote {out.relative_to(ROOT)}")
            dequantized_hashes(out)
            if outtype == "q8_0":
                q8_0_reference(out)
    else:
        print("no LLAMA_CPP_DIR given: the llama_tiny GGUFs are left as they are")


if __name__ == "__main__":
    main()
