#!/usr/bin/env bash
# The main job on the small default dataset: set up, convert Fashion-MNIST (from Debian's
# dataset-fashion-mnist) to .beton files with JPEG images, then train a narrow ResNet-18 on it
# through the full loader pipeline on the CPU (recipes/fashion_mnist.toml). Extra arguments go
# to `ffcv run`, e.g. `tools/quickstart.sh --set training.epochs=2`.
set -euo pipefail
cd "$(dirname "$0")/.."
# shellcheck source=tools/step_timer.sh
source tools/step_timer.sh
step_timer_init quickstart
step "set-up (tools/setup.sh --main-job)"
tools/setup.sh --main-job
step "writing Fashion-MNIST as .beton files"
mkdir -p data
# A .beton in data/ is reused only when the stamp beside it records the same write command, the
# file is not newer than the stamp and still validates; anything else (another dataset under that name, an older layout, a
# damaged file) is written again.
for split in train test; do
  output="data/fashion-mnist-$split.beton"
  command=(build/bin/ffcv write fashion-mnist --split "$split" --write-mode jpg --jpeg-quality 90
    --output "$output")
  if [ -f "$output" ] && [ "$(cat "$output.command" 2>/dev/null)" = "${command[*]}" ] &&
    [ ! "$output" -nt "$output.command" ] && build/bin/ffcv inspect "$output" >/dev/null 2>&1; then
    echo "[quickstart] reusing $output"
    continue
  fi
  rm -f "$output.command"
  "${command[@]}" --force
  echo "${command[*]}" >"$output.command"
done
step "inspecting the training set"
build/bin/ffcv inspect data/fashion-mnist-train.beton
step "training (ffcv run recipes/fashion_mnist.toml)"
build/bin/ffcv run recipes/fashion_mnist.toml "$@"
step_summary
