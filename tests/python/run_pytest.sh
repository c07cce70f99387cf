#!/usr/bin/env bash
# The Python package's tests, on its wheel installed into a fresh virtual environment.
#
#   run_pytest.sh pytest PYTHON BUILD_BIN WORK_DIR [pytest arguments]
#       builds the wheel (pip wheel, incremental in build/python/), installs it into a fresh
#       venv that reaches PYTHON's packages (torch, torchvision, Python FFCV, pytest) through a
#       .pth file placed after its own site-packages, and runs pytest on tests/python there;
#   run_pytest.sh cuda PYTHON BUILD_BIN WORK_DIR
#       the same venv, running test_cuda.py alone (ToDevice to a GPU); exit 77 (skipped) without
#       a CUDA device;
#   run_pytest.sh bare PYTHON BUILD_BIN WORK_DIR
#       installs the wheel with its declared dependencies only (numpy, from PyPI) into an empty
#       venv and runs bare_install_check.py there: no torch, no build tree. Exit 77 (skipped)
#       when PyPI cannot be reached.
set -euo pipefail
mode=$1 python=$2 build_bin=$3 work=$4
shift 4
here=$(cd "$(dirname "$0")" && pwd)
repo=$(cd "$here/../.." && pwd)

mkdir -p "$work"
rm -rf "$work/dist" "$work/venv"
"$python" -m pip wheel -q --disable-pip-version-check --no-build-isolation --no-deps \
  -w "$work/dist" "$repo"
wheel=$(ls "$work"/dist/ffcv_cpp-*.whl)
"$python" -m venv "$work/venv"
site=$("$work/venv/bin/python" -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])')

if [ "$mode" = bare ]; then
  if ! "$work/venv/bin/pip" install -q --disable-pip-version-check "$wheel" 2>"$work/pip.err"; then
    if grep -qiE "connection|resolve|network|No matching distribution" "$work/pip.err"; then
      echo "[test not run] numpy cannot be installed from PyPI: $(tail -1 "$work/pip.err")"
      exit 77
    fi
    cat "$work/pip.err" >&2
    exit 1
  fi
  cd "$work"
  exec "$work/venv/bin/python" "$here/bare_install_check.py"
fi

"$work/venv/bin/pip" install -q --disable-pip-version-check --no-deps "$wheel"
# The project's packages, after the venv's own: ffcv_cpp comes from the wheel just installed.
"$python" -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])' >"$site/project-venv.pth"
cd "$here"
if [ "$mode" = cuda ]; then
  exec "$work/venv/bin/python" test_cuda.py
fi
FFCV_BUILD_BIN="$build_bin" exec "$work/venv/bin/python" -m pytest -q -p no:cacheprovider \
  --basetemp="$work/pytest" --ignore=test_cuda.py "$@"
