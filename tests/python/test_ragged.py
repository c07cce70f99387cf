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
    packed = loader(boxes_file, boxes=[RaggedDecoder()], labels=None)
    assert packed.ragged_layouts() == {"boxes": "packed"}
    assert ("boxes", "<f4", (4,)) in packed.outputs()  # the shape of one row
    for boxes, index in packed:
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


# ---- Boxes that follow their image, against torchvision's transforms.v2 -------------------------

OUT = 64
PAD = 8


class Scenes:
    """Raw images of varied sizes with boxes inside them (float pixels, xyxy), some thin or at
    the edges; labels number the boxes, so a kept label names its box."""

    def __init__(self, count: int = 40) -> None:
        rng = np.random.default_rng(21)
        self.images, self.boxes = [], []
        for _ in range(count):
            height, width = (int(v) for v in rng.integers(40, 121, size=2))
            self.images.append(rng.integers(0, 256, size=(height, width, 3), dtype=np.uint8))
            n = int(rng.integers(0, 7))
            x = np.sort(rng.uniform(0, width, size=(n, 2)), axis=1)
            y = np.sort(rng.uniform(0, height, size=(n, 2)), axis=1)
            boxes = np.stack([x[:, 0], y[:, 0], x[:, 1], y[:, 1]], axis=1).astype(np.float32)
            if n > 1:
                boxes[0] = [0, 0, width, height]  # the whole image
                boxes[1, 2] = boxes[1, 0] + 0.5  # thinner than a pixel: always dropped
            self.boxes.append(boxes.reshape(n, 4))

    def __len__(self) -> int:
        return len(self.images)

    def __getitem__(self, i: int):
        boxes = self.boxes[i]
        xywh = boxes.copy()
        xywh[:, 2:] -= boxes[:, :2]
        return self.images[i], boxes, xywh, np.arange(len(boxes), dtype=np.int64), i


@pytest.fixture(scope="module")
def scenes_file(tmp_path_factory) -> str:
    from ffcv_cpp.fields import RGBImageField

    path = str(tmp_path_factory.mktemp("scenes") / "scenes.beton")
    DatasetWriter(path, {"image": RGBImageField(write_mode="raw"),
                         "boxes": RaggedNDArrayField(np.float32, (4,)),
                         "coco": RaggedNDArrayField(np.float32, (4,)),
                         "labels": RaggedNDArrayField(np.int64), "index": IntField()},
                  num_workers=2, progress=False).from_indexed_dataset(Scenes())
    return path


def torchvision_boxes(boxes, fmt, canvas, maps):
    """The boxes and kept labels torchvision's transforms.v2 gives for the window, flip and shift
    that `maps` (our crop, flip, translate) record. Ours are computed in double and stored as
    float32, torchvision's in float32 throughout: they agree within 1e-3 px."""
    torch = pytest.importorskip("torch")
    tv_tensors = pytest.importorskip("torchvision.tv_tensors")
    from torchvision.transforms import v2
    from torchvision.transforms.v2 import functional as F

    (crop_sx, crop_tx, crop_sy, crop_ty, _, _), flip, shift = maps
    width, height = round(OUT / crop_sx), round(OUT / crop_sy)
    left, top = round(-crop_tx / crop_sx), round(-crop_ty / crop_sy)
    value = tv_tensors.BoundingBoxes(torch.from_numpy(boxes), format=fmt, canvas_size=canvas)
    value = F.resized_crop(value, top, left, height, width, [OUT, OUT])
    if flip[0] < 0:
        value = F.horizontal_flip(value)
    dx, dy = -shift[1], -shift[3]  # input x lands at x - dx
    value = F.pad(value, [PAD, PAD, PAD, PAD])
    value = F.crop(value, int(dy) + PAD, int(dx) + PAD, OUT, OUT)
    kept = v2.SanitizeBoundingBoxes(min_size=1, min_area=1)(
        {"boxes": value, "labels": torch.arange(len(boxes))})
    return kept["boxes"].numpy(), kept["labels"].numpy()


@pytest.mark.parametrize("crop", ["random_resized_crop", "center_crop"])
def test_boxes_follow_the_crop_flip_and_translate_of_their_image_as_torchvision_moves_them(
        scenes_file, crop):
    pytest.importorskip("torchvision")
    from ffcv_cpp.fields.decoders import (CenterCropRGBImageDecoder,
                                          RandomResizedCropRGBImageDecoder)
    from ffcv_cpp.transforms import RandomHorizontalFlip, RandomTranslate

    source = Scenes()
    decoder = (RandomResizedCropRGBImageDecoder((OUT, OUT), scale=(0.2, 1.0))
               if crop == "random_resized_crop" else CenterCropRGBImageDecoder((OUT, OUT), 0.7))
    loader = Loader(scenes_file, batch_size=8, num_workers=2, order=OrderOption.RANDOM, seed=9,
                    drop_last=False, pipelines={
                        "image": [decoder, RandomHorizontalFlip(0.5), RandomTranslate(PAD)],
                        "boxes": [RaggedDecoder(follows="image", rows="boxes_xyxy")],
                        "coco": [RaggedDecoder("padded", follows="image", rows="boxes_xywh")],
                        "labels": [RaggedDecoder(follows="boxes")],
                        "index": [IntDecoder()]})
    geometry = [loader.sample_geometry("image", 0, i) for i in range(len(source))]
    flips = dropped = moved = 0
    for _, (boxes, offsets), (coco, coco_rows), (labels, label_offsets), index in \
            loader.epoch(0):
        for k, i in enumerate(index[:, 0]):
            maps = geometry[i]
            flips += maps[1][0] < 0
            canvas = source.images[i].shape[:2]
            want, want_labels = torchvision_boxes(source.boxes[i], "XYXY", canvas, maps)
            mine = boxes[offsets[k]:offsets[k + 1]]
            assert labels[label_offsets[k]:label_offsets[k + 1]].tolist() == want_labels.tolist()
            np.testing.assert_allclose(mine, want, atol=1e-3)
            want_xywh, xywh_labels = torchvision_boxes(source[i][2], "XYWH", canvas, maps)
            assert xywh_labels.tolist() == want_labels.tolist()
            np.testing.assert_allclose(coco[k, :coco_rows[k]], want_xywh, atol=1e-3)
            assert not coco[k, coco_rows[k]:].any()
            dropped += len(source.boxes[i]) - len(want)
            moved += len(want)
    # The check covered mirrored and unmirrored samples, and kept and dropped boxes.
    assert 0 < flips < len(source) and dropped > 0 and moved > 0


def test_the_same_seed_gives_the_same_boxes_for_any_number_of_workers(scenes_file):
    from ffcv_cpp.fields.decoders import RandomResizedCropRGBImageDecoder
    from ffcv_cpp.transforms import RandomHorizontalFlip

    def epoch(workers):
        loader = Loader(scenes_file, batch_size=8, num_workers=workers, order=OrderOption.RANDOM,
                        seed=3, pipelines={
                            "image": [RandomResizedCropRGBImageDecoder((OUT, OUT)),
                                      RandomHorizontalFlip(0.5)],
                            "boxes": [RaggedDecoder(follows="image", rows="boxes_xyxy")],
                            "labels": [RaggedDecoder(follows="boxes")],
                            "coco": None, "index": None})
        return [(image.tobytes(), boxes.tobytes(), offsets.tobytes(), labels.tobytes())
                for image, (boxes, offsets), (labels, _) in loader.epoch(1)]

    assert epoch(1) == epoch(3)
