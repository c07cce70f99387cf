"""Prints the state_dict layout of a torchvision ResNet with FFCV's BlurPool wrappers.

Usage: torchvision_resnet_layout.py resnet18|resnet50 [--no-blurpool]

Output: one JSON object {state_dict key: shape as a list of ints}. The C++ model test compares
it with the names and shapes of ffcv::train::ResNet (parameters and buffers), so both must agree
key for key, BatchNorm's num_batches_tracked (shape []) included.

The wrapping rule is the one of FFCV's ImageNet recipe: every Conv2d with a stride above 1 and
at least 16 input channels is replaced by a module holding it as `conv`, with a fixed depthwise
blur kernel registered as the buffer `blur_filter` of shape (C_in, 1, 3, 3).
"""

import argparse
import json
import sys

import torch
import torch.nn.functional as F
import torchvision


class BlurThenConv(torch.nn.Module):
    """Depthwise [1,2,1]^T[1,2,1]/16 blur (stride 1, zero padding 1), then the original conv."""

    def __init__(self, conv: torch.nn.Conv2d):
        super().__init__()
        taps = torch.tensor([1.0, 2.0, 1.0])
        kernel = torch.outer(taps, taps) / 16.0
        self.conv = conv
        self.register_buffer("blur_filter", kernel.expand(conv.in_channels, 1, 3, 3).clone())

    def forward(self, x):
        x = F.conv2d(x, self.blur_filter, stride=1, padding=1, groups=self.conv.in_channels)
        return self.conv(x)


def wrap_strided_convs(module: torch.nn.Module) -> int:
    wrapped = 0
    for name, child in list(module.named_children()):
        if (isinstance(child, torch.nn.Conv2d) and max(child.stride) > 1
                and child.in_channels >= 16):
            setattr(module, name, BlurThenConv(child))
            wrapped += 1
        else:
            wrapped += wrap_strided_convs(child)
    return wrapped


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("arch", choices=["resnet18", "resnet50"])
    parser.add_argument("--no-blurpool", action="store_true")
    args = parser.parse_args()
    model = getattr(torchvision.models, args.arch)(weights=None)
    if not args.no_blurpool:
        wrap_strided_convs(model)
    layout = {key: list(value.shape) for key, value in model.state_dict().items()}
    json.dump(layout, sys.stdout, sort_keys=True)
    sys.stdout.write("\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
