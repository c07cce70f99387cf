#!/usr/bin/env bash
# The main job on the small default dataset: set up, convert Fashion-MNIST (from Debian's
# dataset-fashion-mnist) to .beton files with JPEG images, inspect them, and load them.
set -euo pipefail
cd "$(dirname "$0")/.."
tools/setup.sh
mkdir -p data
for split in train test; do
  build/bin/ffcv write fashion-mnist --split "$split" --write-mode jpg --jpeg-quality 90 \
    --output "data/fashion-mnist-$split.beton"
done
build/bin/ffcv inspect data/fashion-mnist-train.beton
build/bin/ffcv inspect data/fashion-mnist-test.beton --sample 0
build/bin/ffcv inspect data/fashion-mnist-test.beton --export 0 data/fashion-mnist-test-0.png
build/bin/ffcv bench data/fashion-mnist-train.beton --order quasi_random --batch-size 512 --epochs 2
