from typing import Tuple

from ..pipeline.operation import NativeStep


class RandomTranslate(NativeStep):
    """Shifts each image by up to ``padding`` pixels on each axis, exposing ``fill``."""

    def __init__(self, padding: int, fill: Tuple[int, int, int] = (0, 0, 0)) -> None:
        super().__init__("random_translate", padding=int(padding), fill=fill)
