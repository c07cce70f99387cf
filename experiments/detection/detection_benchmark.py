#!/usr/bin/env python3
"""The loading pipeline of a detection task, ours against the PyTorch DataLoader with
torchvision's transforms.v2, on the same images and boxes; and the bytes a variable-length box
field saves against padding every sample to the dataset's largest.

Data: the Fashion-MNIST mosaic (make_fashion_mosaic.py: garments pasted on photographs, their
boxes known), written with `ffcv write coco` (JPEG files kept as they came, so both loaders
decode the same bytes). Per sample both loaders decode the JPEG, take a random-resized crop
(scale 0.08-1, ratio 3/4-4/3) to SIZE x SIZE, flip it with probability 0.5, and move the boxes
with it: clipped to the crop, the ones left under 1 px or 1 px^2 dropped with their labels.
  ours      ffcv_cpp.Loader: RandomResizedCropRGBImageDecoder, RandomHorizontalFlip, boxes
            RaggedDecoder(follows="image", rows="boxes_xyxy"), labels RaggedDecoder(follows=
            "boxes"), ToTensor (the boxes a nested jagged tensor)
  baseline  torch.utils.data.DataLoader over the JPEG files: torchvision.io.decode_jpeg,
            v2.RandomResizedCrop(antialias) + v2.RandomHorizontalFlip + v2.SanitizeBoundingBoxes
            on tv_tensors.BoundingBoxes, images stacked and boxes in lists (torchvision's
            detection collate)
Each runs with N workers (threads for ours, processes for the DataLoader) for N in --workers;
the figure is the mean images/s of the epochs after the first (which warms caches and starts
workers).

Bytes: the .beton from `ffcv write coco` (boxes, labels, crowd as RaggedNDArray fields) against
the same samples written with the boxes, labels and crowd flags as NDArray fields padded to the
largest sample plus a count (the advice FFCV's maintainers give), both by our DatasetWriter.

Usage: .venv/bin/python experiments/detection/detection_benchmark.py --count 2000 --workers 1,2
Writes results/ragged.{json,md,png}; --render results/ragged.json writes the last two again.
"""
import argparse
import json
import os
import subprocess
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "experiments"))
sys.path.insert(0, str(Path(__file__).resolve().parent))
from benchmark_machine import machine  # noqa: E402
from make_fashion_mosaic import make  # noqa: E402

CLI = ROOT / "build" / "bin" / "ffcv"


def write_ragged(data_dir: Path, out: Path):
    subprocess.run([str(CLI), "write", "coco", str(data_dir / "images"), "--annotations",
                    str(data_dir / "instances.json"), "--output", str(out), "--write-mode",
                    "jpg", "--quiet", "--force"], check=True)


def write_padded(data_dir: Path, out: Path):
    """The same samples with the annotations padded to the largest sample, plus a count."""
    from ffcv_cpp.fields import IntField, NDArrayField, RGBImageField
    from ffcv_cpp.writer import DatasetWriter

    coco = json.loads((data_dir / "instances.json").read_text())
    per_image = {image["id"]: [] for image in coco["images"]}
    for a in coco["annotations"]:
        per_image[a["image_id"]].append(a)
    largest = max(1, max(len(v) for v in per_image.values()))

    class Padded:
        def __len__(self):
            return len(coco["images"])

        def __getitem__(self, i):
            image = coco["images"][i]
            mine = per_image[image["id"]]
            boxes = np.zeros((largest, 4), np.float32)
            labels = np.zeros(largest, np.int64)
            crowd = np.zeros(largest, np.uint8)
            for k, a in enumerate(mine):
                x, y, w, h = a["bbox"]
                boxes[k] = [x, y, x + w, y + h]
                labels[k] = a["category_id"]
                crowd[k] = a["iscrowd"]
            jpeg = (data_dir / "images" / image["file_name"]).read_bytes()
            return jpeg, boxes, labels, crowd, len(mine), image["id"]

    DatasetWriter(str(out), {"image": RGBImageField(write_mode="jpg"),
                             "boxes": NDArrayField(np.float32, (largest, 4)),
                             "labels": NDArrayField(np.int64, (largest,)),
                             "crowd": NDArrayField(np.uint8, (largest,)),
                             "count": IntField(), "image_id": IntField()},
                  num_workers=2, progress=False).from_indexed_dataset(Padded())
    return largest


def ours(beton: Path, size: int, batch: int, workers: int, epochs: int):
    from ffcv_cpp.fields.decoders import RaggedDecoder, RandomResizedCropRGBImageDecoder
    from ffcv_cpp.loader import Loader, OrderOption
    from ffcv_cpp.transforms import RandomHorizontalFlip, ToTensor

    loader = Loader(str(beton), batch_size=batch, num_workers=workers, order=OrderOption.RANDOM,
                    seed=0, drop_last=False, pipelines={
                        "image": [RandomResizedCropRGBImageDecoder((size, size)),
                                  RandomHorizontalFlip(), ToTensor()],
                        "boxes": [RaggedDecoder(follows="image", rows="boxes_xyxy"), ToTensor()],
                        "labels": [RaggedDecoder(follows="boxes"), ToTensor()],
                        "crowd": None, "image_id": None})
    rates, boxes_kept = [], 0
    for _ in range(epochs):
        start, images, boxes_kept = time.perf_counter(), 0, 0
        for image, boxes, labels in loader:
            images += len(image)
            boxes_kept += len(boxes.values())
        rates.append(images / (time.perf_counter() - start))
    return rates, boxes_kept


class TorchvisionDetection:
    """Index -> (image, {"boxes", "labels"}) through decode_jpeg and transforms.v2."""

    def __init__(self, data_dir: Path, size: int):
        from torchvision.transforms import v2

        self.dir = data_dir
        coco = json.loads((data_dir / "instances.json").read_text())
        self.images = coco["images"]
        self.boxes = {image["id"]: [] for image in self.images}
        for a in coco["annotations"]:
            x, y, w, h = a["bbox"]
            self.boxes[a["image_id"]].append(([x, y, x + w, y + h], a["category_id"]))
        self.transform = v2.Compose([v2.RandomResizedCrop(size, antialias=True),
                                     v2.RandomHorizontalFlip(), v2.SanitizeBoundingBoxes()])

    def __len__(self):
        return len(self.images)

    def __getitem__(self, i):
        import torch
        from torchvision import io, tv_tensors

        entry = self.images[i]
        data = io.read_file(str(self.dir / "images" / entry["file_name"]))
        image = tv_tensors.Image(io.decode_jpeg(data))
        rows = self.boxes[entry["id"]]
        boxes = tv_tensors.BoundingBoxes(
            torch.tensor([b for b, _ in rows], dtype=torch.float32).reshape(-1, 4),
            format="XYXY", canvas_size=(entry["height"], entry["width"]))
        labels = torch.tensor([c for _, c in rows], dtype=torch.int64)
        return self.transform(image, {"boxes": boxes, "labels": labels})


def collate(batch):
    import torch

    return torch.stack([image for image, _ in batch]), [target for _, target in batch]


def baseline(data_dir: Path, size: int, batch: int, workers: int, epochs: int):
    import torch

    loader = torch.utils.data.DataLoader(TorchvisionDetection(data_dir, size), batch_size=batch,
                                         shuffle=True, num_workers=workers, collate_fn=collate,
                                         persistent_workers=True)
    rates, boxes_kept = [], 0
    for _ in range(epochs):
        start, images, boxes_kept = time.perf_counter(), 0, 0
        for image, targets in loader:
            images += len(image)
            boxes_kept += sum(len(t["boxes"]) for t in targets)
        rates.append(images / (time.perf_counter() - start))
    return rates, boxes_kept


def plot(result, path: Path):
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    runs = result["pipeline"]
    fig, (left, right) = plt.subplots(1, 2, figsize=(10, 4))
    x = np.arange(len(runs))
    left.bar(x - 0.2, [r["ours"] for r in runs], 0.4, label="ours (ffcv_cpp)")
    left.bar(x + 0.2, [r["dataloader"] for r in runs], 0.4, label="DataLoader + transforms.v2")
    left.set_xticks(x, [f"{r['workers']} worker(s)" for r in runs])
    left.set_ylabel("images/s")
    left.set_title(f"detection pipeline at {result['size']} px")
    left.legend(loc="upper left")
    sizes = result["bytes"]
    right.bar([0, 1], [sizes["ragged_annotation_bytes"] / 1e6,
                       sizes["padded_annotation_bytes"] / 1e6])
    right.set_xticks([0, 1], ["ragged", f"padded to {sizes['largest']}"])
    right.set_ylabel("MB of boxes, labels, crowd flags")
    right.set_title("annotation bytes on disk")
    fig.tight_layout()
    fig.savefig(path, dpi=110)


def markdown(result, command):
    lines = ["# Variable-length fields: a detection pipeline and its bytes", "",
             f"Command: `{command}`  ",
             f"Machine: {result['machine']['cpu']}, {result['machine']['cores']} cores, "
             f"{result['machine']['platform']}  ",
             f"Data: {result['images']} images of the Fashion-MNIST mosaic "
             f"({result['boxes']} boxes, {result['boxes_per_image']:.1f} per image, at most "
             f"{result['bytes']['largest']}), JPEG files kept as they came; output "
             f"{result['size']} x {result['size']}, batches of {result['batch']}", "",
             f"Images/s, the mean of epochs 2-{result['epochs']}: decode, random-resized crop, "
             "flip, boxes moved, clipped and sifted with their labels. Ours decodes only each "
             "crop's window, at the smallest DCT scale that still covers the output, as for "
             "classification; the DataLoader decodes whole images, as transforms.v2 needs. With "
             "N workers ours runs N threads, the DataLoader N processes beside its main one.",
             "",
             "| workers | ours | DataLoader + transforms.v2 | ours / DataLoader | boxes kept "
             "(ours, DataLoader) |", "|---|---|---|---|---|"]
    for r in result["pipeline"]:
        lines.append(f"| {r['workers']} | {r['ours']:.0f} | {r['dataloader']:.0f} | "
                     f"**{r['ours'] / r['dataloader']:.2f}x** | {r['ours_boxes']}, "
                     f"{r['dataloader_boxes']} |")
    b = result["bytes"]
    lines += ["", "Bytes on disk, the same samples:", "",
              "| | file | boxes + labels + crowd flags |", "|---|---|---|",
              f"| RaggedNDArray fields | {b['ragged_file'] / 1e6:.2f} MB | "
              f"{b['ragged_annotation_bytes'] / 1e6:.3f} MB |",
              f"| NDArray padded to {b['largest']} rows, plus a count | "
              f"{b['padded_file'] / 1e6:.2f} MB | {b['padded_annotation_bytes'] / 1e6:.3f} MB |",
              "", f"Padding stores {b['padded_annotation_bytes'] / b['ragged_annotation_bytes']:.1f}x "
              "the annotation bytes. The boxes kept differ between the loaders because each "
              "draws its own random crops."]
    return "\n".join(lines) + "\n"


def annotation_bytes(beton: Path, names):
    """The heap bytes of fields `names` in `beton`, counted by Python FFCV's reader from the
    file's own tables (an independent count)."""
    from ffcv.reader import Reader

    from ffcv_cpp import _native
    from ffcv_cpp.python_ffcv import RaggedNDArrayField

    types = dict(_native.NativeFile(str(beton), {}).fields())
    reader = Reader(str(beton), {n: RaggedNDArrayField for n in names
                                 if types[n] == "RaggedNDArray"})
    sizes = dict(zip(reader.alloc_table["ptr"].tolist(), reader.alloc_table["size"].tolist()))
    total = 0
    for name in names:
        column = reader.metadata[f"f{list(reader.handlers).index(name)}"]
        pointers = column["ptr"] if column.dtype.names else column
        total += sum(sizes.get(int(p), 0) for p in pointers)  # a sample of no rows has none
    return total


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--data", type=Path, default=ROOT / "data" / "fashion-mosaic")
    parser.add_argument("--count", type=int, default=2000)
    parser.add_argument("--workers", default="1,2")
    parser.add_argument("--size", type=int, default=256)
    parser.add_argument("--batch", type=int, default=64)
    parser.add_argument("--epochs", type=int, default=4)
    parser.add_argument("--output", type=Path, default=ROOT / "results" / "ragged")
    parser.add_argument("--render", type=Path,
                        help="only write OUTPUT.md and OUTPUT.png again from this JSON")
    args = parser.parse_args()
    if args.render:
        result = json.loads(args.render.read_text())
        args.output.with_suffix(".md").write_text(markdown(result, result["command"]))
        plot(result, args.output.with_suffix(".png"))
        return
    command = "python experiments/detection/detection_benchmark.py " + " ".join(sys.argv[1:])

    if not (args.data / "instances.json").exists() or \
            len(json.loads((args.data / "instances.json").read_text())["images"]) != args.count:
        print(f"making {args.count} mosaic images in {args.data}", flush=True)
        make(args.data, args.count, 0)
    coco = json.loads((args.data / "instances.json").read_text())
    ragged, padded = args.data / "mosaic.beton", args.data / "mosaic-padded.beton"
    write_ragged(args.data, ragged)
    largest = write_padded(args.data, padded)
    result = {"machine": machine(), "images": len(coco["images"]),
              "boxes": len(coco["annotations"]),
              "boxes_per_image": len(coco["annotations"]) / len(coco["images"]),
              "size": args.size, "batch": args.batch, "epochs": args.epochs, "pipeline": [],
              "bytes": {"largest": largest, "ragged_file": ragged.stat().st_size,
                        "padded_file": padded.stat().st_size,
                        "ragged_annotation_bytes": annotation_bytes(
                            ragged, ["boxes", "labels", "crowd"]),
                        "padded_annotation_bytes": annotation_bytes(
                            padded, ["boxes", "labels", "crowd"])}}
    for workers in (int(w) for w in args.workers.split(",")):
        mine, mine_boxes = ours(ragged, args.size, args.batch, workers, args.epochs)
        theirs, their_boxes = baseline(args.data, args.size, args.batch, workers, args.epochs)
        mine_rate, their_rate = np.mean(mine[1:] or mine), np.mean(theirs[1:] or theirs)
        result["pipeline"].append({"workers": workers, "ours": mine_rate,
                                   "dataloader": their_rate,
                                   "ours_epochs": mine, "dataloader_epochs": theirs,
                                   "ours_boxes": mine_boxes, "dataloader_boxes": their_boxes})
        print(f"{workers} worker(s): ours {mine_rate:.0f} images/s, DataLoader {their_rate:.0f} "
              f"({mine_rate / their_rate:.2f}x)", flush=True)
    result["command"] = command
    args.output.parent.mkdir(parents=True, exist_ok=True)
    args.output.with_suffix(".json").write_text(json.dumps(result, indent=1) + "\n")
    args.output.with_suffix(".md").write_text(markdown(result, command))
    plot(result, args.output.with_suffix(".png"))
    print(markdown(result, command))


if __name__ == "__main__":
    main()
