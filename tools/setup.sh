#!/usr/bin/env bash
# Installs what the project needs on Debian 12, then configures and builds it.
#   tools/setup.sh              everything: what the test suite needs, the whole of build/ and the
#                               Python package ffcv_cpp in .venv (tools/test.sh runs this)
#   tools/setup.sh --main-job   only what the main job needs (tools/quickstart.sh runs this):
#                               fewer packages, and the `ffcv` and `ffcv-train` programs
# Idempotent: a second run only checks and rebuilds what changed. Prints each step's time.
set -euo pipefail
cd "$(dirname "$0")/.."
# shellcheck source=tools/step_timer.sh
source tools/step_timer.sh
step_timer_init setup

scope=all
case "${1:-}" in
  "") ;;
  --main-job) scope=main-job ;;
  *)
    echo "usage: tools/setup.sh [--main-job]" >&2
    exit 2
    ;;
esac

# What the main job needs: the compilers, the libraries the loader, the CLI and the trainer
# link, and Fashion-MNIST; Catch2 and Google Benchmark are small and come with them.
DEBIAN_PACKAGES=(
  build-essential cmake ninja-build pkg-config git python3 python3-venv python3-dev
  libturbojpeg0-dev libjpeg62-turbo-dev libpng-dev libtiff-dev libwebp-dev libopencv-dev zlib1g-dev
  libcurl4-openssl-dev openssl libarchive-dev nlohmann-json3-dev
  libtomlplusplus-dev libgloo-dev catch2 libbenchmark-dev
  dataset-fashion-mnist
)
# What the tests add: clang for the sanitizer builds, and the photographs they read.
if [ "$scope" = all ]; then
  DEBIAN_PACKAGES+=(clang libclang-rt-14-dev llvm
    libjxl-testdata plasma-workspace-wallpapers lomiri-wallpapers-16.04 mate-backgrounds)
fi
FFCV_PYPI_VERSION=1.0.2

log() { printf '[setup] %s\n' "$*"; }

step "Debian packages"
SUDO=""
[ "$(id -u)" -eq 0 ] || SUDO=sudo
missing=()
for package in "${DEBIAN_PACKAGES[@]}"; do
  dpkg-query -W -f='${Status}' "$package" 2>/dev/null | grep -q "install ok installed" ||
    missing+=("$package")
done
if ((${#missing[@]})); then
  log "installing Debian packages: ${missing[*]}"
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends \
    "${missing[@]}" >/dev/null
fi

# The project's Python environment: LibTorch (the torch wheel) for the main job
# (tools/requirements-main.txt); for the tests also Python FFCV and what it and the benchmarks
# need (tools/requirements.txt).
step "Python packages in .venv ($scope)"
requirements=tools/requirements.txt
if [ "$scope" = main-job ]; then requirements=tools/requirements-main.txt; fi
hash=$(cat tools/requirements-main.txt tools/requirements.txt tools/setup.sh | sha1sum | cut -c1-12)
stamp=".venv/.installed-$scope-$hash"
# Everything includes the main job's packages.
if [ "$scope" = main-job ] && [ -f ".venv/.installed-all-$hash" ]; then
  stamp=".venv/.installed-all-$hash"
fi
if [ ! -f "$stamp" ]; then
  [ -x .venv/bin/python ] || { log "creating .venv"; /usr/bin/python3 -m venv .venv; }
  log "installing $requirements into .venv (torch is large: a few minutes the first time)"
  .venv/bin/pip install -q --disable-pip-version-check wheel
  .venv/bin/pip install -q --disable-pip-version-check -r "$requirements"
  if [ "$scope" = all ]; then
    log "building Python FFCV $FFCV_PYPI_VERSION against Debian's OpenCV and libturbojpeg"
    .venv/bin/pip install -q --disable-pip-version-check --no-deps --no-build-isolation \
      "ffcv==$FFCV_PYPI_VERSION"
    .venv/bin/python -c 'import torch, ffcv' ||
      { echo "[setup] the .venv cannot import torch and ffcv" >&2; exit 1; }
  else
    .venv/bin/python -c 'import torch' ||
      { echo "[setup] the .venv cannot import torch" >&2; exit 1; }
  fi
  rm -f .venv/.installed-"$scope"-*
  touch "$stamp"
fi

# nginx for the HTTP tests, unpacked from Debian's package into build/ (not installed as a
# service): the tests start it on loopback with a configuration of their own.
nginx_dir=build/_deps/nginx
if [ "$scope" = all ] && [ ! -x "$nginx_dir/usr/sbin/nginx" ]; then
  step "nginx for the HTTP tests"
  log "unpacking Debian's nginx into $nginx_dir (for the HTTP tests)"
  download=$(mktemp -d)
  if ! (cd "$download" && apt-get download nginx >/dev/null 2>&1); then
    $SUDO apt-get update -qq >/dev/null 2>&1 || true
    (cd "$download" && apt-get download nginx >/dev/null 2>&1) ||
      { echo "[setup] cannot download Debian's nginx package" >&2; exit 1; }
  fi
  mkdir -p "$nginx_dir"
  dpkg-deb -x "$download"/nginx_*.deb "$nginx_dir"
  rm -rf "$download"
fi

# The CUDA toolkit. LibTorch's CMake package needs one to configure, GPU or not, since the torch
# wheel is built with CUDA. The system's is used where there is one (nvcc on PATH or in
# /usr/local/cuda). Elsewhere NVIDIA's compiler wheels of the toolkit version torch depends on
# complete, in .venv, the toolkit whose libraries torch's wheels already put there.
cuda_options=()
if ! command -v nvcc >/dev/null 2>&1 && [ ! -x /usr/local/cuda/bin/nvcc ]; then
  cuda_root=$(.venv/bin/python -c 'import sysconfig, torch
print(sysconfig.get_paths()["purelib"] + "/nvidia/cu" + torch.version.cuda.split(".")[0])')
  if [ ! -x "$cuda_root/bin/nvcc" ]; then
    step "NVIDIA's CUDA compiler wheels"
    toolkit=$(.venv/bin/python -c 'import importlib.metadata as m; print(m.version("cuda-toolkit"))')
    log "no CUDA toolkit on this machine: installing NVIDIA's compiler wheels (cuda-toolkit" \
      "$toolkit) into .venv"
    .venv/bin/pip install -q --disable-pip-version-check "cuda-toolkit[nvcc,crt,nvvm,cccl]==$toolkit"
  fi
  # The wheels hold versioned libraries only (libcudart.so.13), in lib/; CMake looks for
  # libcudart.so, and nvcc for lib64/.
  for library in "$cuda_root"/lib/lib*.so.*; do
    link="${library%%.so.*}.so"
    [ -e "$link" ] || ln -s "$(basename "$library")" "$link"
  done
  [ -e "$cuda_root/lib64" ] || ln -s lib "$cuda_root/lib64"
  cuda_options=(-DCUDAToolkit_ROOT="$cuda_root" -DCUDA_TOOLKIT_ROOT_DIR="$cuda_root"
    -DCMAKE_CUDA_COMPILER="$cuda_root/bin/nvcc")
fi

jobs=$(nproc)
# For the main job alone, the tests and benchmarks are left out of the configuration. build/ is
# configured again when everything is wanted after that: the configuration looks for what the
# tests need (Python FFCV, torchvision, nginx).
configured_for=$(cat build/.configured-for 2>/dev/null || true)
if [ ! -f build/build.ninja ] || { [ "$scope" = all ] && [ "$configured_for" != all ]; }; then
  step "configuring build/"
  with_tests=ON
  [ "$scope" = all ] || with_tests=OFF
  # CMake's messages (LibTorch's package warns about settings it ignores) go to
  # build/configure.log, and to the terminal only when the configuration fails.
  configure_log=$(mktemp)
  if ! cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=Release \
    -DFFCV_PYTHON="$PWD/.venv/bin/python" -DFFCV_BUILD_TESTS=$with_tests \
    -DFFCV_BUILD_BENCHMARKS=$with_tests "${cuda_options[@]}" >"$configure_log" 2>&1; then
    cat "$configure_log" >&2
    rm -f "$configure_log"
    echo "[setup] configuring build/ failed (see CMake's messages above)" >&2
    exit 1
  fi
  mv "$configure_log" build/configure.log
  echo "$scope" >build/.configured-for
fi
targets=()
what="everything"
if [ "$scope" = main-job ]; then
  targets=(--target ffcv ffcv-train)
  what="ffcv and ffcv-train"
fi
step "building $what with $jobs jobs"
# Progress lines are filtered out; compiler messages and a failed build's status are kept.
set +e
cmake --build build -j "$jobs" "${targets[@]}" 2>&1 | grep -vE '^\[[0-9]+/[0-9]+\] '
build_status=${PIPESTATUS[0]}
set -e
[ "$build_status" -eq 0 ] || { echo "[setup] build failed (see the messages above)" >&2; exit 1; }
log "ready: build/bin/ffcv"

# The Python package ffcv_cpp (pyproject.toml: the loader core and its extension, no LibTorch)
# into .venv; pip rebuilds only what changed (build/python/).
if [ "$scope" = all ]; then
  step "installing the Python package ffcv_cpp into .venv"
  .venv/bin/pip install -q --disable-pip-version-check --no-build-isolation --no-deps . ||
    { echo "[setup] building the Python package failed (see the messages above)" >&2; exit 1; }
  .venv/bin/python -c 'import ffcv_cpp, os
print("[setup] Python package: import ffcv_cpp", ffcv_cpp.__version__, "from",
      os.path.dirname(ffcv_cpp.__file__))'
fi
step_summary
