"""NDArray fields: one array of fixed dtype and shape per sample."""

from __future__ import annotations

from typing import Tuple

import numpy as np

from ..arguments import extents, stored_dtype
from ..pipeline.operation import NativeStep
from .base import Field


class NDArrayField(Field):
    """An array of ``dtype`` and ``shape`` per sample. A big-endian ``dtype`` is stored as its
    little-endian twin (the values unchanged), as ``ffcv write npy`` stores it."""

    kind = "ndarray"

    def __init__(self, dtype: np.dtype, shape: Tuple[int, ...]) -> None:
        self.dtype = stored_dtype(dtype)
        self.shape = extents(shape, "NDArrayField shape")

    def params(self):
        return {"dtype": self.dtype.str, "shape": list(self.shape)}

    def to_native(self, value):
        if hasattr(value, "numpy"):
            value = value.numpy()
        array = np.ascontiguousarray(value, dtype=self.dtype)
        if array.shape != self.shape:
            raise ValueError(f"NDArrayField of shape {self.shape} got an array of shape {array.shape}")
        return array


class NDArrayDecoder(NativeStep):
    """The stored array, of the field's dtype and shape."""

    kind = "decoder"

    def __init__(self) -> None:
        super().__init__("ndarray")
