"""Exports two ImageNet-shaped CNNs with seeded weights to ONNX, for the
end-to-end run and the benchmarks against onnxruntime:

- `resnet`: ResNet-18 (torchvision's layout: 7x7/2 stem, max pool, four
  stages of two BasicBlocks, 64-128-256-512 channels, 1x1/2 projection
  shortcuts, global average pool, fc 1000), written here in plain torch so
  no torchvision download is needed;
- `dwsep`: a MobileNetV2-style depthwise-separable network (inverted
  residual blocks: 1x1 expand, 3x3 or 5x5 depthwise, 1x1 project, ReLU6,
  residual adds where shapes allow), with EfficientNet-Lite's 5x5 kernels
  in two stages.

Weights are drawn from a fixed seed (Kaiming-style scales, BatchNorm with
non-trivial statistics), the models are put in eval mode, and exported by
the TorchScript exporter (`dynamo=False`, opset 17, static 1x3x224x224),
which folds each BatchNorm into its convolution. Real weights change nothing
the benchmarks measure.

Then quantizes both with onnxruntime's `quantize_static` in the QDQ
format (uint8 activations, int8 weights per output channel, MinMax
calibration on 8 seeded images): QuantizeLinear/DequantizeLinear pairs
around every convolution, as onnxruntime's tools write for CNNs.

And writes ResNet-18 with float16 weights, as a float16 export with
`keep_io_types` would store them but computing in float32: every float
initializer rounded to FLOAT16 and widened by a `Cast` at the top of the
graph (what rlx imports with 2-byte filters; onnxruntime runs the same
f32 arithmetic on the same values).

Writes, under OUT_DIR (default `.cache/onnx-models/cnns`, git-ignored):
  resnet.onnx, dwsep.onnx, input.npy (one seeded image),
  resnet_expected.npy, dwsep_expected.npy (torch's outputs),
  resnet_int8.onnx, dwsep_int8.onnx (the QDQ models) and
  resnet_f16.onnx (the float16 weights)

Usage: python3 models/onnx/export_cnns.py [OUT_DIR]
"""

import sys
import warnings
from pathlib import Path

import numpy as np
import torch
from torch import nn

warnings.filterwarnings("ignore", message=".*legacy TorchScript-based ONNX export", category=DeprecationWarning)

SEED = 7


def conv_bn(c_in, c_out, k, stride=1, groups=1, act=nn.ReLU):
    layers = [nn.Conv2d(c_in, c_out, k, stride, k // 2, groups=groups, bias=False), nn.BatchNorm2d(c_out)]
    if act is not None:
        layers.append(act(inplace=True))
    return nn.Sequential(*layers)


class BasicBlock(nn.Module):
    def __init__(self, c_in, c_out, stride):
        super().__init__()
        self.body = nn.Sequential(conv_bn(c_in, c_out, 3, stride), conv_bn(c_out, c_out, 3, act=None))
        self.short = None if stride == 1 and c_in == c_out else conv_bn(c_in, c_out, 1, stride, act=None)
        self.relu = nn.ReLU(inplace=True)

    def forward(self, x):
        s = x if self.short is None else self.short(x)
        return self.relu(self.body(x) + s)


class ResNet18(nn.Module):
    def __init__(self):
        super().__init__()
        self.stem = nn.Sequential(conv_bn(3, 64, 7, 2), nn.MaxPool2d(3, 2, 1))
        blocks, c = [], 64
        for c_out, stride in [(64, 1), (128, 2), (256, 2), (512, 2)]:
            blocks += [BasicBlock(c, c_out, stride), BasicBlock(c_out, c_out, 1)]
            c = c_out
        self.blocks = nn.Sequential(*blocks)
        self.fc = nn.Linear(512, 1000)

    def forward(self, x):
        x = self.blocks(self.stem(x))
        return self.fc(torch.flatten(nn.functional.adaptive_avg_pool2d(x, 1), 1))


class InvertedResidual(nn.Module):
    def __init__(self, c_in, c_out, k, stride, expand):
        super().__init__()
        hidden = c_in * expand
        layers = [] if expand == 1 else [conv_bn(c_in, hidden, 1, act=nn.ReLU6)]
        layers += [conv_bn(hidden, hidden, k, stride, groups=hidden, act=nn.ReLU6), conv_bn(hidden, c_out, 1, act=None)]
        self.body = nn.Sequential(*layers)
        self.residual = stride == 1 and c_in == c_out

    def forward(self, x):
        y = self.body(x)
        return x + y if self.residual else y


class DwSep(nn.Module):
    # (expand, c_out, repeats, stride, kernel): MobileNetV2's table with
    # EfficientNet-Lite's 5x5 kernels in two stages.
    SETTINGS = [(1, 16, 1, 1, 3), (6, 24, 2, 2, 3), (6, 40, 2, 2, 5), (6, 80, 3, 2, 3), (6, 112, 3, 1, 5), (6, 192, 4, 2, 5), (6, 320, 1, 1, 3)]

    def __init__(self):
        super().__init__()
        layers, c = [conv_bn(3, 32, 3, 2, act=nn.ReLU6)], 32
        for expand, c_out, repeats, stride, k in self.SETTINGS:
            for i in range(repeats):
                layers.append(InvertedResidual(c, c_out, k, stride if i == 0 else 1, expand))
                c = c_out
        layers.append(conv_bn(c, 1280, 1, act=nn.ReLU6))
        self.features = nn.Sequential(*layers)
        self.fc = nn.Linear(1280, 1000)

    def forward(self, x):
        x = self.features(x)
        return self.fc(torch.flatten(nn.functional.adaptive_avg_pool2d(x, 1), 1))


def seed_weights(model, generator):
    for m in model.modules():
        if isinstance(m, nn.Conv2d):
            fan_in = m.in_channels // m.groups * m.kernel_size[0] * m.kernel_size[1]
            m.weight.data = torch.randn(m.weight.shape, generator=generator) * (2.0 / fan_in) ** 0.5
        elif isinstance(m, nn.BatchNorm2d):
            n = m.num_features
            m.weight.data = 0.5 + 0.5 * torch.rand(n, generator=generator)
            m.bias.data = 0.1 * torch.randn(n, generator=generator)
            m.running_mean.data = 0.1 * torch.randn(n, generator=generator)
            m.running_var.data = 0.5 + torch.rand(n, generator=generator)
        elif isinstance(m, nn.Linear):
            m.weight.data = torch.randn(m.weight.shape, generator=generator) * (1.0 / m.in_features) ** 0.5
            m.bias.data = 0.01 * torch.randn(m.bias.shape, generator=generator)


def main():
    out = Path(sys.argv[1] if len(sys.argv) > 1 else ".cache/onnx-models/cnns")
    out.mkdir(parents=True, exist_ok=True)
    generator = torch.Generator().manual_seed(SEED)
    image = torch.rand((1, 3, 224, 224), generator=generator)
    np.save(out / "input.npy", image.numpy().astype(np.float32))
    for name, model in [("resnet", ResNet18()), ("dwsep", DwSep())]:
        seed_weights(model, generator)
        model.eval()
        with torch.no_grad():
            expected = model(image)
        np.save(out / f"{name}_expected.npy", expected.numpy().astype(np.float32))
        torch.onnx.export(
            model,
            (image,),
            str(out / f"{name}.onnx"),
            input_names=["input"],
            output_names=["logits"],
            opset_version=17,
            dynamo=False,
        )
        print(f"{name}: wrote {out / (name + '.onnx')}")
    calibration = [torch.rand((1, 3, 224, 224), generator=generator).numpy() for _ in range(8)]
    for name in ["resnet", "dwsep"]:
        quantize_qdq(out / f"{name}.onnx", out / f"{name}_int8.onnx", calibration)
    half_weights(out / "resnet.onnx", out / "resnet_f16.onnx")


def half_weights(src, dst):
    """Every float initializer stored as FLOAT16, widened by a `Cast` node."""
    import onnx
    from onnx import helper, numpy_helper

    model = onnx.load(str(src))
    graph = model.graph
    casts, kept = [], []
    for t in graph.initializer:
        if t.data_type != onnx.TensorProto.FLOAT:
            kept.append(t)
            continue
        half = numpy_helper.from_array(numpy_helper.to_array(t).astype(np.float16), t.name + ".f16")
        kept.append(half)
        casts.append(helper.make_node("Cast", [half.name], [t.name], name=t.name + ".widen", to=onnx.TensorProto.FLOAT))
    del graph.initializer[:]
    graph.initializer.extend(kept)
    nodes = casts + list(graph.node)
    del graph.node[:]
    graph.node.extend(nodes)
    onnx.checker.check_model(model)
    onnx.save(model, str(dst))
    print(f"wrote {dst} ({dst.stat().st_size} bytes)")


def quantize_qdq(src, dst, images):
    """`quantize_static` in the QDQ format onnxruntime's docs recommend for CNNs."""
    from onnxruntime.quantization import CalibrationDataReader, QuantFormat, QuantType, quantize_static

    class Reader(CalibrationDataReader):
        def __init__(self):
            self.items = iter([{"input": image} for image in images])

        def get_next(self):
            return next(self.items, None)

    quantize_static(
        str(src),
        str(dst),
        Reader(),
        quant_format=QuantFormat.QDQ,
        activation_type=QuantType.QUInt8,
        weight_type=QuantType.QInt8,
        per_channel=True,
    )
    print(f"wrote {dst} ({dst.stat().st_size} bytes)")


if __name__ == "__main__":
    main()
