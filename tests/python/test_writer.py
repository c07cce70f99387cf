"""DatasetWriter from Python writes the same bytes as `ffcv write` for the same images and
settings, and reports bad input clearly without leaving a file behind."""

from __future__ import annotations

import os
import random
import subprocess

import numpy as np
import pytest

from conftest import smooth_image
from ffcv_cpp.fields import IntField, NDArrayField, RGBImageField
from ffcv_cpp.writer import DatasetWriter


@pytest.fixture(scope="module")
def png_folder(tmp_path_factory):
    """An image-folder tree of PNGs (lossless, so every decoder sees the same pixels)."""
    from PIL import Image

    root = tmp_path_factory.mktemp("folder")
    rng = np.random.default_rng(8)
    for label in ("cat", "dog", "eel"):
        (root / label).mkdir()
        for i in range(12):
            height, width = (int(v) for v in rng.integers(30, 120, size=2))
            Image.fromarray(smooth_image(rng, height, width)).save(root / label / f"{i:02d}.png")
    return root


@pytest.mark.parametrize("write_mode, extra", [
    ("jpg", {"max_resolution": 64, "jpeg_quality": 85}),
    ("proportion", {"compress_probability": 0.5}),
    ("raw", {}),
])
def test_the_file_is_the_bytes_ffcv_write_makes(png_folder, tmp_path, build_bin, write_mode,
                                                extra):
    torchvision = pytest.importorskip("torchvision")
    cli_file = tmp_path / "cli.beton"
    flags = ["--write-mode", write_mode, "--workers", "2", "--seed", "3"]
    if "max_resolution" in extra:
        flags += ["--max-resolution", str(extra["max_resolution"])]
    if "jpeg_quality" in extra:
        flags += ["--jpeg-quality", str(extra["jpeg_quality"])]
    if "compress_probability" in extra:
        flags += ["--compress-probability", str(extra["compress_probability"])]
    subprocess.run([str(build_bin / "ffcv"), "write", "folder", str(png_folder), "--output",
                    str(cli_file)] + flags, check=True, capture_output=True)
    python_file = tmp_path / "python.beton"
    dataset = torchvision.datasets.ImageFolder(str(png_folder))
    DatasetWriter(str(python_file), {"image": RGBImageField(write_mode=write_mode, **extra),
                                     "label": IntField()},
                  num_workers=2, seed=3, progress=False).from_indexed_dataset(dataset)
    assert python_file.read_bytes() == cli_file.read_bytes()


def test_a_failing_getitem_raises_its_own_exception_naming_the_sample_and_leaves_no_file(tmp_path):
    class Broken:
        def __len__(self):
            return 20

        def __getitem__(self, index):
            if index == 13:
                raise KeyError("no sample here")
            return (np.zeros((2,), np.float32),)

    path = tmp_path / "broken.beton"
    with pytest.raises(KeyError, match="no sample here") as raised:
        DatasetWriter(str(path), {"x": NDArrayField(np.float32, (2,))}, num_workers=2,
                      progress=False).from_indexed_dataset(Broken())
    assert "while writing sample 13 (dataset[13])" in getattr(raised.value, "__notes__", [])
    assert os.listdir(tmp_path) == []


@pytest.mark.parametrize("value, message", [
    (np.zeros((3,), np.float32), r"shape \(2,\)"),
    ("text", "could not convert|must be"),
])
def test_a_value_that_does_not_fit_its_field_is_a_clear_error(tmp_path, value, message):
    path = tmp_path / "bad.beton"
    with pytest.raises((RuntimeError, ValueError), match=message):
        DatasetWriter(str(path), {"x": NDArrayField(np.float32, (2,))}, progress=False
                      ).from_indexed_dataset([(value,)])
    assert not path.exists()


def test_fields_must_be_this_packages_fields(tmp_path):
    with pytest.raises(TypeError, match="must be one of ffcv_cpp.fields"):
        DatasetWriter(str(tmp_path / "x.beton"), {"x": object()})
    with pytest.raises(ValueError, match="at least one field"):
        DatasetWriter(str(tmp_path / "x.beton"), {})


def test_jpeg_bytes_are_decoded_by_the_writer_as_ffcv_write_does(tmp_path, build_bin):
    """A dataset that hands over JPEG files' bytes gives the file `ffcv write folder` makes of
    the same JPEGs (the writer's threads decode them, DCT-scaled when shrinking)."""
    from PIL import Image

    root = tmp_path / "jpegs"
    rng = np.random.default_rng(9)
    samples = []
    for label, name in enumerate(("a", "b")):
        (root / name).mkdir(parents=True)
        for i in range(10):
            path = root / name / f"{i:02d}.jpg"
            Image.fromarray(smooth_image(rng, 90 + 7 * i, 120 - 5 * i)).save(path, quality=92)
            samples.append((path, label))
    cli_file = tmp_path / "cli.beton"
    subprocess.run([str(build_bin / "ffcv"), "write", "folder", str(root), "--output",
                    str(cli_file), "--write-mode", "jpg", "--max-resolution", "48", "--workers",
                    "2"], check=True, capture_output=True)
    python_file = tmp_path / "python.beton"
    DatasetWriter(str(python_file), {"image": RGBImageField(write_mode="jpg", max_resolution=48),
                                     "label": IntField()}, num_workers=2, progress=False
                  ).from_indexed_dataset([(path.read_bytes(), label) for path, label in samples])
    assert python_file.read_bytes() == cli_file.read_bytes()


def test_encoded_images_other_than_jpeg_are_refused(tmp_path):
    import io

    from PIL import Image

    png = io.BytesIO()
    Image.fromarray(np.zeros((4, 4, 3), np.uint8)).save(png, format="PNG")
    with pytest.raises(RuntimeError, match="JPEG bytes only"):
        DatasetWriter(str(tmp_path / "x.beton"), {"image": RGBImageField()}, progress=False
                      ).from_indexed_dataset([(png.getvalue(),)])


def test_ctrl_c_stops_a_write_and_leaves_no_file(tmp_path):
    import _thread
    import time

    class Slow:
        def __len__(self):
            return 800

        def __getitem__(self, index):
            if index == 40:
                _thread.interrupt_main()  # what Ctrl-C does to the main thread
            time.sleep(0.005)
            return (np.zeros((2,), np.float32),)

    path = tmp_path / "interrupted.beton"
    started = time.perf_counter()
    with pytest.raises(KeyboardInterrupt):
        DatasetWriter(str(path), {"x": NDArrayField(np.float32, (2,))}, num_workers=2,
                      progress=False).from_indexed_dataset(Slow())
    # Stopped, not run to the end: the whole write would sleep 800 x 5 ms over 2 threads, 2 s.
    assert time.perf_counter() - started < 1.0
    assert os.listdir(tmp_path) == []


class GlobalStateDataset:
    """As FFCV's own test datasets: each __getitem__ seeds numpy's global generator with its
    index and draws from it, so another thread's seed between the two would store another
    sample's data. It also draws from Python's global `random`, never seeded here: what a plain
    loop gives then depends on the order of the calls as well."""

    def __init__(self, count: int) -> None:
        self.count = count

    def __len__(self) -> int:
        return self.count

    def __getitem__(self, index: int):
        np.random.seed(index)
        array = np.random.randint(0, 255, size=64, dtype="u1")
        return index, array, np.array([random.random()], np.float64)


@pytest.mark.parametrize("shuffle_indices", [False, True])
def test_each_sample_is_what_a_plain_loop_over_the_dataset_gives(tmp_path, shuffle_indices):
    from ffcv_cpp.fields.decoders import NDArrayDecoder
    from ffcv_cpp.loader import Loader, OrderOption

    dataset = GlobalStateDataset(4096)
    path = str(tmp_path / "global_state.beton")
    random.seed(77)
    DatasetWriter(path, {"index": IntField(), "array": NDArrayField(np.dtype("u1"), (64,)),
                         "draw": NDArrayField(np.dtype("f8"), (1,))},
                  num_workers=4, progress=False, seed=5).from_indexed_dataset(
                      dataset, shuffle_indices=shuffle_indices)
    batches = list(Loader(path, batch_size=512, order=OrderOption.SEQUENTIAL,
                          pipelines={"array": [NDArrayDecoder()], "draw": [NDArrayDecoder()]}))
    indices, arrays, draws = (np.concatenate([batch[k] for batch in batches]) for k in range(3))
    indices = indices.reshape(-1)
    assert sorted(indices) == list(range(len(dataset)))
    assert (indices != np.arange(len(dataset))).any() == shuffle_indices
    # The plain loop over the file's rows, from the same global state.
    random.seed(77)
    loop = [dataset[int(i)] for i in indices]
    assert all(np.array_equal(arrays[row], loop[row][1]) for row in range(len(dataset)))
    assert all(np.array_equal(draws[row], loop[row][2]) for row in range(len(dataset)))


def test_compress_probability_none_is_taken_where_the_write_mode_does_not_use_it(tmp_path):
    images = [(np.full((8, 8, 3), i, np.uint8),) for i in range(3)]
    DatasetWriter(str(tmp_path / "a.beton"), {"image": RGBImageField(compress_probability=None)},
                  progress=False).from_indexed_dataset(images)
    with pytest.raises(ValueError, match="proportion.*needs compress_probability"):
        RGBImageField(write_mode="proportion", compress_probability=None)
