"""RGB images: the field that stores them (raw pixels or JPEG) and the three decoders."""

from __future__ import annotations

from typing import Optional, Tuple, Union

import numpy as np

from ..arguments import height_width, whole_number
from ..pipeline.operation import NativeStep
from .base import Field

Size = Union[int, Tuple[int, int]]


def _height_width(output_size: Size) -> Tuple[int, int]:
    return height_width(output_size, "output_size")


_WRITE_MODES = ("raw", "jpg", "smart", "proportion")


class RGBImageField(Field):
    """An RGB image per sample. ``write_mode``: "raw" (pixels), "jpg", "smart" (JPEG above
    ``smart_threshold`` bytes of pixels) or "proportion" (JPEG with ``compress_probability``).
    ``max_resolution`` bounds the longer side (images are shrunk, keeping their shape).

    A sample's value is an (H, W, 3) uint8 array, a PIL image (converted to RGB), or the bytes
    of a JPEG file, which the writer's threads decode (as `ffcv write folder` does its files,
    and with the same result) without holding the GIL. A JPEG file that needs no change (no
    resize, YCbCr 4:2:0, quantised at most as finely as ``jpeg_quality``) is stored as it came;
    ``same_as_ffcv=True`` turns that and the faster decode and resize off, to encode exactly as
    Python FFCV's writer does (`ffcv write --same-as-ffcv`)."""

    kind = "rgb_image"
    # Packed, 13 bytes: mode 0 for JPEG, 1 for raw pixels; the payload's file offset.
    metadata_type = np.dtype([("mode", "<u1"), ("width", "<u2"), ("height", "<u2"),
                              ("data_ptr", "<u8")])

    def get_decoder_class(self):
        return SimpleRGBImageDecoder

    def __init__(self, write_mode: str = "raw", max_resolution: Optional[int] = None,
                 smart_threshold: Optional[int] = None, jpeg_quality: int = 90,
                 compress_probability: Optional[float] = 0.5, same_as_ffcv: bool = False) -> None:
        if write_mode not in _WRITE_MODES:
            raise ValueError(f"write_mode must be one of {', '.join(_WRITE_MODES)}, got "
                             f"{write_mode!r}")
        self.write_mode = write_mode
        self.max_resolution = None if max_resolution is None else \
            whole_number(max_resolution, "max_resolution", 1, 2**31 - 1)
        self.smart_threshold = None if smart_threshold is None else \
            whole_number(smart_threshold, "smart_threshold", 0, 2**64 - 1)
        self.jpeg_quality = whole_number(jpeg_quality, "jpeg_quality", 1, 100)
        if compress_probability is None and write_mode == "proportion":
            raise ValueError('write_mode="proportion" needs compress_probability, a number in '
                             '[0, 1]')
        if compress_probability is not None and (
                isinstance(compress_probability, bool) or
                not isinstance(compress_probability, (int, float, np.number)) or
                not 0 <= compress_probability <= 1):
            raise ValueError(f"compress_probability must be a number in [0, 1], got "
                             f"{compress_probability!r}")
        # None: not used by the other write modes (as in Python FFCV).
        self.compress_probability = compress_probability
        self.same_as_ffcv = same_as_ffcv

    def params(self):
        return {"write_mode": str(self.write_mode), "max_resolution": self.max_resolution,
                "smart_threshold": self.smart_threshold, "jpeg_quality": int(self.jpeg_quality),
                "compress_probability": float(0.5 if self.compress_probability is None
                                              else self.compress_probability),
                "same_as_ffcv": bool(self.same_as_ffcv)}

    def to_native(self, value):
        if isinstance(value, (bytes, bytearray, memoryview)):
            return bytes(value)
        if hasattr(value, "convert") and hasattr(value, "size"):  # a PIL image
            value = np.asarray(value.convert("RGB"))
        elif hasattr(value, "numpy"):  # a torch tensor
            value = value.numpy()
        if not isinstance(value, np.ndarray):
            raise TypeError(f"RGBImageField takes an (H, W, 3) uint8 array, a PIL image or JPEG "
                            f"bytes, got {type(value).__name__}")
        if value.dtype != np.uint8:
            # As Python FFCV: a cast would store floats in [0, 1] as black and wrap 300 to 44.
            raise ValueError(f"RGBImageField takes uint8 pixels (0 to 255), got an array of dtype "
                             f"{value.dtype}; convert it first (floats in [0, 1]: "
                             f"(image * 255).round().astype(np.uint8))")
        if value.ndim != 3 or value.shape[2] != 3:
            raise ValueError(f"RGBImageField takes an (H, W, 3) array (RGB), got shape "
                             f"{value.shape}")
        return np.ascontiguousarray(value)


class _ResizingDecoder(NativeStep):
    """A decoder whose images come out at ``output_size`` (height, width). Setting
    ``output_size`` between epochs changes the next epoch's batches, as progressive resizing in
    FFCV's training scripts does (``decoder.output_size = (res, res)``), with or without the
    loader's ``recompile``."""

    kind = "decoder"

    @property
    def output_size(self) -> Tuple[int, int]:
        return (self.params["height"], self.params["width"])

    @output_size.setter
    def output_size(self, output_size: Size) -> None:
        self.params["height"], self.params["width"] = _height_width(output_size)


class SimpleRGBImageDecoder(NativeStep):
    """Decodes whole images, (H, W, 3) uint8; every image of the dataset must share one size."""

    kind = "decoder"

    def __init__(self) -> None:
        super().__init__("image")


class RandomResizedCropRGBImageDecoder(_ResizingDecoder):
    """torchvision's random-resized crop, decoded from the JPEG window alone and resized to
    ``output_size`` (an int or (height, width)). Ours besides FFCV's arguments:
    ``interpolation`` ("area", FFCV's filter, or "linear"), ``dct_scaling`` (decode at the
    smallest DCT scale that covers the output; default True) and ``fast_dct`` (libjpeg's fast
    IDCT as FFCV decodes; default True)."""

    def __init__(self, output_size: Size, scale: Tuple[float, float] = (0.08, 1.0),
                 ratio: Tuple[float, float] = (3 / 4, 4 / 3), interpolation: Optional[str] = None,
                 dct_scaling: Optional[bool] = None, fast_dct: Optional[bool] = None) -> None:
        height, width = _height_width(output_size)
        super().__init__("random_resized_crop", height=height, width=width, scale=scale,
                         ratio=ratio, interpolation=interpolation, dct_scaling=dct_scaling,
                         fast_dct=fast_dct)


class CenterCropRGBImageDecoder(_ResizingDecoder):
    """The centred square of side ``ratio`` x the short side, resized to ``output_size``; the
    same extra arguments as RandomResizedCropRGBImageDecoder."""

    def __init__(self, output_size: Size, ratio: float = 224 / 256,
                 interpolation: Optional[str] = None, dct_scaling: Optional[bool] = None,
                 fast_dct: Optional[bool] = None) -> None:
        height, width = _height_width(output_size)
        super().__init__("center_crop", height=height, width=width, ratio=float(ratio),
                         interpolation=interpolation, dct_scaling=dct_scaling, fast_dct=fast_dct)


class RandomResizedCropsRGBImageDecoder(_ResizingDecoder):
    """Ours: ``views`` random-resized crops of each image, (views, H, W, 3) per sample, from one
    decode of the JPEG over the union of their windows; with ``flip`` each view is mirrored
    with probability 0.5 (multi-view training, e.g. contrastive methods)."""

    def __init__(self, output_size: Size, views: int = 2, scale: Tuple[float, float] = (0.08, 1.0),
                 ratio: Tuple[float, float] = (3 / 4, 4 / 3), flip: bool = False,
                 interpolation: Optional[str] = None, dct_scaling: Optional[bool] = None,
                 fast_dct: Optional[bool] = None) -> None:
        height, width = _height_width(output_size)
        super().__init__("random_resized_crops", height=height, width=width, views=int(views),
                         scale=scale, ratio=ratio, flip=bool(flip), interpolation=interpolation,
                         dct_scaling=dct_scaling, fast_dct=fast_dct)


class RandomResizedCropEncoded(_ResizingDecoder):
    """Ours: the CPU half of the GPU image path. Each sample becomes a record (uint8, a fixed
    number of bytes per sample): RandomResizedCropRGBImageDecoder's window from the same keyed
    draws, a mirror flag drawn with probability ``flip`` as RandomHorizontalFlip right after the
    crop would draw it, and the JPEG's own bytes (raw images are resized here). The C++ device
    step ``decode_crops`` decodes such records on the GPU with nvJPEG; the layout is in
    ``ffcv/image/encoded_crop.hpp``."""

    def __init__(self, output_size: Size, scale: Tuple[float, float] = (0.08, 1.0),
                 ratio: Tuple[float, float] = (3 / 4, 4 / 3), flip: float = 0.0,
                 interpolation: Optional[str] = None) -> None:
        height, width = _height_width(output_size)
        super().__init__("random_resized_crop_encoded", height=height, width=width, scale=scale,
                         ratio=ratio, flip=float(flip), interpolation=interpolation)


class CenterCropEncoded(_ResizingDecoder):
    """Ours: CenterCropRGBImageDecoder's window as a record for the GPU image path (see
    RandomResizedCropEncoded)."""

    def __init__(self, output_size: Size, ratio: float = 224 / 256, flip: float = 0.0,
                 interpolation: Optional[str] = None) -> None:
        height, width = _height_width(output_size)
        super().__init__("center_crop_encoded", height=height, width=width, ratio=float(ratio),
                         flip=float(flip), interpolation=interpolation)
