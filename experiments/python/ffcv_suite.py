"""Python FFCV's own test suite on Python FFCV and on ffcv_cpp, file by file, in one run.

    experiments/python/ffcv_suite.py --ffcv-checkout DIR [--work DIR] [--files test_x.py ...]

DIR is a checkout of libffcv/ffcv (its tests are another project's code, so none is kept here:
fetch it yourself). The script copies its tests/ twice into --work (a folder it makes, or one
it made before, replaced): once as they are, once with `ffcv` changed to `ffcv_cpp` on the
`import`/`from` lines and nowhere else. Each test file runs in its own pytest (a numba failure
in one can end the whole session), with the Python that runs this script. It prints a markdown
table of the counts per file and package, and the totals; the pytest output of each run stays in
--work.
"""

from __future__ import annotations

import argparse
import ctypes
import re
import signal
import shutil
import subprocess
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from owned_folders import make_owned, remove_owned  # noqa: E402

MAKER = "ffcv_suite"
IMPORT_LINE = re.compile(r"^(\s*(?:import|from)\s.*)$", re.MULTILINE)
COUNT = re.compile(r"(\d+) (passed|failed|skipped|error|errors)\b")


def import_lines_to_ffcv_cpp(text: str) -> str:
    return IMPORT_LINE.sub(lambda line: re.sub(r"\bffcv\b", "ffcv_cpp", line.group(1)), text)


def copy_tests(checkout: Path, target: Path, rewrite: bool) -> None:
    shutil.copytree(checkout / "tests", target)
    if rewrite:
        for path in target.glob("*.py"):
            path.write_text(import_lines_to_ffcv_cpp(path.read_text()))


def die_with_parent() -> None:
    """In a child, before it runs: killed when this script ends, however it ends (kill -9 too)."""
    pr_set_pdeathsig = 1
    ctypes.CDLL(None).prctl(pr_set_pdeathsig, int(signal.SIGKILL))


def run_file(folder: Path, name: str, log: Path) -> dict:
    """Counts of one file's pytest run: passed, failed, skipped, errors."""
    done = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider",
                           "--tb=short", "-rfE", name], cwd=folder, capture_output=True,
                          text=True, timeout=900, preexec_fn=die_with_parent)
    log.write_text(done.stdout + done.stderr)
    lines = (done.stdout + done.stderr).strip().splitlines()
    counts = {"passed": 0, "failed": 0, "skipped": 0, "errors": 0}
    for number, kind in COUNT.findall(lines[-1] if lines else ""):
        counts["errors" if kind.startswith("error") else kind] += int(number)
    return counts


def cell(counts: dict) -> str:
    parts = [f"{counts[k]} {k}" for k in ("passed", "failed", "skipped", "errors") if counts[k]]
    return ", ".join(parts) or "none collected"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--ffcv-checkout", type=Path, required=True)
    parser.add_argument("--work", type=Path, default=Path("ffcv_suite_work"))
    parser.add_argument("--files", nargs="*", help="test files (all of tests/test_*.py)")
    args = parser.parse_args()
    if not (args.ffcv_checkout / "tests").is_dir():
        sys.exit(f"{args.ffcv_checkout}: no tests/ folder (a checkout of libffcv/ffcv?)")
    remove_owned(args.work, MAKER)
    make_owned(args.work, MAKER)
    packages = {"ffcv": args.work / "ffcv", "ffcv_cpp": args.work / "ffcv_cpp"}
    for package, folder in packages.items():
        copy_tests(args.ffcv_checkout, folder, rewrite=package == "ffcv_cpp")
    names = args.files or sorted(p.name for p in packages["ffcv"].glob("test_*.py"))
    totals = {package: {"passed": 0, "failed": 0, "skipped": 0, "errors": 0}
              for package in packages}
    print("| file | Python FFCV | ffcv_cpp |\n|---|---|---|")
    for name in names:
        row = []
        for package, folder in packages.items():
            counts = run_file(folder, name, args.work / f"{package}-{name}.txt")
            for kind, number in counts.items():
                totals[package][kind] += number
            row.append(cell(counts))
        print(f"| {name} | {row[0]} | {row[1]} |", flush=True)
    print(f"| **total** | **{cell(totals['ffcv'])}** | **{cell(totals['ffcv_cpp'])}** |")


if __name__ == "__main__":
    main()
