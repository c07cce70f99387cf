#!/usr/bin/env python3
"""The training pipeline per core: ours, Python FFCV, the PyTorch DataLoader, and the decode limit.

One run, one machine, one core each: the standard ImageNet training pipeline (random-resized-
crop to 160, 192 and 224, random horizontal flip, uint8 output) over the ImageNet-like set.
  ours        `ffcv bench FILE --workers 1` with random_resized_crop + flip (from RAM: mmap of a
              file in the OS cache), best of the measured epochs
  FFCV        Python FFCV's Loader on the same .beton with RandomResizedCropRGBImageDecoder +
              RandomHorizontalFlip, num_workers=1, after a warm-up epoch (numba compilation)
  DataLoader  torchvision ImageFolder on the source JPEGs with RandomResizedCrop +
              RandomHorizontalFlip + PILToTensor, num_workers=0 (the main process does the work)
  decode      libjpeg-turbo decoding every stored JPEG whole (build/bin/ffcv_decode_limit)
Also the validation pipeline (center crop 224 of ratio 224/256).

Usage (after tools/setup.sh and writing the set, see docs/benchmarks.md):
  .venv/bin/python experiments/pipeline_benchmark/pipeline_benchmark.py
Writes results/pipeline-benchmark.{json,md,png}.
"""
import argparse
import json
import os
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "experiments"))
from benchmark_machine import machine  # noqa: E402
CLI = ROOT / "build" / "bin" / "ffcv"
DECODE_LIMIT = ROOT / "build" / "bin" / "ffcv_decode_limit"




def ours(path, decoder, size, epochs, batch):
    command = [str(CLI), "bench", str(path), "--workers", "1", "--order", "random",
               "--batch-size", str(batch), "--epochs", str(epochs), "--fields", "image",
               "--image-decoder", decoder, "--image-size", str(size), "--json"]
    if decoder == "random_resized_crop":
        command.append("--flip")
    report = json.loads(subprocess.run(command, check=True, capture_output=True, text=True).stdout)
    return max(e["samples_per_s"] for e in report["epochs"][1:] or report["epochs"])


FFCV_SNIPPET = r"""
import sys, time, json
import numpy as np
from ffcv.loader import Loader, OrderOption
from ffcv.fields.decoders import RandomResizedCropRGBImageDecoder, CenterCropRGBImageDecoder
from ffcv.transforms import RandomHorizontalFlip, ToTensor
path, decoder, size, epochs, batch = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4]), int(sys.argv[5])
if decoder == "random_resized_crop":
    image = [RandomResizedCropRGBImageDecoder((size, size)), RandomHorizontalFlip(), ToTensor()]
else:
    image = [CenterCropRGBImageDecoder((size, size), ratio=224 / 256), ToTensor()]
loader = Loader(path, batch_size=batch, num_workers=1, order=OrderOption.RANDOM, os_cache=True,
                pipelines={"image": image, "label": None}, seed=0)
for _ in loader:
    pass
rates = []
for _ in range(epochs):
    start = time.perf_counter(); n = 0
    for (images,) in loader:
        n += images.shape[0]
    rates.append(n / (time.perf_counter() - start))
print(json.dumps({"best": max(rates)}))
"""

DATALOADER_SNIPPET = r"""
import sys, time, json
import torch
torch.set_num_threads(1)
from torch.utils.data import DataLoader
from torchvision import datasets, transforms
root, decoder, size, epochs, batch, limit = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4]), int(sys.argv[5]), int(sys.argv[6])
if decoder == "random_resized_crop":
    t = transforms.Compose([transforms.RandomResizedCrop(size), transforms.RandomHorizontalFlip(), transforms.PILToTensor()])
else:
    t = transforms.Compose([transforms.Resize(int(size * 256 / 224)), transforms.CenterCrop(size), transforms.PILToTensor()])
dataset = datasets.ImageFolder(root, transform=t)
subset = torch.utils.data.Subset(dataset, list(range(min(limit, len(dataset)))))
loader = DataLoader(subset, batch_size=batch, shuffle=True, num_workers=0)
rates = []
for _ in range(epochs):
    start = time.perf_counter(); n = 0
    for images, labels in loader:
        n += images.shape[0]
    rates.append(n / (time.perf_counter() - start))
print(json.dumps({"best": max(rates)}))
"""


def python_rate(snippet, *args):
    done = subprocess.run([sys.executable, "-c", snippet, *map(str, args)], check=True,
                          capture_output=True, text=True, timeout=1800)
    return json.loads(done.stdout.strip().splitlines()[-1])["best"]


def plot(rows, decode, out):
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    labels = [f"{r['pipeline']} {r['size']}" for r in rows]
    x = range(len(rows))
    fig, ax = plt.subplots(figsize=(7, 4))
    width = 0.27
    ax.bar([i - width for i in x], [r["ours"] for r in rows], width, label="ours")
    ax.bar(list(x), [r["ffcv"] for r in rows], width, label="Python FFCV")
    ax.bar([i + width for i in x], [r["dataloader"] for r in rows], width,
           label="PyTorch DataLoader")
    ax.axhline(decode, color="k", linestyle="--", label="whole-image JPEG decode")
    ax.set_xticks(list(x))
    ax.set_xticklabels(labels)
    ax.set_ylabel("images/s on one core")
    ax.legend(fontsize=8)
    ax.set_title("Training and validation pipelines per core, ImageNet-like JPEGs")
    fig.tight_layout()
    fig.savefig(out, dpi=120)


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--images-dir", default=str(ROOT / "data" / "imagenet-like-jpegs"))
    parser.add_argument("--beton", default=str(ROOT / "data" / "imagenet-like-jpg512.beton"))
    parser.add_argument("--epochs", type=int, default=3)
    parser.add_argument("--batch-size", type=int, default=128)
    parser.add_argument("--results", default=str(ROOT / "results"))
    args = parser.parse_args()
    beton = Path(args.beton)
    if not beton.exists():
        subprocess.run([str(CLI), "write", "folder", args.images_dir, "--write-mode", "jpg",
                        "--max-resolution", "512", "--jpeg-quality", "90", "--output",
                        str(beton), "--quiet"], check=True)
    subprocess.run(["cat", str(beton)], stdout=subprocess.DEVNULL, check=True)
    decode = json.loads(subprocess.run([str(DECODE_LIMIT), str(beton), "3"], check=True,
                                       capture_output=True, text=True).stdout)["images_per_s"]
    count = int(subprocess.run([str(CLI), "inspect", str(beton), "--json"], check=True,
                               capture_output=True, text=True).stdout.split('"num_samples": ')[1]
                .split(",")[0])
    rows = []
    for pipeline, size in [("random_resized_crop", 160), ("random_resized_crop", 192),
                           ("random_resized_crop", 224), ("center_crop", 224)]:
        row = {"pipeline": pipeline, "size": size,
               "ours": ours(beton, pipeline, size, args.epochs, args.batch_size),
               "ffcv": python_rate(FFCV_SNIPPET, beton, pipeline, size, args.epochs,
                                   args.batch_size),
               "dataloader": python_rate(DATALOADER_SNIPPET, args.images_dir, pipeline, size, 1,
                                         args.batch_size, count)}
        row["ours_over_ffcv"] = row["ours"] / row["ffcv"]
        row["ours_over_decode"] = row["ours"] / decode
        rows.append(row)
        print(f"{pipeline:>20} {size}: ours {row['ours']:7.0f}  FFCV {row['ffcv']:7.0f}  "
              f"DataLoader {row['dataloader']:7.0f}  decode {decode:7.0f} images/s/core  "
              f"ours/FFCV {row['ours_over_ffcv']:.2f}", flush=True)
    results = Path(args.results)
    results.mkdir(parents=True, exist_ok=True)
    report = {"command": " ".join(["python"] + sys.argv), "machine": machine(),
              "beton": str(beton.name), "images": count, "decode_limit_images_per_s": decode,
              "rows": rows}
    (results / "pipeline-benchmark.json").write_text(json.dumps(report, indent=2) + "\n")
    plot(rows, decode, results / "pipeline-benchmark.png")
    lines = ["# Training pipeline per core: ours, Python FFCV, PyTorch DataLoader, JPEG decode", "",
             f"Command: `{report['command']}`  ",
             f"Machine: {report['machine']['cpu']}, {report['machine']['cores']} cores; "
             "every pipeline on one core  ",
             f"Data: {count} ImageNet-like JPEGs, written with `ffcv write folder --write-mode jpg "
             "--max-resolution 512 --jpeg-quality 90` (from RAM); DataLoader reads the source "
             "JPEGs", "",
             "| pipeline | size | ours | Python FFCV | DataLoader | whole decode | ours / FFCV "
             "| ours / decode |", "|---|---|---|---|---|---|---|---|"]
    for r in rows:
        lines.append(f"| {r['pipeline']} | {r['size']} | {r['ours']:.0f} | {r['ffcv']:.0f} "
                     f"| {r['dataloader']:.0f} | {decode:.0f} | {r['ours_over_ffcv']:.2f}x "
                     f"| {r['ours_over_decode']:.2f} |")
    lines += ["", "images/s per core; ![per core](pipeline-benchmark.png)"]
    (results / "pipeline-benchmark.md").write_text("\n".join(lines) + "\n")
    print(f"wrote {results / 'pipeline-benchmark.md'}")


if __name__ == "__main__":
    main()
