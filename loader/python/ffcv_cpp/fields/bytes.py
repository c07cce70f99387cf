"""Bytes fields: a variable-length byte string per sample."""

from __future__ import annotations

import numpy as np

from ..pipeline.operation import NativeStep
from .base import Field


class BytesField(Field):
    """A byte string per sample: bytes, or a 1-D uint8 array."""

    kind = "bytes"
    # Packed: the payload's file offset and its length.
    metadata_type = np.dtype([("ptr", "<u8"), ("size", "<u8")])

    def get_decoder_class(self):
        return BytesDecoder

    def to_native(self, value):
        if isinstance(value, (bytes, bytearray, memoryview)):
            return bytes(value)
        return np.ascontiguousarray(value, dtype=np.uint8)


class BytesDecoder(NativeStep):
    """Each sample's bytes, zero-padded to the dataset's longest: uint8 (max size,) as Python
    FFCV shapes it (whose padding is stale bytes, ours zeros). With ``with_length=True`` each
    row also ends with the payload's length, 8 bytes little-endian (max size + 8,)."""

    kind = "decoder"

    def __init__(self, with_length: bool = False) -> None:
        super().__init__("bytes")
        self.with_length = with_length

    def after_batch(self, batch):
        return batch if self.with_length else batch[:, :-8]
