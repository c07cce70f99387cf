#!/usr/bin/env bash
# Installs everything the project needs on Debian 12, then configures and builds it.
#   tools/setup.sh            install what is missing, build into build/
# Idempotent: a second run only checks and rebuilds what changed.
set -euo pipefail
cd "$(dirname "$0")/.."

DEBIAN_PACKAGES=(
  build-essential cmake ninja-build pkg-config git python3 python3-venv python3-dev
  clang libclang-rt-14-dev llvm
  libturbojpeg0-dev libjpeg62-turbo-dev libpng-dev libtiff-dev libwebp-dev libopencv-dev zlib1g-dev
  libcurl4-openssl-dev openssl libarchive-dev nlohmann-json3-dev
  libtomlplusplus-dev libgloo-dev catch2 libbenchmark-dev
  dataset-fashion-mnist libjxl-testdata
  plasma-workspace-wallpapers lomiri-wallpapers-16.04 mate-backgrounds
)
FFCV_PYPI_VERSION=1.0.2

log() { printf '[setup] %s\n' "$*"; }

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

# The project's Python environment: LibTorch (torch wheel), Python FFCV and its dependencies.
stamp=".venv/.installed-$(cat tools/requirements.txt tools/setup.sh | sha1sum | cut -c1-12)"
if [ ! -f "$stamp" ]; then
  [ -x .venv/bin/python ] || { log "creating .venv"; /usr/bin/python3 -m venv .venv; }
  log "installing Python packages into .venv (torch is large; first run takes a few minutes)"
  .venv/bin/pip install -q --disable-pip-version-check wheel
  .venv/bin/pip install -q --disable-pip-version-check -r tools/requirements.txt
  log "building Python FFCV $FFCV_PYPI_VERSION against Debian's OpenCV and libturbojpeg"
  .venv/bin/pip install -q --disable-pip-version-check --no-deps --no-build-isolation \
    "ffcv==$FFCV_PYPI_VERSION"
  .venv/bin/python -c 'import torch, ffcv' ||
    { echo "[setup] the .venv cannot import torch and ffcv" >&2; exit 1; }
  rm -f .venv/.installed-*
  touch "$stamp"
fi

# nginx for the HTTP tests, unpacked from Debian's package into build/ (not installed as a
# service): the tests start it on loopback with a configuration of their own.
nginx_dir=build/_deps/nginx
if [ ! -x "$nginx_dir/usr/sbin/nginx" ]; then
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
if [ ! -f build/build.ninja ]; then
  log "configuring build/"
  cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=Release -DFFCV_PYTHON="$PWD/.venv/bin/python" \
    "${cuda_options[@]}" >/dev/null
fi
log "building with $jobs jobs"
# Progress lines are filtered out; compiler messages and a failed build's status are kept.
set +e
cmake --build build -j "$jobs" 2>&1 | grep -vE '^\[[0-9]+/[0-9]+\] '
build_status=${PIPESTATUS[0]}
set -e
[ "$build_status" -eq 0 ] || { echo "[setup] build failed (see the messages above)" >&2; exit 1; }
log "ready: build/bin/ffcv"

# The Python package ffcv_cpp (pyproject.toml: the loader core and its extension, no LibTorch)
# into .venv; pip rebuilds only what changed (build/python/).
log "installing the Python package ffcv_cpp into .venv"
.venv/bin/pip install -q --disable-pip-version-check --no-build-isolation --no-deps . ||
  { echo "[setup] building the Python package failed (see the messages above)" >&2; exit 1; }
.venv/bin/python -c 'import ffcv_cpp, os
print("[setup] Python package: import ffcv_cpp", ffcv_cpp.__version__, "from",
      os.path.dirname(ffcv_cpp.__file__))'
