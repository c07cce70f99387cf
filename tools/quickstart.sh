#!/usr/bin/env bash
# The main job on the small default dataset: set up, convert Fashion-MNIST (from Debian's
# dataset-fashion-mnist) to .beton files with JPEG images, then train a narrow ResNet-18 on it
# through the full loader pipeline on the CPU (recipes/fashion_mnist.toml). Extra arguments go
# to `ffcv run`, e.g. `tools/quickstart.sh --set training.epochs=2`.
set -euo pipefail
cd "$(dirname "$0")/.."
tools/setup.sh
mkdir -p data
for split in train test; do
  if [ ! -f "data/fashion-mnist-$split.beton" ]; then
    build/bin/ffcv write fashion-mnist --split "$split" --write-mode jpg --jpeg-quality 90 \
      --output "data/fashion-mnist-$split.beton"
  fi
done
build/bin/ffcv inspect data/fashion-mnist-train.beton
build/bin/ffcv run recipes/fashion_mnist.toml "$@"
