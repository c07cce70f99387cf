"""How many cores one GPU needs: the training step fed by the loader against the no-loading
ceiling, with the whole process pinned to 4, 8, 16, ... cores.

For each recipe (by default ResNet-18 and ResNet-50 of recipes/imagenet_like/) and each core
count C, runs build/bin/ffcv_training_benchmark under `taskset -c 0-(C-1)`: the loader sizes its
workers and the model its intra-op threads from that affinity. The benchmark trains the recipe's
step fed by the loader, then on one fixed batch already on the device (the ceiling), at one
resolution; ratio = loader-fed / fixed. nvidia-smi's utilisation is sampled through each run
where there is a GPU.

  python3 experiments/training_benchmark/cores_per_gpu.py --train data/imagenet-like.beton \\
      --cores 4,8,16 --output results/cores-per-gpu
  python3 experiments/training_benchmark/cores_per_gpu.py --render results/cores-per-gpu.json \\
      --output results/cores-per-gpu      # only the .md and .png of an earlier run
"""
import argparse
import json
import os
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, ".."))
from benchmark_machine import gpu_name, machine  # noqa: E402
from gpu_sampler import GpuSampler  # noqa: E402

RECIPES = ["recipes/imagenet_like/rn18_throughput.toml",
           "recipes/imagenet_like/rn50_throughput.toml"]
# The share of the ceiling at which a core count is taken to be enough (the training
# benchmark's goal, results/training-benchmark.md).
ENOUGH = 0.95


def measure(args, recipe, cores):
    """One benchmark run pinned to the first `cores` cores; its figures as a report row."""
    with tempfile.TemporaryDirectory() as folder:
        figures = os.path.join(folder, "figures.json")
        command = ["taskset", "-c", "0-%d" % (cores - 1),
                   os.path.join(args.build, "bin", "ffcv_training_benchmark"), recipe,
                   "--set", "data.train=" + args.train, "--set", "data.val=" + args.train,
                   "--resolutions", str(args.resolution), "--iterations", str(args.iterations),
                   "--warmup", str(args.warmup), "--json", figures]
        for override in args.set:
            command += ["--set", override]
        gpu = GpuSampler()
        start = time.monotonic()
        with gpu:
            done = subprocess.run(command, capture_output=True, text=True)
        seconds = time.monotonic() - start
        if done.returncode != 0:
            sys.exit("failed (%d): %s\n%s%s" % (done.returncode, " ".join(command),
                                                 done.stdout[-4000:], done.stderr[-4000:]))
        sys.stdout.write(done.stdout)
        with open(figures) as saved:
            row = json.load(saved)[0]
    row.update({"recipe_path": recipe, "cores": cores, "wall_seconds": seconds})
    if gpu.samples:
        row["gpu_utilisation_percent"] = gpu.mean_utilisation
    return row


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--render", metavar="JSON",
                        help="only write the .md and .png of an earlier run's JSON")
    parser.add_argument("--build", default="build")
    parser.add_argument("--train", help="the .beton the loader reads (ImageNet-like)")
    parser.add_argument("--recipes", default=",".join(RECIPES), help="comma-separated")
    parser.add_argument("--cores", default="4,8,16",
                        help="core counts, comma-separated; each at most this process's cores")
    parser.add_argument("--resolution", type=int, default=160)
    parser.add_argument("--iterations", type=int, default=150, help="timed steps per run")
    parser.add_argument("--warmup", type=int, default=20, help="untimed steps first")
    parser.add_argument("--set", action="append", default=[], metavar="KEY=VALUE",
                        help="a recipe override for every run (repeatable)")
    parser.add_argument("--output", default="results/cores-per-gpu",
                        help="writes OUTPUT.json, OUTPUT.md, OUTPUT.png")
    args = parser.parse_args()
    if args.render:
        with open(args.render) as saved:
            report = json.load(saved)
        write_report(report, args.output)
        return
    if not args.train:
        parser.error("--train is required (unless --render)")
    available = sorted(os.sched_getaffinity(0))
    try:
        core_counts = [int(c) for c in args.cores.split(",")]
    except ValueError:
        parser.error("--cores: a comma-separated list of core counts, not '%s'" % args.cores)
    if any(c < 1 or c > len(available) for c in core_counts):
        parser.error("--cores: each count must be in 1..%d (this process's cores), not %s"
                     % (len(available), args.cores))
    if available != list(range(len(available))):
        parser.error("--cores pins to cores 0..C-1, but this process may run on %s" % available)
    recipes = args.recipes.split(",")
    python = sys.executable
    python = (os.path.relpath(python) if python.startswith(os.getcwd() + os.sep)
              else os.path.basename(python))
    report = {"machine": dict(machine(), gpu=gpu_name()), "command": " ".join([python] + sys.argv),
              "train": args.train, "sets": args.set, "resolution": args.resolution,
              "iterations": args.iterations, "warmup": args.warmup, "rows": []}
    for recipe in recipes:
        for cores in core_counts:
            row = measure(args, recipe, cores)
            report["rows"].append(row)
            with open(args.output + ".json", "w") as out:  # a run stopped part-way keeps these
                json.dump(report, out, indent=1)
            print("%s on %2d cores: loader-fed %.0f img/s, ceiling %.0f, ratio %.3f%s" %
                  (row["arch"], cores, row["loader_fed_images_per_second"],
                   row["fixed_batch_images_per_second"], row["ratio"],
                   ", GPU %.0f%%" % row["gpu_utilisation_percent"]
                   if "gpu_utilisation_percent" in row else ""), flush=True)
    write_report(report, args.output)
    print("wrote %s.{json,md,png}" % args.output)


def write_report(report, output):
    plot(report, output + ".png")
    with open(output + ".md", "w") as out:
        out.write(markdown(report, os.path.basename(output) + ".png"))


def enough_cores(rows):
    """The fewest cores whose run reached ENOUGH of the ceiling, or None."""
    reached = [r["cores"] for r in rows if r["ratio"] >= ENOUGH]
    return min(reached) if reached else None


def markdown(report, png):
    m = report["machine"]
    lines = ["# Cores per GPU: the loader-fed step against the no-loading ceiling", "",
             "`ffcv_training_benchmark` (the trainer's step fed by the loader, then on one "
             "fixed batch already on the device) with the whole process pinned to the first C "
             "cores (`taskset -c 0-(C-1)`): the loader's workers and the model's intra-op "
             "threads size themselves from that affinity. Ratio = loader-fed / fixed; waiting: "
             "host time in the loader's `next()` (it overlaps queued GPU work). GPU "
             "utilisation: nvidia-smi's mean over the whole run, both halves and the start "
             "included.", "",
             "Command: `%s`  " % report["command"],
             "Machine: %s, %d cores; GPU: %s  " % (m["cpu"], m["cores"], m.get("gpu") or "none"),
             "Data: `%s`; %d px; %d timed steps after %d untimed ones per half%s" % (
                 report["train"], report["resolution"], report["iterations"], report["warmup"],
                 "; overrides " + ", ".join("`%s`" % s for s in report["sets"])
                 if report.get("sets") else ""), "",
             "| model | batch | precision | cores | intra-op threads | loader-fed (images/s) | "
             "fixed batch (images/s) | ratio | waiting for batches (% of time) | "
             "GPU util % |", "|---|---|---|---|---|---|---|---|---|---|"]
    for r in report["rows"]:
        lines.append("| %s | %d | %s | %d | %d | %.0f | %.0f | **%.3f** | %.1f | %s |" % (
            r["arch"], r["batch_size"], r["precision"], r["cores"], r["threads"],
            r["loader_fed_images_per_second"], r["fixed_batch_images_per_second"], r["ratio"],
            100 * r["loader_wait_share"],
            "%.0f" % r["gpu_utilisation_percent"] if "gpu_utilisation_percent" in r else ""))
    lines += ["", "![images/s and share of the ceiling against cores](%s)" % png, "",
              "## Cores a GPU needs", ""]
    for arch in unique(r["arch"] for r in report["rows"]):
        rows = [r for r in report["rows"] if r["arch"] == arch]
        enough = enough_cores(rows)
        lines.append("- %s at %d px: %s" % (
            arch, report["resolution"],
            "%d core%s reach%s %.0f%% of the ceiling (of %s tried)." %
            (enough, "" if enough == 1 else "s", "es" if enough == 1 else "", 100 * ENOUGH,
             ", ".join(str(r["cores"]) for r in rows))
            if enough else "none of %s cores reaches %.0f%% of the ceiling (best %.3f)." %
            (", ".join(str(r["cores"]) for r in rows), 100 * ENOUGH,
             max(r["ratio"] for r in rows))))
    return "\n".join(lines) + "\n"


def unique(items):
    seen = []
    for item in items:
        if item not in seen:
            seen.append(item)
    return seen


def plot(report, path):
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    fig, (left, right) = plt.subplots(1, 2, figsize=(11, 4))
    for arch in unique(r["arch"] for r in report["rows"]):
        rows = sorted((r for r in report["rows"] if r["arch"] == arch), key=lambda r: r["cores"])
        cores = [r["cores"] for r in rows]
        line, = left.plot(cores, [r["loader_fed_images_per_second"] for r in rows], marker="o",
                          label=arch + ", loader-fed")
        left.plot(cores, [r["fixed_batch_images_per_second"] for r in rows], linestyle="--",
                  color=line.get_color(), label=arch + ", fixed batch")
        right.plot(cores, [r["ratio"] for r in rows], marker="o", label=arch)
    all_cores = sorted({r["cores"] for r in report["rows"]})
    left.set(xlabel="cores", ylabel="training images/s", title="Throughput",
             xticks=all_cores)
    left.set_ylim(bottom=0)
    right.axhline(ENOUGH, color="gray", linestyle=":", label="%.2f of the ceiling" % ENOUGH)
    right.set(xlabel="cores", ylabel="loader-fed / fixed batch", title="Share of the ceiling",
              xticks=all_cores)
    right.set_ylim(0, max([1.05] + [1.05 * r["ratio"] for r in report["rows"]]))
    left.legend(fontsize=8)
    right.legend(fontsize=8)
    m = report["machine"]
    fig.suptitle("%s; %s; %d px" % (m.get("gpu") or "no GPU", m["cpu"], report["resolution"]),
                 fontsize=9)
    fig.tight_layout()
    fig.savefig(path, dpi=120)


if __name__ == "__main__":
    main()
