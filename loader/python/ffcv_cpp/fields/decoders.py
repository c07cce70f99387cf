from .basics import FloatDecoder, IntDecoder
from .bytes import BytesDecoder
from .ndarray import NDArrayDecoder
from .rgb_image import (CenterCropRGBImageDecoder, RandomResizedCropRGBImageDecoder,
                        SimpleRGBImageDecoder)

__all__ = ["FloatDecoder", "IntDecoder", "NDArrayDecoder", "RandomResizedCropRGBImageDecoder",
           "CenterCropRGBImageDecoder", "SimpleRGBImageDecoder", "BytesDecoder"]
