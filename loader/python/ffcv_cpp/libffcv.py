"""Python FFCV's ``ffcv.libffcv`` helpers that user code calls: ``memcpy`` (also from numba code,
where numba calls the C library's function directly)."""

from __future__ import annotations

import ctypes

import numpy as np

_libc = ctypes.CDLL(None)
_c_memcpy = _libc.memcpy
_c_memcpy.argtypes = [ctypes.c_void_p, ctypes.c_void_p, ctypes.c_uint64]
_c_memcpy.restype = ctypes.c_void_p


def memcpy(source: np.ndarray, dest: np.ndarray) -> None:
    """Copies the bytes of ``source`` into ``dest`` (both C-contiguous); ValueError when ``dest``
    holds fewer bytes (Python FFCV writes past its end)."""
    size = source.size * source.itemsize
    if dest.size * dest.itemsize < size:
        raise ValueError("memcpy: the destination is smaller than the source")
    if not (source.flags.c_contiguous and dest.flags.c_contiguous):
        raise ValueError("memcpy: both arrays must be C-contiguous")
    _c_memcpy(dest.ctypes.data, source.ctypes.data, size)
