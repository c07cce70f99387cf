from typing import Tuple

from ..pipeline.operation import BatchStep


class RandomResizedCrop(BatchStep):
    """Python FFCV's crop of decoded images. This loader crops before decoding instead, which
    decodes only the window: use RandomResizedCropRGBImageDecoder(size, scale, ratio)."""

    def __init__(self, scale: Tuple[float, float], ratio: Tuple[float, float], size: int) -> None:
        raise ValueError(
            "RandomResizedCrop on decoded images is not offered: use "
            f"RandomResizedCropRGBImageDecoder(({size}, {size}), scale={tuple(scale)}, "
            f"ratio={tuple(ratio)}) as the decoder, which decodes only the crop's window")
