"""NDArray fields: one array of fixed dtype and shape per sample."""

from __future__ import annotations

import json
from typing import Any, Tuple

import numpy as np

from ..arguments import extents, stored_dtype
from ..pipeline.operation import NativeStep
from .base import ARG_TYPE, Field


class NDArrayField(Field):
    """An array of ``dtype`` and ``shape`` per sample. A big-endian ``dtype`` is stored as its
    little-endian twin (the values unchanged), as ``ffcv write npy`` stores it."""

    kind = "ndarray"
    metadata_type = np.dtype("<u8")  # the array's file offset

    def __init__(self, dtype: np.dtype, shape: Tuple[int, ...]) -> None:
        self.dtype = stored_dtype(dtype)
        self.shape = extents(shape, "NDArrayField shape")

    def params(self):
        return {"dtype": self.dtype.str, "shape": list(self.shape)}

    @classmethod
    def from_binary(cls, binary) -> "NDArrayField":
        """The shape (32 little-endian u64, trailing zeros dropped) and the dtype (its
        ``descr`` as JSON, after its length) of the blob."""
        blob = np.asarray(binary).tobytes()
        shape = list(np.frombuffer(blob[:256], dtype="<u8"))
        while shape and shape[-1] == 0:
            shape.pop()
        length = int(np.frombuffer(blob[256:264], dtype="<u8")[0])
        if not 0 < length <= len(blob) - 264:
            raise ValueError(f"an NDArray field's arguments hold a dtype of {length} bytes")
        descr = json.loads(blob[264:264 + length].decode("ascii"))
        if len(descr) != 1:
            raise ValueError(f"an NDArray field's dtype must be one plain type, got {descr}")
        return NDArrayField(np.dtype(descr[0][1]), tuple(int(extent) for extent in shape))

    def to_binary(self):
        blob = np.zeros(1024, dtype=np.uint8)
        blob[:8 * len(self.shape)] = np.array(self.shape, dtype="<u8").view(np.uint8)
        descr = json.dumps(self.dtype.descr).encode("ascii")
        blob[256:264] = np.array([len(descr)], dtype="<u8").view(np.uint8)
        blob[264:264 + len(descr)] = np.frombuffer(descr, dtype=np.uint8)
        return blob.view(ARG_TYPE)[0]

    def get_decoder_class(self):
        return NDArrayDecoder

    def to_native(self, value):
        if hasattr(value, "numpy"):
            value = value.numpy()
        array = np.ascontiguousarray(value, dtype=self.dtype)
        if array.shape != self.shape:
            raise ValueError(f"NDArrayField of shape {self.shape} got an array of shape {array.shape}")
        return array


class TorchTensorField(NDArrayField):
    """An NDArrayField given a torch dtype (``torch.float32``), as Python FFCV's: stored under
    its own type id (6), read back as an NDArrayField of the matching numpy dtype."""

    kind = "torch_tensor"

    def __init__(self, dtype: Any, shape: Tuple[int, ...]) -> None:
        import torch

        if not isinstance(dtype, torch.dtype):
            raise TypeError(f"TorchTensorField takes a torch dtype (torch.float32, ...), got "
                            f"{dtype!r}")
        super().__init__(torch.zeros(0, dtype=dtype).numpy().dtype, shape)


class NDArrayDecoder(NativeStep):
    """The stored array, of the field's dtype and shape."""

    kind = "decoder"

    def __init__(self) -> None:
        super().__init__("ndarray")
