#!/usr/bin/env python3
"""A training script written against Python FFCV's public API, as its examples use it: a Loader
per split with an image and a label pipeline (decoder, flip, ToTensor, ToDevice, ToTorchImage,
a torch module on whole batches), then an ordinary training loop. It runs under this project's
Python package; the same file with the package's name replaced by `ffcv` in its import lines
runs under Python FFCV (tests/python/test_training_script.py does exactly that).

  python experiments/python/train_ffcv_api.py --train A.beton --val B.beton --epochs 1

Prints one JSON line per epoch: seconds, seconds waiting for the loader, images per second,
training loss, validation accuracy. --dump-labels FILE.npy saves every training label batch of
the first epoch (the tests compare them between the two packages).
"""
import argparse
import json
import time

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F
import torchvision

from ffcv_cpp.fields.decoders import (CenterCropRGBImageDecoder, IntDecoder,
                                      RandomResizedCropRGBImageDecoder)
from ffcv_cpp.loader import Loader, OrderOption
from ffcv_cpp.transforms import (Convert, RandomHorizontalFlip, Squeeze, ToDevice, ToTensor,
                                 ToTorchImage)

MEAN = [0.485 * 255, 0.456 * 255, 0.406 * 255]
STD = [0.229 * 255, 0.224 * 255, 0.225 * 255]


class Block(nn.Module):
    """A residual block: two 3x3 convolutions, a 1x1 projection when the shape changes."""

    def __init__(self, inputs, outputs, stride):
        super().__init__()
        self.conv1 = nn.Conv2d(inputs, outputs, 3, stride, 1, bias=False)
        self.bn1 = nn.BatchNorm2d(outputs)
        self.conv2 = nn.Conv2d(outputs, outputs, 3, 1, 1, bias=False)
        self.bn2 = nn.BatchNorm2d(outputs)
        self.skip = nn.Identity() if stride == 1 and inputs == outputs else nn.Sequential(
            nn.Conv2d(inputs, outputs, 1, stride, bias=False), nn.BatchNorm2d(outputs))

    def forward(self, x):
        y = F.relu(self.bn1(self.conv1(x)))
        return F.relu(self.bn2(self.conv2(y)) + self.skip(x))


def small_resnet(num_classes, width=32):
    return nn.Sequential(
        nn.Conv2d(3, width, 3, 1, 1, bias=False), nn.BatchNorm2d(width), nn.ReLU(),
        Block(width, width, 1), Block(width, 2 * width, 2), Block(2 * width, 4 * width, 2),
        nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.Linear(4 * width, num_classes))


def make_loaders(args, device):
    normalize = torchvision.transforms.Normalize(MEAN, STD)
    order = OrderOption[args.order.upper()]
    indices = list(range(args.limit)) if args.limit else None
    train = Loader(args.train, batch_size=args.batch_size, num_workers=args.workers,
                   order=order, seed=args.seed, drop_last=True, indices=indices, pipelines={
                       "image": [RandomResizedCropRGBImageDecoder((args.res, args.res)),
                                 RandomHorizontalFlip(), ToTensor(),
                                 ToDevice(device, non_blocking=True), ToTorchImage(),
                                 Convert(torch.float32), normalize],
                       "label": [IntDecoder(), ToTensor(), ToDevice(device), Squeeze()]})
    val = Loader(args.val, batch_size=args.batch_size, num_workers=args.workers,
                 order=OrderOption.SEQUENTIAL, drop_last=False, indices=indices, pipelines={
                     "image": [CenterCropRGBImageDecoder((args.res, args.res), ratio=224 / 256),
                               ToTensor(), ToDevice(device, non_blocking=True), ToTorchImage(),
                               Convert(torch.float32), normalize],
                     "label": [IntDecoder(), ToTensor(), ToDevice(device), Squeeze()]})
    return train, val


def train_epoch(model, loader, optimizer, dump):
    model.train()
    started, waited, images, losses = time.perf_counter(), 0.0, 0, []
    batches = iter(loader)
    while True:
        asked = time.perf_counter()
        try:
            inputs, labels = next(batches)
        except StopIteration:
            break
        waited += time.perf_counter() - asked
        if dump is not None:
            dump.append(labels.cpu().numpy().copy())
        optimizer.zero_grad(set_to_none=True)
        loss = F.cross_entropy(model(inputs), labels, label_smoothing=0.1)
        loss.backward()
        optimizer.step()
        images += len(labels)
        losses.append(loss.item())
    seconds = time.perf_counter() - started
    return {"seconds": seconds, "loader_wait_seconds": waited, "images": images,
            "images_per_second": images / seconds, "train_loss": float(np.mean(losses))}


def evaluate(model, loader):
    model.eval()
    correct = total = 0
    with torch.no_grad():
        for inputs, labels in loader:
            correct += (model(inputs).argmax(1) == labels).sum().item()
            total += len(labels)
    return correct / max(total, 1)


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--train", required=True)
    parser.add_argument("--val", required=True)
    parser.add_argument("--epochs", type=int, default=1)
    parser.add_argument("--batch-size", type=int, default=64)
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--res", type=int, default=32)
    parser.add_argument("--order", default="random", choices=["sequential", "random",
                                                              "quasi_random"])
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--classes", type=int, default=10)
    parser.add_argument("--width", type=int, default=32, help="channels of the first stage")
    parser.add_argument("--lr", type=float, default=0.05)
    parser.add_argument("--device", default="cuda" if torch.cuda.is_available() else "cpu")
    parser.add_argument("--limit", type=int, default=0,
                        help="train and evaluate on the first N samples only (0: all)")
    parser.add_argument("--dump-labels", help="save the first epoch's label batches (.npy)")
    args = parser.parse_args()
    torch.manual_seed(args.seed)
    device = torch.device(args.device)
    train, val = make_loaders(args, device)
    model = small_resnet(args.classes, args.width).to(device).to(memory_format=torch.channels_last)
    optimizer = torch.optim.SGD(model.parameters(), lr=args.lr, momentum=0.9, weight_decay=5e-4)
    for epoch in range(args.epochs):
        dump = [] if args.dump_labels and epoch == 0 else None
        report = train_epoch(model, train, optimizer, dump)
        report.update(epoch=epoch, val_accuracy=evaluate(model, val))
        print(json.dumps(report), flush=True)
        if dump is not None:
            np.save(args.dump_labels, np.stack(dump))


if __name__ == "__main__":
    main()
