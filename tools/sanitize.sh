#!/usr/bin/env bash
# Builds and tests the project under sanitizers (clang; LibTorch parts left out, their prebuilt
# libraries are not instrumented):
#   tools/sanitize.sh address   AddressSanitizer + UndefinedBehaviorSanitizer in build-asan: the
#                               loader core, the CLI and every test of theirs (CTest), then each
#                               fuzz harness for FFCV_FUZZ_SECONDS (default 20) from its seeds
#   tools/sanitize.sh thread    ThreadSanitizer in build-tsan: the engine's concurrency tests
#                               (ffcv_concurrency_tests), the soak for FFCV_SOAK_SECONDS (20)
#   tools/sanitize.sh           both
# Any sanitizer report fails the run. tools/test.sh runs this after the main suite.
set -euo pipefail
cd "$(dirname "$0")/.."
# shellcheck source=tools/sanitized_build.sh
source tools/sanitized_build.sh
modes=("$@")
((${#modes[@]})) || modes=(address thread)
jobs=$(nproc)
log() { printf '[sanitize] %s\n' "$*"; }
quiet_build() {
  cmake --build "$@" 2>&1 | { grep -vE '^\[[0-9]+/[0-9]+\] ' || true; }
  return "${PIPESTATUS[0]}"
}

for mode in "${modes[@]}"; do
  case "$mode" in
    address)
      log "AddressSanitizer + UndefinedBehaviorSanitizer: building build-asan"
      configure_sanitized build-asan address,undefined ON
      quiet_build build-asan -j "$jobs"
      log "AddressSanitizer + UndefinedBehaviorSanitizer: the tests"
      (cd build-asan && ctest --output-on-failure -j "$jobs")
      FFCV_FUZZ_DIR=build-asan tools/fuzz.sh "${FFCV_FUZZ_SECONDS:-20}"
      ;;
    thread)
      log "ThreadSanitizer: building build-tsan (the loader core and its concurrency tests)"
      configure_sanitized build-tsan thread OFF
      quiet_build build-tsan -j "$jobs" --target ffcv_concurrency_tests
      log "ThreadSanitizer: the concurrency tests and a ${FFCV_SOAK_SECONDS:-20} s soak"
      (cd build-tsan && FFCV_SOAK_SECONDS=${FFCV_SOAK_SECONDS:-20} ctest --output-on-failure \
        -R concurrency_under_tsan)
      ;;
    *)
      echo "usage: tools/sanitize.sh [address|thread]..." >&2
      exit 2
      ;;
  esac
done
log "no sanitizer findings"
