"""The paper's baseline for many models: the same K trainings fed by the PyTorch DataLoader with
torchvision's ImageFolder reading the source JPEGs, one training after another, each with every
core (DataLoader workers and intra-op threads).

Each training is the recipe's: a ResNet-18 of the given width (torchvision's layout, ImageNet
stem, no BlurPool), RandomResizedCrop to the recipe's size with its scale and ratio, horizontal
flip, normalisation, SGD with momentum, the triangular per-iteration learning rate, label
smoothing and weight decay off BatchNorm. What differs from `ffcv run` is the loader, and the
model code (torch's Python front end against LibTorch's C++ one): the figure to read is the
wall time of K trainings, next to ours in results/many-models.md.

  .venv/bin/python experiments/many_models/dataloader_baseline.py --images DIR --models 4
"""
import argparse
import gzip
import json
import os
import time

import numpy as np
import torch
import torch.nn as nn
import torchvision.transforms as T
from PIL import Image
from torchvision.datasets import ImageFolder

IDX_DIR = "/usr/share/datasets/fashion-mnist"


def write_jpeg_folder(root, split, count):
    """Fashion-MNIST's first `count` images of `split` as RGB JPEGs (quality 90), one folder
    per class, as `ffcv write fashion-mnist --write-mode jpg` stores them."""
    prefix = "train" if split == "train" else "t10k"
    with gzip.open(os.path.join(IDX_DIR, prefix + "-images-idx3-ubyte.gz")) as f:
        images = np.frombuffer(f.read(), np.uint8, offset=16).reshape(-1, 28, 28)
    with gzip.open(os.path.join(IDX_DIR, prefix + "-labels-idx1-ubyte.gz")) as f:
        labels = np.frombuffer(f.read(), np.uint8, offset=8)
    for i in range(count):
        folder = os.path.join(root, "%d" % labels[i])
        os.makedirs(folder, exist_ok=True)
        Image.fromarray(images[i]).convert("RGB").save(
            os.path.join(folder, "%05d.jpg" % i), quality=90)


class Block(nn.Module):
    def __init__(self, cin, cout, stride):
        super().__init__()
        self.conv1 = nn.Conv2d(cin, cout, 3, stride, 1, bias=False)
        self.bn1 = nn.BatchNorm2d(cout)
        self.conv2 = nn.Conv2d(cout, cout, 3, 1, 1, bias=False)
        self.bn2 = nn.BatchNorm2d(cout)
        self.downsample = None
        if stride != 1 or cin != cout:
            self.downsample = nn.Sequential(nn.Conv2d(cin, cout, 1, stride, bias=False),
                                            nn.BatchNorm2d(cout))

    def forward(self, x):
        out = torch.relu(self.bn1(self.conv1(x)))
        out = self.bn2(self.conv2(out))
        return torch.relu(out + (x if self.downsample is None else self.downsample(x)))


def resnet18(width, classes):
    widths = [max(1, int(round(w * width))) for w in (64, 128, 256, 512)]
    layers = [nn.Conv2d(3, widths[0], 7, 2, 3, bias=False), nn.BatchNorm2d(widths[0]),
              nn.ReLU(inplace=True), nn.MaxPool2d(3, 2, 1)]
    cin = widths[0]
    for stage, cout in enumerate(widths):
        for block in range(2):
            layers.append(Block(cin, cout, 2 if stage > 0 and block == 0 else 1))
            cin = cout
    layers += [nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.Linear(cin, classes)]
    return nn.Sequential(*layers)


def train_one(args, lr, train_set):
    torch.manual_seed(0)
    model = resnet18(args.width, 10).to(memory_format=torch.channels_last)
    # Weight decay on everything but BatchNorm, as the recipe's wd_exclude = "bn".
    norms = {id(p) for m in model.modules() if isinstance(m, nn.BatchNorm2d)
             for p in m.parameters()}
    decay = [p for p in model.parameters() if id(p) not in norms]
    rest = [p for p in model.parameters() if id(p) in norms]
    optimizer = torch.optim.SGD([{"params": decay, "weight_decay": args.weight_decay},
                                 {"params": rest, "weight_decay": 0}], lr=lr, momentum=0.9)
    loader = torch.utils.data.DataLoader(train_set, batch_size=args.batch_size, shuffle=True,
                                         num_workers=args.workers, drop_last=True,
                                         persistent_workers=False)
    iterations = args.epochs * len(loader)
    criterion = nn.CrossEntropyLoss(label_smoothing=args.label_smoothing)
    step = 0
    start = time.monotonic()
    for _ in range(args.epochs):
        for images, labels in loader:
            # FFCV's triangular schedule: up from 1e-4·lr to lr at peak_epoch, down to 0 at the end.
            t = step / len(loader)
            factor = (np.interp(t, [0, args.peak_epoch, args.epochs], [1e-4, 1, 0]))
            for group in optimizer.param_groups:
                group["lr"] = lr * factor
            images = images.to(memory_format=torch.channels_last)
            loss = criterion(model(images), labels)
            optimizer.zero_grad(set_to_none=True)
            loss.backward()
            optimizer.step()
            step += 1
    return time.monotonic() - start, iterations * args.batch_size


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--images", required=True, help="ImageFolder root (made when missing)")
    parser.add_argument("--samples", type=int, default=8192)
    parser.add_argument("--models", type=int, default=1)
    parser.add_argument("--learning-rates", default="0.05,0.1,0.2,0.4,0.8,1.6,0.3,0.6")
    parser.add_argument("--epochs", type=int, default=2)
    parser.add_argument("--peak-epoch", type=float, default=1)
    parser.add_argument("--batch-size", type=int, default=256)
    parser.add_argument("--resolution", type=int, default=32)
    parser.add_argument("--width", type=float, default=0.125)
    parser.add_argument("--weight-decay", type=float, default=5e-4)
    parser.add_argument("--label-smoothing", type=float, default=0.1)
    parser.add_argument("--workers", type=int, default=len(os.sched_getaffinity(0)))
    args = parser.parse_args()
    if not os.path.isdir(args.images):
        write_jpeg_folder(args.images, "train", args.samples)
    torch.set_num_threads(len(os.sched_getaffinity(0)))
    mean, std = [72.94 / 255] * 3, [90.02 / 255] * 3
    train_set = ImageFolder(args.images, transform=T.Compose([
        T.RandomResizedCrop(args.resolution, scale=(0.7, 1.0), ratio=(0.85, 1 / 0.85),
                            interpolation=T.InterpolationMode.BILINEAR, antialias=True),
        T.RandomHorizontalFlip(), T.ToTensor(), T.Normalize(mean, std)]))
    start = time.monotonic()
    images = 0
    for lr in [float(v) for v in args.learning_rates.split(",")][: args.models]:
        _, count = train_one(args, lr, train_set)
        images += count
    seconds = time.monotonic() - start
    print(json.dumps({"models": args.models, "wall_seconds": seconds,
                      "images_per_second": images / seconds, "workers": args.workers}))


if __name__ == "__main__":
    main()
