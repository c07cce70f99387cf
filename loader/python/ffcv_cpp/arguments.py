"""Checks of the package's arguments before they reach the native part, so that a bad one is
one exception naming the argument, the value and what is allowed: whole numbers (a float or
bool is refused rather than truncated), output sizes and shapes, and lists of sample indices
(``Loader(indices=...)``, ``from_indexed_dataset``)."""

from __future__ import annotations

import operator
from typing import Any, Optional, Tuple

import numpy as np


def whole_number(value: Any, argument: str, low: Optional[int] = None,
                 high: Optional[int] = None) -> int:
    """``value`` as an int within [low, high]: TypeError for a value that is not an integer
    (a float, a bool, a string), ValueError for one out of range, each naming ``argument``."""
    if isinstance(value, bool) or not _is_integer(value):
        raise TypeError(f"{argument} must be an integer, got {value!r} ({type(value).__name__})")
    number = operator.index(value)
    if (low is not None and number < low) or (high is not None and number > high):
        top = _POWERS.get(high, str(high))
        allowed = (f">= {low}" if high is None else f"<= {top}" if low is None
                   else f"in [{low}, {top}]")
        raise ValueError(f"{argument} must be {allowed}, got {number}")
    return number


# Upper bounds that are a native type's, as the messages write them.
_POWERS = {2**64 - 1: "2**64 - 1", 2**63 - 1: "2**63 - 1", 2**31 - 1: "2**31 - 1"}


def stored_dtype(dtype: Any) -> np.dtype:
    """A field's element type as files store it: little-endian (a big-endian type is stored as
    its little-endian twin, the values unchanged, as `ffcv write npy` does), since neither
    DLPack nor torch takes big-endian data."""
    dtype = np.dtype(dtype)
    return dtype.newbyteorder("<") if dtype.byteorder == ">" else dtype


def extents(value: Any, argument: str) -> Tuple[int, ...]:
    """A shape: a sequence of positive integers (a tuple, list, or one integer)."""
    if isinstance(value, (str, bytes)) or not (hasattr(value, "__len__") or _is_integer(value)):
        raise TypeError(f"{argument} must be a tuple of positive integers, got {value!r}")
    items = (value,) if _is_integer(value) else tuple(value)
    return tuple(whole_number(item, f"{argument}[{i}]", 1) for i, item in enumerate(items))


def height_width(value: Any, argument: str = "output_size") -> Tuple[int, int]:
    """An output size: one positive integer (a square) or (height, width); the decoder checks
    their upper bound."""
    if _is_integer(value) and not isinstance(value, bool):
        side = whole_number(value, argument, 1)
        return side, side
    if isinstance(value, (str, bytes)) or not hasattr(value, "__len__") or len(value) != 2:
        raise TypeError(f"{argument} must be an integer or (height, width), got {value!r}")
    return (whole_number(value[0], f"{argument} height", 1),
            whole_number(value[1], f"{argument} width", 1))


def index_array(indices: Any, argument: str, allow_negative: bool = False) -> np.ndarray:
    """``indices`` (a sequence, numpy array or torch tensor of integers) as a 1-D int64 array,
    or uint64 when ``allow_negative`` is False. Duplicates are kept (a sampler with replacement
    lists an index several times). TypeError naming ``argument``, the first value that is not
    an integer and its position, or for a value that is not a sequence; ValueError for a
    negative index (unless allowed) or one outside 64 bits."""
    if hasattr(indices, "numpy") and hasattr(indices, "cpu"):  # a torch tensor
        indices = indices.cpu().numpy()
    if isinstance(indices, (str, bytes)) or not hasattr(indices, "__len__"):
        raise TypeError(f"{argument} must be a sequence of integers (a list, range or numpy "
                        f"array), got {type(indices).__name__}")
    array = np.asarray(indices)
    if array.ndim != 1 and array.size > 0:
        raise TypeError(f"{argument} must be a flat sequence of integers, got an array of "
                         f"shape {array.shape}")
    array = array.reshape(-1)
    kind = np.int64 if allow_negative else np.uint64
    if array.size == 0:
        return np.zeros(0, dtype=kind)
    if array.dtype.kind not in "iu":
        # The items as given: numpy makes [1, 1.5] all floats.
        values = array.tolist() if isinstance(indices, np.ndarray) else list(indices)
        for position, value in enumerate(values):
            if isinstance(value, bool) or not _is_integer(value):
                raise TypeError(f"{argument} must be integers, got {value!r} "
                                 f"({type(value).__name__}) at position {position}")
        array = np.asarray([operator.index(value) for value in values], dtype=object)
    low, high = int(array.min()), int(array.max())
    if low < 0 and not allow_negative:
        position = int(np.flatnonzero(array < 0)[0])
        raise ValueError(f"{argument}[{position}] = {array[position]} is negative: indices "
                         "count from 0")
    bounds = np.iinfo(kind)
    if low < bounds.min or high > bounds.max:
        value = low if low < bounds.min else high
        raise ValueError(f"{argument} holds {value}, outside [{bounds.min}, {bounds.max}]")
    return array.astype(kind)


def _is_integer(value: Any) -> bool:
    try:
        operator.index(value)
    except TypeError:
        return False
    return True
