#!/usr/bin/env bash
# The Python package's tests, on its wheel installed into a fresh virtual environment.
#
#   run_pytest.sh wheel PYTHON DIST
#       builds the wheel into DIST (pip wheel, incremental in build/python/), once for the
#       modes below (CTest's fixture python_wheel);
#   run_pytest.sh pytest PYTHON DIST BUILD_BIN WORK_DIR [pytest arguments]
#       installs DIST's wheel into a fresh venv that reaches PYTHON's packages (torch,
#       torchvision, Python FFCV, pytest) through a .pth file placed after its own
#       site-packages, and runs pytest on tests/python there;
#   run_pytest.sh cuda PYTHON DIST BUILD_BIN WORK_DIR
#       the same venv, running test_cuda.py alone (ToDevice to a GPU); exit 77 (skipped) without
#       a CUDA device;
#   run_pytest.sh bare PYTHON DIST BUILD_BIN WORK_DIR
#       installs the wheel with its declared dependencies only (numpy, from PyPI) into an empty
#       venv and runs bare_install_check.py there: no torch, no build tree. Exit 77 (skipped)
#       when PyPI cannot be reached.
set -euo pipefail
mode=$1 python=$2 dist=$3
here=$(cd "$(dirname "$0")" && pwd)
repo=$(cd "$here/../.." && pwd)

if [ "$mode" = wheel ]; then
  rm -rf "$dist"
  exec "$python" -m pip wheel -q --disable-pip-version-check --no-build-isolation --no-deps \
    -w "$dist" "$repo"
fi
build_bin=$4 work=$5
shift 5
wheel=$(ls "$dist"/ffcv_cpp-*.whl) || { echo "no wheel in $dist: run the wheel mode first" >&2; exit 1; }
mkdir -p "$work"
rm -rf "$work/venv"
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
