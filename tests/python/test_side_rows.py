"""`ffcv write ... --rows NAME=FILE`: a RaggedNDArray field beside any source, from JSON lines
(token ids, points) or a values/offsets pair of .npy files, read back exactly; files that do not
fit the source are one clear line and leave no file."""

from __future__ import annotations

import json
import subprocess

import numpy as np
import pytest

from ffcv_cpp.loader import Loader, OrderOption

COUNT = 30


@pytest.fixture(scope="module")
def sources(tmp_path_factory):
    root = tmp_path_factory.mktemp("rows")
    rng = np.random.default_rng(2)
    np.save(root / "X.npy", rng.normal(size=(COUNT, 3)).astype(np.float32))
    np.save(root / "Y.npy", np.arange(COUNT))
    tokens = [rng.integers(0, 50_000, size=int(rng.integers(0, 40))).tolist()
              for _ in range(COUNT)]
    (root / "tokens.jsonl").write_text("".join(json.dumps(t) + "\n" for t in tokens))
    points = [np.round(rng.random((int(rng.integers(0, 6)), 2)), 3) for _ in range(COUNT)]
    (root / "points.jsonl").write_text("".join(json.dumps(p.tolist()) + "\n" for p in points))
    boxes = [rng.random((int(rng.integers(0, 5)), 4)).astype(np.float16) for _ in range(COUNT)]
    np.save(root / "values.npy", np.concatenate(boxes))
    np.save(root / "offsets.npy", np.cumsum([0] + [len(b) for b in boxes]).astype(np.int32))
    return root, tokens, points, boxes


def write(build_bin, root, out, *rows):
    command = [str(build_bin / "ffcv"), "write", "npy", "--features", str(root / "X.npy"),
               "--targets", str(root / "Y.npy"), "--output", str(out)]
    for option in rows:
        command += ["--rows", option]
    return subprocess.run(command, capture_output=True, text=True)


def samples(path):
    loader = Loader(str(path), batch_size=7, num_workers=2, order=OrderOption.SEQUENTIAL,
                    drop_last=False, pipelines={"features": None})
    out = []
    for target, *ragged in loader:
        for k in range(len(target)):
            out.append([values[offsets[k]:offsets[k + 1]] for values, offsets in ragged])
    return out


def test_rows_from_json_lines_and_npy_pairs_read_back_exactly(sources, tmp_path, build_bin):
    root, tokens, points, boxes = sources
    out = tmp_path / "rows.beton"
    done = write(build_bin, root, out, f"tokens={root / 'tokens.jsonl'}",
                 f"points={root / 'points.jsonl'}",
                 f"boxes={root / 'values.npy'},{root / 'offsets.npy'}")
    assert done.returncode == 0, done.stderr
    rows = samples(out)
    assert len(rows) == COUNT
    for (t, p, b), want_t, want_p, want_b in zip(rows, tokens, points, boxes):
        assert t.dtype == np.int64 and t.tolist() == want_t  # whole numbers: int64
        assert p.dtype == np.float32 and p.shape[1:] == (2,)  # rows of two: float32
        np.testing.assert_array_equal(p, want_p.astype(np.float32).reshape(-1, 2))
        assert b.dtype == np.float16 and b.tobytes() == want_b.tobytes()  # kept as saved


@pytest.mark.parametrize("name, text, message", [
    ("short.jsonl", "[1]\n" * (COUNT - 1), f"describes {COUNT - 1} samples, the source holds"),
    ("width.jsonl", "[[1, 2]]\n[[1, 2, 3]]\n", "line 2: a row of 3 values where"),
    ("empty.jsonl", "[1]\n\n", "line 2 is empty; a sample without rows is []"),
    ("object.jsonl", "{\"a\": 1}\n", "line 1 is not a JSON array"),
    ("broken.jsonl", "[1, 2\n", "line 1 is not JSON"),
    ("words.jsonl", "[\"a\"]\n", "a row must be a number"),
    ("hollow.jsonl", "[[]]\n", "line 1: a row holds no values"),
    ("huge.jsonl", "[1e300]\n", "beyond float32's range"),
])
def test_bad_json_lines_are_one_clear_line(sources, tmp_path, build_bin, name, text, message):
    root, *_ = sources
    (tmp_path / name).write_text(text)
    out = tmp_path / "bad.beton"
    done = write(build_bin, root, out, f"tokens={tmp_path / name}")
    assert done.returncode != 0 and message in done.stderr, done.stderr
    assert not out.exists()


def test_bad_offsets_are_one_clear_line(sources, tmp_path, build_bin):
    root, *_ = sources
    values = np.zeros((10, 4), np.float32)
    np.save(tmp_path / "v.npy", values)
    for offsets, message in ((np.array([1, 10]), "offset 0 is 1"),
                             (np.array([0, 6, 5, 10]), "offset 2 is 5"),
                             (np.array([0, 4, 9]), "the last offset is 9"),
                             (np.array([0.0, 10.0]), "1-d little-endian integer array")):
        np.save(tmp_path / "o.npy", offsets)
        out = tmp_path / "bad.beton"
        done = write(build_bin, root, out, f"b={tmp_path / 'v.npy'},{tmp_path / 'o.npy'}")
        assert done.returncode != 0 and message in done.stderr, done.stderr
        assert not out.exists()
    done = write(build_bin, root, tmp_path / "bad.beton", "tokens")
    assert done.returncode == 2 and "--rows takes NAME=FILE" in done.stderr
    done = write(build_bin, root, tmp_path / "bad.beton", f"target={root / 'tokens.jsonl'}")
    assert done.returncode != 0 and "two fields are named 'target'" in done.stderr


def test_whole_numbers_stay_exact_beyond_float64s_53_bits(sources, tmp_path, build_bin):
    root, *_ = sources
    big = [2**53 + 1, 2**63 - 1, -2**63, 7]
    lines = [big] + [[i] for i in range(COUNT - 1)]
    (tmp_path / "ids.jsonl").write_text("".join(json.dumps(line) + "\n" for line in lines))
    out = tmp_path / "ids.beton"
    done = write(build_bin, root, out, f"ids={tmp_path / 'ids.jsonl'}")
    assert done.returncode == 0, done.stderr
    rows = samples(out)
    assert rows[0][0].dtype == np.int64 and rows[0][0].tolist() == big
    assert [r[0].tolist() for r in rows[1:]] == lines[1:]


@pytest.mark.parametrize("first, message", [
    ([2**64], "line 1: the whole number 18446744073709551616 is beyond int64's range"),
    ([2**53 + 1, 0.5], "line 1 holds 9007199254740993, a whole number float32 cannot hold"),
])
def test_numbers_that_cannot_be_kept_exactly_are_refused(sources, tmp_path, build_bin, first,
                                                         message):
    root, *_ = sources
    lines = [first] + [[i] for i in range(COUNT - 1)]
    (tmp_path / "x.jsonl").write_text("".join(json.dumps(line) + "\n" for line in lines))
    out = tmp_path / "x.beton"
    done = write(build_bin, root, out, f"x={tmp_path / 'x.jsonl'}")
    assert done.returncode != 0 and message in done.stderr, done.stderr
    assert not out.exists()
