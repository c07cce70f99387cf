#!/usr/bin/env python3
"""The paper's low-memory case study (FFCV paper §4.3) on one machine: a dataset read from slow
storage, every epoch from a cold OS page cache.

Configurations, all running the same training pipeline (random-resized-crop 160 + flip, batch 64,
every core) on the same ImageNet-like JPEG set:

  (a)  RANDOM order through the OS page cache (mmap), the pages dropped before each epoch
  (a') RANDOM order through the process cache with a budget of the whole file: what RANDOM needs
       when the OS cache is not used (FFCV's os_cache=False)
  (b)  QUASI_RANDOM order through the process cache within a small budget (the paper's choice)
  and (a') and (b) with the file on an HTTP server (nginx on loopback, Debian's, unpacked by
  tools/setup.sh), read with range requests.
  Baseline: the PyTorch DataLoader with torchvision's ImageFolder over the source JPEGs, the
  paper's baseline, every core as workers.

Slow storage is the same model for everyone: each read waits LATENCY, and transfers share one
wire of BANDWIDTH bytes/s (ours: the process cache's throttle, --storage-latency-ms/--storage-bandwidth-mbs; the
baseline: the same model in Python around each JPEG read). The OS-cache configuration (a) reads
the machine's own disk: no throttle can slow the kernel's page faults, so it is shown unthrottled,
for contrast.

Per configuration and epoch: wall time, samples/s, bytes read from storage / file size, the
measuring process's peak RSS, and distinct classes per batch.

Usage (after tools/setup.sh):
  .venv/bin/python experiments/low_memory/low_memory_study.py [--count 10000] [--epochs 3]
Writes results/low-memory.{json,png} and prints the table of results/low-memory.md.

  .venv/bin/python experiments/low_memory/low_memory_study.py --train
The accuracy side, on a small task: Fashion-MNIST's training images stored in class order (as an
image folder is), trained with recipes/low_memory/fashion_mnist_sorted.toml: QUASI_RANDOM through
a process cache of a third of the file, RANDOM through the OS cache, and QUASI_RANDOM again on the same
images written with --shuffle, locally and over HTTP (nginx) with slow storage imposed (5 ms per
read, 10 MB/s). A run whose folder holds a summary is not trained again. Writes
results/low-memory-accuracy.json and prints each run's summary.
"""
import argparse
import json
import os
import platform
import shutil
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from owned_folders import remove_owned  # noqa: E402

ROOT = Path(__file__).resolve().parents[2]
CLI = ROOT / "build" / "bin" / "ffcv"
NGINX = ROOT / "build" / "_deps" / "nginx" / "usr" / "sbin" / "nginx"


def machine():
    model = "unknown CPU"
    for line in Path("/proc/cpuinfo").read_text().splitlines():
        if line.startswith("model name"):
            model = line.split(":", 1)[1].strip()
            break
    return f"{model}, {os.cpu_count()} cores, {platform.system()} {platform.release()}"


def bench(file, args, epochs):
    argv = [str(CLI), "bench", file, "--json", "--cold", "--epochs", str(epochs),
            "--batch-size", "64", "--image-decoder", "random_resized_crop", "--image-size", "160",
            "--flip"] + args
    start = time.monotonic()
    child = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    out = child.stdout.read()
    err = child.stderr.read()
    _, status, usage = os.wait4(child.pid, 0)
    if status != 0:
        raise SystemExit(f"{' '.join(argv)} failed:\n{err}")
    result = json.loads(out)
    result["peak_rss_bytes"] = usage.ru_maxrss * 1024
    result["block_read_bytes"] = usage.ru_inblock * 512
    result["wall_seconds"] = time.monotonic() - start
    return result


class Nginx:
    """nginx serving one folder on a free loopback port, for the life of the object."""

    def __init__(self, root):
        self.dir = Path(tempfile.mkdtemp(prefix="ffcv-nginx-"))
        (self.dir / "temp").mkdir()
        with socket.socket() as s:
            s.bind(("127.0.0.1", 0))
            self.port = s.getsockname()[1]
        conf = self.dir / "nginx.conf"
        temps = "".join(f"  {k}_temp_path {self.dir}/temp/{k};\n"
                        for k in ("client_body", "proxy", "fastcgi", "uwsgi", "scgi"))
        conf.write_text(
            "daemon off;\nmaster_process off;\nworker_processes 1;\n"
            f"error_log {self.dir}/error.log;\npid {self.dir}/nginx.pid;\n"
            "events { worker_connections 512; }\n"
            f"http {{\n  access_log off;\n{temps}  default_type application/octet-stream;\n"
            f"  server {{ listen 127.0.0.1:{self.port}; root {root}; }}\n}}\n")
        self.process = subprocess.Popen([str(NGINX), "-p", str(self.dir), "-c", str(conf),
                                         "-e", str(self.dir / "error.log")])
        for _ in range(200):
            with socket.socket() as s:
                if s.connect_ex(("127.0.0.1", self.port)) == 0:
                    return
            time.sleep(0.02)
        raise SystemExit("nginx did not start: " + (self.dir / "error.log").read_text())

    def url(self, name):
        return f"http://127.0.0.1:{self.port}/{name}"

    def close(self):
        self.process.kill()
        self.process.wait()
        shutil.rmtree(self.dir, ignore_errors=True)


BASELINE = r'''
import json, os, sys, time, resource
import multiprocessing as mp
import torch
from torch.utils.data import DataLoader
from torchvision import datasets, transforms
from PIL import Image

images, epochs, latency, bandwidth = sys.argv[1], int(sys.argv[2]), float(sys.argv[3]), float(sys.argv[4])
wire_lock = mp.Lock()
wire_free = mp.Value("d", 0.0, lock=False)

def slow_read(path):
    """The storage model of the process cache's throttle: latency, then one shared wire."""
    size = os.path.getsize(path)
    time.sleep(latency)
    with wire_lock:
        now = time.monotonic()
        start = max(now, wire_free.value)
        wire_free.value = start + size / bandwidth
        done = wire_free.value
    if done > time.monotonic():
        time.sleep(done - time.monotonic())
    with open(path, "rb") as f:
        return f.read()

def loader(path):
    import io
    image = Image.open(io.BytesIO(slow_read(path)))
    return image.convert("RGB")

def drop_cache(root):
    for folder, _, files in os.walk(root):
        for name in files:
            fd = os.open(os.path.join(folder, name), os.O_RDONLY)
            os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
            os.close(fd)

transform = transforms.Compose([transforms.RandomResizedCrop(160), transforms.RandomHorizontalFlip(),
                                transforms.PILToTensor()])
dataset = datasets.ImageFolder(images, transform=transform, loader=loader)
total = sum(os.path.getsize(p) for p, _ in dataset.samples)
torch.manual_seed(0)
data = DataLoader(dataset, batch_size=64, shuffle=True, num_workers=os.cpu_count(), drop_last=True,
                  persistent_workers=False)
out = []
for epoch in range(epochs):
    drop_cache(images)
    start = time.monotonic()
    samples, classes = 0, 0.0
    batches = 0
    for x, y in data:
        samples += len(y)
        classes += len(set(y.tolist()))
        batches += 1
    seconds = time.monotonic() - start
    out.append({"epoch": epoch, "samples": samples, "seconds": seconds,
                "samples_per_s": samples / seconds, "distinct_labels_per_batch": classes / batches,
                "storage_bytes_read": total * (epoch + 1)})
print(json.dumps({"epochs": out, "file_bytes": total}))
'''


def peak_tree_rss(pid):
    """Sums the RSS of a process and its children now (psutil), in bytes."""
    import psutil
    try:
        parent = psutil.Process(pid)
        total = parent.memory_info().rss
        for child in parent.children(recursive=True):
            try:
                total += child.memory_info().rss
            except psutil.Error:
                pass
        return total
    except psutil.Error:
        return 0


def baseline(images, epochs, latency, bandwidth):
    child = subprocess.Popen([sys.executable, "-c", BASELINE, str(images), str(epochs),
                              str(latency), str(bandwidth)],
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    peak = 0
    start = time.monotonic()
    while child.poll() is None:
        peak = max(peak, peak_tree_rss(child.pid))
        time.sleep(0.1)
    out, err = child.communicate()
    if child.returncode != 0:
        raise SystemExit("baseline failed:\n" + err)
    result = json.loads(out)
    result["peak_rss_bytes"] = peak
    result["wall_seconds"] = time.monotonic() - start
    return result


def summarize(name, result, file_bytes):
    epochs = result["epochs"]
    rows = []
    for e in epochs:
        read = e.get("storage_bytes_read", 0)  # this epoch's own reads
        rows.append({"config": name, "epoch": e["epoch"], "seconds": e["seconds"],
                     "samples_per_s": e["samples_per_s"], "read_per_file": read / file_bytes,
                     "distinct_labels_per_batch": e.get("distinct_labels_per_batch", 0)})
    if all(r["read_per_file"] == 0 for r in rows) and result.get("block_read_bytes"):
        for r in rows:  # the OS cache: only the kernel's count, for the whole run
            r["read_per_file"] = result["block_read_bytes"] / len(rows) / file_bytes
    for r in rows:
        r["peak_rss_mib"] = result["peak_rss_bytes"] / 2**20
    return rows


def plot(rows, out):
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    configs = list(dict.fromkeys(r["config"] for r in rows))
    fig, axes = plt.subplots(1, 3, figsize=(14, 4.2))
    for metric, ax, label in [("samples_per_s", axes[0], "samples/s (median epoch)"),
                              ("read_per_file", axes[1], "bytes read / file size per epoch"),
                              ("peak_rss_mib", axes[2], "peak RSS (MiB)")]:
        values = []
        for c in configs:
            series = sorted(r[metric] for r in rows if r["config"] == c)
            values.append(series[len(series) // 2])
        ax.barh(range(len(configs)), values, color="tab:blue")
        ax.set_yticks(range(len(configs)), configs, fontsize=7)
        ax.invert_yaxis()
        ax.set_xlabel(label)
        ax.grid(axis="x", alpha=0.3)
    fig.suptitle("Low memory over slow storage: every epoch from a cold cache")
    fig.tight_layout()
    fig.savefig(out, dpi=110)


FASHION_MNIST = Path("/usr/share/datasets/fashion-mnist")


def write_sorted_fashion_mnist(work, beton, shuffled):
    """Fashion-MNIST's training images as an image folder in label order, then as a .beton in
    that order, and as one shuffled at write time (ffcv write --shuffle)."""
    import gzip

    import numpy as np
    from PIL import Image
    folder = work / "fashion-mnist-sorted"
    if not (folder / ".complete").exists():
        with gzip.open(FASHION_MNIST / "train-images-idx3-ubyte.gz") as f:
            images = np.frombuffer(f.read(), np.uint8, offset=16).reshape(-1, 28, 28)
        with gzip.open(FASHION_MNIST / "train-labels-idx1-ubyte.gz") as f:
            labels = np.frombuffer(f.read(), np.uint8, offset=8)
        for index, (image, label) in enumerate(zip(images, labels)):
            target = folder / f"{label:02d}"
            target.mkdir(parents=True, exist_ok=True)
            Image.fromarray(image).save(target / f"{index:05d}.png")
        (folder / ".complete").write_text("")
    for path, extra in [(beton, []), (shuffled, ["--shuffle"])]:
        if not path.exists():
            subprocess.run([str(CLI), "write", "folder", str(folder), "--output", str(path),
                            "--write-mode", "jpg", "--jpeg-quality", "90", "--page-size", "2M",
                            "--quiet"] + extra, check=True)


def train_runs(work, output):
    """Trains the low-memory recipe: QUASI_RANDOM + process cache and RANDOM + OS cache on the
    file in class order, and QUASI_RANDOM + process cache on the file shuffled at write time."""
    beton = ROOT / "data" / "low-memory" / "fashion-mnist-sorted-train.beton"
    shuffled = ROOT / "data" / "low-memory" / "fashion-mnist-shuffled-train.beton"
    beton.parent.mkdir(parents=True, exist_ok=True)
    write_sorted_fashion_mnist(work, beton, shuffled)
    test = ROOT / "data" / "fashion-mnist-test.beton"
    if not test.exists():
        subprocess.run([str(CLI), "write", "fashion-mnist", "--split", "test", "--write-mode",
                        "jpg", "--jpeg-quality", "90", "--output", str(test), "--quiet"],
                       check=True)
    recipe = ROOT / "recipes" / "low_memory" / "fashion_mnist_sorted.toml"
    runs = {}
    server = Nginx(shuffled.parent)
    url = server.url(shuffled.name)
    for name, folder_name, overrides in [
            ("(b) quasi_random, process cache, file in class order", "run-b", []),
            ("(a) random, OS cache, file in class order", "run-a",
             ["--set", "data.order=random", "--set", "data.os_cache=true"]),
            ("(b) quasi_random, process cache, file shuffled at write", "run-b-shuffled",
             ["--set", f"data.train={shuffled}"]),
            ("(b) quasi_random, process cache, file shuffled at write, over HTTP, 5 ms + 10 MB/s",
             "run-b-shuffled-http",
             ["--set", f"data.train={url}", "--set", "data.storage_latency_ms=5",
              "--set", "data.storage_bandwidth_mbs=10"])]:
        folder = work / folder_name
        if (folder / "summary.json").exists():  # trained before: reused
            print(f"reusing {folder}", flush=True)
        else:
            remove_owned(folder, "low_memory_study", run_folder=True)
            print(f"training {name}", flush=True)
            child = subprocess.Popen([str(CLI), "run", str(recipe), "--output-dir", str(folder)]
                                     + overrides, cwd=ROOT)
            _, status, usage = os.wait4(child.pid, 0)
            if status != 0:
                server.close()
                raise SystemExit(f"training {name} failed")
            (folder / "peak_rss_bytes").write_text(str(usage.ru_maxrss * 1024))
        summary = json.loads((folder / "summary.json").read_text())
        log = [json.loads(line) for line in (folder / "log.jsonl").read_text().splitlines()
               if line.strip()]
        rss = folder / "peak_rss_bytes"
        runs[name] = {"summary": summary, "log": log,
                      "peak_rss_bytes": int(rss.read_text()) if rss.exists() else None,
                      "command": f"ffcv run {recipe.relative_to(ROOT)} " + " ".join(overrides)}
        print(json.dumps(summary), flush=True)
    server.close()
    report = {"machine": machine(), "file_bytes": beton.stat().st_size, "runs": runs}
    Path(output).with_name(Path(output).name + "-accuracy.json").write_text(
        json.dumps(report, indent=1))


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--train", action="store_true",
                        help="run the accuracy comparison instead (two trainings)")
    parser.add_argument("--count", type=int, default=10000)
    parser.add_argument("--epochs", type=int, default=3)
    parser.add_argument("--latency-ms", type=float, default=2.0)
    parser.add_argument("--bandwidth-mbs", type=float, default=100.0)
    parser.add_argument("--budget-mib", type=int, default=64,
                        help="the process cache's budget for (b), MiB")
    parser.add_argument("--work", default=str(ROOT / "data" / "low-memory"))
    parser.add_argument("--output", default=str(ROOT / "results" / "low-memory"))
    args = parser.parse_args()

    work = Path(args.work)
    work.mkdir(parents=True, exist_ok=True)
    if args.train:
        train_runs(work, args.output)
        return
    images = work / "images"
    beton = work / "www" / "train.beton"
    beton.parent.mkdir(exist_ok=True)
    if not beton.exists():
        subprocess.run([str(CLI), "write", "imagenet-like", "--count", str(args.count),
                        "--images-dir", str(images), "--output", str(beton), "--write-mode",
                        "jpg", "--max-resolution", "256", "--quiet"], check=True)
    file_bytes = beton.stat().st_size
    throttle = ["--storage-latency-ms", str(args.latency_ms),
                "--storage-bandwidth-mbs", str(args.bandwidth_mbs)]
    whole = str((file_bytes >> 20) + 64)
    budget = str(args.budget_mib)
    runs = []
    configs = [
        ("(a) random, OS cache, local disk (no throttle)", str(beton), ["--order", "random"]),
        ("(a') random, process cache = file, throttled", str(beton),
         ["--order", "random", "--os-cache", "false", "--cache-budget-mib", whole] + throttle),
        # The window is left to the loader: the largest the budget holds.
        (f"(b) quasi_random, process cache {budget} MiB, throttled", str(beton),
         ["--order", "quasi_random", "--os-cache", "false", "--cache-budget-mib", budget]
         + throttle),
    ]
    server = Nginx(beton.parent)
    try:
        url = server.url(beton.name)
        configs += [
            ("(a') random, process cache = file, HTTP, throttled", url,
             ["--order", "random", "--cache-budget-mib", whole] + throttle),
            (f"(b) quasi_random, process cache {budget} MiB, HTTP, throttled", url,
             ["--order", "quasi_random", "--cache-budget-mib", budget] + throttle),
        ]
        for name, file, extra in configs:
            print(f"measuring {name}", flush=True)
            result = bench(file, extra, args.epochs)
            runs.append({"config": name, "command": "ffcv bench " + " ".join([file] + extra),
                         "result": result})
    finally:
        server.close()
    print("measuring the PyTorch DataLoader baseline", flush=True)
    base = baseline(images, args.epochs, args.latency_ms / 1000, args.bandwidth_mbs * 1e6)
    runs.append({"config": "DataLoader + ImageFolder, JPEG files, throttled", "result": base})

    rows = []
    for run in runs:
        size = run["result"].get("file_bytes", file_bytes)
        rows += summarize(run["config"], run["result"], size)
    report = {"machine": machine(), "count": args.count, "epochs": args.epochs,
              "file_bytes": file_bytes, "latency_ms": args.latency_ms,
              "bandwidth_mbs": args.bandwidth_mbs, "budget_mib": args.budget_mib, "rows": rows,
              "runs": runs}
    out = Path(args.output)
    out.with_suffix(".json").write_text(json.dumps(report, indent=1))
    lines = ["| configuration | epoch | seconds | samples/s | read / file | peak RSS (MiB) | "
             "classes per batch |", "|---|---|---|---|---|---|---|"]
    for r in rows:
        lines.append(f"| {r['config']} | {r['epoch']} | {r['seconds']:.2f} | "
                     f"{r['samples_per_s']:.0f} | {r['read_per_file']:.2f} | "
                     f"{r['peak_rss_mib']:.0f} | {r['distinct_labels_per_batch']:.1f} |")
    print("\n".join(lines))
    plot(rows, out.with_suffix(".png"))


if __name__ == "__main__":
    main()
