"""Builds `llama_tiny`: a Llama-architecture decoder (RMSNorm, RoPE,
grouped-query attention, SwiGLU, tied embeddings) with fixed-seed weights
as a Hugging Face checkpoint, and the reference of a 64-token greedy
generation by `transformers`' own LlamaForCausalLM. The schedule is the
Rust importer's: `cargo xtask import-llama models/llama_tiny/hf --out-dir
models/llama_tiny --name llama_tiny` (the script runs it).

The config is documented in docs/decoding.md.

Writes models/llama_tiny/hf/{config.json, model.safetensors},
models/llama_tiny/expected/{prompt_ids,tokens,logits}.npy, the references
of the narrow-weight imports expected/logits_{f16,bf16}.npy, then
models/llama_tiny/{model.sched, weights.safetensors} through the importer.

Run from the workspace root: python3 models/make/make_llama_tiny.py
(needs torch and transformers: models/onnx/requirements.txt)
"""

import json
import subprocess
from pathlib import Path

import numpy as np
import torch
from transformers import LlamaConfig, LlamaForCausalLM

from schedwriter import save_npy

OUT = Path(__file__).resolve().parents[1] / "llama_tiny"
CONFIG = dict(
    vocab_size=512,
    hidden_size=64,
    intermediate_size=172,
    num_hidden_layers=2,
    num_attention_heads=4,
    num_key_value_heads=2,
    head_dim=16,
    max_position_embeddings=128,
    rms_norm_eps=1e-5,
    rope_theta=10000.0,
    tie_word_embeddings=True,
    hidden_act="silu",
    attention_bias=False,
    mlp_bias=False,
    # The tokenizer's `<|endoftext|>` ends a reply (transformers' default
    # id 2 is an ordinary token, `"`, in this vocabulary).
    eos_token_id=0,
    # Wider than the usual 0.02 so that greedy choices are clear-cut: a
    # reference whose top two logits tie would make "same tokens" a coin toss.
    initializer_range=0.2,
)
PROMPT = [1, 17, 93, 211, 5, 400, 64]
STEPS = 64


def build_model():
    torch.manual_seed(0)
    cfg = LlamaConfig(**CONFIG)
    model = LlamaForCausalLM(cfg).eval()
    with torch.no_grad():
        # Norm weights start at 1; perturb them so a wiring mistake shows.
        for name, p in model.named_parameters():
            if "norm" in name:
                p.copy_(1.0 + 0.1 * torch.randn_like(p))
    return model


@torch.no_grad()
def greedy_reference(model):
    """Logits of every step of a greedy generation, token by token with
    transformers' KV cache: row 0 is the logits after the prompt."""
    out = model(torch.tensor([PROMPT]), use_cache=True)
    cache, logits, tokens = out.past_key_values, [], []
    row = out.logits[0, -1]
    for _ in range(STEPS):
        logits.append(row.numpy().copy())
        tok = int(torch.argmax(row))
        tokens.append(tok)
        out = model(torch.tensor([[tok]]), past_key_values=cache, use_cache=True)
        cache, row = out.past_key_values, out.logits[0, -1]
    return np.stack(logits).astype(np.float32), np.array(tokens, dtype=np.int64)


@torch.no_grad()
def narrow_reference(path, tokens, dtype):
    """The logits of the same steps (teacher-forced on the reference
    tokens, no cache) with every product's weight rounded to `dtype` and
    back, as `cargo xtask import-llama --weights f16|bf16` stores them: the
    Linear layers, and the tied embedding where it is the logits' weight
    (the token lookup keeps f32, as the import does)."""
    model = LlamaForCausalLM.from_pretrained(path, dtype=torch.float32).eval()
    embed = model.model.embed_tokens.weight.detach().clone()
    for name, module in model.named_modules():
        if isinstance(module, torch.nn.Linear) and name != "lm_head":
            module.weight.copy_(module.weight.to(dtype).float())
    ids = torch.tensor([PROMPT + [int(t) for t in tokens[:-1]]])
    hidden = model.model(input_ids=ids).last_hidden_state[0]
    logits = hidden @ embed.to(dtype).float().T
    return logits[len(PROMPT) - 1:].numpy().astype(np.float32)


def write_narrow_references(tokens):
    for name, dtype in [("f16", torch.float16), ("bf16", torch.bfloat16)]:
        save_npy(OUT / "expected" / f"logits_{name}.npy", narrow_reference(OUT / "hf", tokens, dtype))


# A chat template as Hugging Face checkpoints ship one (tokenizer_config.json),
# in a format this small vocabulary tokenizes into few tokens: every turn is
# `role: content<|endoftext|>`, and the reply opens with `assistant:`.
TOKENIZER_CONFIG = {
    "bos_token": None,
    "eos_token": "<|endoftext|>",
    "chat_template": "{% for message in messages %}{{ message['role'] }}: {{ message['content'] }}{{ eos_token }}\n"
                     "{% endfor %}{% if add_generation_prompt %}assistant:{% endif %}",
}


def main():
    model = build_model()
    # The checkpoint as transformers writes it: what a user would import.
    model.save_pretrained(OUT / "hf", safe_serialization=True)
    (OUT / "hf" / "tokenizer_config.json").write_text(json.dumps(TOKENIZER_CONFIG, indent=2) + "\n")
    logits, tokens = greedy_reference(model)
    save_npy(OUT / "expected" / "prompt_ids.npy", np.array(PROMPT, dtype=np.int64))
    save_npy(OUT / "expected" / "tokens.npy", tokens)
    save_npy(OUT / "expected" / "logits.npy", logits)
    write_narrow_references(tokens)
    root = Path(__file__).resolve().parents[2]
    subprocess.run(["cargo", "xtask", "import-llama", str(OUT / "hf"), "--out-dir", str(OUT), "--name", "llama_tiny"],
                   cwd=root, check=True)
    gaps = np.sort(logits, axis=1)
    print(f"wrote {OUT}: {STEPS} steps, smallest top-2 logit gap {float((gaps[:, -1] - gaps[:, -2]).min()):.4f}")


if __name__ == "__main__":
    main()
