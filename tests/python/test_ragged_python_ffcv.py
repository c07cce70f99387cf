"""Python FFCV reads and writes RaggedNDArray fields through the custom field class
ffcv_cpp.python_ffcv ships: it reads our file exactly, and we read the file it writes."""

from __future__ import annotations

import numpy as np
import pytest

from ffcv_cpp.fields.basics import IntDecoder
from ffcv_cpp.loader import Loader, OrderOption
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
