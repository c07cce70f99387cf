#!/usr/bin/env python3
"""Training and validation pipelines per core on raw, JPEG and mixed (proportion) files: ours
against Python FFCV on the same .beton and pipeline, one core each.

The three files are written from the same ImageNet-like JPEG tree with the same longest side:
  raw         every image stored as uint8 pixels        (--write-mode raw)
  proportion  half of them JPEG, FFCV's ImageNet choice (--write-mode proportion, p = 0.5)
  jpg         every image JPEG, quality 90              (--write-mode jpg)
Pipelines: random-resized-crop 192 + flip (training), center crop 224 and 256 with ratio
224/256 (validation; FFCV's ImageNet recipe evaluates at 256).

Usage (after tools/setup.sh; makes the JPEG tree with `ffcv write imagenet-like` if missing):
  .venv/bin/python experiments/pipeline_benchmark/storage_modes_benchmark.py
Writes results/storage-modes-benchmark.{json,md,png}.
"""
import argparse
import json
import subprocess
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from pipeline_benchmark import CLI, FFCV_SNIPPET, ROOT, machine, ours, python_rate  # noqa: E402

MODES = [("raw", ["--write-mode", "raw"]),
         ("proportion", ["--write-mode", "proportion", "--compress-probability", "0.5"]),
         ("jpg", ["--write-mode", "jpg"])]
PIPELINES = [("random_resized_crop", 192), ("center_crop", 224), ("center_crop", 256)]
SHORT = {"random_resized_crop": "rrc", "center_crop": "center"}


def ensure_images(images_dir, count):
    if Path(images_dir).exists():
        return
    subprocess.run([str(CLI), "write", "imagenet-like", "--count", str(count), "--images-dir",
                    str(images_dir), "--output", str(Path(images_dir).with_suffix(".beton")),
                    "--quiet"], check=True)


def plot(rows, out):
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    labels = [f"{r['mode']}\n{SHORT[r['pipeline']]} {r['size']}"
              for r in rows]
    x = range(len(rows))
    fig, ax = plt.subplots(figsize=(9, 4))
    ax.bar([i - 0.2 for i in x], [r["ours"] for r in rows], 0.4, label="ours")
    ax.bar([i + 0.2 for i in x], [r["ffcv"] for r in rows], 0.4, label="Python FFCV")
    ax.set_xticks(list(x))
    ax.set_xticklabels(labels, fontsize=7)
    ax.set_ylabel("images/s on one core")
    ax.legend()
    ax.set_title("Pipelines per core by storage mode, ImageNet-like images (rrc: training "
                 "random-resized-crop + flip; center: validation)", fontsize=9)
    fig.tight_layout()
    fig.savefig(out, dpi=120)


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--images-dir", default=str(ROOT / "data" / "imagenet-like-jpegs"))
    parser.add_argument("--count", type=int, default=2000)
    parser.add_argument("--max-resolution", type=int, default=384)
    parser.add_argument("--epochs", type=int, default=3)
    parser.add_argument("--batch-size", type=int, default=128)
    parser.add_argument("--results", default=str(ROOT / "results"))
    args = parser.parse_args()
    ensure_images(args.images_dir, args.count)
    rows = []
    for mode, flags in MODES:
        beton = ROOT / "data" / f"imagenet-like-{mode}{args.max_resolution}.beton"
        if not beton.exists():
            subprocess.run([str(CLI), "write", "folder", args.images_dir, *flags,
                            "--max-resolution", str(args.max_resolution), "--jpeg-quality", "90",
                            "--output", str(beton), "--quiet"], check=True)
        subprocess.run(["cat", str(beton)], stdout=subprocess.DEVNULL, check=True)  # into RAM
        for pipeline, size in PIPELINES:
            row = {"mode": mode, "pipeline": pipeline, "size": size,
                   "ours": ours(beton, pipeline, size, args.epochs, args.batch_size),
                   "ffcv": python_rate(FFCV_SNIPPET, beton, pipeline, size, args.epochs,
                                       args.batch_size)}
            row["ours_over_ffcv"] = row["ours"] / row["ffcv"]
            rows.append(row)
            print(f"{mode:>10} {pipeline:>20} {size}: ours {row['ours']:7.0f}  "
                  f"FFCV {row['ffcv']:7.0f} images/s/core  ours/FFCV {row['ours_over_ffcv']:.2f}",
                  flush=True)
    results = Path(args.results)
    results.mkdir(parents=True, exist_ok=True)
    report = {"command": " ".join(["python"] + sys.argv), "machine": machine(),
              "max_resolution": args.max_resolution, "rows": rows}
    (results / "storage-modes-benchmark.json").write_text(json.dumps(report, indent=2) + "\n")
    plot(rows, results / "storage-modes-benchmark.png")
    lines = ["# Pipelines per core by storage mode: ours against Python FFCV", "",
             f"Command: `{report['command']}`  ",
             f"Machine: {report['machine']['cpu']}, {report['machine']['cores']} cores; every "
             "pipeline on one core, files from RAM  ",
             f"Data: {args.count} ImageNet-like images written three ways with longest side "
             f"{args.max_resolution} px: raw, proportion (50% JPEG), jpg (quality 90)", "",
             "| storage | pipeline | size | ours | Python FFCV | ours / FFCV |",
             "|---|---|---|---|---|---|"]
    for r in rows:
        lines.append(f"| {r['mode']} | {r['pipeline']} | {r['size']} | {r['ours']:.0f} "
                     f"| {r['ffcv']:.0f} | {r['ours_over_ffcv']:.2f}x |")
    lines += ["", "images/s per core; ![per core](storage-modes-benchmark.png)"]
    (results / "storage-modes-benchmark.md").write_text("\n".join(lines) + "\n")
    print(f"wrote {results / 'storage-modes-benchmark.md'}")


if __name__ == "__main__":
    main()
