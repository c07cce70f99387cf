#!/usr/bin/env python3
"""Plot of a grid of training runs (`ffcv run RECIPE --grid ...`).

    plot_grid.py GRID/grid.json

Writes GRID/grid.png: on the left, the final validation top-1 of every point (points that did
not finish are listed with their state); on the right, top-1 against the first swept key, one
line per combination of the other keys (numeric values on a numeric axis). Prints the file
written on one line.
"""
import json
import sys
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402


def as_number(text):
    try:
        return float(text)
    except ValueError:
        return None


def main():
    path = Path(sys.argv[1])
    data = json.loads(path.read_text())
    keys, points = data["keys"], data["points"]
    fig, (left, right) = plt.subplots(
        1, 2, figsize=(12, max(3.5, 0.35 * len(points) + 1.5)),
        gridspec_kw={"width_ratios": [1.2, 1]})

    labels = [f"{p['point']}: " + " ".join(f"{k}={p['values'][k]}" for k in keys if p["values"][k])
              for p in points]
    top1 = [100 * p["val_top1"] if p["state"] == "finished" else 0 for p in points]
    bars = left.barh(range(len(points)), top1, color="#3b75af")
    for bar, p in zip(bars, points):
        if p["state"] != "finished":
            left.text(0.5, bar.get_y() + bar.get_height() / 2, p["state"], va="center",
                      color="#b22222")
    left.set_yticks(range(len(points)))
    left.set_yticklabels(labels, fontsize=8)
    left.invert_yaxis()
    left.set_xlabel("validation top-1 (%)")
    left.set_title("every point")

    if keys:
        first, others = keys[0], keys[1:]
        groups = {}
        for p in points:
            if p["state"] != "finished":
                continue
            rest = " ".join(f"{k}={p['values'][k]}" for k in others)
            groups.setdefault(rest, []).append((p["values"][first], 100 * p["val_top1"]))
        numeric = all(as_number(v) is not None for g in groups.values() for v, _ in g)
        for rest, values in groups.items():
            xs = [as_number(v) if numeric else v for v, _ in values]
            right.plot(xs, [t for _, t in values], marker="o", label=rest or None)
        if any(groups):
            right.legend(fontsize=7)
        right.set_xlabel(first)
        right.set_ylabel("validation top-1 (%)")
        right.set_title(f"top-1 against {first}")
        right.grid(alpha=0.3)
    else:
        right.axis("off")

    fig.tight_layout()
    out = path.parent / "grid.png"
    fig.savefig(out, dpi=110)
    print(f"plot: {out}")


if __name__ == "__main__":
    main()
