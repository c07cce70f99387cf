"""Files written from Python are read back exactly by Python FFCV, and our loader gives the
same batches as Python FFCV's Loader on the same file (the fields without randomness)."""

from __future__ import annotations

import json

import numpy as np
import pytest

from conftest import AllKinds, ImagesAndLabels, as_bytes, smooth_image
from ffcv_cpp.fields import IntField, RGBImageField
from ffcv_cpp.fields.basics import FloatDecoder, IntDecoder
from ffcv_cpp.fields.decoders import BytesDecoder, NDArrayDecoder, SimpleRGBImageDecoder
from ffcv_cpp.fields.json import JSONField
from ffcv_cpp.loader import Loader, OrderOption
from ffcv_cpp.writer import DatasetWriter

ffcv = pytest.importorskip("ffcv", reason="Python FFCV is not installed")
from ffcv.fields import basics as ffcv_basics  # noqa: E402
from ffcv.fields import bytes as ffcv_bytes  # noqa: E402
from ffcv.fields import ndarray as ffcv_ndarray  # noqa: E402
from ffcv.fields import rgb_image as ffcv_rgb  # noqa: E402
from ffcv.loader import Loader as FfcvLoader  # noqa: E402
from ffcv.loader import OrderOption as FfcvOrder  # noqa: E402


def ffcv_epoch(path, pipelines, batch_size):
    loader = FfcvLoader(path, batch_size=batch_size, num_workers=2, order=FfcvOrder.SEQUENTIAL,
                        drop_last=False, pipelines=pipelines)
    return [tuple(np.array(value) for value in batch) for batch in loader]


def our_epoch(path, pipelines, batch_size):
    loader = Loader(path, batch_size=batch_size, num_workers=2, order=OrderOption.SEQUENTIAL,
                    drop_last=False, pipelines=pipelines)
    return [tuple(np.array(value) for value in batch) for batch in loader]


def test_scalar_ndarray_bytes_and_json_fields_equal_python_ffcvs_loader(all_kinds_file):
    source = AllKinds(50)
    theirs = ffcv_epoch(all_kinds_file, {
        "int": [ffcv_basics.IntDecoder()], "float": [ffcv_basics.FloatDecoder()],
        "array": [ffcv_ndarray.NDArrayDecoder()], "blob": [ffcv_bytes.BytesDecoder()],
        "doc": [ffcv_bytes.BytesDecoder()]}, 8)
    ours = our_epoch(all_kinds_file, {
        "int": [IntDecoder()], "float": [FloatDecoder()], "array": [NDArrayDecoder()],
        "blob": [BytesDecoder()], "doc": [BytesDecoder()]}, 8)
    assert len(ours) == len(theirs) == 7
    sample = 0  # SEQUENTIAL: the rows are the samples in order
    for (o_int, o_float, o_array, o_blob, o_doc), (t_int, t_float, t_array, t_blob, t_doc) in zip(
            ours, theirs):
        for mine, their in ((o_int, t_int), (o_float, t_float), (o_array, t_array)):
            assert mine.dtype == their.dtype and mine.shape == their.shape
            assert mine.tobytes() == their.tobytes()
        assert o_blob.shape == t_blob.shape and o_doc.shape == t_doc.shape
        # Python FFCV leaves stale bytes after each payload; the payloads themselves are equal.
        for mine, their in zip(o_blob, t_blob):
            size = len(source.blobs[sample])
            assert mine[:size].tobytes() == their[:size].tobytes() == source.blobs[sample].tobytes()
            assert not mine[size:].any()
            sample += 1
        assert JSONField.unpack(o_doc) == JSONField.unpack(t_doc)
    docs = [doc for batch in ours for doc in JSONField.unpack(batch[4])]
    assert docs == source.docs


@pytest.mark.parametrize("write_mode", ["raw", "jpg"])
def test_image_decoding_equals_python_ffcvs_loader(tmp_path, write_mode):
    path = str(tmp_path / f"{write_mode}.beton")
    DatasetWriter(path, {"image": RGBImageField(write_mode=write_mode), "label": IntField()},
                  num_workers=2, progress=False
                  ).from_indexed_dataset(ImagesAndLabels(40, seed=4, fixed_size=True))
    theirs = ffcv_epoch(path, {"image": [ffcv_rgb.SimpleRGBImageDecoder()],
                               "label": [ffcv_basics.IntDecoder()]}, 16)
    ours = our_epoch(path, {"image": [SimpleRGBImageDecoder()], "label": [IntDecoder()]}, 16)
    assert [as_bytes(b[0]) for b in ours] == [as_bytes(b[0]) for b in theirs]
    assert [as_bytes(b[1]) for b in ours] == [as_bytes(b[1]) for b in theirs]


def test_python_ffcv_reads_a_torchvision_style_dataset_written_from_python(tmp_path):
    """from_indexed_dataset on a dataset of (PIL image, label): Python FFCV reads every image
    and label back exactly (raw mode keeps the pixels)."""
    from PIL import Image

    class PilDataset:
        def __init__(self) -> None:
            self.inner = ImagesAndLabels(30, seed=6, fixed_size=True)

        def __len__(self):
            return len(self.inner)

        def __getitem__(self, index):
            image, label = self.inner[index]
            return Image.fromarray(image), label

    dataset = PilDataset()
    path = str(tmp_path / "pil.beton")
    DatasetWriter(path, {"image": RGBImageField(), "label": IntField()}, num_workers=2,
                  progress=False).from_indexed_dataset(dataset)
    batches = ffcv_epoch(path, {"image": [ffcv_rgb.SimpleRGBImageDecoder()],
                                "label": [ffcv_basics.IntDecoder()]}, 7)
    images = np.concatenate([b[0] for b in batches])
    labels = np.concatenate([b[1] for b in batches])[:, 0]
    assert np.array_equal(images, np.stack(dataset.inner.images))
    assert np.array_equal(labels, dataset.inner.labels)
    assert json.loads(json.dumps(int(labels[0]))) == int(labels[0])


def stored_images(path):
    """Each sample's stored image (the first field) as Python FFCV's Reader finds it: (mode,
    width, height, payload bytes), read from the file at the metadata's pointer."""
    from ffcv.reader import Reader as FfcvReader

    reader = FfcvReader(path)
    table = reader.alloc_table
    sizes = dict(zip(table["ptr"].tolist(), table["size"].tolist()))
    data = np.fromfile(path, dtype=np.uint8)
    stored = []
    for row in reader.metadata[reader.metadata.dtype.names[0]]:
        ptr = int(row["data_ptr"])
        stored.append((int(row["mode"]), int(row["width"]), int(row["height"]),
                       data[ptr:ptr + sizes[ptr]].tobytes()))
    return stored


def jpeg_files(count, seed, quality, sizes):
    """JPEG files' bytes of smooth images of the given (height, width) sizes, made by PIL."""
    import io

    from PIL import Image

    rng = np.random.default_rng(seed)
    files = []
    for index in range(count):
        height, width = sizes[index % len(sizes)]
        buffer = io.BytesIO()
        Image.fromarray(smooth_image(rng, height, width)).save(buffer, format="JPEG",
                                                               quality=quality)
        files.append(buffer.getvalue())
    return files


class JpegBytes:
    """(JPEG bytes, label) per index, or (PIL image, label) with as_pil, as FFCV users hand
    their writer an ImageFolder's images."""

    def __init__(self, files, as_pil=False) -> None:
        self.files = files
        self.as_pil = as_pil

    def __len__(self):
        return len(self.files)

    def __getitem__(self, index):
        if not self.as_pil:
            return self.files[index], index % 7
        import io

        from PIL import Image
        return Image.open(io.BytesIO(self.files[index])).convert("RGB"), index % 7


@pytest.mark.parametrize("write_mode", ["raw", "jpg"])
def test_same_as_ffcv_stores_the_bytes_python_ffcvs_writer_stores(tmp_path, write_mode):
    """--same-as-ffcv: from the same JPEG files (sizes that need no resize, a non-integer
    reduction and more than 2x, where the default would decode at a reduced DCT scale), every
    stored image equals Python FFCV's writer's byte for byte: the raw pixels, and the JPEGs,
    which OpenCV encodes there with the same settings and forward DCT as ours."""
    files = jpeg_files(12, seed=8, quality=85, sizes=[(30, 40), (57, 75), (150, 200), (99, 61)])
    ours_path, ffcv_path = str(tmp_path / "ours.beton"), str(tmp_path / "ffcv.beton")
    DatasetWriter(ours_path, {"image": RGBImageField(write_mode=write_mode, max_resolution=48,
                                                     jpeg_quality=90, same_as_ffcv=True),
                              "label": IntField()}, num_workers=2,
                  progress=False).from_indexed_dataset(JpegBytes(files))
    from ffcv.writer import DatasetWriter as FfcvWriter
    FfcvWriter(ffcv_path, {"image": ffcv_rgb.RGBImageField(write_mode=write_mode,
                                                           max_resolution=48, jpeg_quality=90),
                           "label": ffcv_basics.IntField()},
               num_workers=2).from_indexed_dataset(JpegBytes(files, as_pil=True))
    ours, theirs = stored_images(ours_path), stored_images(ffcv_path)
    assert [s[:3] for s in ours] == [s[:3] for s in theirs]
    assert {s[0] for s in ours} == {1 if write_mode == "raw" else 0}
    assert [s[3] for s in ours] == [s[3] for s in theirs]


def test_kept_jpegs_are_their_sources_bytes_and_python_ffcv_decodes_them(tmp_path):
    """JPEG files at quality 80 written at quality 90 with no resize are kept as they came:
    the stored payloads are the files' bytes, and Python FFCV's loader decodes them to the
    batches ours gives."""
    files = jpeg_files(20, seed=9, quality=80, sizes=[(32, 40)])
    path = str(tmp_path / "kept.beton")
    DatasetWriter(path, {"image": RGBImageField(write_mode="jpg", jpeg_quality=90),
                         "label": IntField()}, num_workers=2,
                  progress=False).from_indexed_dataset(JpegBytes(files))
    assert [s[3] for s in stored_images(path)] == files
    theirs = ffcv_epoch(path, {"image": [ffcv_rgb.SimpleRGBImageDecoder()],
                               "label": [ffcv_basics.IntDecoder()]}, 8)
    ours = our_epoch(path, {"image": [SimpleRGBImageDecoder()], "label": [IntDecoder()]}, 8)
    assert [as_bytes(b[0]) for b in ours] == [as_bytes(b[0]) for b in theirs]
