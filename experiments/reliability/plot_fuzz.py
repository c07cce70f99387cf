#!/usr/bin/env python3
"""Plots a tools/fuzz.sh run: coverage features and edges against executions, per harness.

Reads FUZZ_DIR/logs/HARNESS.log (libFuzzer's progress lines "#N ... cov: E ft: F") and
FUZZ_DIR/fuzz-summary.json, writes a PNG and a JSON table (executions, seconds, edges reached of
the instrumented edges, features, corpus files, findings) for results/reliability.md.

    .venv/bin/python experiments/reliability/plot_fuzz.py build-asan \\
        --png results/reliability-fuzz.png --json results/reliability-fuzz.json
"""
import argparse
import json
import re
from pathlib import Path

PROGRESS = re.compile(r"^#(\d+)\s+\w+\s+cov: (\d+) ft: (\d+)")
INSTRUMENTED = re.compile(r"\((\d+) PCs\)")


def read_log(path):
    points, instrumented = [], None
    for line in path.read_text(errors="replace").splitlines():
        if instrumented is None and (m := INSTRUMENTED.search(line)):
            instrumented = int(m.group(1))
        if m := PROGRESS.match(line):
            points.append(tuple(int(g) for g in m.groups()))
    return points, instrumented


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("fuzz_dir")
    parser.add_argument("--png", required=True)
    parser.add_argument("--json", required=True)
    args = parser.parse_args()
    root = Path(args.fuzz_dir)
    summary = json.loads((root / "fuzz-summary.json").read_text())
    table = {}
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    figure, (left, right) = plt.subplots(1, 2, figsize=(11, 4.2))
    for harness, figures in summary.items():
        points, instrumented = read_log(root / "logs" / f"{harness}.log")
        if not points:
            continue
        executions = [p[0] for p in points]
        left.plot(executions, [p[1] for p in points], label=harness)
        right.plot(executions, [p[2] for p in points], label=harness)
        table[harness] = dict(figures, instrumented_edges=instrumented,
                              edges_share=round(figures["coverage_edges"] / instrumented, 4)
                              if instrumented and figures.get("coverage_edges") else None)
    for axis, what in ((left, "edges covered"), (right, "coverage features")):
        axis.set_xscale("log")
        axis.set_xlabel("executions")
        axis.set_ylabel(what)
        axis.grid(alpha=0.3)
    left.legend()
    total = sum(t["seconds"] for t in table.values()) / 3600
    figure.suptitle(f"libFuzzer under ASan + UBSan: {total:.2f} CPU-hours, "
                    f"{sum(t['executions'] or 0 for t in table.values()):,} executions, "
                    f"{sum(len(t['findings']) for t in table.values())} open findings")
    figure.tight_layout()
    figure.savefig(args.png, dpi=110)
    Path(args.json).write_text(json.dumps(table, indent=1) + "\n")
    for harness, t in table.items():
        print(f"{harness}: {t['executions']:,} executions in {t['seconds']} s, "
              f"{t['coverage_edges']} of {t['instrumented_edges']} edges, {t['features']} "
              f"features, {t['corpus_files']} corpus files, {len(t['findings'])} findings")


if __name__ == "__main__":
    main()
