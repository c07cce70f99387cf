#!/usr/bin/env bash
# Runs the whole test suite: sets up and builds first (tools/setup.sh), then CTest.
set -euo pipefail
cd "$(dirname "$0")/.."
tools/setup.sh
cd build
ctest --output-on-failure -j "$(nproc)" "$@"
