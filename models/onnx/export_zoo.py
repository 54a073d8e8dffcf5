"""Exports the benchmark zoo of `cargo xtask bench --zoo`: architectures
rlx was not tuned on, with seeded random weights, batch 1, static shapes,
opset 17, the TorchScript exporter (`dynamo=False`).

Vision models take one seeded 1x3x224x224 image (`input`); text models take
int64 token ids (`input_ids`) and an attention mask (`attention_mask`) of
1x128 whose last 16 positions are padding. Weights come from the libraries'
own initialisers under a fixed seed (BatchNorm statistics are drawn too, so
folding them is not a no-op); no download happens.

torchvision (`weights=None`, the smallest variant of each family):
- `resnet18`: ResNet-18, BasicBlocks, 1000 classes.
- `mobilenet_v2`: MobileNetV2, inverted residuals with ReLU6.
- `mobilenet_v3_small`: MobileNetV3-Small, hard-swish, squeeze-excitation.
- `efficientnet_b0`: EfficientNet-B0, SiLU, squeeze-excitation, 5x5 depthwise.
- `shufflenet_v2_x0_5`: ShuffleNetV2 0.5x, channel split and shuffle.
- `squeezenet1_1`: SqueezeNet 1.1, fire modules (concatenated 1x1 and 3x3).
- `mnasnet0_5`: MnasNet 0.5.
- `regnet_x_400mf`: RegNetX-400MF, grouped 3x3 convolutions.
- `convnext_tiny`: ConvNeXt-T, 7x7 depthwise, LayerNorm over channels, GELU.
- `densenet121`: DenseNet-121, dense concatenations.
- `googlenet`: GoogLeNet (Inception v1, no auxiliary heads).
- `tv_vit_tiny`: torchvision's VisionTransformer in the ViT-Tiny/16 shape
  (12 layers, hidden 192, 3 heads, MLP 768).
- `lraspp_mobilenet_v3_large`: LR-ASPP segmentation head on
  MobileNetV3-Large, 21 classes, at 224x224 (output `out`).

transformers (random weights from a config, eager attention):
- `bert_6l_384`: BertModel, 6 layers, hidden 384, 6 heads, FFN 1536,
  sequence 128 with attention mask; last hidden state.
- `distilbert`: DistilBertModel, 6 layers, dim 512, 8 heads, FFN 2048.
- `roberta`: RobertaModel, 4 layers, hidden 768, 12 heads, FFN 3072.
- `gpt2_6l`: GPT2Model, 6 layers, hidden 768, 12 heads, the full 128-token
  sequence in one forward (causal attention, no cache, no LM head).
- `vit_tiny`: ViTModel, ViT-Tiny/16 at 224 (12 layers, hidden 192,
  3 heads), no pooler.
- `deit_tiny`: DeiTModel, DeiT-Tiny/16 at 224 (class and distillation
  tokens), no pooler.
- `whisper_tiny_encoder`: WhisperEncoder in the whisper-tiny shape (4
  layers, d_model 384, 6 heads), on 80 mel bins x 600 frames (6 s instead
  of 30 s, so 300 positions; input `input_features`).
- `t5_small_encoder`: T5EncoderModel in the t5-small shape (6 layers,
  d_model 512, 8 heads, FFN 2048, relative position buckets).

Writes OUT_DIR/<name>/model.onnx, inputs/<onnx input name>.npy,
expected/<onnx output name>.npy (onnxruntime's outputs, one thread) and
a stamp `done`; a model with the stamp is not exported again.

Usage: python3 models/onnx/export_zoo.py [OUT_DIR] [--only NAME...] [--list]
(default OUT_DIR `.cache/onnx-models/zoo`). `--list` prints the names, one a
line, and needs neither torch nor transformers.
"""

import argparse
import sys
import warnings
from pathlib import Path

SEED = 11
SEQ = 128
PAD = 16
OPSET = 17


def image():
    import torch

    g = torch.Generator().manual_seed(SEED)
    return {"input": torch.randn(1, 3, 224, 224, generator=g)}


def text(vocab, mask=True):
    import torch

    g = torch.Generator().manual_seed(SEED)
    ids = torch.randint(0, vocab, (1, SEQ), generator=g, dtype=torch.int64)
    feeds = {"input_ids": ids}
    if mask:
        m = torch.ones(1, SEQ, dtype=torch.int64)
        m[:, SEQ - PAD :] = 0
        feeds["attention_mask"] = m
    return feeds


def randomize_batchnorm(model):
    """Non-trivial running statistics, so BatchNorm folding is exercised."""
    import torch

    g = torch.Generator().manual_seed(SEED + 1)
    for m in model.modules():
        if isinstance(m, torch.nn.modules.batchnorm._BatchNorm):
            m.running_mean.copy_(torch.randn(m.num_features, generator=g) * 0.1)
            m.running_var.copy_(torch.rand(m.num_features, generator=g) * 0.5 + 0.75)
            if m.affine:
                m.weight.data.copy_(torch.rand(m.num_features, generator=g) * 0.5 + 0.75)
                m.bias.data.copy_(torch.randn(m.num_features, generator=g) * 0.1)
    return model


def torchvision_model(name, **kwargs):
    def build():
        import torchvision

        return randomize_batchnorm(torchvision.models.get_model(name, weights=None, **kwargs)), image(), ["output"]

    return build


def tv_vit_tiny():
    from torchvision.models.vision_transformer import VisionTransformer

    import torch

    m = VisionTransformer(image_size=224, patch_size=16, num_layers=12, num_heads=3, hidden_dim=192, mlp_dim=768)
    # torchvision zero-initialises the head, which would make every output 0.
    torch.nn.init.normal_(m.heads.head.weight, std=0.02)
    return m, image(), ["output"]


def lraspp():
    import torch
    import torchvision

    class Out(torch.nn.Module):
        """The segmentation models return a dict; the graph returns its `out`."""

        def __init__(self, m):
            super().__init__()
            self.m = m

        def forward(self, x):
            return self.m(x)["out"]

    m = torchvision.models.segmentation.lraspp_mobilenet_v3_large(weights=None, weights_backbone=None)
    return Out(randomize_batchnorm(m)), image(), ["out"]


class FirstOutput:
    """Wraps a transformers model so the graph returns its first output."""

    @staticmethod
    def wrap(model, names):
        import torch

        class Wrapped(torch.nn.Module):
            def __init__(self):
                super().__init__()
                self.m = model

            def forward(self, *args):
                return self.m(**dict(zip(names, args)))[0]

        return Wrapped()


def hf(model_cls, config_cls, feeds, **config):
    def build():
        import transformers

        cfg = getattr(transformers, config_cls)(attn_implementation="eager", **config)
        model = getattr(transformers, model_cls)(cfg)
        f = feeds()
        return FirstOutput.wrap(model, list(f)), f, ["last_hidden_state"]

    return build


def whisper_encoder():
    import torch
    import transformers
    from transformers.models.whisper.modeling_whisper import WhisperEncoder

    positions = 300
    cfg = transformers.WhisperConfig(
        d_model=384,
        encoder_layers=4,
        encoder_attention_heads=6,
        encoder_ffn_dim=1536,
        num_mel_bins=80,
        max_source_positions=positions,
        attn_implementation="eager",
    )
    g = torch.Generator().manual_seed(SEED)
    feeds = {"input_features": torch.randn(1, 80, 2 * positions, generator=g)}
    return FirstOutput.wrap(WhisperEncoder(cfg), list(feeds)), feeds, ["last_hidden_state"]


MODELS = {
    "resnet18": torchvision_model("resnet18"),
    "mobilenet_v2": torchvision_model("mobilenet_v2"),
    "mobilenet_v3_small": torchvision_model("mobilenet_v3_small"),
    "efficientnet_b0": torchvision_model("efficientnet_b0"),
    "shufflenet_v2_x0_5": torchvision_model("shufflenet_v2_x0_5"),
    "squeezenet1_1": torchvision_model("squeezenet1_1"),
    "mnasnet0_5": torchvision_model("mnasnet0_5"),
    "regnet_x_400mf": torchvision_model("regnet_x_400mf"),
    "convnext_tiny": torchvision_model("convnext_tiny"),
    "densenet121": torchvision_model("densenet121"),
    "googlenet": torchvision_model("googlenet", aux_logits=False, init_weights=True),
    "tv_vit_tiny": tv_vit_tiny,
    "lraspp_mobilenet_v3_large": lraspp,
    "bert_6l_384": hf(
        "BertModel",
        "BertConfig",
        lambda: text(30522),
        hidden_size=384,
        num_hidden_layers=6,
        num_attention_heads=6,
        intermediate_size=1536,
    ),
    "distilbert": hf(
        "DistilBertModel", "DistilBertConfig", lambda: text(30522), dim=512, n_layers=6, n_heads=8, hidden_dim=2048
    ),
    "roberta": hf(
        "RobertaModel",
        "RobertaConfig",
        lambda: text(50265),
        hidden_size=768,
        num_hidden_layers=4,
        num_attention_heads=12,
        intermediate_size=3072,
        max_position_embeddings=514,
    ),
    "gpt2_6l": hf(
        "GPT2Model", "GPT2Config", lambda: text(50257), n_layer=6, n_embd=768, n_head=12, n_positions=1024, use_cache=False
    ),
    "vit_tiny": hf(
        "ViTModel",
        "ViTConfig",
        lambda: {"pixel_values": image()["input"]},
        hidden_size=192,
        num_hidden_layers=12,
        num_attention_heads=3,
        intermediate_size=768,
        image_size=224,
        patch_size=16,
    ),
    "deit_tiny": hf(
        "DeiTModel",
        "DeiTConfig",
        lambda: {"pixel_values": image()["input"]},
        hidden_size=192,
        num_hidden_layers=12,
        num_attention_heads=3,
        intermediate_size=768,
        image_size=224,
        patch_size=16,
    ),
    "whisper_tiny_encoder": whisper_encoder,
    "t5_small_encoder": hf(
        "T5EncoderModel",
        "T5Config",
        lambda: text(32128),
        d_model=512,
        d_kv=64,
        d_ff=2048,
        num_layers=6,
        num_heads=8,
    ),
}


def export(name, out):
    import numpy as np
    import onnxruntime as ort
    import torch

    warnings.filterwarnings("ignore", category=DeprecationWarning)
    warnings.filterwarnings("ignore", category=torch.jit.TracerWarning)
    torch.manual_seed(SEED)
    model, feeds, output_names = MODELS[name]()
    model.eval()
    args = tuple(feeds.values())
    out.mkdir(parents=True, exist_ok=True)
    onnx_path = out / "model.onnx"
    with torch.no_grad():
        torch.onnx.export(
            model,
            args,
            str(onnx_path),
            dynamo=False,
            opset_version=OPSET,
            input_names=list(feeds),
            output_names=output_names,
            do_constant_folding=True,
        )
        want = model(*args)
    (out / "inputs").mkdir(exist_ok=True)
    for k, v in feeds.items():
        np.save(out / "inputs" / f"{k}.npy", v.numpy())
    opts = ort.SessionOptions()
    opts.intra_op_num_threads = 1
    sess = ort.InferenceSession(str(onnx_path), sess_options=opts, providers=["CPUExecutionProvider"])
    results = sess.run(None, {k: v.numpy() for k, v in feeds.items()})
    (out / "expected").mkdir(exist_ok=True)
    for meta, value in zip(sess.get_outputs(), results):
        np.save(out / "expected" / f"{meta.name}.npy", np.ascontiguousarray(value))
    diff = float(np.abs(results[0] - want.numpy()).max())
    (out / "done").write_text("\n".join(output_names) + "\n")
    print(f"exported {name}: {onnx_path} (onnxruntime vs torch max abs {diff:.2e})", flush=True)


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("out_dir", nargs="?", default=".cache/onnx-models/zoo")
    p.add_argument("--only", nargs="+", metavar="NAME", default=[])
    p.add_argument("--list", action="store_true", help="print the model names and exit")
    a = p.parse_args()
    if a.list:
        print("\n".join(MODELS))
        return 0
    unknown = [n for n in a.only if n not in MODELS]
    if unknown:
        print(f"export_zoo: unknown model(s) {', '.join(unknown)}; known: {', '.join(MODELS)}", file=sys.stderr)
        return 2
    failed = []
    for name in a.only or list(MODELS):
        out = Path(a.out_dir) / name
        if (out / "done").is_file():
            continue
        try:
            export(name, out)
        except Exception as e:  # one model's failure must not stop the others
            print(f"failed: {name}: {type(e).__name__}: {e}", file=sys.stderr, flush=True)
            failed.append(name)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
