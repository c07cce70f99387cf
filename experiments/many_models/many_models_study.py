"""Many models at once: K trainings of one grid in each placement, against the same K trainings
one after another, in one run on one machine.

For K = 1, 2, 4, ... the grid trains K learning rates of one small recipe (a narrow ResNet-18 on
a Fashion-MNIST subset stored as JPEG, on the CPU) with `ffcv run --grid ... --placement P`:

  sequential   the baseline: one point after another, each with every core
  processes    K processes at once, each pinned to its own share of the cores
  threads      one process, a thread and a loader per model
  shared       one process, one loader whose batches every model trains on

and reports, per K and placement: the grid's wall time, total training images/s and its ratio
to sequential; decode core-seconds per model (the loader workers' decode and transform time,
divided among the models one loader fed); per-model epoch time with K processes against one
model alone pinned to the same share of the cores (the paper's "no overhead" claim). Each
point's final weights are compared with the sequential run's (weights_digest): a placement that
trained something else would be no comparison.

  .venv/bin/python experiments/many_models/many_models_study.py --output results/many-models

On a GPU (`--device cuda`, as tools/gpu_checks.sh's many-models stage runs it) the recipe and
data are given (`--recipe`, `--train`, `--val`, `--set`), nvidia-smi's utilisation is sampled
through every run, and each row also gets the images/s of the last epoch (cuDNN's autotuning
and the process start fall in the first). CUDA runs repeat bit for bit only with
`training.deterministic`, so there the weights are compared by `--deterministic-check K`: the
K points once more with it, in every placement, each placement's digests against sequential's.
"""
import argparse
import contextlib
import json
import os
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, ".."))
from benchmark_machine import gpu_name, machine  # noqa: E402
from gpu_sampler import GpuSampler  # noqa: E402

PLACEMENTS = ["sequential", "processes", "threads", "shared"]
LEARNING_RATES = ["0.05", "0.1", "0.2", "0.4", "0.8", "1.6", "0.3", "0.6"]


def run(command, cpus=None, gpu=None):
    """Runs command, exits on its failure; its wall seconds. gpu: a GpuSampler to run alongside."""
    preexec = (lambda: os.sched_setaffinity(0, cpus)) if cpus else None
    start = time.monotonic()
    with gpu if gpu is not None else contextlib.nullcontext():
        done = subprocess.run(command, capture_output=True, text=True, preexec_fn=preexec)
    seconds = time.monotonic() - start
    if done.returncode != 0:
        sys.exit("failed (%d): %s\n%s%s" % (done.returncode, " ".join(command), done.stdout,
                                             done.stderr))
    return seconds


def records(path):
    with open(path) as log:
        return [json.loads(line) for line in log if line.strip()]


def point_figures(folder):
    log = records(os.path.join(folder, "log.jsonl"))
    epochs = [r for r in log if r.get("event") == "epoch"]
    with open(os.path.join(folder, "summary.json")) as summary:
        final = json.load(summary)
    return {
        "epoch_seconds": [r["epoch_seconds"] for r in epochs],
        # images trained per epoch (the last partial batch is dropped)
        "epoch_images": [round(r["images_per_second"] * r["epoch_seconds"]) for r in epochs],
        "decode_seconds": sum(r["loader_process_cpu_seconds"] / r["loader_shared_by"]
                              for r in epochs),
        "val_top1": final["val_top1"],
        "digest": final["weights_digest"],
        "threads": epochs[-1]["threads"],
    }


def point_rows(args, ffcv, recipe, common, k, placements, cuda, label=""):
    """Trains the first k learning rates in each placement; one report row per placement."""
    grid = ["--grid", "lr.lr=" + ",".join(args.learning_rates[:k])]
    rows = []
    reference = {}  # intra-op threads (any, on CUDA) -> (first placement, its digests)
    for placement in placements:
        out = os.path.join(args.work, "k%d-%s%s" % (k, placement, label.replace(", ", "-")))
        seconds = None
        gpu = None
        for _ in range(args.repeats):  # the fastest of the repeats: the least disturbed
            subprocess.run(["rm", "-rf", out + "-try"], check=True)
            sampler = GpuSampler() if cuda else None
            took = run([ffcv, "run", recipe] + common + grid +
                       ["--placement", placement, "--output-dir", out + "-try"], gpu=sampler)
            if seconds is None or took < seconds:
                seconds, gpu = took, sampler
                subprocess.run(["rm", "-rf", out], check=True)
                os.rename(out + "-try", out)
        points = [point_figures(os.path.join(out, "point-%03d" % i)) for i in range(k)]
        digests = [p["digest"] for p in points]
        # Weights are compared between placements whose models had the same intra-op threads:
        # on the CPU the thread count changes the order of floating-point sums. On CUDA the
        # arithmetic is the GPU's whatever the host threads.
        threads = points[0]["threads"]
        key = "any" if cuda else threads
        reference.setdefault(key, (placement + label, digests))
        images = sum(sum(p["epoch_images"]) for p in points)
        last_images = sum(p["epoch_images"][-1] for p in points)
        last_seconds = [p["epoch_seconds"][-1] for p in points]
        # Points of `sequential` train one after another; the others at once.
        last_span = sum(last_seconds) if placement == "sequential" else max(last_seconds)
        row = {
            "models": k, "placement": placement + label, "wall_seconds": seconds,
            "images": images, "images_per_second": images / seconds,
            "last_epoch_images_per_second": last_images / last_span,
            "decode_core_seconds_per_model": sum(p["decode_seconds"] for p in points) / k,
            "epoch_seconds_per_model": sum(sum(p["epoch_seconds"]) for p in points) /
            (k * len(points[0]["epoch_seconds"])),
            "val_top1": [p["val_top1"] for p in points],
            "digests": digests,
            "threads_per_model": threads,
            "weights_reference": reference[key][0],
            "same_weights_as_reference": digests == reference[key][1],
        }
        if gpu is not None and gpu.samples:
            row["gpu_utilisation_percent"] = gpu.mean_utilisation
            row["gpu_peak_memory_mib"] = gpu.peak_memory_mib
        rows.append(row)
        print("K=%d %-10s %6.1f s  %7.0f img/s (last epoch %7.0f)  decode %.2f core-s/model  "
              "%d threads/model%s  same weights as %s: %s" %
              (k, placement + label, seconds, row["images_per_second"],
               row["last_epoch_images_per_second"], row["decode_core_seconds_per_model"],
               row["threads_per_model"],
               "  GPU %.0f%%" % row["gpu_utilisation_percent"]
               if "gpu_utilisation_percent" in row else "",
               row["weights_reference"], row["same_weights_as_reference"]), flush=True)
    return rows


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--render", metavar="JSON",
                        help="only write the .md and .png of an earlier run's JSON")
    parser.add_argument("--build", default="build")
    parser.add_argument("--work", default="data/many-models")
    parser.add_argument("--output", default="results/many-models")
    parser.add_argument("--recipe", default="recipes/many_models/fashion_mnist_grid.toml")
    parser.add_argument("--train", help="training .beton (default: a Fashion-MNIST subset of "
                        "--samples images, written under --work)")
    parser.add_argument("--val", help="validation .beton (default: 2000 Fashion-MNIST test "
                        "images, written under --work)")
    parser.add_argument("--set", action="append", default=[], metavar="KEY=VALUE",
                        help="a recipe override for every run (repeatable)")
    parser.add_argument("--device", choices=["cpu", "cuda"], default="cpu",
                        help="cuda: sample the GPU's utilisation, compare weights only in "
                        "--deterministic-check")
    parser.add_argument("--samples", type=int, default=8192, help="training samples")
    parser.add_argument("--epochs", type=int, default=2)
    parser.add_argument("--models", default="1,2,4", help="the values of K")
    parser.add_argument("--placements", default=",".join(PLACEMENTS),
                        help="comma-separated, from " + ", ".join(PLACEMENTS))
    parser.add_argument("--learning-rates", default=",".join(LEARNING_RATES),
                        help="the grid's lr.lr values, at least max(K) of them")
    parser.add_argument("--repeats", type=int, default=2,
                        help="runs of each configuration; the fastest is kept")
    parser.add_argument("--no-baseline", dest="baseline", action="store_false",
                        help="leave out the PyTorch DataLoader baseline")
    parser.add_argument("--no-alone", dest="alone", action="store_false",
                        help="leave out one model alone on 1/K of the cores")
    parser.add_argument("--deterministic-check", type=int, default=0, metavar="K",
                        help="also train K points with training.deterministic = true in every "
                        "placement and compare their weights with sequential's")
    args = parser.parse_args()
    if args.render:
        with open(args.render) as saved:
            report = json.load(saved)
        plot(report, args.output + ".png")
        with open(args.output + ".md", "w") as out:
            out.write(markdown(report, os.path.basename(args.output) + ".png"))
        return
    placements = args.placements.split(",")
    unknown = [p for p in placements if p not in PLACEMENTS]
    if unknown:
        parser.error("--placements: no placement %s (the placements: %s)"
                     % (", ".join(unknown), ", ".join(PLACEMENTS)))
    if "sequential" not in placements:
        parser.error("--placements: sequential, the baseline, must be among them")
    args.learning_rates = args.learning_rates.split(",")
    ks = [int(v) for v in args.models.split(",")]
    if max(ks + [args.deterministic_check]) > len(args.learning_rates):
        parser.error("--learning-rates: %d values for K up to %d" %
                     (len(args.learning_rates), max(ks + [args.deterministic_check])))
    if (args.train is None) != (args.val is None):
        parser.error("--train and --val go together")
    if args.baseline and args.train is not None:
        parser.error("--no-baseline is needed with --train: the DataLoader baseline reads "
                     "Fashion-MNIST JPEGs")
    cuda = args.device == "cuda"
    ffcv = os.path.join(args.build, "bin", "ffcv")
    os.makedirs(args.work, exist_ok=True)
    if args.train is None:
        train = os.path.join(args.work, "train.beton")
        val = os.path.join(args.work, "test.beton")
        for split, path, count in [("train", train, args.samples), ("test", val, 2000)]:
            if not os.path.exists(path):
                run([ffcv, "write", "fashion-mnist", "--split", split, "--subset", str(count),
                     "--write-mode", "jpg", "--jpeg-quality", "90", "--quiet", "--output", path])
    else:
        train, val = args.train, args.val
    recipe = args.recipe
    common = ["--set", "data.train=" + train, "--set", "data.val=" + val,
              "--set", "training.epochs=%d" % args.epochs, "--set", "lr.peak_epoch=1",
              "--grid", "training.label_smoothing=0.1", "--quiet"]
    for override in args.set:
        common += ["--set", override]
    cores = sorted(os.sched_getaffinity(0))
    python = sys.executable  # as typed: .venv/bin/python here, python3 on the GPU machine
    python = (os.path.relpath(python) if python.startswith(os.getcwd() + os.sep)
              else os.path.basename(python))
    report = {"machine": dict(machine(), gpu=gpu_name()), "device": args.device,
              "command": " ".join([python] + sys.argv),
              "samples": args.samples if args.train is None else None,
              "train": train, "sets": args.set,
              "epochs": args.epochs, "recipe": recipe, "cores": len(cores), "rows": []}

    # A first run that is not measured: libraries and data into the page cache (and, on CUDA,
    # the driver's and cuDNN's first-use costs).
    run([ffcv, "run", recipe] + common + ["--grid", "lr.lr=" + args.learning_rates[0],
                                          "--output-dir", os.path.join(args.work, "warm-up")])
    subprocess.run(["rm", "-rf", os.path.join(args.work, "warm-up")], check=True)
    report["repeats"] = args.repeats

    def save():  # after each K too: a run stopped part-way keeps the figures it has
        with open(args.output + ".json", "w") as out:
            json.dump(report, out, indent=1)

    for k in ks:
        report["rows"] += point_rows(args, ffcv, recipe, common, k, placements, cuda)
        save()
        if args.baseline:
            # The paper's baseline: the same K trainings, PyTorch DataLoader + ImageFolder.
            done = subprocess.run(
                [sys.executable, os.path.join(HERE, "dataloader_baseline.py"),
                 "--images", os.path.join(args.work, "jpegs"), "--samples", str(args.samples),
                 "--models", str(k), "--learning-rates", ",".join(args.learning_rates),
                 "--epochs", str(args.epochs)], capture_output=True, text=True)
            if done.returncode != 0:
                sys.exit("the DataLoader baseline failed:\n" + done.stdout + done.stderr)
            baseline = json.loads(done.stdout.strip().splitlines()[-1])
            report["rows"].append({"models": k, "placement": "PyTorch DataLoader, one by one",
                                   "wall_seconds": baseline["wall_seconds"],
                                   "images_per_second": baseline["images_per_second"]})
            print("K=%d DataLoader   %6.1f s  %7.0f img/s" %
                  (k, baseline["wall_seconds"], baseline["images_per_second"]), flush=True)
        # One model alone with the share of the cores each of the K processes had.
        if args.alone and "processes" in placements and 1 < k <= len(cores):
            share = cores[: len(cores) // k]
            alone_epochs = []
            for attempt in range(args.repeats):
                out = os.path.join(args.work, "k%d-alone-%d" % (k, attempt))
                subprocess.run(["rm", "-rf", out], check=True)
                run([ffcv, "run", recipe] + common + ["--grid", "lr.lr=" + args.learning_rates[0],
                                                      "--output-dir", out], cpus=share)
                alone_epochs.append(point_figures(os.path.join(out, "point-000"))["epoch_seconds"])
            alone = {"epoch_seconds": min(alone_epochs, key=sum)}
            concurrent = next(r for r in report["rows"]
                              if r["models"] == k and r["placement"] == "processes")
            report["rows"].append({
                "models": k, "placement": "alone on 1/K of the cores",
                "epoch_seconds_per_model": sum(alone["epoch_seconds"]) / args.epochs,
                "concurrent_over_alone": concurrent["epoch_seconds_per_model"] /
                (sum(alone["epoch_seconds"]) / args.epochs),
            })
            print("K=%d one model alone on cores %s: %.2f s per epoch; K processes: %.2f (%.3fx)"
                  % (k, share, report["rows"][-1]["epoch_seconds_per_model"],
                     concurrent["epoch_seconds_per_model"],
                     report["rows"][-1]["concurrent_over_alone"]), flush=True)
    if args.deterministic_check:
        # The same points with bitwise-reproducible CUDA kernels: every placement must end with
        # the weights of the points trained one after another.
        check = common + ["--set", "training.deterministic=true"]
        report["deterministic"] = point_rows(args, ffcv, recipe, check, args.deterministic_check,
                                             placements, cuda, label=", deterministic")

    save()
    plot(report, args.output + ".png")
    with open(args.output + ".md", "w") as out:
        out.write(markdown(report, os.path.basename(args.output) + ".png"))
    print("wrote %s.{json,md,png}" % args.output)


def weights_cell(r):
    if "same_weights_as_reference" not in r or r["weights_reference"] == r["placement"]:
        return ""
    return (r["weights_reference"] if r["same_weights_as_reference"] else
            "**differ from %s**" % r["weights_reference"])


def markdown(report, png):
    """results/many-models.md: the tables, the goals checked against them, what is missing."""
    cuda = report.get("device") == "cuda"
    rows = report["rows"]
    has_baseline = any(r["placement"].startswith("PyTorch DataLoader") for r in rows)
    m = report["machine"]
    lines = ["# Many models at once: grid placements against one model after another", "",
             "K learning rates of one recipe trained by `ffcv run --grid lr.lr=... --placement P`"
             " in each placement against the same K trainings one after another (`sequential`, "
             "the baseline)" +
             (" and fed by the PyTorch DataLoader with torchvision's ImageFolder over the same "
              "images as JPEG files (`dataloader_baseline.py`: the paper's baseline, with the "
              "model in torch's Python front end and without BlurPool, which ours has)"
              if has_baseline else "") + ", all in one run on one machine. "
             "Wall time is the whole command's: process starts, data loading, training, "
             "validation. Decode core-seconds per model: the loader workers' CPU time decoding "
             "and augmenting, divided among the models that loader fed." +
             (" Last epoch: the images of every model's last epoch over the time those epochs "
              "took (summed for `sequential`, the longest for the others), free of the process "
              "start and cuDNN's autotuning in the first epoch. GPU utilisation: nvidia-smi's "
              "mean over the whole command." if cuda else ""), "",
             "Command: `%s`  " % report["command"],
             "Machine: %s, %d cores%s; %s, %d epochs per model, recipe `%s`%s; "
             "each figure the fastest of %d runs"
             % (m["cpu"], report["cores"],
                "; GPU: %s" % m["gpu"] if m.get("gpu") else "",
                "%d training samples" % report["samples"] if report.get("samples")
                else "training data `%s`" % report.get("train"),
                report["epochs"], report["recipe"],
                " with " + ", ".join("`%s`" % s for s in report["sets"])
                if report.get("sets") else "", report["repeats"]), ""]
    header = ["K", "placement", "wall s", "images/s (all models)", "vs sequential"]
    if cuda:
        header += ["images/s, last epoch", "vs sequential, last epoch", "GPU util %",
                   "GPU memory peak, GiB"]
    header += ["decode core-s per model", "intra-op threads per model"]
    if not cuda:
        header += ["weights equal those of"]
    lines += ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    for k in sorted({r["models"] for r in rows}):
        mine = [r for r in rows if r["models"] == k]
        sequential = next(r for r in mine if r["placement"] == "sequential")
        for r in mine:
            if "wall_seconds" not in r:
                continue
            cells = [str(k), r["placement"], "%.1f" % r["wall_seconds"],
                     "%.0f" % r["images_per_second"],
                     "%.2fx" % (r["images_per_second"] / sequential["images_per_second"])]
            if cuda:
                last = r.get("last_epoch_images_per_second")
                cells += ["%.0f" % last if last else "",
                          "%.2fx" % (last / sequential["last_epoch_images_per_second"])
                          if last else "",
                          "%.0f" % r["gpu_utilisation_percent"]
                          if "gpu_utilisation_percent" in r else "",
                          "%.1f" % (r["gpu_peak_memory_mib"] / 1024)
                          if "gpu_peak_memory_mib" in r else ""]
            cells += ["%.2f" % r["decode_core_seconds_per_model"]
                      if "decode_core_seconds_per_model" in r else "",
                      str(r.get("threads_per_model", ""))]
            if not cuda:
                cells.append(weights_cell(r))
            lines.append("| " + " | ".join(cells) + " |")
    alone = [r for r in rows if "concurrent_over_alone" in r]
    if alone:
        lines += ["", "| K | one model alone on 1/K of the cores, s/epoch | "
                  "each of K processes, s/epoch | ratio |", "|---|---|---|---|"]
        for r in alone:
            lines.append("| %d | %.2f | %.2f | %.3f |" % (
                r["models"], r["epoch_seconds_per_model"],
                r["epoch_seconds_per_model"] * r["concurrent_over_alone"],
                r["concurrent_over_alone"]))
    if report.get("deterministic"):
        lines += ["", "With `training.deterministic = true` (deterministic cuDNN algorithms, no "
                  "autotuning), the same points in each placement, their final weights "
                  "(`weights_digest`) against " +
                  ("the points trained one after another:" if cuda else
                   "the first placement whose models had the same intra-op threads (on the "
                   "CPU the thread count changes the order of floating-point sums):"), "",
                  "| K | placement | wall s | images/s (all models) | weights |", "|---|---|---|---|---|"]
        for r in report["deterministic"]:
            lines.append("| %d | %s | %.1f | %.0f | %s |" % (
                r["models"], r["placement"], r["wall_seconds"], r["images_per_second"],
                "(the reference)" if r["weights_reference"] == r["placement"] else
                ("equal to " if r["same_weights_as_reference"] else "**differ from** ") +
                r["weights_reference"]))
    lines += ["", "![throughput and decode work per model](%s)" % png, "", "## Goals", ""]
    for k in sorted({r["models"] for r in rows if r["models"] > 1}):
        get = {r["placement"]: r for r in rows if r["models"] == k}
        if "shared" in get and "threads" in get:
            saving = (get["threads"]["decode_core_seconds_per_model"] /
                      get["shared"]["decode_core_seconds_per_model"])
            lines.append("- K = %d: `shared` decodes %.1fx less per model than K separate loaders "
                         "(`threads`; goal at least 0.8K = %.1fx): %s." %
                         (k, saving, 0.8 * k, "met" if saving >= 0.8 * k else "**not met**"))
        candidates = [get[p] for p in PLACEMENTS[1:] if p in get]
        if not candidates:
            continue
        key = "last_epoch_images_per_second" if cuda else "images_per_second"
        best = max(candidates, key=lambda r: r[key])
        baseline = get.get("PyTorch DataLoader, one by one")
        lines.append("- K = %d: the fastest placement, `%s`, trains %.2fx the images/s of "
                     "`sequential`%s%s." %
                     (k, best["placement"], best[key] / get["sequential"][key],
                      " in the last epoch (%.2fx over the whole command)" %
                      (best["images_per_second"] / get["sequential"]["images_per_second"])
                      if cuda else "",
                      " and %.1fx the DataLoader baseline's" %
                      (best["images_per_second"] / baseline["images_per_second"])
                      if baseline else ""))
    for r in alone:
        lines.append("- K = %d: each of K pinned processes takes %.3fx the epoch time of one "
                     "model alone on the same share of the cores (the paper's \"no "
                     "overhead\"; goal at most 1.05x): %s." %
                     (r["models"], r["concurrent_over_alone"],
                      "met" if r["concurrent_over_alone"] <= 1.05 else "**not met**"))
    if report.get("deterministic"):
        compared = [r for r in report["deterministic"]
                    if r["weights_reference"] != r["placement"]]
        lines.append("- With `training.deterministic`, the points end with the same weights "
                     "in every placement (%s): %s." %
                     ("; ".join("`%s` against `%s`" % (r["placement"], r["weights_reference"])
                                for r in compared) or "no two placements compared",
                      "met" if all(r["same_weights_as_reference"] for r in compared)
                      else "**not met**"))
    if not cuda:
        lines += ["", "## Not measured here", "",
                  "- GPU figures: K = 1, 2, 4, 8 ResNet-18 at 160 px on one H100 in `threads` and "
                  "`shared` (`recipes/many_models/rn18_4_per_gpu.toml`), and the paper's 8 x "
                  "ResNet-18 node (`recipes/many_models/rn18_8_per_node.toml`), need the GPU "
                  "machines; this machine has none.",
                  "- With 2 cores, K processes of one core each is the largest even split: the "
                  "alone-against-concurrent comparison is made for K = 2 only." if alone else None,
                  "- The DataLoader baseline ran once per K (the others: the fastest of the "
                  "repeats)." if has_baseline else None, ""]
    return "\n".join(line for line in lines if line is not None) + "\n"


def plot(report, path):
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    cuda = report.get("device") == "cuda"
    rows = [r for r in report["rows"] if r["placement"] in PLACEMENTS]
    placements = [p for p in PLACEMENTS if any(r["placement"] == p for r in rows)]
    ks = sorted({r["models"] for r in rows})
    fig, (left, right) = plt.subplots(1, 2, figsize=(11, 4))
    key = "last_epoch_images_per_second" if cuda else "images_per_second"
    for placement in placements:
        mine = [next(r for r in rows if r["models"] == k and r["placement"] == placement)
                for k in ks]
        left.plot(ks, [r[key] for r in mine], marker="o", label=placement)
        right.plot(ks, [r["decode_core_seconds_per_model"] for r in mine], marker="o",
                   label=placement)
    baseline = [r for r in report["rows"] if r["placement"].startswith("PyTorch DataLoader")]
    if baseline:
        left.plot([r["models"] for r in baseline], [r["images_per_second"] for r in baseline],
                  marker="s", linestyle="--", color="gray", label="PyTorch DataLoader, one by one")
    left.set(xlabel="models trained (K)",
             ylabel="training images/s, all models" + (" (last epoch)" if cuda else ""),
             title="Throughput of K models", xticks=ks)
    right.set(xlabel="models trained (K)", ylabel="decode core-seconds per model",
              title="Decode work per model", xticks=ks)
    right.set_ylim(bottom=0)
    left.set_ylim(bottom=0)
    left.legend()
    m = report["machine"]
    fig.suptitle("%s, %d cores%s" % (m["cpu"], report["cores"],
                                     "; " + m["gpu"] if m.get("gpu") else ""), fontsize=9)
    fig.tight_layout()
    fig.savefig(path, dpi=120)


if __name__ == "__main__":
    main()
