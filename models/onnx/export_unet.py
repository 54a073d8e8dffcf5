"""Exports a small U-Net (image segmentation) with seeded weights to ONNX,
for the end-to-end run: the model family that needs `ConvTranspose` and
`Resize`.

The network: an encoder of three stages (two 3x3 conv + BatchNorm + ReLU
each, 2x2 max pool between them; 16-32-64 channels), a bottleneck of 128
channels, and a decoder that upsamples twice with `ConvTranspose2d(k=2,
s=2)` and once with bilinear `nn.Upsample` (an ONNX `Resize`, linear,
`half_pixel`) followed by a 1x1 convolution, each concatenated with the
encoder's skip connection, then a 1x1 head to 5 class logits per pixel:
1x3x96x128 in, 1x5x96x128 out. A non-square input so a swapped axis
shows.

Weights are drawn from a fixed seed (Kaiming-style scales, BatchNorm with
non-trivial statistics), the model is put in eval mode, and exported by
the TorchScript exporter (`dynamo=False`, opset 17, static shapes), which
folds each BatchNorm into its convolution.

Writes, under OUT_DIR (default `.cache/onnx-models/unet`, git-ignored):
  unet.onnx, input.npy (one seeded image), expected.npy (torch's logits)

Usage: python3 models/onnx/export_unet.py [OUT_DIR]
"""

import sys
import warnings
from pathlib import Path

import numpy as np
import torch
from torch import nn

warnings.filterwarnings("ignore", message=".*legacy TorchScript-based ONNX export", category=DeprecationWarning)

SEED = 11


def double_conv(c_in, c_out):
    return nn.Sequential(
        nn.Conv2d(c_in, c_out, 3, padding=1, bias=False),
        nn.BatchNorm2d(c_out),
        nn.ReLU(inplace=True),
        nn.Conv2d(c_out, c_out, 3, padding=1, bias=False),
        nn.BatchNorm2d(c_out),
        nn.ReLU(inplace=True),
    )


class UNet(nn.Module):
    def __init__(self, classes=5):
        super().__init__()
        self.enc1, self.enc2, self.enc3 = double_conv(3, 16), double_conv(16, 32), double_conv(32, 64)
        self.pool = nn.MaxPool2d(2)
        self.bottleneck = double_conv(64, 128)
        # Two learned upsamplings (ConvTranspose) and one fixed (Resize).
        self.up3 = nn.ConvTranspose2d(128, 64, 2, stride=2)
        self.dec3 = double_conv(128, 64)
        self.up2 = nn.ConvTranspose2d(64, 32, 2, stride=2)
        self.dec2 = double_conv(64, 32)
        self.up1 = nn.Sequential(nn.Upsample(scale_factor=2, mode="bilinear", align_corners=False), nn.Conv2d(32, 16, 1))
        self.dec1 = double_conv(32, 16)
        self.head = nn.Conv2d(16, classes, 1)

    def forward(self, x):
        e1 = self.enc1(x)
        e2 = self.enc2(self.pool(e1))
        e3 = self.enc3(self.pool(e2))
        b = self.bottleneck(self.pool(e3))
        d3 = self.dec3(torch.cat([self.up3(b), e3], 1))
        d2 = self.dec2(torch.cat([self.up2(d3), e2], 1))
        d1 = self.dec1(torch.cat([self.up1(d2), e1], 1))
        return self.head(d1)


def seed_weights(model, generator):
    for m in model.modules():
        if isinstance(m, (nn.Conv2d, nn.ConvTranspose2d)):
            fan_in = m.weight.shape[1] * m.kernel_size[0] * m.kernel_size[1]
            if isinstance(m, nn.ConvTranspose2d):
                fan_in = m.in_channels
            m.weight.data = torch.randn(m.weight.shape, generator=generator) * (2.0 / fan_in) ** 0.5
            if m.bias is not None:
                m.bias.data = 0.05 * torch.randn(m.bias.shape, generator=generator)
        elif isinstance(m, nn.BatchNorm2d):
            n = m.num_features
            m.weight.data = 0.5 + 0.5 * torch.rand(n, generator=generator)
            m.bias.data = 0.1 * torch.randn(n, generator=generator)
            m.running_mean.data = 0.1 * torch.randn(n, generator=generator)
            m.running_var.data = 0.5 + torch.rand(n, generator=generator)


def main():
    out = Path(sys.argv[1] if len(sys.argv) > 1 else ".cache/onnx-models/unet")
    out.mkdir(parents=True, exist_ok=True)
    generator = torch.Generator().manual_seed(SEED)
    image = torch.rand((1, 3, 96, 128), generator=generator)
    np.save(out / "input.npy", image.numpy().astype(np.float32))
    model = UNet()
    seed_weights(model, generator)
    model.eval()
    with torch.no_grad():
        expected = model(image)
    np.save(out / "expected.npy", expected.numpy().astype(np.float32))
    torch.onnx.export(
        model,
        (image,),
        str(out / "unet.onnx"),
        input_names=["input"],
        output_names=["logits"],
        opset_version=17,
        dynamo=False,
    )
    print(f"unet: wrote {out / 'unet.onnx'}")


if __name__ == "__main__":
    main()
