"""Regenerates every bundled model's schedule, weights, samples and
expected outputs. Run from anywhere: python3 models/make/make_all.py
(packages: pip install -r models/make/requirements.txt), then
`cargo xtask gen --all`."""

import make_bert_tiny
import make_cnn
import make_mlp

if __name__ == "__main__":
    make_mlp.main()
    make_cnn.main()
    make_bert_tiny.main()
