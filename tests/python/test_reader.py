"""ffcv_cpp.reader.Reader gives a file's tables as Python FFCV's Reader does (checked against it
on the same files), over a memory map of the file; and the other parts of Python FFCV's API that
scripts reach for: the default pipeline's tensors, TorchTensorField, Loader.reader and
libffcv.memcpy (also from numba code)."""

from __future__ import annotations

import numpy as np
import pytest

from ffcv_cpp.fields import (BytesField, FloatField, IntField, JSONField, NDArrayField,
                             RaggedNDArrayField, RGBImageField, TorchTensorField)
from ffcv_cpp.loader import Loader, OrderOption
from ffcv_cpp.reader import Reader
from ffcv_cpp.writer import DatasetWriter

torch = pytest.importorskip("torch")


def _write(path, fields, samples):
    DatasetWriter(str(path), fields, num_workers=2, progress=False).from_indexed_dataset(samples)
    return str(path)


@pytest.fixture(scope="module")
def mixed_file(tmp_path_factory):
    rng = np.random.default_rng(4)
    samples = [(i, float(np.sin(i)), rng.integers(0, 255, (20 + i % 7, 30, 3), dtype=np.uint8),
                bytes(range(1 + i % 50)), {"i": i}, rng.normal(size=(2, 3)).astype(np.float32),
                rng.normal(size=(i % 3, 4)).astype(np.float32)) for i in range(40)]
    return _write(tmp_path_factory.mktemp("reader") / "mixed.beton",
                  {"index": IntField(), "value": FloatField(), "image": RGBImageField(),
                   "blob": BytesField(), "doc": JSONField(),
                   "array": NDArrayField(np.dtype("<f4"), (2, 3)),
                   "boxes": RaggedNDArrayField(np.float32, (4,))}, samples)


def test_the_tables_equal_python_ffcvs_reader(mixed_file):
    ffcv_reader = pytest.importorskip("ffcv.reader")
    from ffcv_cpp.python_ffcv import RaggedNDArrayField as FfcvRagged

    theirs = ffcv_reader.Reader(mixed_file, custom_handlers={"boxes": FfcvRagged})
    ours = Reader(mixed_file)
    assert ours.header.tobytes() == theirs.header.tobytes()
    assert (ours.num_samples, ours.page_size, ours.num_fields) == \
        (theirs.num_samples, theirs.page_size, theirs.num_fields)
    assert ours.field_names == theirs.field_names
    assert ours.field_descriptors.tobytes() == theirs.field_descriptors.tobytes()
    assert ours.metadata_type == theirs.metadata_type
    assert ours.metadata.tobytes() == theirs.metadata.tobytes()
    assert ours.alloc_table.tobytes() == theirs.alloc_table.tobytes()
    assert [type(h).__name__ for h in ours.handlers.values()] == \
        ["IntField", "FloatField", "RGBImageField", "BytesField", "JSONField", "NDArrayField",
         "RaggedNDArrayField"]
    assert (ours.handlers["array"].dtype, ours.handlers["array"].shape) == \
        (np.dtype("<f4"), (2, 3))
    assert (ours.handlers["boxes"].dtype, ours.handlers["boxes"].row_shape) == \
        (np.dtype("<f4"), (4,))
    # Over the file, not a copy of it, and read-only.
    assert isinstance(ours.metadata, np.memmap) and not ours.metadata.flags.writeable
    assert (ours.metadata["f0"] == np.arange(40)).all()
    assert (ours.metadata["f1"] == np.sin(np.arange(40))).all()


def test_the_reader_refuses_what_it_cannot_read(tmp_path, mixed_file):
    with pytest.raises(FileNotFoundError):
        Reader(str(tmp_path / "missing.beton"))
    with pytest.raises(ValueError, match="is a URL"):
        Reader("https://example.org/x.beton")
    damaged = tmp_path / "damaged.beton"
    data = bytearray(open(mixed_file, "rb").read())
    damaged.write_bytes(bytes(data[:len(data) // 2]))
    with pytest.raises(RuntimeError, match="damaged.beton"):
        Reader(str(damaged))


def test_a_field_without_a_pipeline_comes_as_a_torch_tensor_as_in_python_ffcv(mixed_file):
    from ffcv_cpp.fields.decoders import NDArrayDecoder

    loader = Loader(mixed_file, batch_size=8, order=OrderOption.SEQUENTIAL,
                    pipelines={"image": None, "blob": None, "doc": None, "boxes": None,
                               "array": [NDArrayDecoder()]})
    index, value, array = next(iter(loader))
    assert isinstance(index, torch.Tensor) and isinstance(value, torch.Tensor)
    assert index.shape == (8, 1) and index.dtype == torch.int64
    assert torch.equal(index[:, 0], torch.arange(8))
    assert isinstance(array, np.ndarray)  # a pipeline given: what its steps make
    assert isinstance(loader.reader, Reader) and loader.reader.num_samples == 40


def test_a_torch_tensor_field_is_stored_as_python_ffcv_stores_it(tmp_path):
    values = [torch.randn(3, 4) for _ in range(10)]
    path = _write(tmp_path / "tensors.beton",
                  {"index": IntField(), "activations": TorchTensorField(torch.float32, (3, 4))},
                  [(i, v) for i, v in enumerate(values)])
    assert int(Reader(path).field_descriptors["type_id"][1]) == 6
    index, activations = next(iter(Loader(path, batch_size=10, order=OrderOption.SEQUENTIAL)))
    assert torch.equal(activations, torch.stack(values))
    with pytest.raises(TypeError, match="torch dtype"):
        TorchTensorField(np.float32, (3,))


def test_memcpy_copies_bytes_also_from_numba_code():
    from ffcv_cpp.libffcv import memcpy

    source = np.random.default_rng(1).uniform(0, 255, (100, 99)).astype(np.float32)
    dest = np.zeros_like(source)
    memcpy(source, dest)
    assert np.array_equal(source, dest)
    with pytest.raises(ValueError, match="smaller"):
        memcpy(source, np.zeros(10, np.float32))
    numba = pytest.importorskip("numba")
    compiled = numba.njit(nogil=True)(memcpy)  # as FFCV's decoders compile it

    @numba.njit(nogil=True)
    def copy_rows(src, dst):
        for row in range(src.shape[0]):
            compiled(src[row], dst[row])

    dest[:] = 0
    copy_rows(source, dest)
    assert np.array_equal(source, dest)
