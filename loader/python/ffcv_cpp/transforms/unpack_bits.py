from ..pipeline.operation import NativeStep


class UnpackBits(NativeStep):
    """Ours: bit-packed booleans (uint8 [ceil(count / 8)], most significant bit first, as
    ``numpy.packbits`` and ``ffcv write npy --pack-bits`` store them) back to ``count`` 0/1
    values of ``dtype`` (float32, float16 or uint8)."""

    def __init__(self, count: int, dtype: str = "float32") -> None:
        super().__init__("unpack_bits", count=int(count), dtype=str(dtype))
