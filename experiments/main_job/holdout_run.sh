#!/usr/bin/env bash
# Trains the main job's recipe on the first 55,000 Fashion-MNIST training images and evaluates it
# on the other 5,000 (holdout_split.py), with the given --set overrides: how the recipe's
# choices are made without looking at the test set. Appends one row to the table in
# results/main-job-holdout.md (the run's folder stays in $FFCV_HOLDOUT_DIR/NAME).
#   experiments/main_job/holdout_run.sh NAME [KEY=VALUE...]
# Environment: FFCV_HOLDOUT_DIR (default /tmp/ffcv-holdout) for the split's files and the runs.
set -euo pipefail
cd "$(dirname "$0")/../.."
(($#)) || { echo "usage: experiments/main_job/holdout_run.sh NAME [KEY=VALUE...]" >&2; exit 2; }
name=$1
shift
work=${FFCV_HOLDOUT_DIR:-/tmp/ffcv-holdout}
[ -x build/bin/ffcv ] || { echo "holdout_run: build/bin/ffcv is missing: run tools/quickstart.sh" >&2; exit 1; }
if [ ! -f "$work/test.beton" ]; then
  python3 experiments/main_job/holdout_split.py "$work/idx"
  for split in train test; do
    build/bin/ffcv write fashion-mnist "$work/idx" --split "$split" --write-mode jpg \
      --jpeg-quality 90 --quiet --output "$work/$split.beton"
  done
fi
[ ! -e "$work/$name" ] || { echo "holdout_run: $work/$name exists: name the run differently" >&2; exit 1; }
sets=()
for override in "$@"; do sets+=(--set "$override"); done
build/bin/ffcv run recipes/fashion_mnist.toml --set "data.train=$work/train.beton" \
  --set "data.val=$work/test.beton" --set validation.every=0 "${sets[@]}" \
  --output-dir "$work/$name" --quiet
python3 - "$work/$name" "$name" "$*" <<'PY'
import json, os, pathlib, sys
run, name, overrides = pathlib.Path(sys.argv[1]), sys.argv[2], sys.argv[3]
summary = json.loads((run / "summary.json").read_text())
table = pathlib.Path("results/main-job-holdout.md")
if not table.exists():
    table.write_text(
        "# The main job's choices, made on a held-out split\n\n"
        "Command: `experiments/main_job/holdout_run.sh NAME [KEY=VALUE...]`: "
        "`recipes/fashion_mnist.toml` with the overrides, trained on the first 55,000 training "
        "images, top-1 on the last 5,000 (TTA, at the end only). The test set is not used.\n\n"
        "| run | overrides | held-out top-1 % | training s | machine |\n|---|---|---|---|---|\n")
cpu = next((l.split(":", 1)[1].strip() for l in open("/proc/cpuinfo") if l.startswith("model name")), "?")
with table.open("a") as out:
    out.write(f"| {name} | {overrides or '(none)'} | {100 * summary['val_top1']:.2f} | "
              f"{summary.get('train_seconds', 0):.0f} | {cpu}, {len(os.sched_getaffinity(0))} cores |\n")
print(f"holdout_run: {name}: {100 * summary['val_top1']:.2f}% held-out top-1")
PY
