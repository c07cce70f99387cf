"""ToDevice to a GPU: batches copied on the side stream from pinned host memory equal the CPU
loader's, and NormalizeImage on the GPU gives the CPU step's bits. Skipped without CUDA; on the
GPU machine `tools/gpu_checks.sh python` runs this file as a script (no pytest there)."""

from __future__ import annotations

import sys
import tempfile

import numpy as np
import pytest
import torch

from ffcv_cpp.fields import IntField, RGBImageField
from ffcv_cpp.fields.decoders import IntDecoder, RandomResizedCropRGBImageDecoder
from ffcv_cpp.loader import Loader, OrderOption
from ffcv_cpp.loader.batch_memory import PinnedHostMemory
from ffcv_cpp.transforms import (NormalizeImage, RandomHorizontalFlip, Squeeze, ToDevice,
                                 ToTensor, ToTorchImage)
from ffcv_cpp.writer import DatasetWriter

MEAN = np.array([0.485, 0.456, 0.406]) * 255
STD = np.array([0.229, 0.224, 0.225]) * 255


def write_images(path: str) -> None:
    rng = np.random.default_rng(21)
    samples = [(rng.integers(0, 256, size=(int(h), int(w), 3), dtype=np.uint8), i % 10)
               for i, (h, w) in enumerate(rng.integers(40, 100, size=(200, 2)))]
    DatasetWriter(path, {"image": RGBImageField(write_mode="jpg"), "label": IntField()},
                  progress=False).from_indexed_dataset(samples)


def loader(path: str, device: str) -> Loader:
    to_device = [ToDevice(device)] if device != "cpu" else []
    return Loader(path, batch_size=16, num_workers=4, order=OrderOption.RANDOM, seed=3,
                  batches_ahead=1, pipelines={
                      "image": [RandomResizedCropRGBImageDecoder(32), RandomHorizontalFlip(),
                                ToTensor()] + to_device + [ToTorchImage(),
                                                           NormalizeImage(MEAN, STD, np.float16)],
                      "label": [IntDecoder(), ToTensor()] + to_device + [Squeeze()]})


@pytest.mark.skipif(not torch.cuda.is_available(), reason="no CUDA device")
def test_to_device_batches_equal_the_cpu_loaders(tmp_path):
    path = str(tmp_path / "images.beton")
    write_images(path)
    expected = [tuple(t.clone() for t in batch) for batch in loader(path, "cpu")]
    on_gpu = loader(path, "cuda")
    assert isinstance(on_gpu.batch_memory, PinnedHostMemory)
    kept = []
    for image, label in on_gpu:
        assert image.is_cuda and label.is_cuda and image.dtype == torch.float16
        assert image.is_contiguous(memory_format=torch.channels_last)
        assert all(block.is_pinned() for block in on_gpu.batch_memory._blocks.values())
        kept.append((image, label))
    torch.cuda.synchronize()
    assert len(kept) == len(expected) == 12
    for (image, label), (cpu_image, cpu_label) in zip(kept, expected):
        assert torch.equal(image.cpu(), cpu_image)  # the same float16 bits
        assert torch.equal(label.cpu(), cpu_label)


if __name__ == "__main__":
    if not torch.cuda.is_available():
        print("[test not run] no CUDA device")
        sys.exit(77)
    with tempfile.TemporaryDirectory() as scratch:
        import pathlib

        test_to_device_batches_equal_the_cpu_loaders(pathlib.Path(scratch))
    print(f"test_cuda: ToDevice batches equal the CPU loader's on {torch.cuda.get_device_name()}")
