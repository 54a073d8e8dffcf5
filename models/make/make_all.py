"""Regenerates every bundled model's schedule, weights, samples and
expected outputs. Run from anywhere: python3 models/make/make_all.py
(packages: pip install -r models/make/requirements.txt), then
`cargo xtask gen --all`.

The decoder `llama_tiny` and the decoder families' test checkpoints
(make_decoder_families.py) need torch and transformers as well
(models/onnx/requirements.txt); with them missing these are skipped with a
message, their checked-in files stay as they are."""

import importlib.util

import make_bert_tiny
import make_cnn
import make_mlp
import make_tokenizer

if __name__ == "__main__":
    make_mlp.main()
    make_cnn.main()
    make_bert_tiny.main()
    make_tokenizer.main()
    if all(importlib.util.find_spec(m) for m in ("torch", "transformers")):
        import make_decoder_families
        import make_llama_tiny

        make_llama_tiny.main()
        make_decoder_families.main()
    else:
        print("skipped: llama_tiny and the decoder families' checkpoints need torch and transformers "
              "(pip install -r models/onnx/requirements.txt)")
