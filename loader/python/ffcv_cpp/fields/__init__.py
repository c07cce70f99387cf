from .base import Field
from .basics import FloatField, IntField
from .bytes import BytesField
from .json import JSONField
from .ndarray import NDArrayField, TorchTensorField
from .ragged import RaggedNDArrayField
from .rgb_image import RGBImageField

__all__ = ["Field", "BytesField", "IntField", "FloatField", "RGBImageField", "NDArrayField",
           "JSONField", "RaggedNDArrayField", "TorchTensorField"]
