"""Trains the byte-level BPE tokenizer of `llama_tiny` (vocabulary of exactly
512: 256 byte symbols, one special `<|endoftext|>` and 255 merges) and
writes models/llama_tiny/tokenizer.json plus tokenizer_cases.json, the ids
the Python `tokenizers` package gives a few test strings (the Rust
tokenizer in crates/rlx-decode must give the same).

The corpus is the docstrings of a fixed list of standard-library modules:
offline and deterministic for one Python version (the docstrings change
between Python releases, so the script records the corpus hash; the
tokenizer file was made with Python 3.11). Training runs on one thread so
that nothing depends on scheduling; running the script twice writes the
same bytes.

Run from anywhere: python3 models/make/make_tokenizer.py
(packages: pip install -r models/make/requirements.txt)
"""

import hashlib
import importlib
import inspect
import json
import os
import sys
from pathlib import Path

# Before `tokenizers` is imported: its rayon pool reads these once.
os.environ["TOKENIZERS_PARALLELISM"] = "false"
os.environ["RAYON_NUM_THREADS"] = "1"

import tokenizers  # noqa: E402
from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers  # noqa: E402

OUT = Path(__file__).resolve().parents[1] / "llama_tiny"
VOCAB = 512
EOT = "<|endoftext|>"
MODULES = [
    "argparse", "bisect", "collections", "csv", "dataclasses", "datetime",
    "decimal", "fractions", "functools", "heapq", "itertools", "json",
    "pathlib", "random", "re", "shutil", "statistics", "string", "textwrap",
    "typing",
]
# Strings whose ids the Rust tokenizer must reproduce: ASCII, whitespace
# runs, digits, multi-byte UTF-8 (2, 3 and 4 bytes) and the special token.
CASES = [
    "Hello, world!",
    "The quick brown fox jumps over the lazy dog.",
    "def f(x):\n    return x * 2\n",
    "  leading and trailing spaces  ",
    "1234567890 3.14159 -42",
    "naïve café, Größe",
    "日本語のテキスト",
    "emoji 🦀 and 🐍",
    "return the value" + EOT + "next",
    "",
]


def corpus():
    """Module and public-member docstrings, in a fixed order."""
    texts = []
    for name in MODULES:
        mod = importlib.import_module(name)
        if mod.__doc__:
            texts.append(inspect.cleandoc(mod.__doc__))
        for attr in sorted(dir(mod)):
            if attr.startswith("_"):
                continue
            doc = inspect.getdoc(getattr(mod, attr))
            if doc:
                texts.append(doc)
    return texts


def build(texts):
    tok = Tokenizer(models.BPE())
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=True)
    tok.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(
        vocab_size=VOCAB,
        min_frequency=2,
        special_tokens=[EOT],
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
        show_progress=False,
    )
    tok.train_from_iterator(texts, trainer=trainer)
    assert tok.get_vocab_size(with_added_tokens=True) == VOCAB, tok.get_vocab_size()
    return tok


def main():
    texts = corpus()
    digest = hashlib.sha256("\n\x00".join(texts).encode()).hexdigest()
    tok = build(texts)
    OUT.mkdir(parents=True, exist_ok=True)
    # Sorted keys and no indentation: stable bytes, a few tens of KB.
    text = json.dumps(json.loads(tok.to_str()), sort_keys=True, ensure_ascii=False)
    (OUT / "tokenizer.json").write_text(text + "\n", encoding="utf-8")
    # One case per line, so a diff shows which string changed.
    rows = [
        json.dumps({"text": s, "ids": tok.encode(s, add_special_tokens=False).ids}, ensure_ascii=False)
        for s in CASES
    ]
    head = {
        "python": f"{sys.version_info.major}.{sys.version_info.minor}",
        "tokenizers": tokenizers.__version__,
        "corpus_sha256": digest,
    }
    lines = [f" {json.dumps(k)}: {json.dumps(v)}," for k, v in head.items()]
    text = "{\n" + "\n".join(lines) + '\n "cases": [\n  ' + ",\n  ".join(rows) + "\n ]\n}\n"
    json.loads(text)
    (OUT / "tokenizer_cases.json").write_text(text, encoding="utf-8")
    print(f"wrote {OUT / 'tokenizer.json'}: vocab {VOCAB}, {len(texts)} docstrings, corpus sha256 {digest[:16]}")


if __name__ == "__main__":
    main()
