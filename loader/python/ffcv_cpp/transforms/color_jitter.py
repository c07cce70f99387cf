from ..pipeline.operation import NativeStep


class RandomBrightness(NativeStep):
    """With probability ``p``, scales each image by f ~ U(max(0, 1 - magnitude), 1 + magnitude)."""

    def __init__(self, magnitude: float, p: float = 0.5) -> None:
        super().__init__("random_brightness", magnitude=float(magnitude), probability=float(p))


class RandomContrast(NativeStep):
    """With probability ``p``, blends each image with its mean grey by a random factor."""

    def __init__(self, magnitude: float, p: float = 0.5) -> None:
        super().__init__("random_contrast", magnitude=float(magnitude), probability=float(p))


class RandomSaturation(NativeStep):
    """With probability ``p``, blends each pixel with its grey by a random factor."""

    def __init__(self, magnitude: float, p: float = 0.5) -> None:
        super().__init__("random_saturation", magnitude=float(magnitude), probability=float(p))
