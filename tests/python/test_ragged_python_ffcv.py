"""Python FFCV reads and writes RaggedNDArray fields through the custom field class
ffcv_cpp.python_ffcv ships: it reads our file exactly, and we read the file it writes; a file
whose metadata and data disagree gives the rows the metadata counts, or an error, never heap
damage."""

from __future__ import annotations

import json
import subprocess
import sys

import numpy as np
import pytest

from ffcv_cpp.fields import RaggedNDArrayField
from ffcv_cpp.fields.basics import IntDecoder
from ffcv_cpp.loader import Loader, OrderOption
from ffcv_cpp.writer import DatasetWriter
from test_ragged import COUNT, Boxes, boxes_file  # noqa: F401 (boxes_file: a fixture)

ffcv = pytest.importorskip("ffcv", reason="Python FFCV is not installed")
from ffcv.fields import IntField as FfcvIntField  # noqa: E402
from ffcv.loader import Loader as FfcvLoader  # noqa: E402
from ffcv.loader import OrderOption as FfcvOrder  # noqa: E402
from ffcv.pipeline import PipelineSpec as FfcvSpec  # noqa: E402
from ffcv.writer import DatasetWriter as FfcvWriter  # noqa: E402

from ffcv_cpp.python_ffcv import (PaddedRaggedDecoder, RaggedNDArrayField as FfcvRagged,  # noqa: E402
                                  RaggedRowCountDecoder)


def python_ffcv_rows(path):
    """Python FFCV's epoch: per sample, in order, (boxes, labels) cut to their row counts."""
    loader = FfcvLoader(path, batch_size=8, num_workers=2, order=FfcvOrder.SEQUENTIAL,
                        drop_last=False,
                        custom_fields={"boxes": FfcvRagged, "labels": FfcvRagged},
                        pipelines={"boxes": [PaddedRaggedDecoder()],
                                   "labels": [PaddedRaggedDecoder()],
                                   "box_rows": FfcvSpec("boxes", RaggedRowCountDecoder()),
                                   "label_rows": FfcvSpec("labels", RaggedRowCountDecoder())})
    rows = []
    for boxes, labels, index, box_rows, label_rows in loader:
        # Python FFCV pads to the dataset's largest sample.
        assert boxes.shape[1:] == (max(len(b) for b in Boxes().boxes), 4)
        for k in range(len(index)):
            n, m = int(box_rows[k, 0]), int(label_rows[k, 0])
            assert not boxes[k, n:].any() and not labels[k, m:].any()
            rows.append((np.array(boxes[k, :n]), np.array(labels[k, :m])))
    return rows


def test_python_ffcv_reads_our_file_exactly(boxes_file):
    source = Boxes()
    rows = python_ffcv_rows(boxes_file)
    assert len(rows) == COUNT
    for i, (boxes, labels) in enumerate(rows):
        assert boxes.dtype == np.float32 and boxes.tobytes() == source.boxes[i].tobytes()
        assert labels.dtype == np.int64 and labels.tolist() == source.labels[i].tolist()


def test_we_read_python_ffcvs_file_exactly(tmp_path):
    source = Boxes()
    path = str(tmp_path / "theirs.beton")

    class Theirs:
        def __len__(self):
            return len(source)

        def __getitem__(self, i):
            return source.boxes[i], source.labels[i], i

    FfcvWriter(path, {"boxes": FfcvRagged(np.float32, (4,)), "labels": FfcvRagged(np.int64),
                      "index": FfcvIntField()}, num_workers=2).from_indexed_dataset(Theirs())
    ours = Loader(path, batch_size=8, num_workers=2, order=OrderOption.SEQUENTIAL,
                  drop_last=False, pipelines={"index": [IntDecoder()]})
    position = 0
    for (values, offsets), (labels, label_offsets), index in ours:
        for k, i in enumerate(index[:, 0]):
            assert i == position
            assert values[offsets[k]:offsets[k + 1]].tobytes() == source.boxes[i].tobytes()
            assert labels[label_offsets[k]:label_offsets[k + 1]].tolist() == \
                source.labels[i].tolist()
            position += 1
    assert position == COUNT
    # And Python FFCV reads back what it wrote with the class.
    rows = python_ffcv_rows(path)
    assert [b.tobytes() for b, _ in rows] == [b.tobytes() for b in source.boxes]
    assert [l.tolist() for _, l in rows] == [l.tolist() for l in source.labels]


# Run in a child process, so that heap damage (glibc's abort) fails the test instead of ending
# pytest: Python FFCV's epoch of a file, as JSON (per sample: its row count, its padded shape,
# the bytes of its rows in hex and whether any value past them is not zero), or the error its
# loader's thread raised (Python FFCV's __next__ would wait for ever after it).
PYTHON_FFCV_EPOCH = """
import json, os, sys, threading
from ffcv.loader import Loader, OrderOption
from ffcv.pipeline import PipelineSpec
from ffcv_cpp.python_ffcv import PaddedRaggedDecoder, RaggedNDArrayField, RaggedRowCountDecoder

def report(args):
    print("ERROR " + type(args.exc_value).__name__ + ": " + str(args.exc_value), flush=True)
    os._exit(3)

threading.excepthook = report
loader = Loader(sys.argv[1], batch_size=4, num_workers=2, order=OrderOption.SEQUENTIAL,
                drop_last=False, custom_fields={"boxes": RaggedNDArrayField},
                pipelines={"boxes": [PaddedRaggedDecoder()],
                           "rows": PipelineSpec("boxes", RaggedRowCountDecoder())})
samples = []
for boxes, rows in loader:
    for k in range(len(rows)):
        n = int(rows[k, 0])
        samples.append([n, list(boxes[k].shape), boxes[k, :n].tobytes().hex(),
                        bool(boxes[k, n:].any())])
print(json.dumps(samples))
"""

ROWS = [5, 8, 3, 0, 6, 2, 7, 1, 4, 8, 2, 20000]  # the last: 320 kB, far more than a batch slot


def damaged_file(tmp_path, name, new_rows):
    """A file of ROWS rows per sample, then `new_rows` ({sample: rows}) written over its
    metadata: the metadata no longer matches the allocations."""
    rng = np.random.default_rng(5)
    source = [rng.random((n, 4)).astype(np.float32) + 1 for n in ROWS]  # no zero value
    path = tmp_path / name
    DatasetWriter(str(path), {"boxes": RaggedNDArrayField(np.float32, (4,))}, num_workers=1,
                  progress=False).from_indexed_dataset([(rows,) for rows in source])
    # One field: the metadata table starts after the header (24 bytes) and one descriptor
    # (1041), a record per sample of ptr u64 and rows u64 (docs/format.md).
    table = np.memmap(path, dtype=[("ptr", "<u8"), ("rows", "<u8")], mode="r+", offset=24 + 1041,
                      shape=(len(ROWS),))
    for sample, rows in new_rows.items():
        table["rows"][sample] = rows
    table.flush()
    del table
    return str(path), source


def python_ffcv_epoch(path):
    return subprocess.run([sys.executable, "-c", PYTHON_FFCV_EPOCH, path], capture_output=True,
                          text=True, timeout=600)


@pytest.mark.parametrize("new_rows", [
    {0: 2, 4: 1},  # fewer rows than allocated; the largest sample (8 rows) unchanged
    {i: min(n, 1) for i, n in enumerate(ROWS)},  # every sample 1 row: data outgrows the slots
], ids=["some-lowered", "all-lowered"])
def test_python_ffcv_reads_only_the_rows_the_metadata_counts(tmp_path, new_rows):
    path, source = damaged_file(tmp_path, "lowered.beton", new_rows)
    with pytest.raises(RuntimeError, match="sample 0 field 'boxes': data at"):  # ours refuses it
        Loader(path, batch_size=4)
    done = python_ffcv_epoch(path)
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]
    samples = json.loads(done.stdout.strip().splitlines()[-1])
    assert len(samples) == len(ROWS)
    largest = max(new_rows.get(i, n) for i, n in enumerate(ROWS))
    for i, (rows, shape, values, past_rows) in enumerate(samples):
        assert rows == new_rows.get(i, ROWS[i])
        assert shape == [max(largest, 1), 4]
        assert values == source[i][:rows].tobytes().hex(), f"sample {i}"
        assert not past_rows, f"sample {i}: values past its {rows} rows"


def test_python_ffcv_refuses_a_sample_whose_data_is_shorter_than_its_rows(tmp_path):
    path, _ = damaged_file(tmp_path, "raised.beton", {2: 8})  # 3 rows of data, 8 counted
    done = python_ffcv_epoch(path)
    assert done.returncode == 3, done.stdout[-2000:] + done.stderr[-2000:]
    assert ("ERROR ValueError: RaggedNDArrayField: sample 2 has 8 rows of 16 bytes, but its "
            "data holds only 48 bytes") in done.stdout
