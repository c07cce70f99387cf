#!/usr/bin/env python3
"""Measures what a newcomer waits for, on a fresh clone of this checkout's commit.

In one run, in a new folder:
  1. `tools/quickstart.sh` on the fresh clone (Python packages downloaded, not taken from pip's
     cache; Debian packages that are missing are installed, and the report says how many were),
  2. `tools/quickstart.sh` again (the set-up finds everything in place),
  3. `tools/test.sh` (the whole suite, sanitizers and fuzzers included),
  4. the main job again with data.seed = 1 and 2, so that with the quickstart's run (seed 0)
     its test accuracy is known over 3 seeds.
Each command's output goes to WORKDIR/logs/; the report goes to OUTPUT.{md,json}.

  experiments/main_job/measure_newcomer.py [--workdir DIR] [--output results/newcomer]
      [--seeds 1 2] [--no-tests]
  experiments/main_job/measure_newcomer.py --render results/newcomer.json   (the .md again)
"""
from __future__ import annotations

import argparse
import datetime
import json
import os
import re
import subprocess
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
REPO = HERE.parent.parent
sys.path.insert(0, str(HERE.parent))
from benchmark_machine import machine  # noqa: E402
from owned_folders import make_owned  # noqa: E402

MAKER = "measure_newcomer"
GOALS = {"quickstart_fresh": 8 * 60, "quickstart_again": 4 * 60, "tests_after_quickstart": 20 * 60}


def missing_debian_packages(clone: Path) -> list[str]:
    """The packages `tools/setup.sh` would install on this machine now (all of its list)."""
    text = (clone / "tools" / "setup.sh").read_text()
    names = []
    for block in re.findall(r"DEBIAN_PACKAGES(?:\+)?=\(([^)]*)\)", text):
        names += [word for word in block.split() if not word.startswith("#")]
    missing = []
    for name in names:
        state = subprocess.run(["dpkg-query", "-W", "-f=${Status}", name], capture_output=True,
                               text=True)
        if "install ok installed" not in state.stdout:
            missing.append(name)
    return missing


def timed(name: str, command: list[str], cwd: Path, logs: Path, env: dict) -> dict:
    """Runs `command`, its output to LOGS/NAME.log and to this terminal; returns its time."""
    print(f"[{MAKER}] {name}: {' '.join(command)}", flush=True)
    log_path = logs / f"{name}.log"
    started = time.monotonic()
    with open(log_path, "w") as log:
        process = subprocess.Popen(command, cwd=cwd, env=env, stdout=subprocess.PIPE,
                                   stderr=subprocess.STDOUT, text=True, bufsize=1)
        try:
            for line in process.stdout:
                log.write(line)
                if line.startswith("[") and "]" in line[:20]:
                    print("    " + line.rstrip(), flush=True)
            status = process.wait()
        except BaseException:
            process.terminate()
            process.wait()
            raise
    seconds = time.monotonic() - started
    print(f"[{MAKER}] {name}: exit {status} after {seconds / 60:.1f} min", flush=True)
    if status != 0:
        sys.exit(f"{MAKER}: {name} failed with exit {status}; see {log_path}")
    steps = step_table(log_path.read_text())
    return {"command": " ".join(command), "seconds": round(seconds, 1), "steps": steps,
            "log": str(log_path)}


def step_table(text: str) -> list[list[str]]:
    """The '[X] NAME: TIME' lines the scripts print as each step ends, in order."""
    rows = []
    for prefix, name, took in re.findall(
            r"^\[(setup|quickstart|test)\] (.+): (\d+ min \d+ s|\d+ s)$", text, re.MULTILINE):
        rows.append([prefix, name, took])
    return rows


def newest_run(clone: Path, before: set[Path]) -> dict:
    runs = sorted(set((clone / "runs").glob("fashion_mnist-*")) - before)
    if len(runs) != 1:
        sys.exit(f"{MAKER}: expected one new run folder in {clone / 'runs'}, found {len(runs)}")
    summary = json.loads((runs[0] / "summary.json").read_text())
    return {"folder": str(runs[0]), "val_top1": summary["val_top1"],
            "val_top5": summary.get("val_top5"), "train_seconds": summary.get("train_seconds"),
            "weights_digest": summary.get("weights_digest"), "seed": None}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    stamp = datetime.datetime.now().strftime("%Y%m%d-%H%M%S")
    parser.add_argument("--workdir", type=Path, default=Path(f"/tmp/ffcv-newcomer-{stamp}"))
    parser.add_argument("--output", type=Path, default=REPO / "results" / "newcomer")
    parser.add_argument("--seeds", type=int, nargs="*", default=[1, 2],
                        help="seeds of the extra main-job runs (the quickstart's is 0)")
    parser.add_argument("--no-tests", action="store_true", help="leave out tools/test.sh")
    parser.add_argument("--render", type=Path, help="write the .md of this report's .json again")
    args = parser.parse_args()
    if args.render:
        write_report(json.loads(args.render.read_text()), args.render.with_suffix(""))
        return

    commit = subprocess.run(["git", "rev-parse", "HEAD"], cwd=REPO, capture_output=True,
                            text=True, check=True).stdout.strip()
    if subprocess.run(["git", "status", "--porcelain", "--untracked-files=no"], cwd=REPO,
                      capture_output=True, text=True).stdout.strip():
        print(f"[{MAKER}] note: the checkout has uncommitted changes; the clone has {commit[:10]} "
              "without them", flush=True)
    workdir = make_owned(args.workdir, MAKER)
    logs = workdir / "logs"
    logs.mkdir()
    clone = workdir / "clone"
    subprocess.run(["git", "clone", "--quiet", "--no-hardlinks", str(REPO), str(clone)],
                   check=True)
    subprocess.run(["git", "checkout", "--quiet", commit], cwd=clone, check=True)
    env = dict(os.environ, PIP_NO_CACHE_DIR="1")
    missing = missing_debian_packages(clone)

    report = {"commit": commit, "machine": machine(), "date": stamp,
              "debian_packages_missing_at_start": missing, "pip_cache": "off (PIP_NO_CACHE_DIR=1)",
              "times": {}, "goals_seconds": GOALS, "main_job": []}

    runs_before = set()
    report["times"]["quickstart_fresh"] = timed("quickstart_fresh", ["tools/quickstart.sh"],
                                                clone, logs, env)
    first = newest_run(clone, runs_before)
    first["seed"] = 0
    report["main_job"].append(first)
    runs_before = set((clone / "runs").glob("fashion_mnist-*"))
    report["times"]["quickstart_again"] = timed("quickstart_again", ["tools/quickstart.sh"],
                                                clone, logs, env)
    again = newest_run(clone, runs_before)
    report["quickstart_again_same_weights"] = again["weights_digest"] == first["weights_digest"]
    if not args.no_tests:
        report["times"]["tests_after_quickstart"] = timed("tests_after_quickstart",
                                                          ["tools/test.sh"], clone, logs, env)
    for seed in args.seeds:
        runs_before = set((clone / "runs").glob("fashion_mnist-*"))
        timed(f"main_job_seed_{seed}", ["build/bin/ffcv", "run", "recipes/fashion_mnist.toml",
                                        "--set", f"data.seed={seed}"], clone, logs, env)
        run = newest_run(clone, runs_before)
        run["seed"] = seed
        report["main_job"].append(run)

    accuracies = [run["val_top1"] for run in report["main_job"]]
    report["main_job_summary"] = {
        "seeds": len(accuracies), "mean_top1": sum(accuracies) / len(accuracies),
        "min_top1": min(accuracies), "max_top1": max(accuracies),
        "max_train_seconds": max(run["train_seconds"] or 0 for run in report["main_job"])}
    write_report(report, args.output)


def minutes(seconds: float) -> str:
    return f"{int(seconds // 60)} min {int(seconds % 60):02d} s"


def write_report(report: dict, output: Path) -> None:
    output.parent.mkdir(parents=True, exist_ok=True)
    output.with_suffix(".json").write_text(json.dumps(report, indent=1) + "\n")
    m = report["machine"]
    lines = [
        "# What a newcomer waits for",
        "",
        f"Command: `experiments/main_job/measure_newcomer.py` (commit {report['commit'][:10]}, "
        f"{report['date']})  ",
        f"Machine: {m['cpu']}, {m['cores']} cores, {m['platform']}  ",
        f"Fresh clone; Python packages downloaded, pip's cache {report['pip_cache']}; Debian packages "
        f"missing at the start: {len(report['debian_packages_missing_at_start'])} "
        f"({' '.join(report['debian_packages_missing_at_start']) or 'none'})",
        "",
        "| command | took | goal |",
        "|---|---|---|",
    ]
    names = {"quickstart_fresh": "`tools/quickstart.sh` on the fresh clone",
             "quickstart_again": "`tools/quickstart.sh` again",
             "tests_after_quickstart": "`tools/test.sh` after the quickstart"}
    for key, entry in report["times"].items():
        lines.append(f"| {names[key]} | {minutes(entry['seconds'])} | "
                     f"≤ {report['goals_seconds'][key] // 60} min |")
    for key, entry in report["times"].items():
        if entry["steps"]:
            lines += ["", f"{names[key]}, step by step:", "", "| script | step | took |",
                      "|---|---|---|"]
            lines += [f"| {p} | {n} | {t} |" for p, n, t in entry["steps"]]
    s = report["main_job_summary"]
    lines += ["", f"Main job (`recipes/fashion_mnist.toml`), test top-1 over {s['seeds']} seeds: "
              f"mean {100 * s['mean_top1']:.2f}%, min {100 * s['min_top1']:.2f}%, max "
              f"{100 * s['max_top1']:.2f}%; longest training {s['max_train_seconds']:.0f} s.", "",
              "| data.seed | test top-1 % | top-5 % | training s |", "|---|---|---|---|"]
    for run in report["main_job"]:
        lines.append(f"| {run['seed']} | {100 * run['val_top1']:.2f} | "
                     f"{100 * (run['val_top5'] or 0):.2f} | {run['train_seconds'] or 0:.0f} |")
    lines += ["", "The quickstart run again ended with the same weights (digest): "
              f"{'yes' if report['quickstart_again_same_weights'] else 'no'}."]
    output.with_suffix(".md").write_text("\n".join(lines) + "\n")
    print(f"[{MAKER}] wrote {output.with_suffix('.md')} and {output.with_suffix('.json')}")


if __name__ == "__main__":
    main()
