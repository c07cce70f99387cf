"""Plots a training run's log.jsonl: validation top-1 and training loss per epoch, with the
training resolution, as a PNG.

    .venv/bin/python experiments/training_benchmark/plot_run.py RUN_DIR/log.jsonl OUT.png
"""
import json
import sys

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402


def main(log_path, out_path):
    epochs = [json.loads(line) for line in open(log_path) if '"event": "epoch"' in line]
    x = [e["epoch"] + 1 for e in epochs]
    figure, accuracy = plt.subplots(figsize=(7, 4))
    val = [(e["epoch"] + 1, 100 * e["val_top1"]) for e in epochs if "val_top1" in e]
    accuracy.plot([v[0] for v in val], [v[1] for v in val], "o-", label="validation top-1 (TTA)")
    accuracy.plot(x, [100 * e["train_top1"] for e in epochs], "s--", label="training top-1")
    accuracy.set_xlabel("epoch")
    accuracy.set_ylabel("accuracy (%)")
    accuracy.grid(alpha=0.3)
    resolution = accuracy.twinx()
    resolution.step(x, [e["resolution"] for e in epochs], where="mid", color="grey", alpha=0.5,
                    label="training resolution (px)")
    resolution.set_ylabel("training resolution (px)")
    lines = accuracy.get_legend_handles_labels()
    more = resolution.get_legend_handles_labels()
    accuracy.legend(lines[0] + more[0], lines[1] + more[1], loc="lower right")
    figure.tight_layout()
    figure.savefig(out_path, dpi=110)


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2])
