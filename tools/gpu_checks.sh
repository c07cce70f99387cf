#!/usr/bin/env bash
# The checks that need a CUDA device, in one command: builds the CUDA configuration and runs the
# GPU test entries, the SAGA solver against scikit-learn on the GPU, and (optionally) the SAGA
# case study at the paper's size. Each stage writes its log to OUT and prints one line with its
# result and seconds; the script stops at the first stage that fails and exits with its status.
#
#   tools/gpu_checks.sh [--build DIR] [--out DIR] [--work DIR] [--python PY] [--arch LIST] [--jobs N]
#                       [--repeats N] [--study-arg ARG]... [STAGE...]
#
# Stages, in the order given (default: build tests saga-reference):
#   build           configure DIR with FFCV_WITH_CUDA=ON for this machine's GPU (or --arch) and
#                   build ffcv and the test programs with a GPU part
#   tests           CTest's CUDA entries: device_parity_cuda (every device step against its CPU
#                   twin; DeviceTransfer's batch-then-error order) and trainer_cuda_cases. A
#                   skipped entry fails this stage: on a GPU machine it means the GPU was not seen
#   saga-reference  tests/saga/check_saga_reference.py with saga.device=cuda, once with the SAGA
#                   table on the device and once in pinned host memory (saga.table=host)
#   saga-paper      experiments/saga/saga_study.py --size paper --device cuda (n = 100,000,
#                   d = 50,000 masks: about 5 GB of .npy and a 625 MB .beton under WORK);
#                   its report goes to OUT/saga-paper.{json,md,png}
#   suite           every CTest entry of DIR (needs a full build: `ninja -C DIR` first)
#
# Defaults: DIR build-gpu; OUT gpu-checks (logs and reports only); WORK /tmp/ffcv-gpu-checks (data
# and run folders); PY python3, which must import torch (and scikit-learn, numpy and matplotlib
# for the SAGA stages); jobs = the cores; repeats 1.
set -euo pipefail
cd "$(dirname "$0")/.."

build="build-gpu"
out=gpu-checks
work=${TMPDIR:-/tmp}/ffcv-gpu-checks
python=python3
arch=""
jobs=$(nproc)
repeats=1
study_args=()
stages=()
while (($#)); do
  case "$1" in
    --build) build=$2; shift 2 ;;
    --out) out=$2; shift 2 ;;
    --work) work=$2; shift 2 ;;
    --python) python=$2; shift 2 ;;
    --arch) arch=$2; shift 2 ;;
    --jobs) jobs=$2; shift 2 ;;
    --repeats) repeats=$2; shift 2 ;;
    --study-arg) study_args+=("$2"); shift 2 ;;
    -h|--help) awk 'NR > 1 && !/^#/ { exit } NR > 1 { sub(/^# ?/, ""); print }' "$0"; exit 0 ;;
    -*) echo "gpu_checks.sh: unknown option $1 (see --help)" >&2; exit 2 ;;
    *) stages+=("$1"); shift ;;
  esac
done
((${#stages[@]})) || stages=(build tests saga-reference)
for stage in "${stages[@]}"; do
  case "$stage" in
    build|tests|saga-reference|saga-paper|suite) ;;
    *) echo "gpu_checks.sh: unknown stage '$stage' (build, tests, saga-reference, saga-paper," \
            "suite)" >&2; exit 2 ;;
  esac
done
mkdir -p "$out" "$work"
out=$(cd "$out" && pwd)
work=$(cd "$work" && pwd)
python=$(command -v "$python") || { echo "gpu_checks.sh: no Python '$python'" >&2; exit 2; }

# The GPU's compute capability as CMake's architecture number (9.0 -> 90).
detect_arch() {
  command -v nvidia-smi >/dev/null || { echo "90"; return; }
  nvidia-smi --query-gpu=compute_cap --format=csv,noheader | head -n1 | tr -d ' .'
}

stage_build() {
  [[ -n $arch ]] || arch=$(detect_arch)
  cmake -S . -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=Release -DFFCV_WITH_CUDA=ON \
    -DFFCV_CUDA_ARCHITECTURES="$arch" -DFFCV_PYTHON="$python" -DFFCV_BUILD_BENCHMARKS=OFF || return
  ninja -C "$build" -j "$jobs" ffcv ffcv_device_parity_test ffcv_trainer_tests ffcv_torch_tests \
    ffcv_saga_tests
}

# Runs CTest on DIR with the given arguments; fails when an entry failed or was skipped.
# (The stages run where errexit does not apply: each failure is returned explicitly.)
run_ctest() {
  local log=$1
  shift
  ctest --test-dir "$build" --output-on-failure "$@" 2>&1 | tee "$log.ctest" || return
  if grep -q "\*\*\*Skipped\|Not Run" "$log.ctest"; then
    echo "an entry was skipped or not run: on a GPU machine that means no CUDA device was seen"
    return 1
  fi
}

stage_tests() {
  nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader || true
  run_ctest "$out/tests" -R '^(device_parity_cuda|trainer_cuda_cases)$'
}

stage_saga_reference() {
  local table
  for table in device host; do
    echo "== saga.device = cuda, saga.table = $table"
    "$python" tests/saga/check_saga_reference.py --ffcv "$build/bin/ffcv" \
      --workdir "$work/saga-reference-$table" --extra=--set --extra=saga.device=cuda \
      --extra=--set --extra=saga.table=$table || return
  done
}

stage_saga_paper() {
  "$python" experiments/saga/saga_study.py --ffcv "$build/bin/ffcv" --size paper --device cuda \
    --repeats "$repeats" --work "$work" --out "$out/saga-paper" "${study_args[@]}"
}

stage_suite() { run_ctest "$out/suite" -j "$jobs"; }

export PYTHONUNBUFFERED=1
for stage in "${stages[@]}"; do
  start=$SECONDS
  log="$out/$stage.log"
  status=0
  "stage_${stage//-/_}" >"$log" 2>&1 || status=$?
  seconds=$((SECONDS - start))
  if ((status != 0)); then
    echo "$stage: FAILED (exit $status) in ${seconds} s; the end of $log:"
    tail -n 40 "$log"
    exit "$status"
  fi
  echo "$stage: passed in ${seconds} s ($log)"
done
