"""Batches from Python equal the C++ loader's bytes, for the same file, seed and settings: one
case per decoder and transform."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from conftest import as_bytes, cpp_batches
from ffcv_cpp import _native
from ffcv_cpp.fields import NDArrayField
from ffcv_cpp.fields.basics import FloatDecoder, IntDecoder
from ffcv_cpp.fields.decoders import (BytesDecoder, CenterCropRGBImageDecoder, NDArrayDecoder,
                                      RaggedDecoder,
                                      RandomResizedCropRGBImageDecoder,
                                      RandomResizedCropsRGBImageDecoder, SimpleRGBImageDecoder,
                                      RandomResizedCropEncoded, CenterCropEncoded)
from ffcv_cpp.loader import Loader, OrderOption
from ffcv_cpp.transforms import (Convert, Cutout, ImageMixup, LabelMixup, MixupToOneHot,
                                 ModuleWrapper, View,
                                 NormalizeImage, Poison, RandomBrightness, RandomContrast,
                                 RandomHorizontalFlip, RandomSaturation, RandomTranslate,
                                 ReplaceLabel, Squeeze, ToDevice, ToTensor, ToTorchImage,
                                 UnpackBits)
from ffcv_cpp.writer import DatasetWriter

MEAN = np.array([0.485, 0.456, 0.406]) * 255
STD = np.array([0.229, 0.224, 0.225]) * 255
SETTINGS = {"order": "random", "seed": 11, "num_workers": 2, "drop_last": False}
RRC = "random_resized_crop:height=24,width=32"
MASK = np.random.default_rng(5).integers(0, 256, size=(32, 40, 3))
ALPHA = np.full((32, 40), 0.3)
NORMALIZE_SPEC = "normalize:mean=[{}],std=[{}],dtype={{}}".format(
    ",".join(repr(float(v)) for v in MEAN), ",".join(repr(float(v)) for v in STD))


def nhwc(batch):
    """A batch ToTorchImage turned to (N, C, H, W), back in its (N, H, W, C) memory order."""
    return batch.permute(0, 2, 3, 1)


# (case, file fixture, image pipeline, image C++ steps, label pipeline, label C++ steps, how to
# bring the Python image batch to the C++ layout)
CASES = [
    ("simple_decoder", "raw_file", [SimpleRGBImageDecoder()], [("decoder", "image")],
     [IntDecoder()], [("decoder", "int")], None),
    ("random_resized_crop_flip", "jpeg_file",
     [RandomResizedCropRGBImageDecoder((24, 32)), RandomHorizontalFlip()],
     [("decoder", RRC), ("op", "random_horizontal_flip")], [IntDecoder()], [], None),
    ("center_crop_cutout_translate", "jpeg_file",
     [CenterCropRGBImageDecoder((28, 28), ratio=0.875), Cutout(6, (10, 20, 30)),
      RandomTranslate(3, (1, 2, 3))],
     [("decoder", "center_crop:size=28,ratio=0.875"), ("op", "cutout:size=6,fill=[10,20,30]"),
      ("op", "random_translate:padding=3,fill=[1,2,3]")], [IntDecoder()], [], None),
    ("color_jitter", "jpeg_file",
     [RandomResizedCropRGBImageDecoder((24, 32)), RandomBrightness(0.4), RandomContrast(0.4, p=0.7),
      RandomSaturation(0.3)],
     [("decoder", RRC), ("op", "random_brightness:magnitude=0.4"),
      ("op", "random_contrast:magnitude=0.4,probability=0.7"),
      ("op", "random_saturation:magnitude=0.3")], [IntDecoder()], [], None),
    ("normalize_per_sample_float16", "jpeg_file",
     [RandomResizedCropRGBImageDecoder((24, 32)), NormalizeImage(MEAN, STD, np.float16)],
     [("decoder", RRC), ("op", NORMALIZE_SPEC.format("float16"))], [IntDecoder()], [], None),
    ("normalize_on_batches_after_to_torch_image", "jpeg_file",
     [RandomResizedCropRGBImageDecoder((24, 32)), RandomHorizontalFlip(), ToTensor(),
      ToDevice("cpu"), ToTorchImage(), NormalizeImage(MEAN, STD, np.float32)],
     [("decoder", RRC), ("op", "random_horizontal_flip"), ("op", NORMALIZE_SPEC.format("float32"))],
     [IntDecoder(), ToTensor(), Squeeze()], [("decoder", "int")], nhwc),
    ("convert", "jpeg_file",
     [RandomResizedCropRGBImageDecoder((24, 32)), Convert(np.float32), ToTensor(),
      Convert(torch.float64), View(torch.int64), ModuleWrapper(torch.nn.Identity())],
     [("decoder", RRC), ("op", "convert:dtype=float32"), ("op", "convert:dtype=float64")],
     [IntDecoder()], [], None),
    ("mixup", "jpeg_file",
     [RandomResizedCropRGBImageDecoder((24, 32)), ImageMixup(0.5, False)],
     [("decoder", RRC), ("batch-op", "image_mixup:alpha=0.5")],
     [IntDecoder(), LabelMixup(0.5, False), MixupToOneHot(10)],
     [("decoder", "int"), ("batch-op", "label_mixup:alpha=0.5"),
      ("batch-op", "mixup_to_one_hot:num_classes=10")], None),
    ("multi_view_crops", "jpeg_file",
     [RandomResizedCropsRGBImageDecoder(16, views=3, flip=True, interpolation="linear")],
     [("decoder", "random_resized_crops:size=16,views=3,flip=true,interpolation=linear")],
     [IntDecoder()], [], None),
    ("gpu_path_records", "jpeg_file",
     [RandomResizedCropEncoded((24, 32), flip=0.5)],
     [("decoder", "random_resized_crop_encoded:height=24,width=32,flip=0.5")],
     [IntDecoder()], [], None),
    ("gpu_path_center_records", "raw_file",
     [CenterCropEncoded(20, ratio=0.5)], [("decoder", "center_crop_encoded:size=20,ratio=0.5")],
     [IntDecoder()], [], None),
    ("poison_and_replace_label", "raw_file",
     [SimpleRGBImageDecoder(), Poison(MASK, ALPHA, [1, 5, 9])],
     [("decoder", "image"), ("op", "poison:mask=[{}],alpha=0.3,indices=[1,5,9]".format(
         ",".join(str(v) for v in MASK.ravel())))],
     [IntDecoder(), ReplaceLabel([0, 2, 4], 7)],
     [("decoder", "int"), ("op", "replace_label:indices=[0,2,4],label=7")], None),
]


@pytest.mark.parametrize("case", CASES, ids=[case[0] for case in CASES])
def test_python_batches_equal_the_cpp_loaders(case, request, build_bin, tmp_path):
    name, file_fixture, image_steps, image_cpp, label_steps, label_cpp, to_cpp_layout = case
    path = request.getfixturevalue(file_fixture)
    loader = Loader(path, batch_size=10, num_workers=2, order=OrderOption.RANDOM, seed=11,
                    drop_last=False, pipelines={"image": image_steps, "label": label_steps})
    images, labels = [], []
    for image, label in loader:
        images.append(as_bytes(to_cpp_layout(image) if to_cpp_layout else image))
        labels.append(as_bytes(label))
    expected = cpp_batches(build_bin, tmp_path, path, 10, SETTINGS,
                           [("image", "image", image_cpp),
                            ("label", "label", label_cpp or [("decoder", "int")])])
    assert len(images) == len(loader) == (10 if file_fixture == "jpeg_file" else 7)
    assert b"".join(images) == expected["image"]
    assert b"".join(labels) == expected["label"]


def test_scalar_array_and_bytes_decoders_equal_the_cpp_loaders(all_kinds_file, build_bin,
                                                               tmp_path):
    loader = Loader(all_kinds_file, batch_size=8, num_workers=2, order=OrderOption.RANDOM,
                    seed=11, drop_last=False,
                    pipelines={"int": [IntDecoder()], "float": [FloatDecoder()],
                               "array": [NDArrayDecoder()],
                               "blob": [BytesDecoder(with_length=True)],
                               "doc": [BytesDecoder(with_length=True)]})
    got = {name: [] for name in ("int", "float", "array", "blob", "doc")}
    for batch in loader:
        for name, values in zip(got, batch):
            got[name].append(as_bytes(values))
    expected = cpp_batches(build_bin, tmp_path, all_kinds_file, 8, SETTINGS,
                           [(n, n, [("decoder", d)]) for n, d in
                            [("int", "int"), ("float", "float"), ("array", "ndarray"),
                             ("blob", "bytes"), ("doc", "bytes")]])
    for name in got:
        assert b"".join(got[name]) == expected[name], name


def test_outputs_without_to_tensor_are_numpy_and_with_it_torch(jpeg_file):
    loader = Loader(jpeg_file, batch_size=16, num_workers=1,
                    pipelines={"image": [RandomResizedCropRGBImageDecoder(16)],
                               "label": [IntDecoder(), ToTensor(), Squeeze()]})
    image, label = next(iter(loader))
    assert isinstance(image, np.ndarray) and image.shape == (16, 16, 16, 3)
    assert image.dtype == np.uint8
    assert isinstance(label, torch.Tensor) and label.shape == (16,) and label.dtype == torch.int64


def test_unpack_bits_equals_the_cpp_loaders(build_bin, tmp_path):
    rng = np.random.default_rng(4)
    bits = rng.integers(0, 2, size=(30, 20)).astype(bool)
    packed = np.packbits(bits, axis=1, bitorder="big")
    path = str(tmp_path / "bits.beton")
    DatasetWriter(path, {"bits": NDArrayField(np.uint8, (3,))}, progress=False
                  ).from_indexed_dataset([(row,) for row in packed])
    loader = Loader(path, batch_size=7, num_workers=2, order=OrderOption.RANDOM, seed=11,
                    drop_last=False, pipelines={"bits": [NDArrayDecoder(), UnpackBits(20, "uint8")]})
    got = b"".join(as_bytes(batch) for (batch,) in loader)
    expected = cpp_batches(build_bin, tmp_path / "cpp", path, 7, SETTINGS, [
        ("bits", "bits", [("decoder", "ndarray"), ("op", "unpack_bits:count=20,dtype=uint8")])])
    assert got == expected["bits"]
    ordered = Loader(path, batch_size=30, pipelines={"bits": [NDArrayDecoder(), UnpackBits(20, "uint8")]})
    assert np.array_equal(next(iter(ordered))[0], bits.astype(np.uint8))


# The Python class of every step of the loader's catalogue.
CATALOGUE = {
    "bytes": BytesDecoder, "center_crop": CenterCropRGBImageDecoder, "float": FloatDecoder,
    "image": SimpleRGBImageDecoder, "int": IntDecoder, "ndarray": NDArrayDecoder,
    "random_resized_crop": RandomResizedCropRGBImageDecoder,
    "random_resized_crops": RandomResizedCropsRGBImageDecoder, "convert": Convert,
    "random_resized_crop_encoded": RandomResizedCropEncoded, "center_crop_encoded": CenterCropEncoded,
    "cutout": Cutout, "normalize": NormalizeImage, "poison": Poison,
    "random_brightness": RandomBrightness, "random_contrast": RandomContrast,
    "random_horizontal_flip": RandomHorizontalFlip, "random_saturation": RandomSaturation,
    "random_translate": RandomTranslate, "replace_label": ReplaceLabel, "squeeze": Squeeze,
    "unpack_bits": UnpackBits, "image_mixup": ImageMixup, "label_mixup": LabelMixup,
    "mixup_to_one_hot": MixupToOneHot, "ragged": RaggedDecoder,
}


def test_every_step_of_the_catalogue_has_a_python_class():
    names = _native.step_names()
    catalogue = set(names["decoders"]) | set(names["operations"]) | set(names["batch_operations"])
    assert catalogue == set(CATALOGUE)
