#!/usr/bin/env python3
"""Plots of an ablation sweep (`ffcv ablate`): samples/s (and, for training sweeps, validation
top-1) against each axis.

    plot_ablation.py OUT/ablation.json

Writes OUT/ablation-AXIS.png per axis (one line per combination of the other axes; training
sweeps also OUT/ablation-AXIS-top1.png), for a sweep of exactly two axes
OUT/ablation-heatmap.png, and when file sizes differ OUT/ablation-size.png (samples/s against
file size). Failed cells are left out of the lines and shown as empty cells of the heatmap.
Prints the files written on one line.
"""
import itertools
import json
import sys
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402


def save(fig, path, name, written):
    fig.tight_layout()
    fig.savefig(path.parent / name, dpi=110)
    plt.close(fig)
    written.append(name)


def plot_axes(data, path, values, label, suffix, written):
    axes = data["axes"]
    for a, axis in enumerate(axes):
        others = [o for o in range(len(axes)) if o != a]
        fig, ax = plt.subplots(figsize=(6.4, 4.2))
        for combo in itertools.product(*[axes[o]["values"] for o in others]):
            xs, ys = [], []
            for i, value in enumerate(axis["values"]):
                key = [None] * len(axes)
                key[a] = value
                for o, v in zip(others, combo):
                    key[o] = v
                if tuple(key) in values:
                    xs.append(i)
                    ys.append(values[tuple(key)])
            if xs:
                name = ", ".join(f"{axes[o]['key']}={v}" for o, v in zip(others, combo)) or None
                ax.plot(xs, ys, marker="o", label=name)
        ax.set_xticks(range(len(axis["values"])), axis["values"])
        ax.set_xlabel(axis["key"])
        ax.set_ylabel(label)
        ax.set_ylim(bottom=0)
        ax.grid(alpha=0.3)
        if others:
            ax.legend(fontsize=7)
        ax.set_title(f"{data['name']}: {label} by {axis['key']}")
        save(fig, path, f"ablation-{axis['key']}{suffix}.png", written)


def plot_heatmap(data, path, values, written):
    rows, cols = data["axes"][0]["values"], data["axes"][1]["values"]
    grid = [[values.get((r, c), float("nan")) for c in cols] for r in rows]
    fig, ax = plt.subplots(figsize=(1.6 + 1.2 * len(cols), 1.4 + 0.7 * len(rows)))
    image = ax.imshow(grid, cmap="viridis", aspect="auto")
    ax.set_xticks(range(len(cols)), cols)
    ax.set_yticks(range(len(rows)), rows)
    ax.set_xlabel(data["axes"][1]["key"])
    ax.set_ylabel(data["axes"][0]["key"])
    for i, row in enumerate(grid):
        for j, value in enumerate(row):
            if value == value:
                ax.text(j, i, f"{value:.0f}", ha="center", va="center", color="white",
                        fontsize=8)
    fig.colorbar(image, ax=ax, label="samples/s")
    save(fig, path, "ablation-heatmap.png", written)


def plot_size(data, path, cells, written):
    fig, ax = plt.subplots(figsize=(6.4, 4.2))
    for c in cells:
        ax.scatter(c["file_bytes"] / 2**20, c["samples_per_s"], color="tab:blue")
        ax.annotate(" ".join(c["values"]), (c["file_bytes"] / 2**20, c["samples_per_s"]),
                    fontsize=6, xytext=(3, 3), textcoords="offset points")
    ax.set_xlabel("file size (MiB)")
    ax.set_ylabel("samples/s")
    ax.set_xlim(left=0)
    ax.set_ylim(bottom=0)
    ax.grid(alpha=0.3)
    ax.set_title(f"{data['name']}: throughput against file size")
    save(fig, path, "ablation-size.png", written)


def main():
    path = Path(sys.argv[1])
    data = json.loads(path.read_text())
    ok = [c for c in data["cells"] if c["ok"]]
    written = []
    rate = {tuple(c["values"]): c["samples_per_s"] for c in ok}
    plot_axes(data, path, rate, "samples/s", "", written)
    if any("val_top1" in c for c in ok):
        top1 = {tuple(c["values"]): 100 * c["val_top1"] for c in ok if "val_top1" in c}
        plot_axes(data, path, top1, "validation top-1 (%)", "-top1", written)
    if len(data["axes"]) == 2:
        plot_heatmap(data, path, rate, written)
    if len({c["file_bytes"] for c in ok}) > 1:
        plot_size(data, path, ok, written)
    print("plots: " + ", ".join(str(path.parent / name) for name in written))


if __name__ == "__main__":
    main()
