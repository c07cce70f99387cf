#!/usr/bin/env python3
"""Writer throughput: our `ffcv write` against Python FFCV's DatasetWriter, same input, same run.

Both writers convert the same image-folder tree of ImageNet-like JPEGs with the same settings
(write mode, max resolution, JPEG quality, compress probability, page size, workers). Each
reads and decodes the source JPEGs itself (ours with OpenCV, FFCV through PIL in its dataset, as
FFCV users do), resizes, encodes and writes. Reported: images/s for each and the ratio.

Usage (from the repository root, after tools/setup.sh):
  .venv/bin/python experiments/writer_benchmark/writer_benchmark.py --count 2000 --workers 2
Writes results/writer-benchmark.json and results/writer-benchmark.md.
"""
import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "experiments"))
from benchmark_machine import machine  # noqa: E402
CLI = ROOT / "build" / "bin" / "ffcv"

CONFIGS = [
    # FFCV's ImageNet conversion (write_imagenet.sh 500 0.50 90)
    {"name": "proportion-500-q90", "write_mode": "proportion", "max_resolution": 500,
     "compress_probability": 0.5, "jpeg_quality": 90},
    {"name": "jpg-256-q90", "write_mode": "jpg", "max_resolution": 256,
     "compress_probability": 0.5, "jpeg_quality": 90},
    {"name": "raw-256", "write_mode": "raw", "max_resolution": 256,
     "compress_probability": 0.5, "jpeg_quality": 90},
]




def image_files(root):
    classes = sorted(p.name for p in Path(root).iterdir() if p.is_dir())
    files = []
    for label, name in enumerate(classes):
        for f in sorted((Path(root) / name).iterdir()):
            if f.suffix.lower() in (".jpg", ".jpeg", ".png"):
                files.append((str(f), label))
    return files


class FolderDataset:
    """Index -> (PIL RGB image, label), as a torchvision ImageFolder would give FFCV."""

    def __init__(self, files):
        self.files = files

    def __len__(self):
        return len(self.files)

    def __getitem__(self, index):
        from PIL import Image
        path, label = self.files[index]
        with Image.open(path) as image:
            return image.convert("RGB"), label


def run_ffcv(files, out, config, workers, page_size):
    from ffcv.fields import IntField, RGBImageField
    from ffcv.writer import DatasetWriter
    fields = {
        "image": RGBImageField(write_mode=config["write_mode"],
                               max_resolution=config["max_resolution"],
                               jpeg_quality=config["jpeg_quality"],
                               compress_probability=config["compress_probability"]),
        "label": IntField(),
    }
    writer = DatasetWriter(out, fields, page_size=page_size, num_workers=workers)
    start = time.perf_counter()
    writer.from_indexed_dataset(FolderDataset(files), chunksize=100)
    return time.perf_counter() - start


def run_ours(folder, out, config, workers, page_size):
    command = [str(CLI), "write", "folder", str(folder), "--output", out, "--quiet",
               "--write-mode", config["write_mode"],
               "--max-resolution", str(config["max_resolution"]),
               "--jpeg-quality", str(config["jpeg_quality"]),
               "--compress-probability", str(config["compress_probability"]),
               "--page-size", str(page_size), "--workers", str(workers)]
    start = time.perf_counter()
    subprocess.run(command, check=True)
    return time.perf_counter() - start


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--count", type=int, default=2000, help="ImageNet-like images")
    parser.add_argument("--workers", type=int, default=os.cpu_count())
    parser.add_argument("--page-size", type=int, default=8 << 20)
    parser.add_argument("--repeats", type=int, default=2, help="best of N runs per writer")
    parser.add_argument("--images-dir", default=str(ROOT / "data" / "imagenet-like-jpegs"))
    parser.add_argument("--results", default=str(ROOT / "results"))
    args = parser.parse_args()

    folder = Path(args.images_dir)
    if not folder.is_dir() or len(image_files(folder)) != args.count:
        shutil.rmtree(folder, ignore_errors=True)
        with tempfile.TemporaryDirectory() as tmp:
            subprocess.run([str(CLI), "write", "imagenet-like", "--count", str(args.count),
                            "--images-dir", str(folder), "--output", f"{tmp}/x.beton",
                            "--quiet"], check=True)
    files = image_files(folder)
    source_bytes = sum(os.path.getsize(f) for f, _ in files)

    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        for config in CONFIGS:
            ours = min(run_ours(folder, f"{tmp}/ours.beton", config, args.workers, args.page_size)
                       for _ in range(args.repeats))
            theirs = min(run_ffcv(files, f"{tmp}/ffcv.beton", config, args.workers, args.page_size)
                         for _ in range(args.repeats))
            row = {"config": config["name"], **config, "images": len(files),
                   "ours_images_per_s": len(files) / ours,
                   "ffcv_images_per_s": len(files) / theirs,
                   "ratio": theirs / ours,
                   "ours_file_bytes": os.path.getsize(f"{tmp}/ours.beton"),
                   "ffcv_file_bytes": os.path.getsize(f"{tmp}/ffcv.beton")}
            rows.append(row)
            print(f"{config['name']:>20}: ours {row['ours_images_per_s']:8.1f} img/s, "
                  f"FFCV {row['ffcv_images_per_s']:8.1f} img/s, ratio {row['ratio']:.2f}x",
                  flush=True)

    import ffcv
    report = {"command": " ".join([Path(sys.executable).name] + sys.argv),
              "machine": machine(), "workers": args.workers, "page_size": args.page_size,
              "source_images": len(files), "source_bytes": source_bytes,
              "ffcv_version": getattr(ffcv, "__version__", "?"), "rows": rows}
    results = Path(args.results)
    results.mkdir(parents=True, exist_ok=True)
    (results / "writer-benchmark.json").write_text(json.dumps(report, indent=2) + "\n")
    lines = ["# Writer benchmark: `ffcv write` vs Python FFCV's DatasetWriter", "",
             f"Command: `{report['command']}`  ",
             f"Machine: {report['machine']['cpu']}, {report['machine']['cores']} cores, "
             f"{report['machine']['platform']}  ",
             f"Input: {len(files)} ImageNet-like JPEGs ({source_bytes / 1e6:.1f} MB), "
             f"{args.workers} workers, page size {args.page_size}, best of {args.repeats}", "",
             "| settings | ours (images/s) | Python FFCV (images/s) | ours / FFCV | ours (MB) | FFCV (MB) |",
             "|---|---|---|---|---|---|"]
    for r in rows:
        lines.append(f"| {r['config']} | {r['ours_images_per_s']:.1f} | {r['ffcv_images_per_s']:.1f} "
                     f"| {r['ratio']:.2f}x | {r['ours_file_bytes'] / 1e6:.1f} "
                     f"| {r['ffcv_file_bytes'] / 1e6:.1f} |")
    (results / "writer-benchmark.md").write_text("\n".join(lines) + "\n")
    print(f"wrote {results / 'writer-benchmark.md'}")


if __name__ == "__main__":
    main()
