"""Deterministic sample values shared by the interoperability tests; mirrors formulas.hpp.

  pix(i, y, x, c)          = (i*31 + y*3 + x*5 + c*7) % 256          raw images, exact
  smooth(i, y, x, c, W, H) = 10 + (i*7)%40 + c*25 + (x*90)//max(W-1,1) + (y*60)//max(H-1,1)
                                                                     JPEG images, compared by MAE
  nd_code(i, k)            = (i*131 + k*7) % 251, mapped per dtype by array_values()
  runs(i, k)               = (i*7 + k//4096) % 256                    long runs (compress well)
  bytes_code(i, k)         = (i*17 + k*3 + 1) % 256
"""

import numpy as np


def image(formula, i, width, height):
    """Sample i's H x W x 3 uint8 image under the named formula."""
    y = np.arange(height, dtype=np.int64)[:, None, None]
    x = np.arange(width, dtype=np.int64)[None, :, None]
    c = np.arange(3, dtype=np.int64)[None, None, :]
    if formula == 'pix':
        values = (i * 31 + y * 3 + x * 5 + c * 7) % 256
    elif formula == 'smooth':
        values = (10 + (i * 7) % 40 + c * 25 + (x * 90) // max(width - 1, 1)
                  + (y * 60) // max(height - 1, 1))
    else:
        raise ValueError(f'unknown image formula {formula!r}')
    return np.broadcast_to(values, (height, width, 3)).astype(np.uint8)


def array_values(formula, dtype, i, shape):
    """Sample i's array of `dtype` and `shape` under formula 'nd_code' or 'runs'.

    nd_code maps code = (i*131 + k*7) % 251 by kind: b: code % 3 == 0; u: code * M;
    i: (code - 125) * M; f: code * 0.25 - 20; with M = 1, 257, 65537, 1000000007 for
    1, 2, 4, 8-byte integers.
    """
    dtype = np.dtype(dtype)
    count = int(np.prod(shape))
    k = np.arange(count, dtype=np.int64)
    if formula == 'runs':
        return ((i * 7 + k // 4096) % 256).astype(dtype).reshape(shape)
    if formula != 'nd_code':
        raise ValueError(f'unknown array formula {formula!r}')
    code = (i * 131 + k * 7) % 251
    multiplier = {1: 1, 2: 257, 4: 65537, 8: 1000000007}[dtype.itemsize]
    if dtype.kind == 'b':
        values = code % 3 == 0
    elif dtype.kind == 'u':
        values = code * multiplier
    elif dtype.kind == 'i':
        values = (code - 125) * multiplier
    elif dtype.kind == 'f':
        values = code * 0.25 - 20.0
    else:
        raise ValueError(f'dtype {dtype} is not used here')
    return values.astype(dtype).reshape(shape)


def byte_values(i, length):
    """Sample i's 1-D uint8 payload of `length` bytes."""
    k = np.arange(length, dtype=np.int64)
    return ((i * 17 + k * 3 + 1) % 256).astype(np.uint8)
