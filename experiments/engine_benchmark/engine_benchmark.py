#!/usr/bin/env python3
"""Loader engine throughput: ours against Python FFCV's Loader and a plain memcpy, same run.

The dataset holds raw fields only (a uint8 NDArray "image" of 64x64x3 and an int label), so
the pipeline is trivial: the default decoders copy each sample's bytes into the batch. This
measures the engine itself (scheduling, page access, batch assembly), not decoding.

For each worker count from 1 to all cores it reports samples/s of `ffcv bench` (best epoch of
N) and of Python FFCV's Loader (best epoch of N, JIT compilation excluded by a warm-up epoch),
the memcpy rate of the same bytes measured by `ffcv bench` in the same run, and the peak
resident memory of each process.

Usage (from the repository root, after tools/setup.sh):
  .venv/bin/python experiments/engine_benchmark/engine_benchmark.py
Writes results/engine-benchmark.{json,md,png}.
"""
import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "experiments"))
from benchmark_machine import machine  # noqa: E402
CLI = ROOT / "build" / "bin" / "ffcv"




def make_dataset(path, count):
    import numpy as np
    rng = np.random.default_rng(0)
    with tempfile.TemporaryDirectory() as tmp:
        np.save(f"{tmp}/x.npy", rng.integers(0, 256, size=(count, 64, 64, 3), dtype=np.uint8))
        np.save(f"{tmp}/y.npy", np.arange(count, dtype=np.int64) % 1000)
        subprocess.run([str(CLI), "write", "npy", "--features", f"{tmp}/x.npy", "--targets",
                        f"{tmp}/y.npy", "--output", str(path), "--quiet"], check=True)


def run_with_peak_rss(command):
    """Runs command; returns its stdout and the peak resident memory (MiB) of that process."""
    process = subprocess.Popen(command, stdout=subprocess.PIPE, text=True)
    out = process.stdout.read()
    _, status, usage = os.wait4(process.pid, 0)
    process.returncode = os.waitstatus_to_exitcode(status)
    if process.returncode != 0:
        raise subprocess.CalledProcessError(process.returncode, command, out)
    return out, usage.ru_maxrss / 1024


def run_ours(path, workers, batch_size, epochs, order):
    out, rss_mib = run_with_peak_rss([str(CLI), "bench", str(path), "--num-workers", str(workers),
                                      "--batch-size", str(batch_size), "--epochs", str(epochs),
                                      "--order", order, "--json"])
    report = json.loads(out)
    best = max(e["samples_per_s"] for e in report["epochs"])
    bytes_per_sample = report["epochs"][-1]["bytes_per_sample"]
    return best, report["memcpy_bytes_per_s"] / bytes_per_sample, rss_mib


FFCV_SNIPPET = r"""
import json, resource, sys, time
from ffcv.loader import Loader, OrderOption
path, workers, batch_size, epochs, order = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4]), sys.argv[5]
orders = {"sequential": OrderOption.SEQUENTIAL, "random": OrderOption.RANDOM, "quasi_random": OrderOption.QUASI_RANDOM}
loader = Loader(path, batch_size=batch_size, num_workers=workers, order=orders[order], os_cache=True, seed=0)
for _ in loader:  # warm-up: numba compilation
    pass
rates = []
for _ in range(epochs):
    start = time.perf_counter(); n = 0
    for features, target in loader:
        n += features.shape[0]
    rates.append(n / (time.perf_counter() - start))
print(json.dumps({"best": max(rates), "rss_mib": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024}))
"""


def run_ffcv(path, workers, batch_size, epochs, order):
    done = subprocess.run([sys.executable, "-c", FFCV_SNIPPET, str(path), str(workers),
                           str(batch_size), str(epochs), order],
                          check=True, capture_output=True, text=True, timeout=900)
    result = json.loads(done.stdout.strip().splitlines()[-1])
    return result["best"], result["rss_mib"]


def plot(rows, out):
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    fig, ax = plt.subplots(figsize=(6, 4))
    workers = [r["workers"] for r in rows]
    ax.plot(workers, [r["ours_samples_per_s"] for r in rows], "o-", label="ours (ffcv bench)")
    ax.plot(workers, [r["ffcv_samples_per_s"] for r in rows], "s-", label="Python FFCV Loader")
    ax.plot(workers, [r["memcpy_samples_per_s"] for r in rows], "k--", label="memcpy, one core")
    ax.set_xlabel("worker threads")
    ax.set_ylabel("samples/s (64x64x3 uint8 + int64)")
    ax.set_xticks(workers)
    ax.set_xticklabels([str(w) for w in workers])
    ax.set_yscale("log")
    ax.grid(alpha=0.3)
    ax.legend()
    ax.set_title("Loader engine, trivial pipeline over raw fields")
    fig.tight_layout()
    fig.savefig(out, dpi=120)


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--count", type=int, default=50000)
    parser.add_argument("--batch-size", type=int, default=256)
    parser.add_argument("--epochs", type=int, default=3)
    parser.add_argument("--order", default="random")
    parser.add_argument("--max-workers", type=int, default=os.cpu_count())
    parser.add_argument("--workers", default="",
                        help="comma-separated worker counts [default: 1 to --max-workers]")
    parser.add_argument("--results", default=str(ROOT / "results"))
    args = parser.parse_args()

    data = ROOT / "data" / f"engine-raw-{args.count}.beton"
    if not data.exists():
        data.parent.mkdir(parents=True, exist_ok=True)
        make_dataset(data, args.count)
    subprocess.run(["cat", str(data)], stdout=subprocess.DEVNULL, check=True)  # warm the OS cache

    counts = ([int(w) for w in args.workers.split(",")] if args.workers
              else list(range(1, args.max_workers + 1)))
    rows = []
    for workers in counts:
        ours, memcpy_samples, ours_rss = run_ours(data, workers, args.batch_size, args.epochs,
                                                  args.order)
        theirs, ffcv_rss = run_ffcv(data, workers, args.batch_size, args.epochs, args.order)
        row = {"workers": workers, "ours_samples_per_s": ours, "ffcv_samples_per_s": theirs,
               "memcpy_samples_per_s": memcpy_samples, "ours_over_ffcv": ours / theirs,
               "ours_over_memcpy": ours / memcpy_samples, "ours_peak_rss_mib": ours_rss,
               "ffcv_peak_rss_mib": ffcv_rss}
        rows.append(row)
        print(f"workers {workers}: ours {ours:10.0f}/s  FFCV {theirs:10.0f}/s  "
              f"ratio {ours / theirs:5.2f}x  memcpy {memcpy_samples:10.0f}/s  "
              f"RSS ours {ours_rss:.0f} MiB, FFCV {ffcv_rss:.0f} MiB", flush=True)

    results = Path(args.results)
    results.mkdir(parents=True, exist_ok=True)
    report = {"command": " ".join(["python"] + sys.argv), "machine": machine(),
              "dataset": {"samples": args.count, "bytes": data.stat().st_size,
                          "fields": "features |u1[64,64,3], target int64"},
              "batch_size": args.batch_size, "order": args.order, "epochs": args.epochs,
              "rows": rows}
    (results / "engine-benchmark.json").write_text(json.dumps(report, indent=2) + "\n")
    plot(rows, results / "engine-benchmark.png")
    lines = ["# Loader engine benchmark: trivial pipeline over raw fields", "",
             f"Command: `{report['command']}`  ",
             f"Machine: {report['machine']['cpu']}, {report['machine']['cores']} cores  ",
             f"Dataset: {args.count} samples of a 64x64x3 uint8 array and an int64 label "
             f"({data.stat().st_size / 1e6:.0f} MB, in the OS cache), batch {args.batch_size}, "
             f"order {args.order}, best of {args.epochs} epochs", "",
             "| workers | ours (samples/s) | Python FFCV (samples/s) | ours / FFCV "
             "| memcpy, 1 core (samples/s) | ours / memcpy | peak RSS ours (MiB) "
             "| peak RSS FFCV (MiB) |",
             "|---|---|---|---|---|---|---|---|"]
    for r in rows:
        lines.append(f"| {r['workers']} | {r['ours_samples_per_s']:.0f} | {r['ffcv_samples_per_s']:.0f} "
                     f"| {r['ours_over_ffcv']:.2f}x | {r['memcpy_samples_per_s']:.0f} "
                     f"| {r['ours_over_memcpy']:.2f} | {r['ours_peak_rss_mib']:.0f} "
                     f"| {r['ffcv_peak_rss_mib']:.0f} |")
    lines += ["", "![throughput by workers](engine-benchmark.png)"]
    (results / "engine-benchmark.md").write_text("\n".join(lines) + "\n")
    print(f"wrote {results / 'engine-benchmark.md'}")


if __name__ == "__main__":
    main()
