"""The SAGA case study: one LASSO path per target (fast_l1's datamodels recipe) fed by the FFCV
loader, against the same solver fed from memory-mapped .npy arrays.

  .venv/bin/python experiments/saga/saga_study.py --size small --out results/saga

Datamodels-like data: boolean masks (each entry Bernoulli(0.5)) and K targets, each a sparse
linear function of the standardized masks plus noise. The masks are written bit-packed into a
.beton (`ffcv write npy --pack-bits`) and kept as a bool .npy. Each repeat runs one recipe twice
with `ffcv run`: `data.loader=ffcv` (the .beton) and `data.loader=mmap` (the .npy arrays, same
batches in the same order), and reads from each run's summary.json the seconds per epoch of
the solver, the seconds per epoch of reading the train features alone through the same loader
and device (stream), the time to the selected model and the epochs. Goals:

  solver epoch / stream epoch (FFCV loader)   at most 1.25: the solver keeps up with the data
  mmap epoch / FFCV epoch                     at least 2: the loader is what makes it fast

Sizes: small (seconds), medium (a 2-core, 24 GiB machine in a few minutes), paper (the FFCV
paper's n = 100,000 rows (90k + 10k), d = 50,000 masks, batch 2,000, lr 5e-3, lambda path of
100 points down to 1e-6: for a GPU machine, --device cuda). Writes OUT.json, OUT.md, OUT.png.
`--render OUT.json` only redraws the .md and .png of an earlier run.
"""
import argparse
import datetime
import json
import os
import resource
import shlex
import subprocess
import sys
import time

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, ".."))
from benchmark_machine import machine  # noqa: E402
from owned_folders import remove_owned  # noqa: E402

sys.path.insert(0, os.path.join(HERE, "..", "..", "tools", "saga"))
from path_csv import path_rows  # noqa: E402

# Per size: rows, features, targets, true nonzeros per target, and the recipe's settings. The
# steps respect SAGA's limit for standardized +-1 features, about 1 / (3 (1 + sqrt(d / B))^2).
SIZES = {
    # recipes/saga/small.toml's problem and settings.
    "small": {"n_train": 4000, "n_val": 1000, "d": 1000, "k": 8, "support": 10,
              "data": {"batch_size": 500, "num_workers": 0},
              "saga": {"lr": 0.05, "num_lambdas": 10, "epsilon": 1e-2, "max_epochs": 1000,
                       "early_stop_freq": 2, "early_stop_eps": 1e-5, "min_lambdas": 4}},
    "medium": {"n_train": 18000, "n_val": 2000, "d": 5000, "k": 10, "support": 25,
               "data": {"batch_size": 1000, "num_workers": 0},
               "saga": {"lr": 0.02, "num_lambdas": 15, "epsilon": 1e-2, "max_epochs": 400,
                        "early_stop_freq": 3, "early_stop_eps": 1e-6, "min_lambdas": 8}},
    # recipes/saga/datamodels_paper.toml's settings (fast_l1's datamodels recipe).
    "paper": {"n_train": 90000, "n_val": 10000, "d": 50000, "k": 100, "support": 100,
              "data": {"batch_size": 2000, "num_workers": 8},
              "saga": {"lr": 5e-3, "num_lambdas": 100, "epsilon": 1e-6, "max_epochs": 2000,
                       "early_stop_freq": 3, "early_stop_eps": 5e-11, "min_lambdas": 10,
                       "table": "host"}},
}
GOAL_SOLVER_OVER_STREAM = 1.25
GOAL_MMAP_OVER_FFCV = 2.0
LOADERS = ["ffcv", "mmap"]
OTHER_WORK = 0.1  # a run during which other processes used more of the machine is disturbed


def generate(folder, size, seed=0):
    """Writes masks.npy (bool, n x d), targets.npy (float32, n x K) and truth.npy (d x K)."""
    n, d, k = size["n_train"] + size["n_val"], size["d"], size["k"]
    rng = np.random.default_rng(seed)
    truth = np.zeros((d, k), np.float32)
    for t in range(k):
        rows = rng.choice(d, size["support"], replace=False)
        # Unit signal variance per target (the standardized masks are +-1), noise of std 1.
        truth[rows, t] = rng.choice([-1, 1], size["support"]) * \
            rng.uniform(0.5, 1.5, size["support"])
        truth[:, t] /= np.sqrt((truth[:, t] ** 2).sum())
    masks = np.lib.format.open_memmap(os.path.join(folder, "masks.npy"), "w+", np.bool_, (n, d))
    targets = np.lib.format.open_memmap(os.path.join(folder, "targets.npy"), "w+", np.float32,
                                        (n, k))
    support = np.flatnonzero(np.abs(truth).sum(axis=1))
    chunk = max(1, (1 << 25) // d)
    for start in range(0, n, chunk):
        stop = min(n, start + chunk)
        block = rng.random((stop - start, d), np.float32) < 0.5
        masks[start:stop] = block
        signed = 2.0 * block[:, support] - 1.0  # population standardization of Bernoulli(0.5)
        targets[start:stop] = signed @ truth[support] + \
            rng.standard_normal((stop - start, k)).astype(np.float32)
    masks.flush()
    targets.flush()
    np.save(os.path.join(folder, "truth.npy"), truth)


def toml_value(v):
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, str):
        return json.dumps(v)
    return repr(v) if isinstance(v, float) else str(v)


def write_recipe(path, data, saga):
    lines = ["# Written by experiments/saga/saga_study.py", "[data]"]
    lines += ["%s = %s" % (k, toml_value(v)) for k, v in data.items()]
    lines += ["", "[saga]"] + ["%s = %s" % (k, toml_value(v)) for k, v in saga.items()]
    with open(path, "w") as f:
        f.write("\n".join(lines) + "\n")


def call(command, log):
    text = " ".join(shlex.quote(c) for c in command)
    log.append(text)
    print("$ " + text, flush=True)
    began = time.monotonic()
    done = subprocess.run(command, capture_output=True, text=True)
    if done.returncode != 0:
        sys.exit("failed (%d): %s\n%s%s" % (done.returncode, text, done.stdout[-4000:],
                                             done.stderr[-4000:]))
    return time.monotonic() - began


def gpu_name():
    try:
        done = subprocess.run(["nvidia-smi", "--query-gpu=name", "--format=csv,noheader"],
                              capture_output=True, text=True, timeout=30)
        if done.returncode == 0 and done.stdout.strip():
            return done.stdout.strip().splitlines()[0]
    except (OSError, subprocess.TimeoutExpired):
        pass
    return None


def memory_gib():
    try:
        with open("/proc/meminfo") as f:
            for line in f:
                if line.startswith("MemTotal:"):
                    return int(line.split()[1]) / 2 ** 20
    except OSError:
        pass
    return None


def read_path(folder):
    """The rows of the solve's own path (a refit's rows, phase "refit", left out)."""
    return path_rows(folder, "path")


def busy_cpu_seconds():
    """CPU seconds the whole machine has spent busy (not idle, not waiting on I/O)."""
    with open("/proc/stat") as f:
        ticks = [int(v) for v in f.readline().split()[1:]]
    return (sum(ticks[:8]) - ticks[3] - ticks[4]) / os.sysconf("SC_CLK_TCK")


def children_cpu_seconds():
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def run_figures(folder, truth):
    with open(os.path.join(folder, "summary.json")) as f:
        s = json.load(f)
    weights = np.load(os.path.join(folder, "weights.npy"))
    lambdas = np.load(os.path.join(folder, "lambda.npy"))
    chosen = np.abs(weights) > 1e-5
    true = np.abs(truth) > 0
    hits = int((chosen & true).sum())
    return {
        "seconds_per_epoch": s["seconds_per_epoch"],
        "stream_seconds_per_epoch": s["stream_seconds_per_epoch"],
        "time_to_selected_seconds": s["time_to_selected_seconds"],
        "seconds": s["seconds"], "epochs": s["epochs"],
        # Seconds the solver waited for batches over the whole run (stall time).
        "loader_wait_seconds": s.get("loader_wait_seconds"),
        "unfinished": s.get("unfinished"),
        "val_loss": s["val_loss"], "nnz": int(chosen.sum()),
        "selected_lambdas": [float(v) for v in np.ravel(lambdas)],
        # Support recovery of the selected models against the generating weights.
        "precision": hits / max(int(chosen.sum()), 1), "recall": hits / max(int(true.sum()), 1),
        "loader_reported": s.get("loader"), "device": s.get("device"),
    }


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--ffcv", default="build/bin/ffcv")
    parser.add_argument("--out", default="results/saga", help="writes OUT.json, OUT.md, OUT.png")
    parser.add_argument("--work", default="data",
                        help="the data and runs go to WORK/saga-SIZE (the recipes in "
                             "recipes/saga/ read data/saga-SIZE)")
    parser.add_argument("--size", choices=sorted(SIZES), default="small")
    parser.add_argument("--device", choices=["cpu", "cuda"], default="cpu")
    parser.add_argument("--repeats", type=int, default=2,
                        help="runs of each loader, interleaved; the fastest is reported")
    parser.add_argument("--targets", type=int, help="K, instead of the size's")
    parser.add_argument("--workers", type=int, help="data.num_workers, instead of the size's")
    parser.add_argument("--max-epochs", type=int, help="saga.max_epochs, instead of the size's")
    parser.add_argument("--set", action="append", default=[], metavar="KEY=VALUE",
                        help="one more recipe override for every run (repeatable)")
    parser.add_argument("--data-only", action="store_true",
                        help="only make the data (.npy arrays and the .beton), then stop")
    parser.add_argument("--render", metavar="JSON",
                        help="only write the .md and .png of an earlier run's JSON")
    args = parser.parse_args()
    if args.render:
        with open(args.render) as f:
            report = json.load(f)
        render(report, args.out)
        return

    size = dict(SIZES[args.size])
    if args.targets:
        size["k"] = args.targets
    data_cfg = dict(size["data"])
    if args.workers is not None:
        data_cfg["num_workers"] = args.workers
    saga_cfg = dict(size["saga"])
    if args.max_epochs:
        saga_cfg["max_epochs"] = args.max_epochs
    ffcv = [sys.executable, args.ffcv] if args.ffcv.endswith(".py") else [args.ffcv]
    work = os.path.join(args.work, "saga-" + args.size)
    os.makedirs(work, exist_ok=True)
    commands = []

    # The data, made once per size and reused.
    masks, targets = os.path.join(work, "masks.npy"), os.path.join(work, "targets.npy")
    beton = os.path.join(work, "masks.beton")
    n = size["n_train"] + size["n_val"]
    stamp = os.path.join(work, "made.json")
    wanted = {"n": n, "d": size["d"], "k": size["k"], "support": size["support"]}
    made = {}
    if os.path.exists(stamp):
        with open(stamp) as f:
            made = json.load(f)
    write_seconds = made.get("write_seconds")
    if {key: made.get(key) for key in wanted} != wanted or not os.path.exists(beton):
        print("generating %d x %d masks and %d targets in %s" % (n, size["d"], size["k"], work),
              flush=True)
        generate(work, size)
        write_seconds = call(ffcv + ["write", "npy", "--features", masks, "--targets", targets,
                                     "--output", beton, "--pack-bits"], commands)
        with open(stamp, "w") as f:
            json.dump(dict(wanted, write_seconds=write_seconds), f)
    else:
        commands.append("(data reused from %s, written in %.1f s)" % (work, write_seconds))
    if args.data_only:
        print("data in %s: masks.npy, targets.npy, masks.beton" % work)
        return
    truth = np.load(os.path.join(work, "truth.npy"))

    recipe = os.path.join(work, "recipe.toml")
    data = {"train": beton, "features": "features", "targets": "target",
            "num_train": size["n_train"], "num_val": size["n_val"], "mask_bits": size["d"],
            "loader": "ffcv", "features_npy": masks, "targets_npy": targets,
            "order": "random", "seed": 0, **data_cfg}
    saga = {"objective": "lasso_path", "family": "gaussian", "alpha": 1.0, **saga_cfg,
            "refit": True, "device": args.device}
    write_recipe(recipe, data, saga)

    runs = {loader: [] for loader in LOADERS}
    for r in range(args.repeats):
        for loader in LOADERS:
            out = os.path.join(work, "runs", "%s-%d" % (loader, r))
            remove_owned(out, "saga_study", run_folder=True)
            overrides = ["--set", "data.loader=" + loader]
            for extra in args.set:
                overrides += ["--set", extra]
            busy_before, ours_before = busy_cpu_seconds(), children_cpu_seconds()
            wall = call(ffcv + ["run", recipe] + overrides + ["--output-dir", out], commands)
            figures = run_figures(out, truth)
            # CPU time spent during the run by everything but the run itself: other work.
            other = (busy_cpu_seconds() - busy_before) - (children_cpu_seconds() - ours_before)
            figures.update(wall_seconds=wall, folder=out,
                           other_cpu_share=max(other, 0.0) / (wall * os.cpu_count()))
            runs[loader].append(figures)
            print("  %s repeat %d: %.3f s/epoch (stream %.3f), %d epochs, selected after %.1f s,"
                  " wall %.1f s" % (loader, r, figures["seconds_per_epoch"],
                                    figures["stream_seconds_per_epoch"], figures["epochs"],
                                    figures["time_to_selected_seconds"], wall), flush=True)

    best = {loader: min(runs[loader], key=lambda f: f["seconds_per_epoch"]) for loader in LOADERS}
    # The loaders give the same batches in the same order: the fits should be the same.
    w = {loader: np.load(os.path.join(best[loader]["folder"], "weights.npy")) for loader in LOADERS}
    same = float(np.abs(w["ffcv"] - w["mmap"]).max())
    path = read_path(best["ffcv"]["folder"])
    cpus = sorted(os.sched_getaffinity(0))
    report = {
        "date": datetime.datetime.now().astimezone().isoformat(timespec="seconds"),
        "command": ".venv/bin/python " + " ".join(shlex.quote(a) for a in sys.argv),
        "commands": commands,
        "machine": dict(machine(), affinity=len(cpus), memory_gib=memory_gib(), gpu=gpu_name()),
        "size": args.size, "device": args.device, "repeats": args.repeats,
        "problem": dict(wanted, n_train=size["n_train"], n_val=size["n_val"]),
        "recipe": {"data": data, "saga": saga}, "set": args.set,
        "write_seconds": write_seconds,
        "bytes": {"beton": os.path.getsize(beton), "masks_npy": os.path.getsize(masks)},
        "runs": runs, "best": best,
        "ratios": {
            "solver_over_stream_ffcv": best["ffcv"]["seconds_per_epoch"] /
            best["ffcv"]["stream_seconds_per_epoch"],
            "solver_over_stream_mmap": best["mmap"]["seconds_per_epoch"] /
            best["mmap"]["stream_seconds_per_epoch"],
            "mmap_over_ffcv_epoch": best["mmap"]["seconds_per_epoch"] /
            best["ffcv"]["seconds_per_epoch"],
            "mmap_over_ffcv_stream": best["mmap"]["stream_seconds_per_epoch"] /
            best["ffcv"]["stream_seconds_per_epoch"],
            "mmap_over_ffcv_time_to_selected": best["mmap"]["time_to_selected_seconds"] /
            best["ffcv"]["time_to_selected_seconds"],
        },
        "weights_max_difference_ffcv_mmap": same,
        "path_target0": [row for row in path if int(row["target"]) == 0],
    }
    os.makedirs(os.path.dirname(os.path.abspath(args.out)), exist_ok=True)
    with open(args.out + ".json", "w") as f:
        json.dump(report, f, indent=1)
    render(report, args.out)
    print("wrote %s.{json,md,png}" % args.out)


def render(report, out):
    plot(report, out + ".png")
    with open(out + ".md", "w") as f:
        f.write(markdown(report, os.path.basename(out) + ".png"))


def effective(report, section, key):
    """A recipe value as the runs saw it: the written recipe's, or the last --set of it."""
    value = report["recipe"][section][key]
    for extra in report.get("set", []):
        name, _, text = extra.partition("=")
        if name.strip() == section + "." + key:
            value = text.strip()
    return value


def figure(value, spec):
    """`value` formatted by `spec`, or n/a where a run had none (no lambda finished)."""
    if value is None or (isinstance(value, float) and value != value):
        return "n/a"
    return spec % value


def markdown(report, png):
    m, p, ratios, best = report["machine"], report["problem"], report["ratios"], report["best"]
    saga, data = report["recipe"]["saga"], report["recipe"]["data"]
    met = lambda ok: "met" if ok else "**not met**"
    refit = str(effective(report, "saga", "refit")).lower() in ("true", "1")
    max_epochs = int(effective(report, "saga", "max_epochs"))
    lines = [
        "# SAGA case study: a LASSO path per target, FFCV loader against memory-mapped .npy", "",
        "The fast_l1 datamodels recipe (`[saga] objective = \"lasso_path\"`) on datamodels-like "
        "data: boolean masks, each entry Bernoulli(0.5), and K targets that are sparse linear "
        "functions of the standardized masks plus noise of the signal's size. One recipe, run "
        "with `data.loader=ffcv` (the .beton, masks bit-packed) and with `data.loader=mmap` "
        "(the bool .npy arrays memory-mapped, the same batches in the same order). "
        "*Stream* is the time to read the train features once through the same loader onto the "
        "same device, without solver work, measured by the same run.", "",
        "Command: `%s`  " % report["command"],
        "Date: %s  " % report["date"],
        "Machine: %s; %d cores (%d in this process's affinity), %s GiB memory; GPU: %s; solver "
        "device: %s  " % (m["cpu"], m["cores"], m["affinity"],
                          "%.0f" % m["memory_gib"] if m.get("memory_gib") else "?",
                          m.get("gpu") or "none", report["device"]),
        "Problem (size `%s`): %d train + %d validation rows, d = %d masks, K = %d targets with "
        "%d true nonzeros each; .beton %.1f MB, masks .npy %.1f MB  " % (
            report["size"], p["n_train"], p["n_val"], p["d"], p["k"], p["support"],
            report["bytes"]["beton"] / 1e6, report["bytes"]["masks_npy"] / 1e6),
        "Recipe: batch %d, workers %s, lr %g, %d lambdas down to %g of lambda_max, "
        "early_stop_freq %d, early_stop_eps %g, min_lambdas %d, max_epochs %d, %s; each "
        "figure the fastest of %d runs" % (
            data["batch_size"], "0 (one per core)" if data.get("num_workers") == 0 else
            data.get("num_workers"), saga["lr"], saga["num_lambdas"],
            saga["epsilon"], saga["early_stop_freq"], saga["early_stop_eps"],
            saga["min_lambdas"], max_epochs,
            "refit on train + validation" if refit else "no refit", report["repeats"]), "",
        "| loader | solver s/epoch | stream s/epoch | solver / stream | epochs | waited for "
        "batches, s | time to selected model, s | run wall s | mean val loss | nnz | support "
        "precision / recall |",
        "|---|---|---|---|---|---|---|---|---|---|---|"]
    for loader in LOADERS:
        b = best[loader]
        wait = b.get("loader_wait_seconds")
        lines.append("| %s | %.4f | %.4f | %.2f | %d | %s | %.1f | %.1f | %s | %d | "
                     "%.2f / %.2f |" % (
                         loader, b["seconds_per_epoch"], b["stream_seconds_per_epoch"],
                         b["seconds_per_epoch"] / b["stream_seconds_per_epoch"], b["epochs"],
                         figure(wait, "%.2f"), b["time_to_selected_seconds"],
                         b["wall_seconds"], figure(b["val_loss"], "%.4g"), b["nnz"],
                         b["precision"], b["recall"]))
    lines += ["", "All runs (s/epoch, stream s/epoch, time to selected s; the share of the "
              "machine's %d cores that other processes used during the run):" % m["cores"], ""]
    for loader in LOADERS:
        lines.append("- %s: %s" % (loader, "; ".join(
            "%.4f, %.4f, %.1f (others %.0f%%)" % (
                r["seconds_per_epoch"], r["stream_seconds_per_epoch"],
                r["time_to_selected_seconds"], 100 * r.get("other_cpu_share", float("nan")))
            for r in report["runs"][loader])))
    lines += [
        "", "![seconds per epoch and the lambda path of target 0](%s)" % png, "", "## Goals", "",
        "- Solver epoch / stream epoch with the FFCV loader: %.2f (goal at most %.2f): %s." % (
            ratios["solver_over_stream_ffcv"], GOAL_SOLVER_OVER_STREAM,
            met(ratios["solver_over_stream_ffcv"] <= GOAL_SOLVER_OVER_STREAM)),
        "- mmap epoch / FFCV epoch: %.2fx (goal at least %.1fx): %s. Reading alone (stream): "
        "%.2fx; time to the selected model: %.2fx." % (
            ratios["mmap_over_ffcv_epoch"], GOAL_MMAP_OVER_FFCV,
            met(ratios["mmap_over_ffcv_epoch"] >= GOAL_MMAP_OVER_FFCV),
            ratios["mmap_over_ffcv_stream"], ratios["mmap_over_ffcv_time_to_selected"]),
        reading(report),
        bounded(report, max_epochs),
        "- The two loaders' selected models differ by at most %.3g in any weight (same batches, "
        "same order: 0 expected up to the order of floating-point sums)." %
        report["weights_max_difference_ffcv_mmap"],
        "", "## Not measured here", ""]
    lines = [line for line in lines if line is not None]
    if report["size"] != "paper" or report["device"] != "cuda":
        lines.append("- The paper's size (n = 100,000, d = 50,000, batch 2,000) on a GPU "
                     "(`--size paper --device cuda`): %s." % (
                         "this machine has no GPU" if not m.get("gpu") else
                         "not run in this invocation"))
    busy = [r for loader in LOADERS for r in report["runs"][loader]
            if r.get("other_cpu_share", 0) > OTHER_WORK]
    if busy:
        lines.append("- Undisturbed timings: during %d of the %d runs other processes used more "
                     "than %.0f%% of the machine during them, so their figures are upper bounds; "
                     "the tables keep the fastest repeat." % (
                         len(busy), sum(len(v) for v in report["runs"].values()),
                         100 * OTHER_WORK))
    lines.append("- The FFCV paper (§4.4) does not describe its own baseline's loader; "
                 "mmap here is our solver fed from memory-mapped .npy arrays, not the Python "
                 "fast_l1 with a PyTorch DataLoader.")
    lines.append("")
    return "\n".join(lines)


def bounded(report, max_epochs):
    """A line when max_epochs ended the runs before every target's path was done."""
    b = report["best"]["ffcv"]
    if not b.get("unfinished"):
        return None
    return ("- The runs were bounded at max_epochs = %d: %d of %d targets had not finished their "
            "path, so the seconds per epoch stand, while the time to the selected model, the "
            "fit (val loss, nnz, support) and the path are those of where the runs stopped." % (
                max_epochs, b["unfinished"], report["problem"]["k"]))


def reading(report):
    """One line on what bounds an epoch here, from the loader's wait time."""
    b = report["best"]["ffcv"]
    wait = b.get("loader_wait_seconds")
    if wait is None:
        return None
    solving = b["seconds_per_epoch"] * b["epochs"]
    share = wait / solving if solving > 0 else float("nan")
    if share < 0.1:
        return ("- With the FFCV loader the solver waited %.2f s for batches in %.1f s of "
                "epochs (%.0f%%): the solver's arithmetic, not the data, bounds an epoch on this "
                "machine, so neither ratio can reach its goal here; the goals are the GPU's, "
                "where the arithmetic is fast." % (wait, solving, 100 * share))
    return ("- With the FFCV loader the solver waited %.2f s for batches in %.1f s of epochs "
            "(%.0f%%)." % (wait, solving, 100 * share))


def plot(report, path):
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    best = report["best"]
    fig, (left, right) = plt.subplots(1, 2, figsize=(11, 4))
    labels = ["stream\n(ffcv)", "SAGA\n(ffcv)", "stream\n(mmap)", "SAGA\n(mmap)"]
    values = [best["ffcv"]["stream_seconds_per_epoch"], best["ffcv"]["seconds_per_epoch"],
              best["mmap"]["stream_seconds_per_epoch"], best["mmap"]["seconds_per_epoch"]]
    colors = ["#9ecae1", "#3182bd", "#fdae6b", "#e6550d"]
    bars = left.bar(labels, values, color=colors)
    for bar, v in zip(bars, values):
        left.annotate("%.3g" % v, (bar.get_x() + bar.get_width() / 2, v), ha="center",
                      va="bottom", fontsize=8)
    left.set(ylabel="seconds per epoch", title="Epoch time: reading alone and with SAGA")
    rows = [r for r in report["path_target0"] if r["lambda"] > 0]
    if rows:
        lams = [r["lambda"] for r in rows]
        right.plot(lams, [r["val_loss"] for r in rows], marker="o", ms=3, label="validation")
        right.plot(lams, [r["train_loss"] for r in rows], marker=".", ms=3, label="train")
        chosen = best["ffcv"]["selected_lambdas"][0]
        right.axvline(chosen, color="gray", linestyle="--", label="selected lambda")
        right.set_xscale("log")
        right.legend()
    else:
        right.text(0.5, 0.5, "no lambda of target 0 finished\n(the run was bounded by max_epochs)",
                   ha="center", va="center", transform=right.transAxes)
        right.set_xticks([])
        right.set_yticks([])
    right.set(xlabel="lambda", ylabel="loss (path.csv)", title="Lambda path of target 0 (ffcv)")
    p = report["problem"]
    fig.suptitle("%s; n=%d, d=%d, K=%d; device %s" % (
        report["machine"]["cpu"], p["n_train"] + p["n_val"], p["d"], p["k"], report["device"]),
        fontsize=9)
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)


if __name__ == "__main__":
    main()
