#!/usr/bin/env bash
# Runs the whole test suite: sets up and builds first (tools/setup.sh), then CTest, then the
# sanitizer builds and short fuzzing runs (tools/sanitize.sh; FFCV_TEST_SANITIZERS=0 skips them).
set -euo pipefail
cd "$(dirname "$0")/.."
tools/setup.sh
(cd build && ctest --output-on-failure -j "$(nproc)" "$@")
if [ "${FFCV_TEST_SANITIZERS:-1}" != 0 ]; then
  tools/sanitize.sh
fi
