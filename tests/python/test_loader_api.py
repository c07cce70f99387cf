"""Python FFCV's Loader API beyond iteration: filter, distributed, indices, PipelineSpec."""

from __future__ import annotations

import numpy as np
import pytest

from conftest import ImagesAndLabels
from ffcv_cpp.fields.basics import IntDecoder
from ffcv_cpp.fields.decoders import RandomResizedCropRGBImageDecoder
from ffcv_cpp.loader import Loader, OrderOption
from ffcv_cpp.pipeline import PipelineSpec
from ffcv_cpp.transforms import ToTensor

LABELS = ImagesAndLabels(96, seed=1, fixed_size=False).labels  # the jpeg_file fixture's


def labels_of(loader):
    return np.concatenate([np.asarray(batch[-1]).reshape(-1) for batch in loader])


def test_filter_keeps_the_samples_whose_value_satisfies_the_condition(jpeg_file):
    loader = Loader(jpeg_file, batch_size=8, order=OrderOption.SEQUENTIAL, drop_last=False,
                    pipelines={"image": None, "label": [IntDecoder()]})
    even = loader.filter("label", lambda label: label[0] % 2 == 0)
    assert list(even.indices) == [i for i, label in enumerate(LABELS) if label % 2 == 0]
    assert np.array_equal(labels_of(even), LABELS[LABELS % 2 == 0])
    # Over a subset, the positions map back to the subset's dataset indices.
    subset = Loader(jpeg_file, batch_size=8, order=OrderOption.SEQUENTIAL, drop_last=False,
                    indices=list(range(95, 40, -1)), pipelines={"image": None})
    small = subset.filter("label", lambda label: label[0] < 3)
    assert list(small.indices) == [i for i in range(95, 40, -1) if LABELS[i] < 3]


def test_distributed_ranks_split_the_epoch_and_share_a_seed(jpeg_file, monkeypatch):
    monkeypatch.setenv("WORLD_SIZE", "2")
    seen = []
    for rank in (0, 1):
        monkeypatch.setenv("RANK", str(rank))
        with pytest.warns(UserWarning, match="no seed given with distributed=True: seed 0"):
            loader = Loader(jpeg_file, batch_size=8, order=OrderOption.RANDOM, distributed=True,
                            pipelines={"image": None, "label": [IntDecoder()]})
        assert loader.seed == 0 and loader.rank == rank and len(loader) == 6
        seen.append(labels_of(loader))
    assert sorted(np.concatenate(seen)) == sorted(LABELS)


def test_a_pipeline_spec_reads_another_field_and_outputs_keep_ffcvs_order(jpeg_file):
    loader = Loader(jpeg_file, batch_size=8, order=OrderOption.SEQUENTIAL, pipelines={
        "crop": PipelineSpec("image", RandomResizedCropRGBImageDecoder(8), [ToTensor()]),
        "image": None, "label": [IntDecoder()]})
    assert [name for name, _, _ in loader.outputs()] == ["label", "crop"]
    label, crop = next(iter(loader))
    assert crop.shape == (8, 8, 8, 3) and label.shape == (8, 1)


@pytest.mark.parametrize("recompile", [False, True])
def test_progressive_resizing_sets_the_decoders_output_size_between_epochs(jpeg_file, recompile):
    # As FFCV's training scripts do: decoder.output_size = (res, res) before each epoch.
    decoder = RandomResizedCropRGBImageDecoder((16, 16))
    loader = Loader(jpeg_file, batch_size=8, order=OrderOption.RANDOM, seed=4,
                    recompile=recompile, pipelines={"image": [decoder], "label": [IntDecoder()]})
    for epoch, size in enumerate([(16, 16), (24, 24), (12, 20), (24, 24)]):
        decoder.output_size = size
        images = np.concatenate([image for image, _ in loader])
        assert images.shape == (96, *size, 3)
        # The same pixels as a loader made at that size gives for that epoch.
        fresh = Loader(jpeg_file, batch_size=8, order=OrderOption.RANDOM, seed=4,
                       pipelines={"image": [RandomResizedCropRGBImageDecoder(size)],
                                  "label": [IntDecoder()]})
        assert np.array_equal(images, np.concatenate([image for image, _ in fresh.epoch(epoch)]))
    with pytest.raises(ValueError, match="output_size"):
        decoder.output_size = (0, 16)


def test_a_missing_file_raises_file_not_found_error(tmp_path):
    with pytest.raises(FileNotFoundError, match="missing.beton"):
        Loader(str(tmp_path / "missing.beton"), batch_size=4)
