"""Fixtures of the Python package's tests: small datasets written once per session, and the
C++ programs the tests compare against (FFCV_BUILD_BIN, default build/bin of the repository)."""

from __future__ import annotations

import os
import pathlib
import subprocess

import numpy as np
import pytest

from ffcv_cpp.fields import (BytesField, FloatField, IntField, JSONField, NDArrayField,
                             RGBImageField)
from ffcv_cpp.writer import DatasetWriter

REPO = pathlib.Path(__file__).resolve().parents[2]
BUILD_BIN = pathlib.Path(os.environ.get("FFCV_BUILD_BIN", REPO / "build" / "bin"))


def smooth_image(rng: np.random.Generator, height: int, width: int) -> np.ndarray:
    """An image JPEG keeps close to (gradients and a little noise), (H, W, 3) uint8."""
    y = np.linspace(0, 1, height)[:, None, None]
    x = np.linspace(0, 1, width)[None, :, None]
    base = rng.uniform(0, 255, size=(1, 1, 3)) * (0.5 + 0.5 * x) * (0.3 + 0.7 * y)
    noise = rng.normal(0, 8, size=(height, width, 3))
    return np.clip(base + noise, 0, 255).astype(np.uint8)


class ImagesAndLabels:
    """A torchvision-style dataset: (image, label) per index."""

    def __init__(self, count: int, seed: int, fixed_size: bool) -> None:
        rng = np.random.default_rng(seed)
        self.images = []
        for _ in range(count):
            height, width = (32, 40) if fixed_size else rng.integers(36, 90, size=2)
            self.images.append(smooth_image(rng, int(height), int(width)))
        self.labels = rng.integers(0, 10, size=count)

    def __len__(self) -> int:
        return len(self.images)

    def __getitem__(self, index: int):
        return self.images[index], int(self.labels[index])


class AllKinds:
    """Int, float, ndarray, bytes and JSON values per index."""

    def __init__(self, count: int) -> None:
        rng = np.random.default_rng(3)
        self.ints = rng.integers(-(2**40), 2**40, size=count)
        self.floats = rng.normal(size=count)
        self.arrays = rng.normal(size=(count, 3, 5)).astype(np.float32)
        self.blobs = [rng.integers(0, 256, size=int(rng.integers(1, 60))).astype(np.uint8)
                      for _ in range(count)]
        self.docs = [{"id": i, "name": f"sample {i}", "tags": list(range(i % 4))}
                     for i in range(count)]

    def __len__(self) -> int:
        return len(self.ints)

    def __getitem__(self, i: int):
        return int(self.ints[i]), float(self.floats[i]), self.arrays[i], self.blobs[i], self.docs[i]


@pytest.fixture(scope="session")
def build_bin() -> pathlib.Path:
    if not (BUILD_BIN / "ffcv").exists():
        pytest.skip(f"the C++ build is not there ({BUILD_BIN}); run tools/setup.sh")
    return BUILD_BIN


@pytest.fixture(scope="session")
def jpeg_file(tmp_path_factory) -> str:
    """96 JPEG images of varied sizes with labels."""
    path = str(tmp_path_factory.mktemp("data") / "jpeg.beton")
    DatasetWriter(path, {"image": RGBImageField(write_mode="jpg", jpeg_quality=90),
                         "label": IntField()}, num_workers=2, progress=False
                  ).from_indexed_dataset(ImagesAndLabels(96, seed=1, fixed_size=False))
    return path


@pytest.fixture(scope="session")
def raw_file(tmp_path_factory) -> str:
    """64 raw images of one size (32 x 40) with labels."""
    path = str(tmp_path_factory.mktemp("data") / "raw.beton")
    DatasetWriter(path, {"image": RGBImageField(write_mode="raw"), "label": IntField()},
                  num_workers=2, progress=False
                  ).from_indexed_dataset(ImagesAndLabels(64, seed=2, fixed_size=True))
    return path


@pytest.fixture(scope="session")
def all_kinds_file(tmp_path_factory) -> str:
    path = str(tmp_path_factory.mktemp("data") / "kinds.beton")
    DatasetWriter(path, {"int": IntField(), "float": FloatField(),
                         "array": NDArrayField(np.float32, (3, 5)), "blob": BytesField(),
                         "doc": JSONField()}, num_workers=2, progress=False
                  ).from_indexed_dataset(AllKinds(50))
    return path


def cpp_batches(build_bin: pathlib.Path, out_dir: pathlib.Path, path: str, batch_size: int,
                settings: dict, outputs: list) -> dict:
    """The C++ loader's epoch 0: {output: bytes of every batch}. `outputs` holds
    (name, field, [("decoder"|"op"|"batch-op", SPEC), ...])."""
    out_dir.mkdir(parents=True, exist_ok=True)
    command = [str(build_bin / "ffcv_dump_batches"), path, str(out_dir),
               "--batch-size", str(batch_size)]
    for name, value in settings.items():
        command += ["--set", f"{name}={str(value).lower() if isinstance(value, bool) else value}"]
    for name, field, steps in outputs:
        command += ["--output", f"{name}={field}"]
        for kind, spec in steps:
            command += [f"--{kind}", spec]
    done = subprocess.run(command, capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    return {name: (out_dir / f"{name}.bin").read_bytes() for name, _, _ in outputs}


def as_bytes(batch) -> bytes:
    if hasattr(batch, "detach"):
        batch = batch.detach().cpu().contiguous().numpy()
    return np.ascontiguousarray(batch).tobytes()
