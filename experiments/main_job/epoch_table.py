#!/usr/bin/env python3
"""Prints a run's epochs as the Markdown table of results/main-job.md: training resolution,
learning rate, loss and accuracy, the test accuracy of that epoch's evaluation, speed and the
loader's wait.

    python3 experiments/main_job/epoch_table.py RUN_DIR
"""
import json
import sys
import tomllib
from pathlib import Path


def main(run_dir: Path) -> None:
    log = run_dir / "log.jsonl"
    if not log.is_file():
        sys.exit(f"epoch_table: {log} is missing: give a run folder of `ffcv run`")
    epochs = [json.loads(line) for line in log.read_text().splitlines() if '"event": "epoch"' in line]
    if not epochs:
        sys.exit(f"epoch_table: {log} has no finished epoch")
    recipe = tomllib.loads((run_dir / "recipe.toml").read_text())
    test_px = recipe.get("validation", {}).get("resolution", "?")
    print(f"| epoch | train px | LR (last iteration) | train loss | train top-1 % | "
          f"test top-1 % (TTA, {test_px} px) | test top-5 % | images/s | epoch s | loader wait s |")
    print("|---|---|---|---|---|---|---|---|---|---|")
    for e in epochs:
        test = (f"{100 * e['val_top1']:.2f} | {100 * e['val_top5']:.2f}" if "val_top1" in e
                else "– | –")
        print(f"| {e['epoch'] + 1} | {e['resolution']} | {e['lr']:.4f} | {e['train_loss']:.4f} | "
              f"{100 * e['train_top1']:.2f} | {test} | {e['images_per_second']:.0f} | "
              f"{e['epoch_seconds']:.1f} | {e['loader_wait_seconds']:.2f} |")


if __name__ == "__main__":
    if len(sys.argv) != 2:
        sys.exit("usage: experiments/main_job/epoch_table.py RUN_DIR")
    main(Path(sys.argv[1]))
