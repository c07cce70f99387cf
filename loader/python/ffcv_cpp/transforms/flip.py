from ..pipeline.operation import NativeStep


class RandomHorizontalFlip(NativeStep):
    """Mirrors each image left-right with probability ``flip_prob`` (per sample, keyed)."""

    def __init__(self, flip_prob: float = 0.5) -> None:
        super().__init__("random_horizontal_flip", probability=float(flip_prob))
