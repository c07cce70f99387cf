#!/usr/bin/env python3
"""The training pipeline: ours, Python FFCV, NVIDIA DALI, the PyTorch DataLoader, and the
decode limit.

One run, one machine, N workers each (--workers, default 1: one core): the standard ImageNet
training pipeline (random-resized-crop to 160, 192 and 224, random horizontal flip, uint8 output)
over the ImageNet-like set. Every pipeline decodes the same JPEG bytes: those the .beton stores,
which the peers that read files (DALI, the DataLoader) get as a folder exported from the .beton
by Python FFCV's own reader.
  ours        `ffcv bench FILE --num-workers N` with random_resized_crop + flip (from RAM: mmap of a
              file in the OS cache), best of the measured epochs
  FFCV        Python FFCV's Loader on the same .beton with RandomResizedCropRGBImageDecoder +
              RandomHorizontalFlip, num_workers=N, after a warm-up epoch (numba compilation)
  DALI        an NVIDIA DALI CPU pipeline (device_id=None, num_threads=N): readers.file over the
              exported folder, decoders.image_random_crop (the same scale and ratio ranges),
              resize, flip with a coin flip per image; after a warm-up epoch
  DataLoader  torchvision ImageFolder on the exported folder with RandomResizedCrop +
              RandomHorizontalFlip + PILToTensor, num_workers=0 for one core (the main process
              does the work), else N; one epoch
  decode      libjpeg-turbo decoding every stored JPEG whole on one core
              (build/bin/ffcv_decode_limit), times N as the ceiling
Also the validation pipeline (center crop 224 of ratio 224/256).

Usage (after tools/setup.sh, and DALI: .venv/bin/pip install -r tools/requirements-peers.txt):
  .venv/bin/python experiments/pipeline_benchmark/pipeline_benchmark.py --repeats 3 --workers 1,2
Writes results/pipeline-benchmark.{json,md,png}.
"""
import argparse
import importlib.util
import json
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "experiments"))
from benchmark_machine import machine  # noqa: E402
from owned_folders import make_owned, remove_owned  # noqa: E402
CLI = ROOT / "build" / "bin" / "ffcv"
DECODE_LIMIT = ROOT / "build" / "bin" / "ffcv_decode_limit"


def ours(path, decoder, size, epochs, batch, workers):
    command = [str(CLI), "bench", str(path), "--num-workers", str(workers), "--order", "random",
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
path, decoder, size, epochs, batch, workers = sys.argv[1], sys.argv[2], *map(int, sys.argv[3:7])
if decoder == "random_resized_crop":
    image = [RandomResizedCropRGBImageDecoder((size, size)), RandomHorizontalFlip(), ToTensor()]
else:
    image = [CenterCropRGBImageDecoder((size, size), ratio=224 / 256), ToTensor()]
loader = Loader(path, batch_size=batch, num_workers=workers, order=OrderOption.RANDOM, os_cache=True,
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

DALI_SNIPPET = r"""
import sys, time, json
from nvidia.dali import pipeline_def, fn, types
root, decoder, size, epochs, batch, workers = sys.argv[1], sys.argv[2], *map(int, sys.argv[3:7])

@pipeline_def(batch_size=batch, num_threads=workers, device_id=None, seed=0)
def pipeline():
    jpegs, labels = fn.readers.file(file_root=root, random_shuffle=True, name="files")
    if decoder == "random_resized_crop":
        images = fn.decoders.image_random_crop(jpegs, device="cpu", output_type=types.RGB,
                                               random_area=[0.08, 1.0],
                                               random_aspect_ratio=[3 / 4, 4 / 3], num_attempts=10)
        images = fn.resize(images, resize_x=size, resize_y=size)
        images = fn.flip(images, horizontal=fn.random.coin_flip())
    else:
        images = fn.decoders.image(jpegs, device="cpu", output_type=types.RGB)
        images = fn.resize(images, resize_shorter=round(size * 256 / 224))
        images = fn.crop(images, crop=(size, size))
    return images, labels

pipe = pipeline()
pipe.build()
steps = pipe.epoch_size("files") // batch
def epoch():
    start, cpu = time.perf_counter(), time.process_time()
    for _ in range(steps):
        images, _ = pipe.run()
    assert images.as_tensor().shape() == [batch, size, size, 3], images.as_tensor().shape()
    wall = time.perf_counter() - start
    return steps * batch / wall, (time.process_time() - cpu) / wall
epoch()
runs = [epoch() for _ in range(epochs)]
print(json.dumps({"best": max(r[0] for r in runs), "cpu_per_wall": max(r[1] for r in runs)}))
"""

DATALOADER_SNIPPET = r"""
import sys, time, json
import torch
torch.set_num_threads(1)
from torch.utils.data import DataLoader
from torchvision import datasets, transforms
root, decoder, size, epochs, batch, workers, limit = sys.argv[1], sys.argv[2], *map(int, sys.argv[3:8])
if decoder == "random_resized_crop":
    t = transforms.Compose([transforms.RandomResizedCrop(size), transforms.RandomHorizontalFlip(), transforms.PILToTensor()])
else:
    t = transforms.Compose([transforms.Resize(int(size * 256 / 224)), transforms.CenterCrop(size), transforms.PILToTensor()])
dataset = datasets.ImageFolder(root, transform=t)
subset = torch.utils.data.Subset(dataset, list(range(min(limit, len(dataset)))))
# One core: the main process does the work; more: as many worker processes.
loader = DataLoader(subset, batch_size=batch, shuffle=True, num_workers=0 if workers == 1 else workers)
rates = []
for _ in range(epochs):
    start = time.perf_counter(); n = 0
    for images, labels in loader:
        n += images.shape[0]
    rates.append(n / (time.perf_counter() - start))
print(json.dumps({"best": max(rates)}))
"""


def python_report(snippet, *args):
    done = subprocess.run([sys.executable, "-c", snippet, *map(str, args)],
                          capture_output=True, text=True, timeout=1800)
    if done.returncode != 0:
        sys.exit(f"pipeline_benchmark: a peer failed (exit {done.returncode}):\n{done.stderr}")
    return json.loads(done.stdout.strip().splitlines()[-1])


def python_rate(snippet, *args):
    return python_report(snippet, *args)["best"]


def export_stored_jpegs(beton, folder):
    """Writes every JPEG the .beton stores to FOLDER/cLLL/NNNNNN.jpg (LLL the label), read by
    Python FFCV's Reader, so that the peers reading files decode the very bytes ours does."""
    import numpy as np
    from ffcv.reader import Reader
    reader = Reader(str(beton))
    images, labels = reader.metadata["f0"], reader.metadata["f1"]
    if np.any(images["mode"] != 0):
        sys.exit(f"pipeline_benchmark: {beton} stores raw images; write it with --write-mode jpg")
    size_at = dict(zip(reader.alloc_table["ptr"].tolist(), reader.alloc_table["size"].tolist()))
    data = np.memmap(beton, dtype=np.uint8, mode="r")
    partial = folder.with_name(folder.name + ".partial")
    remove_owned(partial, "pipeline_benchmark")
    make_owned(partial, "pipeline_benchmark")
    for index, (pointer, label) in enumerate(zip(images["data_ptr"].tolist(), labels.tolist())):
        target = partial / f"c{label:03d}" / f"{index:06d}.jpg"
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_bytes(data[pointer:pointer + size_at[pointer]].tobytes())
    partial.rename(folder)


def measure_peers(pipeline, size, workers, beton, stored, count, args):
    """One round: images/s of each peer on one pipeline with WORKERS threads or processes (the
    DataLoader one epoch, it is slow), and one core's whole-image decode rate."""
    common = (pipeline, size, args.epochs, args.batch_size, workers)
    dali = python_report(DALI_SNIPPET, stored, *common)
    return {"ours": ours(beton, *common),
            "ffcv": python_rate(FFCV_SNIPPET, beton, *common),
            "dali": dali["best"], "dali_cpu_per_wall": dali["cpu_per_wall"],
            "dataloader": python_rate(DATALOADER_SNIPPET, stored, pipeline, size, 1,
                                      args.batch_size, workers, count),
            "decode": whole_decode_rate(beton)}


def whole_decode_rate(beton):
    done = subprocess.run([str(DECODE_LIMIT), str(beton), "3"], check=True, capture_output=True,
                          text=True)
    return json.loads(done.stdout)["images_per_s"]


def peer_versions():
    from importlib.metadata import version
    return {"ffcv": version("ffcv"), "dali": version("nvidia-dali-cuda130"),
            "torch": version("torch"), "torchvision": version("torchvision")}


PIPELINES = [("random_resized_crop", 160), ("random_resized_crop", 192),
             ("random_resized_crop", 224), ("center_crop", 224)]
PEERS = [("ours", "ours"), ("ffcv", "Python FFCV"), ("dali", "NVIDIA DALI (CPU)"),
         ("dataloader", "PyTorch DataLoader")]


def plot(rows, out):
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    worker_counts = sorted({r["workers"] for r in rows})
    fig, axes = plt.subplots(1, len(worker_counts), figsize=(8 * len(worker_counts), 4.5),
                             squeeze=False)
    width = 0.2
    for ax, workers in zip(axes[0], worker_counts):
        some = [r for r in rows if r["workers"] == workers]
        x = range(len(some))
        for k, (key, label) in enumerate(PEERS):
            ax.bar([i + (k - 1.5) * width for i in x], [r[key] for r in some], width,
                   label=label)
        ax.hlines([r["decode_ceiling"] for r in some], [i - 2 * width for i in x],
                  [i + 2 * width for i in x], color="k", linestyle="--",
                  label="whole-image JPEG decode" + (" x workers" if workers > 1 else ""))
        ax.set_xticks(list(x))
        ax.set_xticklabels([f"{r['pipeline'].replace('_', ' ')}\n{r['size']} px" for r in some])
        ax.set_ylabel("images/s on one core" if workers == 1 else f"images/s, {workers} workers")
        ax.set_ylim(0, 1.3 * max(max(r["ours"], r["decode_ceiling"]) for r in some))
        ax.legend(fontsize=8, ncol=3, loc="upper center")
        ax.set_title("Per core" if workers == 1 else f"{workers} workers or threads each")
    fig.suptitle("Training and validation pipelines, the same JPEGs for every peer")
    fig.tight_layout()
    fig.savefig(out, dpi=120)


def prepare_data(args):
    """The .beton (written when missing), its JPEGs exported to a folder, and its sample count."""
    beton = Path(args.beton)
    if not beton.exists():
        subprocess.run([str(CLI), "write", "folder", args.images_dir, "--write-mode", "jpg",
                        "--max-resolution", "512", "--jpeg-quality", "90", "--output",
                        str(beton), "--quiet"], check=True)
    stored = beton.with_name(beton.stem + "-stored-jpegs")
    if not stored.exists() or stored.stat().st_mtime < beton.stat().st_mtime:
        remove_owned(stored, "pipeline_benchmark")
        export_stored_jpegs(beton, stored)
    subprocess.run(["cat", str(beton)], stdout=subprocess.DEVNULL, check=True)
    inspect = subprocess.run([str(CLI), "inspect", str(beton), "--json"], check=True,
                             capture_output=True, text=True).stdout
    return beton, stored, json.loads(inspect)["num_samples"]


def measure(beton, stored, count, args):
    rows = []
    for workers in args.workers:
        for pipeline, size in PIPELINES:
            # Rounds alternate the peers, so that a slow spell of a shared machine falls on all
            # of them alike; each peer keeps its best round, as each round keeps its best epoch.
            rounds = [measure_peers(pipeline, size, workers, beton, stored, count, args)
                      for _ in range(args.repeats)]
            row = {"pipeline": pipeline, "size": size, "workers": workers,
                   **{key: max(r[key] for r in rounds) for key in rounds[0]}}
            row["decode_ceiling"] = row["decode"] * workers
            row["ours_over_ffcv"] = row["ours"] / row["ffcv"]
            row["ours_over_dali"] = row["ours"] / row["dali"]
            row["ours_over_decode"] = row["ours"] / row["decode_ceiling"]
            rows.append(row)
            print(f"{pipeline:>20} {size} x{workers}: ours {row['ours']:7.0f}  "
                  f"FFCV {row['ffcv']:7.0f}  DALI {row['dali']:7.0f}  "
                  f"DataLoader {row['dataloader']:7.0f}  decode {row['decode_ceiling']:7.0f} "
                  f"images/s  ours/FFCV {row['ours_over_ffcv']:.2f}  "
                  f"ours/DALI {row['ours_over_dali']:.2f}", flush=True)
    return rows


def write_report(rows, beton, count, results):
    results.mkdir(parents=True, exist_ok=True)
    report = {"command": " ".join(["python"] + sys.argv), "machine": machine(),
              "beton": str(beton.name), "images": count, "versions": peer_versions(),
              "rows": rows}
    (results / "pipeline-benchmark.json").write_text(json.dumps(report, indent=2) + "\n")
    plot(rows, results / "pipeline-benchmark.png")
    versions = report["versions"]
    lines = ["# Training pipeline: ours, Python FFCV, NVIDIA DALI, PyTorch DataLoader, JPEG decode",
             "", f"Command: `{report['command']}`  ",
             f"Machine: {report['machine']['cpu']}, {report['machine']['cores']} cores  ",
             f"Data: {count} ImageNet-like JPEGs, written with `ffcv write folder --write-mode jpg "
             "--max-resolution 512 --jpeg-quality 90` (from RAM); DALI and the DataLoader read "
             "the same JPEG bytes, exported from the .beton to a folder  ",
             f"Peers: Python FFCV {versions['ffcv']}, NVIDIA DALI {versions['dali']} (CPU "
             f"pipeline), torch {versions['torch']}, torchvision {versions['torchvision']}  ",
             "Workers: `--workers` of ours, `num_workers` of FFCV, `num_threads` of DALI, "
             "`num_workers` of the DataLoader (0, its main process, for one core); whole decode: "
             "one core's libjpeg-turbo rate times the workers", ""]
    for workers in sorted({r["workers"] for r in rows}):
        some = [r for r in rows if r["workers"] == workers]
        dali_cpu = max(r["dali_cpu_per_wall"] for r in some)
        lines += [f"## {'One core' if workers == 1 else f'{workers} workers'}", "",
                  f"images/s; DALI used at most {dali_cpu:.2f} CPU seconds per second", "",
                  "| pipeline | size | ours | Python FFCV | DALI (CPU) | DataLoader "
                  "| whole decode | ours / FFCV | ours / DALI | ours / decode |",
                  "|---|---|---|---|---|---|---|---|---|---|"]
        for r in some:
            lines.append(f"| {r['pipeline']} | {r['size']} | {r['ours']:.0f} | {r['ffcv']:.0f} "
                         f"| {r['dali']:.0f} | {r['dataloader']:.0f} | {r['decode_ceiling']:.0f} "
                         f"| {r['ours_over_ffcv']:.2f}x | {r['ours_over_dali']:.2f}x "
                         f"| {r['ours_over_decode']:.2f} |")
        lines.append("")
    lines.append("![images/s per pipeline and peer](pipeline-benchmark.png)")
    (results / "pipeline-benchmark.md").write_text("\n".join(lines) + "\n")
    print(f"wrote {results / 'pipeline-benchmark.md'}")


def worker_counts(text):
    """--workers: a comma-separated list of counts, e.g. 1,2."""
    return [int(count) for count in text.split(",")]


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--images-dir", default=str(ROOT / "data" / "imagenet-like-jpegs"))
    parser.add_argument("--beton", default=str(ROOT / "data" / "imagenet-like-jpg512.beton"))
    parser.add_argument("--epochs", type=int, default=3)
    parser.add_argument("--batch-size", type=int, default=128)
    parser.add_argument("--workers", type=worker_counts,
                        default=[1], help="worker counts to measure, e.g. 1,2 (default 1)")
    parser.add_argument("--repeats", type=int, default=1,
                        help="rounds over all peers; each peer keeps its best round")
    parser.add_argument("--results", default=str(ROOT / "results"))
    args = parser.parse_args()
    if min(args.workers) < 1 or args.repeats < 1 or args.epochs < 1:
        parser.error("--workers, --repeats and --epochs must be at least 1")
    find = importlib.util.find_spec
    if find("nvidia") is None or find("nvidia.dali") is None:
        sys.exit("pipeline_benchmark: NVIDIA DALI is not installed: "
                 ".venv/bin/pip install -r tools/requirements-peers.txt")
    beton, stored, count = prepare_data(args)
    rows = measure(beton, stored, count, args)
    write_report(rows, beton, count, Path(args.results))


if __name__ == "__main__":
    main()
