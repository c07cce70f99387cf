# shellcheck shell=bash
# Sourced by tools/sanitize.sh and tools/fuzz.sh: configures a clang build under sanitizers.
#   configure_sanitized DIR SANITIZERS FUZZ(ON|OFF)
# LibTorch is left out (FFCV_PYTHON empty): its prebuilt libraries are not instrumented. The
# tests use the nginx that tools/setup.sh unpacked into build/. Every target compiles in unity
# batches of 8, the tests too (a fifth less compiler time under the sanitizers).
configure_sanitized() {
  local dir=$1 sanitizers=$2 fuzz=$3
  [ -f "$dir/build.ninja" ] && return 0
  command -v clang++ >/dev/null ||
    { echo "clang++ is missing: run tools/setup.sh" >&2; return 1; }
  local nginx=()
  [ -x build/_deps/nginx/usr/sbin/nginx ] && nginx=(-DFFCV_NGINX="$PWD/build/_deps/nginx/usr/sbin/nginx")
  CC=clang CXX=clang++ cmake -S . -B "$dir" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo \
    -DCMAKE_C_FLAGS_RELWITHDEBINFO="-O1 -gline-tables-only" \
    -DCMAKE_CXX_FLAGS_RELWITHDEBINFO="-O1 -gline-tables-only" \
    -DFFCV_PYTHON= -DFFCV_BUILD_BENCHMARKS=OFF -DFFCV_SANITIZE="$sanitizers" \
    -DCMAKE_UNITY_BUILD=ON -DCMAKE_UNITY_BUILD_BATCH_SIZE=8 \
    -DFFCV_FUZZ="$fuzz" "${nginx[@]}" >/dev/null
}

# Sanitizer settings for every run: a finding fails the run, with a stack.
export ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1}
export UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}
export TSAN_OPTIONS=${TSAN_OPTIONS:-halt_on_error=1:second_deadlock_stack=1}
