"""RaggedNDArray fields: a varying number of rows per sample, each of one dtype and row shape."""

from __future__ import annotations

from typing import Optional, Tuple

import numpy as np

from ..arguments import extents, stored_dtype
from ..pipeline.operation import NativeStep
from .base import ARG_TYPE, Field

# The field's descriptor: type id 255 (a field Python FFCV does not know) with these arguments.
_MAGIC = b"RaggedNDArray"
_VERSION = 1
_MAX_INNER_DIMS = 16
_ARGS = np.dtype([("magic", "S16"), ("version", "<u4"), ("rank", "<u4"),
                  ("extents", "<u8", _MAX_INNER_DIMS), ("dtype", "S16")])


# A sample's metadata: its rows' file offset (0 for no rows) and their number.
RAGGED_METADATA_TYPE = np.dtype([("ptr", "<u8"), ("rows", "<u8")])


def check_row_shape(row_shape: Tuple[int, ...]) -> None:
    """ValueError for a row shape the field's arguments cannot hold."""
    if len(row_shape) > _MAX_INNER_DIMS or 0 in row_shape:
        raise ValueError(f"row shape {row_shape} must have at most 16 non-zero extents")


def is_ragged_arguments(binary) -> bool:
    """Whether a descriptor's argument blob is a RaggedNDArray field's (its magic)."""
    return np.asarray(binary).tobytes()[:len(_MAGIC)] == _MAGIC


def ragged_layout(binary) -> Tuple[np.dtype, Tuple[int, ...]]:
    """The row dtype and row shape of a RaggedNDArray field's argument blob; ValueError for a
    blob without its magic or of another version."""
    args = np.frombuffer(np.asarray(binary).tobytes()[:_ARGS.itemsize], dtype=_ARGS)[0]
    if args["magic"] != _MAGIC:
        raise ValueError("not a RaggedNDArray field: its arguments lack the magic")
    if args["version"] != _VERSION:
        raise ValueError(f"RaggedNDArray version {args['version']} is not 1")
    rank = int(args["rank"])
    if rank > _MAX_INNER_DIMS:
        raise ValueError(f"RaggedNDArray row rank {rank} is over 16")
    return (np.dtype(args["dtype"].decode("ascii")),
            tuple(int(extent) for extent in args["extents"][:rank]))


def ragged_arguments(dtype: np.dtype, row_shape: Tuple[int, ...]):
    """The argument blob (ARG_TYPE) of a RaggedNDArray field of these rows."""
    check_row_shape(row_shape)
    args = np.zeros(1, dtype=_ARGS)
    args["magic"] = _MAGIC
    args["version"] = _VERSION
    args["rank"] = len(row_shape)
    args["extents"][0, :len(row_shape)] = row_shape
    args["dtype"] = np.dtype(dtype).str.encode("ascii")
    blob = np.zeros(1024, dtype=np.uint8)
    blob[:_ARGS.itemsize] = args.view(np.uint8)
    return blob.view(ARG_TYPE)[0]


def rows_array(value, dtype: np.dtype, row_shape: Tuple[int, ...]) -> np.ndarray:
    """One sample's rows as a C-contiguous array of shape (n, *row_shape) and `dtype`: an array,
    a list of rows, or an empty list for no rows. ValueError for rows of another shape."""
    if hasattr(value, "numpy"):
        value = value.numpy()
    array = np.asarray(value, dtype=dtype)
    if array.size == 0:
        array = array.reshape((0,) + row_shape)
    if array.ndim != len(row_shape) + 1 or array.shape[1:] != row_shape:
        raise ValueError(f"RaggedNDArrayField of rows {row_shape} takes arrays of shape "
                         f"(n, {', '.join(map(str, row_shape))}), got {array.shape}")
    return np.ascontiguousarray(array)


class RaggedNDArrayField(Field):
    """Rows of ``dtype`` and ``row_shape`` per sample, any number of them (0 too): detection
    boxes (``np.float32, (4,)``), their labels (``np.int64, ()``), polygons, token ids. A sample's
    value is an array of shape ``(n, *row_shape)``, or a list of rows. A big-endian ``dtype`` is
    stored little-endian, as in NDArrayField.

    The file stays readable by Python FFCV through
    ``custom_fields={name: ffcv_cpp.python_ffcv.RaggedNDArrayField}``."""

    kind = "ragged_ndarray"
    metadata_type = RAGGED_METADATA_TYPE
    TYPE_ID = 255

    def __init__(self, dtype: np.dtype, row_shape: Tuple[int, ...] = ()) -> None:
        self.dtype = stored_dtype(dtype)
        self.row_shape = extents(row_shape, "RaggedNDArrayField row_shape")

    def params(self):
        return {"dtype": self.dtype.str, "row_shape": list(self.row_shape)}

    def to_native(self, value):
        return rows_array(value, self.dtype, self.row_shape)

    @classmethod
    def from_binary(cls, binary) -> "RaggedNDArrayField":
        return RaggedNDArrayField(*ragged_layout(binary))

    def to_binary(self):
        return ragged_arguments(self.dtype, self.row_shape)

    def get_decoder_class(self):
        return RaggedDecoder


class RaggedDecoder(NativeStep):
    """The sample's rows. ``layout="packed"``: the batch's rows back to back with ``B + 1``
    offsets (``ToTensor()`` makes a nested jagged tensor); ``"padded"``: ``(B, largest, ...)``
    with zero rows after each sample's own, and ``B`` lengths.

    ``follows`` names another output of the loader: with ``rows="boxes_xyxy"`` or
    ``"boxes_xywh"`` (float32 rows of 4, in pixels of the stored image) an image output, whose
    crop, resize, flip and translate the boxes follow with the same random draws; a box is
    clipped to the image after each step and dropped when it is left narrower or lower than
    ``min_size`` or smaller than ``min_area`` (torchvision's ``SanitizeBoundingBoxes``). With
    ``rows="values"`` (labels) a boxes output, whose dropped rows are dropped here too."""

    kind = "decoder"

    def __init__(self, layout: str = "packed", follows: Optional[str] = None,
                 rows: str = "values", min_size: float = 1.0, min_area: float = 1.0) -> None:
        super().__init__("ragged", layout=layout, follows=follows, rows=rows, min_size=min_size,
                         min_area=min_area)
