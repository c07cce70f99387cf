from .basics import FloatDecoder, IntDecoder
from .bytes import BytesDecoder
from .ndarray import NDArrayDecoder
from .ragged import RaggedDecoder
from .rgb_image import (CenterCropEncoded, CenterCropRGBImageDecoder, RandomResizedCropEncoded,
                        RandomResizedCropRGBImageDecoder, RandomResizedCropsRGBImageDecoder,
                        SimpleRGBImageDecoder)

__all__ = ["FloatDecoder", "IntDecoder", "NDArrayDecoder", "RandomResizedCropRGBImageDecoder",
           "CenterCropRGBImageDecoder", "SimpleRGBImageDecoder", "BytesDecoder",
           "RandomResizedCropsRGBImageDecoder", "RandomResizedCropEncoded", "CenterCropEncoded",
           "RaggedDecoder"]
