"""A real client: experiments/python/train_ffcv_api.py, written against Python FFCV's API, runs
for an epoch under this package and, with only its import lines changed, under Python FFCV; in
SEQUENTIAL order the two give the same label batches."""

from __future__ import annotations

import json
import pathlib
import subprocess
import sys

import numpy as np
import pytest

from conftest import REPO

SCRIPT = REPO / "experiments" / "python" / "train_ffcv_api.py"


def ffcv_version_of(script: str) -> str:
    """The script with `ffcv_cpp` replaced by `ffcv` in its import lines, checking that nothing
    else names this package."""
    lines = script.splitlines(keepends=True)
    changed = []
    for number, line in enumerate(lines):
        if "ffcv_cpp" in line:
            assert line.startswith("from ffcv_cpp") or line.startswith("import ffcv_cpp"), \
                f"line {number + 1} names ffcv_cpp outside an import: {line!r}"
            changed.append(line.replace("ffcv_cpp", "ffcv"))
        else:
            changed.append(line)
    return "".join(changed)


def run(script: pathlib.Path, jpeg_file: str, labels: pathlib.Path) -> dict:
    done = subprocess.run([sys.executable, str(script), "--train", jpeg_file, "--val", jpeg_file,
                           "--epochs", "1", "--batch-size", "16", "--workers", "2",
                           "--order", "sequential", "--device", "cpu", "--res", "24",
                           "--dump-labels", str(labels)],
                          capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr[-3000:]
    return json.loads(done.stdout.strip().splitlines()[-1])


def test_the_script_runs_under_both_packages_with_equal_label_batches(jpeg_file, tmp_path):
    pytest.importorskip("ffcv", reason="Python FFCV is not installed")
    ours_report = run(SCRIPT, jpeg_file, tmp_path / "ours.npy")
    theirs_script = tmp_path / "train_with_ffcv.py"
    theirs_script.write_text(ffcv_version_of(SCRIPT.read_text()))
    theirs_report = run(theirs_script, jpeg_file, tmp_path / "theirs.npy")
    ours_labels = np.load(tmp_path / "ours.npy")
    theirs_labels = np.load(tmp_path / "theirs.npy")
    assert ours_labels.shape == theirs_labels.shape == (6, 16)
    assert np.array_equal(ours_labels, theirs_labels)
    for report in (ours_report, theirs_report):
        assert report["images"] == 96 and np.isfinite(report["train_loss"])
        assert 0 <= report["val_accuracy"] <= 1
