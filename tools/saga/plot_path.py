"""Plots a SAGA run's regularization path: python plot_path.py RUN_DIR -> RUN_DIR/path.png.

Left: the validation (or training) loss along λ for each target column, the selected λ marked.
Right: the number of nonzero weights along λ. Prints the written file's path as its last line.
"""
import json
import math
import os
import sys

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

from path_csv import path_rows  # noqa: E402  (beside this script)


def main(run_dir):
    rows = path_rows(run_dir, "path")
    with open(os.path.join(run_dir, "summary.json")) as f:
        summary = json.load(f)
    by_target = {}
    for r in rows:
        by_target.setdefault(int(r["target"]), []).append(r)
    shown = sorted(by_target)[:8]
    use_val = any(not math.isnan(r["val_loss"]) for r in rows)
    key = "val_loss" if use_val else "train_loss"
    fig, (loss_ax, nnz_ax) = plt.subplots(1, 2, figsize=(11, 4))
    for target in shown:
        points = [r for r in by_target[target] if r["lambda"] > 0]
        lambdas = [r["lambda"] for r in points]
        label = "all outputs" if target < 0 else f"target {target}"
        loss_ax.plot(lambdas, [r[key] for r in points], marker=".", label=label)
        nnz_ax.plot(lambdas, [int(r["nnz"]) for r in points], marker=".", label=label)
    selected = summary.get("selected_lambda")
    for ax in (loss_ax, nnz_ax):
        ax.set_xscale("log")
        ax.set_xlabel("λ")
        if selected and math.isfinite(selected) and selected > 0 and len(shown) == 1:
            ax.axvline(selected, color="gray", linestyle="--", linewidth=1)
    loss_ax.set_ylabel(("validation " if use_val else "training ") +
                       ("objective" if summary["objective"] == "elastic_net" else "MSE"))
    nnz_ax.set_ylabel("nonzero weights")
    loss_ax.legend(fontsize=7)
    fig.suptitle(f"SAGA {summary['objective']} ({summary['family']}): "
                 f"{summary['n_train']} rows, {summary['features']} features, "
                 f"loader {summary['loader']}")
    fig.tight_layout()
    out = os.path.join(run_dir, "path.png")
    fig.savefig(out, dpi=110)
    print(f"plot: {out}")


if __name__ == "__main__":
    main(sys.argv[1])
