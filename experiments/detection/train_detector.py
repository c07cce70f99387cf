#!/usr/bin/env python3
"""Trains a small CenterNet-style detector on the Fashion-MNIST mosaic through the loader's
ragged fields, on the CPU, and reports mAP@0.5 on held-out images before and after.

The recipe (recipes/detection/fashion_mosaic.toml) names the data, the augmentation and the
training. The data: make_fashion_mosaic.py's images and COCO file, written with `ffcv write coco`
twice, the first images for training and the last `val_images` held out (`--subset` and a
second annotation file). Training batches: a random-resized crop and flip of each image, its
boxes following them (RaggedDecoder(follows="image", rows="boxes_xyxy")) and its labels
following its boxes, packed as nested jagged tensors. Held-out batches: each image resized
whole (center_crop of ratio 1 keeps the middle square), boxes following the same way.

The model: three stride-2 stages of 3x3 convolutions with batch norm (stride 8), one
upsampling to stride 4, then heads for 10 class heat maps (focal loss on Gaussian peaks at box
centres), box width/height and centre offset (L1 at the centres), as CenterNet trains them.
Detections: the local maxima of the heat maps (3x3), best 50 per image.

Usage: .venv/bin/python experiments/detection/train_detector.py recipes/detection/fashion_mosaic.toml
"""
import argparse
import json
import math
import subprocess
import sys
import time
import tomllib
from pathlib import Path

import numpy as np
import torch
import torch.nn.functional as F
from torch import nn

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(Path(__file__).resolve().parent))
from make_fashion_mosaic import make  # noqa: E402

CLASSES = 10
STRIDE = 4


def prepare(data: dict) -> tuple:
    """The two .beton files (training, held out), written when missing."""
    folder = ROOT / data["dir"]
    coco_file = folder / "instances.json"
    if not coco_file.exists() or len(json.loads(coco_file.read_text())["images"]) != data["images"]:
        make(folder, data["images"], 0)
    coco = json.loads(coco_file.read_text())
    train_count = data["images"] - data["val_images"]
    held_ids = {image["id"] for image in coco["images"][train_count:]}
    held = {**coco, "images": coco["images"][train_count:],
            "annotations": [a for a in coco["annotations"] if a["image_id"] in held_ids]}
    (folder / "held_out.json").write_text(json.dumps(held))
    train, val = folder / "detect-train.beton", folder / "detect-val.beton"
    for out, annotations, extra in ((train, coco_file, ["--subset", str(train_count)]),
                                    (val, folder / "held_out.json", [])):
        subprocess.run([str(ROOT / "build" / "bin" / "ffcv"), "write", "coco",
                        str(folder / "images"), "--annotations", str(annotations), "--output",
                        str(out), "--write-mode", "jpg", "--quiet", "--force", *extra],
                       check=True)
    return train, val


def loaders(train: Path, val: Path, recipe: dict):
    from ffcv_cpp.fields.decoders import (CenterCropRGBImageDecoder, RaggedDecoder,
                                          RandomResizedCropRGBImageDecoder)
    from ffcv_cpp.loader import Loader, OrderOption
    from ffcv_cpp.transforms import RandomHorizontalFlip, ToTensor, ToTorchImage

    size, data = recipe["augment"]["size"], recipe["data"]
    rows = {"boxes": [RaggedDecoder(follows="image", rows="boxes_xyxy"), ToTensor()],
            "labels": [RaggedDecoder(follows="boxes"), ToTensor()], "crowd": None,
            "image_id": None}
    train_loader = Loader(str(train), batch_size=data["batch_size"],
                          num_workers=data["num_workers"], order=OrderOption.RANDOM,
                          seed=recipe["training"]["seed"], drop_last=True, pipelines={
                              "image": [RandomResizedCropRGBImageDecoder(
                                  (size, size), scale=tuple(recipe["augment"]["scale"])),
                                  RandomHorizontalFlip(recipe["augment"]["flip"]), ToTensor(),
                                  ToTorchImage()], **rows})
    val_loader = Loader(str(val), batch_size=data["batch_size"], num_workers=data["num_workers"],
                        order=OrderOption.SEQUENTIAL, drop_last=False, pipelines={
                            "image": [CenterCropRGBImageDecoder((size, size), ratio=1.0),
                                      ToTensor(), ToTorchImage()], **rows})
    return train_loader, val_loader


def block(inputs, outputs, stride):
    return nn.Sequential(nn.Conv2d(inputs, outputs, 3, stride, 1, bias=False),
                         nn.BatchNorm2d(outputs), nn.ReLU(inplace=True),
                         nn.Conv2d(outputs, outputs, 3, 1, 1, bias=False),
                         nn.BatchNorm2d(outputs), nn.ReLU(inplace=True))


class CenterNet(nn.Module):
    def __init__(self, width: int):
        super().__init__()
        self.stages = nn.Sequential(block(3, width, 2), block(width, 2 * width, 2),
                                    block(2 * width, 4 * width, 2))
        self.up = block(4 * width, 2 * width, 1)
        self.heat = nn.Conv2d(2 * width, CLASSES, 1)
        self.size = nn.Conv2d(2 * width, 2, 1)
        self.offset = nn.Conv2d(2 * width, 2, 1)
        self.heat.bias.data.fill_(-2.19)  # a prior of 0.1, as CenterNet starts

    def forward(self, images):
        x = self.stages((images.float() - 128.0) / 64.0)
        x = self.up(F.interpolate(x, scale_factor=2, mode="nearest"))
        return self.heat(x), self.size(x), self.offset(x)


def targets(boxes, labels, grid):
    """Heat maps with a Gaussian peak per box centre, and each centre's size and offset."""
    batch = len(labels.offsets()) - 1
    heat = torch.zeros(batch, CLASSES, grid, grid)
    centres = []  # (sample, y, x, w, h, dx, dy)
    ys, xs = torch.meshgrid(torch.arange(grid), torch.arange(grid), indexing="ij")
    for sample, (b, c) in enumerate(zip(boxes.unbind(), labels.unbind())):
        for (x1, y1, x2, y2), category in zip(b.tolist(), c.tolist()):
            w, h = (x2 - x1) / STRIDE, (y2 - y1) / STRIDE
            cx, cy = (x1 + x2) / 2 / STRIDE, (y1 + y2) / 2 / STRIDE
            ix, iy = min(int(cx), grid - 1), min(int(cy), grid - 1)
            sigma = max(0.5, math.sqrt(w * h) / 6)
            peak = torch.exp(-((xs - ix) ** 2 + (ys - iy) ** 2) / (2 * sigma ** 2))
            heat[sample, category - 1] = torch.maximum(heat[sample, category - 1], peak)
            centres.append((sample, iy, ix, w, h, cx - ix, cy - iy))
    return heat, centres


def loss_of(outputs, heat, centres):
    predicted, size, offset = outputs
    p = predicted.sigmoid().clamp(1e-4, 1 - 1e-4)
    positive = heat.eq(1).float()
    focal = -(positive * (1 - p) ** 2 * p.log() +
              (1 - positive) * (1 - heat) ** 4 * p ** 2 * (1 - p).log()).sum()
    n = max(1, len(centres))
    if not centres:
        return focal / n
    index = torch.tensor([c[:3] for c in centres])
    want = torch.tensor([c[3:] for c in centres], dtype=torch.float32)
    got_size = size[index[:, 0], :, index[:, 1], index[:, 2]]
    got_offset = offset[index[:, 0], :, index[:, 1], index[:, 2]]
    return (focal + 0.1 * F.l1_loss(got_size, want[:, :2], reduction="sum") +
            F.l1_loss(got_offset, want[:, 2:], reduction="sum")) / n


def detections(outputs, top=50):
    """Per image: (boxes xyxy in pixels, scores, categories 1-10), from the heat maps' peaks."""
    heat, size, offset = outputs
    heat = heat.sigmoid()
    peaks = heat * (F.max_pool2d(heat, 3, 1, 1) == heat)
    batch, _, grid, _ = heat.shape
    scores, where = peaks.reshape(batch, -1).topk(top)
    category, cell = where // (grid * grid), where % (grid * grid)
    y, x = cell // grid, cell % grid
    out = []
    for i in range(batch):
        w, h = size[i, 0, y[i], x[i]], size[i, 1, y[i], x[i]]
        cx, cy = x[i] + offset[i, 0, y[i], x[i]], y[i] + offset[i, 1, y[i], x[i]]
        boxes = torch.stack([cx - w / 2, cy - h / 2, cx + w / 2, cy + h / 2], 1) * STRIDE
        out.append((boxes, scores[i], category[i] + 1))
    return out


def mean_ap(found, truth, threshold=0.5):
    """COCO-style AP at IoU 0.5 per class (all-points interpolation), averaged over classes."""
    from torchvision.ops import box_iou

    aps = []
    for category in range(1, CLASSES + 1):
        scored, positives = [], 0
        for (boxes, scores, cats), (true_boxes, true_cats) in zip(found, truth):
            mine, theirs = cats == category, true_boxes[true_cats == category]
            positives += len(theirs)
            taken = torch.zeros(len(theirs), dtype=torch.bool)
            order = scores[mine].argsort(descending=True)
            ious = box_iou(boxes[mine][order], theirs) if len(theirs) else None
            for k, score in enumerate(scores[mine][order].tolist()):
                hit = False
                if ious is not None:
                    iou, j = ious[k].max(0)
                    if iou >= threshold and not taken[j]:
                        taken[j] = hit = True
                scored.append((score, hit))
        if positives == 0:
            continue
        scored.sort(key=lambda s: -s[0])
        hits = np.cumsum([h for _, h in scored])
        precision = hits / np.arange(1, len(scored) + 1)
        recall = hits / positives
        precision = np.maximum.accumulate(precision[::-1])[::-1]
        aps.append(float(np.sum(np.diff(np.concatenate([[0], recall])) * precision)))
    return float(np.mean(aps)) if aps else 0.0


def evaluate(model, loader):
    model.eval()
    found, truth = [], []
    with torch.no_grad():
        for images, boxes, labels in loader:
            found += detections(model(images))
            truth += list(zip(boxes.unbind(), labels.unbind()))
    model.train()
    return mean_ap(found, truth)


# Every key of the recipe, by section, with its type: anything else is refused.
KEYS = {"data": {"dir": str, "images": int, "val_images": int, "num_workers": int,
                 "batch_size": int},
        "augment": {"size": int, "scale": list, "flip": float},
        "model": {"width": int},
        "training": {"epochs": int, "lr": float, "weight_decay": float, "seed": int}}


def load_recipe(path: Path) -> dict:
    """The recipe, checked: every section and key known, each of its type (an integer is a
    number too), the held-out images fewer than the images."""
    import difflib

    recipe = tomllib.loads(path.read_text())
    for section, keys in recipe.items():
        if section not in KEYS:
            raise SystemExit(f"{path}: unknown section [{section}] (sections: "
                             f"{', '.join(KEYS)})")
        for key, value in keys.items():
            wanted = KEYS[section].get(key)
            if wanted is None:
                near = difflib.get_close_matches(key, KEYS[section], 1)
                raise SystemExit(f"{path}: unknown key '{key}' in [{section}]" +
                                 (f" (did you mean '{near[0]}'?)" if near else ""))
            if not isinstance(value, wanted) and not (wanted is float and isinstance(value, int)):
                raise SystemExit(f"{path}: {section}.{key} must be {wanted.__name__}, got "
                                 f"{value!r}")
    missing = [f"{s}.{k}" for s, keys in KEYS.items() for k in keys if k not in recipe.get(s, {})]
    if missing:
        raise SystemExit(f"{path}: missing {', '.join(missing)}")
    if not 0 < recipe["data"]["val_images"] < recipe["data"]["images"]:
        raise SystemExit(f"{path}: data.val_images must lie between 0 and data.images")
    return recipe


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("recipe", type=Path)
    parser.add_argument("--epochs", type=int, help="override [training] epochs")
    parser.add_argument("--output", type=Path,
                        help="write the run's figures to OUTPUT.json and OUTPUT.md")
    args = parser.parse_args()
    recipe = load_recipe(args.recipe)
    if args.epochs is not None:
        recipe["training"]["epochs"] = args.epochs
    torch.manual_seed(recipe["training"]["seed"])
    train, val = prepare(recipe["data"])
    train_loader, val_loader = loaders(train, val, recipe)
    model = CenterNet(recipe["model"]["width"])
    grid = recipe["augment"]["size"] // STRIDE
    optimizer = torch.optim.AdamW(model.parameters(), lr=recipe["training"]["lr"],
                                  weight_decay=recipe["training"]["weight_decay"])
    epochs = recipe["training"]["epochs"]
    scheduler = torch.optim.lr_scheduler.OneCycleLR(optimizer, recipe["training"]["lr"],
                                                    total_steps=epochs * len(train_loader))
    before = evaluate(model, val_loader)
    print(f"held-out mAP@0.5 before training: {before:.3f}", flush=True)
    log = []
    for epoch in range(epochs):
        start, total, boxes_seen = time.perf_counter(), 0.0, 0
        for images, boxes, labels in train_loader:
            heat, centres = targets(boxes, labels, grid)
            loss = loss_of(model(images), heat, centres)
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
            scheduler.step()
            total += loss.item()
            boxes_seen += len(centres)
        seconds = time.perf_counter() - start
        log.append({"epoch": epoch, "loss": total / len(train_loader), "boxes": boxes_seen,
                    "seconds": seconds})
        print(f"epoch {epoch}: loss {log[-1]['loss']:.3f}, {boxes_seen} boxes, {seconds:.1f} s",
              flush=True)
    after = evaluate(model, val_loader)
    print(f"held-out mAP@0.5 after {epochs} epochs: {after:.3f}", flush=True)
    if args.output:
        write_report(args, recipe, log, before, after)


def write_report(args, recipe, log, before, after):
    sys.path.insert(0, str(ROOT / "experiments"))
    from benchmark_machine import machine

    command = "python experiments/detection/train_detector.py " + " ".join(sys.argv[1:])
    result = {"command": command, "machine": machine(), "recipe": recipe, "epochs": log,
              "map50_before": before, "map50_after": after}
    args.output.parent.mkdir(parents=True, exist_ok=True)
    args.output.with_suffix(".json").write_text(json.dumps(result, indent=1) + "\n")
    m = result["machine"]
    data = recipe["data"]
    lines = ["# A detector trained through ragged fields", "",
             f"Command: `{command}`  ", f"Machine: {m['cpu']}, {m['cores']} cores, "
             f"{m['platform']}, PyTorch on the CPU  ",
             f"Data: the Fashion-MNIST mosaic, {data['images'] - data['val_images']} training "
             f"images and {data['val_images']} held out, at {recipe['augment']['size']} px; "
             "boxes following the random-resized crop and flip of their images, labels "
             "following their boxes", "",
             f"Held-out mAP@0.5: **{before:.3f}** before training, **{after:.3f}** after "
             f"{len(log)} epochs.", "", "| epoch | loss | boxes seen | seconds |",
             "|---|---|---|---|"]
    lines += [f"| {e['epoch']} | {e['loss']:.3f} | {e['boxes']} | {e['seconds']:.1f} |"
              for e in log]
    args.output.with_suffix(".md").write_text("\n".join(lines) + "\n")


if __name__ == "__main__":
    main()
