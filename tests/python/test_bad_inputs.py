"""Inputs that do not fit, as a user passes them: each is refused with one exception naming the
argument (or the sample and field), the value and what is allowed; never a cast that changes
the data, a C++ type name or a dump of the native signatures. Also what is accepted: indices
listed twice (a sampler with replacement), an existing .beton replaced by a write."""

from __future__ import annotations

import os
import subprocess
import tempfile

import numpy as np
import pytest

from ffcv_cpp.fields import IntField, NDArrayField, RGBImageField
from ffcv_cpp.fields.basics import IntDecoder
from ffcv_cpp.fields.decoders import NDArrayDecoder, RandomResizedCropRGBImageDecoder
from ffcv_cpp.loader import Loader, OrderOption
from ffcv_cpp.writer import DatasetWriter

COUNT = 10


@pytest.fixture(scope="module")
def numbers_file(tmp_path_factory) -> str:
    """COUNT samples, sample i holding i."""
    path = str(tmp_path_factory.mktemp("numbers") / "numbers.beton")
    DatasetWriter(path, {"n": IntField()}, num_workers=1, progress=False
                  ).from_indexed_dataset([(i,) for i in range(COUNT)])
    return path


def values_of(loader):
    return [int(v) for (batch,) in loader for v in np.asarray(batch).reshape(-1)]


def write(path, fields, samples, **arguments):
    return DatasetWriter(str(path), fields, num_workers=1, progress=False
                         ).from_indexed_dataset(samples, **arguments)


# Images that are not uint8: Python FFCV raises ("Image type has to be uint8"), where a cast
# would store floats in [0, 1] as black and wrap 300 to 44.
@pytest.mark.parametrize("image, dtype", [
    (np.full((4, 5, 3), 0.5, np.float32), "float32"),
    (np.full((4, 5, 3), 300, np.int32), "int32"),
])
def test_an_image_that_is_not_uint8_is_refused_naming_its_dtype_and_sample(tmp_path, image,
                                                                           dtype):
    good = np.zeros((4, 5, 3), np.uint8)
    path = tmp_path / "images.beton"
    with pytest.raises(ValueError, match=rf"dataset\[2\], field 'image': RGBImageField takes "
                                         rf"uint8 pixels \(0 to 255\), got an array of dtype "
                                         rf"{dtype}"):
        write(path, {"image": RGBImageField()}, [(good,), (good,), (image,)])
    assert not path.exists()


def test_float_indices_are_refused_not_truncated(numbers_file, tmp_path):
    with pytest.raises(TypeError, match=r"indices must be integers, got 0\.5 \(float\) at "
                                        r"position 0"):
        Loader(numbers_file, batch_size=2, indices=[0.5, 1.7])
    with pytest.raises(TypeError, match=r"indices must be integers, got 1\.7 \(float\) at "
                                        r"position 1"):
        write(tmp_path / "x.beton", {"n": IntField()}, [(i,) for i in range(4)],
              indices=[1, 1.7, 2])
    with pytest.raises(ValueError, match=r"indices\[1\] = -2 is negative"):
        Loader(numbers_file, batch_size=2, indices=[1, -2])
    assert not (tmp_path / "x.beton").exists()


@pytest.mark.parametrize("order", [OrderOption.SEQUENTIAL, OrderOption.RANDOM,
                                   OrderOption.QUASI_RANDOM])
def test_an_index_listed_twice_is_loaded_twice(numbers_file, order):
    listed = [3, 1, 3, 3, 9, 1, 0, 9, 3]
    loader = Loader(numbers_file, batch_size=2, order=order, seed=5, drop_last=False,
                    indices=listed, pipelines={"n": [IntDecoder()]})
    assert len(loader) == 5
    for _ in range(2):  # two epochs
        served = values_of(loader)
        assert sorted(served) == sorted(listed)
        if order == OrderOption.SEQUENTIAL:
            assert served == listed


def test_an_index_listed_twice_is_written_twice(tmp_path):
    path = tmp_path / "twice.beton"
    write(path, {"n": IntField()}, [(10 * i,) for i in range(5)], indices=[4, 0, 4, 2])
    loader = Loader(str(path), batch_size=4, order=OrderOption.SEQUENTIAL, drop_last=False)
    assert values_of(loader) == [40, 0, 40, 20]


# An existing output: a .beton may be replaced (what a rerun makes), and an empty file (a
# tempfile.NamedTemporaryFile(), as FFCV's own tests write to), any other file only with
# force=True, as `ffcv write` decides (with --force); a folder never.
def test_a_write_replaces_a_beton_but_no_other_file_unless_forced(tmp_path, build_bin):
    notes = tmp_path / "notes.txt"
    notes.write_text("my notes\n")
    with pytest.raises(FileExistsError, match=r"notes\.txt' exists and is not a \.beton file or an "
                                              r"empty file; pass force=True to replace it"):
        write(notes, {"n": IntField()}, [(1,)])
    assert notes.read_text() == "my notes\n"
    # The CLI refuses the same file without --force.
    np.save(tmp_path / "x.npy", np.zeros((3, 2), np.float32))
    np.save(tmp_path / "y.npy", np.arange(3))
    cli = subprocess.run([str(build_bin / "ffcv"), "write", "npy", "--output", str(notes),
                          "--features", str(tmp_path / "x.npy"), "--targets",
                          str(tmp_path / "y.npy")], capture_output=True, text=True)
    assert cli.returncode != 0 and "exists and is not a .beton" in cli.stderr, cli.stderr
    assert notes.read_text() == "my notes\n"
    # With force, the file is replaced; a .beton is replaced without it.
    DatasetWriter(str(notes), {"n": IntField()}, num_workers=1, progress=False, force=True
                  ).from_indexed_dataset([(7,)])
    assert values_of(Loader(str(notes), batch_size=1)) == [7]
    write(notes, {"n": IntField()}, [(8,), (9,)])
    assert values_of(Loader(str(notes), batch_size=1)) == [8, 9]
    with tempfile.NamedTemporaryFile(dir=tmp_path) as empty:
        write(empty.name, {"n": IntField()}, [(5,)])
        assert values_of(Loader(empty.name, batch_size=1)) == [5]
    with pytest.raises(IsADirectoryError, match="is a folder; name the file to write"):
        write(tmp_path, {"n": IntField()}, [(1,)])


def test_a_batch_too_large_for_memory_names_batch_size_and_the_memory_it_needs(numbers_file):
    # 2**62 samples of 8 bytes in 5 batches overflow 64 bits (the native sizes would wrap).
    with pytest.raises(ValueError, match=r"batch_size 4611686018427387904 is too large: 5 "
                                         r"batches in flight \(batches_ahead \+ 2\) of n "
                                         r"<i8\[1\] take at least .* EB, more than memory can "
                                         r"address"):
        Loader(numbers_file, batch_size=2**62, drop_last=False)
    # 2**55 x 8 bytes a batch: more than any address space (2**57 bytes at most) holds.
    loader = Loader(numbers_file, batch_size=2**55, drop_last=False)
    with pytest.raises(MemoryError, match=r"batch_size 36028797018963968: the batch memory "
                                          r"cannot be allocated: 5 batches in flight .* take at "
                                          r"least 1\.44 EB; lower batch_size"):
        iter(loader)


def test_an_int_beyond_64_bits_names_the_field_and_sample(tmp_path):
    with pytest.raises(ValueError, match=r"dataset\[1\], field 'n': IntField takes 64-bit "
                                         r"signed integers \(-2\*\*63 to 2\*\*63 - 1\), got "
                                         r"1180591620717411303424"):
        write(tmp_path / "x.beton", {"n": IntField()}, [(1,), (2**70,)])


def test_a_big_endian_field_is_stored_little_endian_and_reads_back(tmp_path):
    path = tmp_path / "big.beton"
    values = [np.array([1.5, -2.25 + i], ">f4") for i in range(3)]
    write(path, {"x": NDArrayField(np.dtype(">f4"), (2,))}, [(v,) for v in values])
    loader = Loader(str(path), batch_size=3, pipelines={"x": [NDArrayDecoder()]})
    (batch,) = next(iter(loader))
    assert batch.dtype == np.dtype("<f4")
    assert batch.tolist() == [v.tolist() for v in values]


@pytest.mark.parametrize("make, error, message", [
    (lambda path: Loader(path, batch_size=2).epoch("1"), TypeError,
     r"epoch must be an integer, got '1' \(str\)"),
    (lambda path: Loader(path, batch_size=2).epoch(-1), ValueError,
     r"epoch must be in \[0, 2\*\*64 - 1\], got -1"),
    (lambda path: Loader(path, batch_size=2).epoch(0, first_batch=1.5), TypeError,
     r"first_batch must be an integer, got 1\.5 \(float\)"),
    (lambda path: Loader(path, batch_size=2, seed=2.5), TypeError,
     r"seed must be an integer, got 2\.5 \(float\)"),
    (lambda path: Loader(path, batch_size=2, num_workers="2"), TypeError,
     r"num_workers must be an integer, got '2' \(str\)"),
    (lambda path: Loader(path, batch_size=2, indices=[[1, 2]]), TypeError,
     r"indices must be a flat sequence of integers, got an array of shape \(1, 2\)"),
    (lambda path: DatasetWriter(path, {"n": IntField()}, page_size=-1), ValueError,
     r"page_size must be in \[2097152, 2\*\*64 - 1\], got -1"),
    (lambda path: DatasetWriter(path, {"n": IntField()}, seed=-1), ValueError,
     r"seed must be in \[0, 2\*\*64 - 1\], got -1"),
    (lambda path: RGBImageField(max_resolution="big"), TypeError,
     r"max_resolution must be an integer, got 'big' \(str\)"),
    (lambda path: RGBImageField(jpeg_quality=120), ValueError,
     r"jpeg_quality must be in \[1, 100\], got 120"),
    (lambda path: RGBImageField(write_mode="png"), ValueError,
     r"write_mode must be one of raw, jpg, smart, proportion, got 'png'"),
    (lambda path: RGBImageField(compress_probability=2), ValueError,
     r"compress_probability must be a number in \[0, 1\], got 2"),
    (lambda path: NDArrayField(np.float32, (2, "3")), TypeError,
     r"NDArrayField shape\[1\] must be an integer, got '3' \(str\)"),
    (lambda path: RandomResizedCropRGBImageDecoder("8"), TypeError,
     r"output_size must be an integer or \(height, width\), got '8'"),
])
def test_a_wrong_argument_type_or_value_is_named_with_what_is_allowed(numbers_file, make, error,
                                                                      message):
    with pytest.raises(error, match=message) as raised:
        make(numbers_file)
    text = str(raised.value)
    assert "incompatible function arguments" not in text and "bad_cast" not in text
    assert "\n" not in text


def test_a_loader_epoch_and_sample_geometry_take_whole_numbers(jpeg_file):
    loader = Loader(jpeg_file, batch_size=4,
                    pipelines={"image": [RandomResizedCropRGBImageDecoder(8)]})
    with pytest.raises(ValueError, match=r"index must be in \[0, 2\*\*64 - 1\], got -1"):
        loader.sample_geometry("image", 0, -1)
    with pytest.raises(TypeError, match=r"output must be the name of an output \(str\), got 0"):
        loader.sample_geometry(0, 0, 1)
    assert len(loader.sample_geometry("image", 0, 1)) == 1
