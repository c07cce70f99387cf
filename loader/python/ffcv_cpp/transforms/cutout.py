from typing import Tuple

from ..pipeline.operation import NativeStep


class Cutout(NativeStep):
    """Fills one ``crop_size`` x ``crop_size`` square of each image with ``fill``."""

    def __init__(self, crop_size: int, fill: Tuple[int, int, int] = (0, 0, 0)) -> None:
        super().__init__("cutout", size=int(crop_size), fill=fill)
