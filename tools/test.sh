#!/usr/bin/env bash
# Runs the test suite: sets up and builds first (tools/setup.sh), then CTest in build/, then the
# sanitizer builds and short fuzzing runs (tools/sanitize.sh). Prints each stage's time.
#   tools/test.sh                  everything
#   tools/test.sh -R PATTERN ...   after the set-up and build, only the CTest entries whose names
#                                  match PATTERN (any ctest arguments: -R grid, -E cuda,
#                                  --rerun-failed, ...); the sanitizer stage is left out unless
#                                  FFCV_TEST_SANITIZERS=1 asks for it
# FFCV_TEST_SANITIZERS=0 leaves the sanitizer stage out of a whole run.
set -euo pipefail
cd "$(dirname "$0")/.."
# shellcheck source=tools/step_timer.sh
source tools/step_timer.sh
step_timer_init test

sanitizers=${FFCV_TEST_SANITIZERS:-1}
(($#)) && sanitizers=${FFCV_TEST_SANITIZERS:-0}

step "set-up and build (tools/setup.sh)"
tools/setup.sh
step "CTest in build/${*:+ ($*)}"
(cd build && ctest --output-on-failure -j "$(nproc)" "$@")
if [ "$sanitizers" != 0 ]; then
  step "sanitizer builds, their tests and the fuzzers (tools/sanitize.sh)"
  tools/sanitize.sh
fi
step_summary
