#!/usr/bin/env python3
"""Plots of an ablation sweep (`ffcv ablate`): samples/s against each axis.

    plot_ablation.py OUT/ablation.json

Writes OUT/ablation-AXIS.png per axis (one line per combination of the other axes), for a
sweep of exactly two axes OUT/ablation-heatmap.png, and when file sizes differ
OUT/ablation-size.png (samples/s against file size). Failed cells are left out of the lines and
shown as empty cells of the heatmap. Prints the files written on one line.
"""
import itertools
import json
import sys
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402


def main():
    path = Path(sys.argv[1])
    data = json.loads(path.read_text())
    axes = data["axes"]
    cells = data["cells"]
    rate = {tuple(c["values"]): c["samples_per_s"] for c in cells if c["ok"]}
    written = []
    for a, axis in enumerate(axes):
        others = [o for o in range(len(axes)) if o != a]
        fig, ax = plt.subplots(figsize=(6.4, 4.2))
        positions = range(len(axis["values"]))
        for combo in itertools.product(*[axes[o]["values"] for o in others]):
            xs, ys = [], []
            for i, value in enumerate(axis["values"]):
                key = [None] * len(axes)
                key[a] = value
                for o, v in zip(others, combo):
                    key[o] = v
                if tuple(key) in rate:
                    xs.append(i)
                    ys.append(rate[tuple(key)])
            if not xs:
                continue
            label = ", ".join(f"{axes[o]['key']}={v}" for o, v in zip(others, combo)) or None
            ax.plot(xs, ys, marker="o", label=label)
        ax.set_xticks(list(positions), axis["values"])
        ax.set_xlabel(axis["key"])
        ax.set_ylabel("samples/s")
        ax.set_ylim(bottom=0)
        ax.grid(alpha=0.3)
        if others:
            ax.legend(fontsize=7)
        ax.set_title(f"{data['name']}: samples/s by {axis['key']}")
        fig.tight_layout()
        out = path.parent / f"ablation-{axis['key']}.png"
        fig.savefig(out, dpi=110)
        plt.close(fig)
        written.append(out.name)
    if len(axes) == 2:
        rows, cols = axes[0]["values"], axes[1]["values"]
        grid = [[rate.get((r, c), float("nan")) for c in cols] for r in rows]
        fig, ax = plt.subplots(figsize=(1.6 + 1.2 * len(cols), 1.4 + 0.7 * len(rows)))
        image = ax.imshow(grid, cmap="viridis", aspect="auto")
        ax.set_xticks(range(len(cols)), cols)
        ax.set_yticks(range(len(rows)), rows)
        ax.set_xlabel(axes[1]["key"])
        ax.set_ylabel(axes[0]["key"])
        for i, row in enumerate(grid):
            for j, value in enumerate(row):
                if value == value:
                    ax.text(j, i, f"{value:.0f}", ha="center", va="center", color="white",
                            fontsize=8)
        fig.colorbar(image, ax=ax, label="samples/s")
        fig.tight_layout()
        out = path.parent / "ablation-heatmap.png"
        fig.savefig(out, dpi=110)
        plt.close(fig)
        written.append(out.name)
    sized = [c for c in cells if c["ok"]]
    if len({c["file_bytes"] for c in sized}) > 1:
        fig, ax = plt.subplots(figsize=(6.4, 4.2))
        for c in sized:
            ax.scatter(c["file_bytes"] / 2**20, c["samples_per_s"], color="tab:blue")
            ax.annotate(" ".join(c["values"]), (c["file_bytes"] / 2**20, c["samples_per_s"]),
                        fontsize=6, xytext=(3, 3), textcoords="offset points")
        ax.set_xlabel("file size (MiB)")
        ax.set_ylabel("samples/s")
        ax.set_xlim(left=0)
        ax.set_ylim(bottom=0)
        ax.grid(alpha=0.3)
        ax.set_title(f"{data['name']}: throughput against file size")
        fig.tight_layout()
        out = path.parent / "ablation-size.png"
        fig.savefig(out, dpi=110)
        plt.close(fig)
        written.append(out.name)
    print("plots: " + ", ".join(str(path.parent / name) for name in written))


if __name__ == "__main__":
    main()
