"""Int and Float fields and their decoders (one value per sample, stored in the metadata)."""

from __future__ import annotations

import operator

from ..pipeline.operation import NativeStep
from .base import Field


class IntField(Field):
    """A 64-bit signed integer per sample (a label, an index)."""

    kind = "int"

    def to_native(self, value):
        return operator.index(value)


class FloatField(Field):
    """A 64-bit float per sample."""

    kind = "float"

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
