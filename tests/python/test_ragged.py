"""RaggedNDArray fields from Python: written by DatasetWriter, loaded packed (a torch nested
jagged tensor) or padded to the batch's largest sample, and read and written by Python FFCV
through the custom field class ffcv_cpp.python_ffcv ships."""

from __future__ import annotations

import numpy as np
import pytest

from ffcv_cpp.fields import IntField, RaggedNDArrayField
from ffcv_cpp.fields.basics import IntDecoder
from ffcv_cpp.fields.decoders import RaggedDecoder
from ffcv_cpp.loader import Loader, OrderOption
from ffcv_cpp.loader.ragged import PackedRows, PaddedRows
from ffcv_cpp.transforms import ToTensor
from ffcv_cpp.writer import DatasetWriter

COUNT = 45


class Boxes:
    """Per sample: 0 to 7 float32 boxes [4], their int64 labels, and the sample's index."""

    def __init__(self, count: int = COUNT) -> None:
        rng = np.random.default_rng(11)
        self.boxes = [rng.random((int(rng.integers(0, 8)), 4)).astype(np.float32)
                      for _ in range(count)]
        self.boxes[3] = np.zeros((0, 4), np.float32)
        self.labels = [rng.integers(0, 80, size=len(b)) for b in self.boxes]

    def __len__(self) -> int:
        return len(self.boxes)

    def __getitem__(self, i: int):
        # Labels as a plain list of ints: any value numpy turns into rows will do.
        return self.boxes[i], [int(v) for v in self.labels[i]], i


FIELDS = {"boxes": RaggedNDArrayField(np.float32, (4,)), "labels": RaggedNDArrayField(np.int64),
          "index": IntField()}


@pytest.fixture(scope="module")
def boxes_file(tmp_path_factory) -> str:
    path = str(tmp_path_factory.mktemp("ragged") / "boxes.beton")
    DatasetWriter(path, FIELDS, num_workers=2, progress=False).from_indexed_dataset(Boxes())
    return path


def loader(path, **pipelines):
    return Loader(path, batch_size=8, num_workers=2, order=OrderOption.RANDOM, seed=4,
                  pipelines={"index": [IntDecoder()], **pipelines})


def test_packed_batches_are_nested_jagged_tensors_of_the_samples_rows(boxes_file):
    torch = pytest.importorskip("torch")
    source = Boxes()
    seen = 0
    for boxes, labels, index in loader(boxes_file, boxes=[RaggedDecoder(), ToTensor()],
                                       labels=[ToTensor()]):
        assert boxes.is_nested and boxes.layout == torch.jagged and labels.is_nested
        for k, i in enumerate(index[:, 0].tolist()):
            assert torch.equal(boxes[k], torch.from_numpy(source.boxes[i]))
            assert labels[k].tolist() == source.labels[i].tolist()
            seen += 1
    assert seen == 40  # drop_last: 5 batches of 8


def test_padded_batches_pad_to_the_batchs_largest_sample(boxes_file):
    source = Boxes()
    widths = set()
    for boxes, index in loader(boxes_file, boxes=[RaggedDecoder("padded")], labels=None):
        assert isinstance(boxes, PaddedRows)
        values, lengths = boxes
        assert values.shape[1:] == (int(lengths.max()), 4)
        widths.add(values.shape[1])
        for k, i in enumerate(index[:, 0]):
            assert np.array_equal(values[k, :lengths[k]], source.boxes[i])
            assert not values[k, lengths[k]:].any()
    assert max(len(b) for b in source.boxes) in widths and len(widths) > 1


def test_numpy_pairs_before_to_tensor(boxes_file):
    source = Boxes()
    for boxes, index in loader(boxes_file, boxes=[RaggedDecoder()], labels=None):
        assert isinstance(boxes, PackedRows)
        values, offsets = boxes
        assert offsets.dtype == np.int64 and offsets[0] == 0 and offsets[-1] == len(values)
        for k, i in enumerate(index[:, 0]):
            assert np.array_equal(values[offsets[k]:offsets[k + 1]], source.boxes[i])


@pytest.mark.parametrize("value, message", [
    (np.zeros((2, 5), np.float32), r"\(n, 4\), got \(2, 5\)"),
    (np.zeros(4, np.float32), r"\(n, 4\), got \(4,\)"),
])
def test_rows_of_the_wrong_shape_are_a_clear_error(tmp_path, value, message):
    class One:
        def __len__(self):
            return 1

        def __getitem__(self, i):
            return (value,)

    path = tmp_path / "bad.beton"
    with pytest.raises(ValueError, match=message):
        DatasetWriter(str(path), {"boxes": RaggedNDArrayField(np.float32, (4,))},
                      progress=False).from_indexed_dataset(One())
    assert not path.exists()


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
