"""Int and Float fields and their decoders (one value per sample, stored in the metadata)."""

from __future__ import annotations

import operator

import numpy as np

from ..pipeline.operation import NativeStep
from .base import Field

_INT64_MIN, _INT64_MAX = -(2**63), 2**63 - 1


class IntField(Field):
    """A 64-bit signed integer per sample (a label, an index)."""

    kind = "int"
    metadata_type = np.dtype("<i8")

    def get_decoder_class(self):
        return IntDecoder

    def to_native(self, value):
        number = operator.index(value)
        if not _INT64_MIN <= number <= _INT64_MAX:
            raise ValueError(f"IntField takes 64-bit signed integers (-2**63 to 2**63 - 1), "
                             f"got {number}")
        return number


class FloatField(Field):
    """A 64-bit float per sample."""

    kind = "float"
    metadata_type = np.dtype("<f8")

    def get_decoder_class(self):
        return FloatDecoder

    def to_native(self, value):
        return float(value)


class IntDecoder(NativeStep):
    """An Int field as int64, shape (1,) per sample."""

    kind = "decoder"

    def __init__(self) -> None:
        super().__init__("int")


class FloatDecoder(NativeStep):
    """A Float field as float64, shape (1,) per sample."""

    kind = "decoder"

    def __init__(self) -> None:
        super().__init__("float")
