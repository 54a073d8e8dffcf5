"""Builds one tiny fixed-seed checkpoint per decoder family that
`cargo xtask import-llama` reads besides Llama (Qwen2, Mistral, Gemma,
Phi-3), with `transformers`' own model classes, and the reference of a
64-token greedy generation by each: what
crates/rlx-onnx/tests/families.rs imports and runs through the
interpreter. The families and what each tests are in docs/decoding.md,
"Families".

Writes crates/rlx-onnx/tests/data/families/FAMILY/{config.json,
model.safetensors, prompt_ids.npy, tokens.npy, logits.npy}.

Run from anywhere: python3 models/make/make_decoder_families.py
(needs torch and transformers: models/onnx/requirements.txt)
"""

import shutil
import tempfile
from pathlib import Path

import numpy as np
import torch
from transformers import AutoModelForCausalLM, GemmaConfig, MistralConfig, Phi3Config, Qwen2Config

from schedwriter import save_npy

OUT = Path(__file__).resolve().parents[2] / "crates" / "rlx-onnx" / "tests" / "data" / "families"
PROMPT = [1, 17, 93, 211, 5, 200, 64]
STEPS = 64
# Small enough that each family's files stay near 200 KB; heads 4 of 8
# dims over 2 key/value heads (grouped-query) unless a family says more.
COMMON = dict(
    vocab_size=256,
    hidden_size=32,
    intermediate_size=64,
    num_hidden_layers=2,
    num_attention_heads=4,
    num_key_value_heads=2,
    max_position_embeddings=128,
    rms_norm_eps=1e-5,
    eos_token_id=0,
    bos_token_id=1,
    pad_token_id=None,
    # Wider than the usual 0.02 so that greedy choices are clear-cut.
    initializer_range=0.2,
)
# Each family's config and seed: the seed is the first whose greedy run
# has no top-2 logit gap under 0.01, so "the same tokens" is not a coin
# toss at the tolerance of the logits.
FAMILIES = {
    # Q/K/V biases, tied embeddings (as Qwen2.5's small models).
    "qwen2": (0, Qwen2Config(**COMMON, rope_theta=1000000.0, tie_word_embeddings=True, use_sliding_window=False)),
    # A sliding window of 8 positions: a 71-position run crosses it often.
    "mistral": (12, MistralConfig(**COMMON, rope_theta=10000.0, tie_word_embeddings=False, sliding_window=8)),
    # GeLU-tanh, scaled embeddings, (1 + w) norms, head_dim 16 with hidden
    # 32 (independent), one key/value head (multi-query).
    "gemma": (0, GemmaConfig(**{**COMMON, "num_key_value_heads": 1}, head_dim=16, hidden_act="gelu_pytorch_tanh",
                             rope_theta=10000.0)),
    # Fused qkv_proj and gate_up_proj, untied embeddings.
    "phi3": (1, Phi3Config(**COMMON, rope_theta=10000.0, tie_word_embeddings=False, sliding_window=None)),
}


def build_model(seed, config):
    torch.manual_seed(seed)
    model = AutoModelForCausalLM.from_config(config, dtype=torch.float32).eval()
    with torch.no_grad():
        for name, p in model.named_parameters():
            # Norm weights start at 1 (Gemma: 0, as it adds 1) and biases
            # at 0; perturb both so a wiring mistake shows.
            if "norm" in name:
                p.copy_(p + 0.1 * torch.randn_like(p))
            elif name.endswith(".bias"):
                p.copy_(0.5 * torch.randn_like(p))
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
def whole_sequence_logits(model, tokens):
    """The same steps' logits from one pass over the whole sequence, no
    cache: a check that the cached reference applied every mask."""
    ids = torch.tensor([PROMPT + [int(t) for t in tokens[:-1]]])
    return model(ids).logits[0, len(PROMPT) - 1:].numpy()


def main():
    for family, (seed, config) in FAMILIES.items():
        model = build_model(seed, config)
        out = OUT / family
        out.mkdir(parents=True, exist_ok=True)
        with tempfile.TemporaryDirectory() as tmp:
            model.save_pretrained(tmp, safe_serialization=True)
            for name in ("config.json", "model.safetensors"):
                shutil.copy(Path(tmp) / name, out / name)
        logits, tokens = greedy_reference(model)
        whole = whole_sequence_logits(model, tokens)
        save_npy(out / "prompt_ids.npy", np.array(PROMPT, dtype=np.int64))
        save_npy(out / "tokens.npy", tokens)
        save_npy(out / "logits.npy", logits)
        gaps = np.sort(logits, axis=1)
        size = sum(f.stat().st_size for f in out.iterdir())
        print(f"{family}: smallest top-2 gap {float((gaps[:, -1] - gaps[:, -2]).min()):.4f}, "
              f"cached vs whole-sequence {float(np.abs(whole - logits).max()):.2e}, {size} bytes")


if __name__ == "__main__":
    main()
