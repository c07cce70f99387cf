import numpy as np

from ..pipeline.operation import NativeStep


class Poison(NativeStep):
    """Blends ``mask`` (H, W, 3) into the images of the dataset indices ``indices`` with the
    per-pixel weights ``alpha`` (H, W), clipped to ``clamp``."""

    def __init__(self, mask: np.ndarray, alpha: np.ndarray, indices, clamp=(0, 255)) -> None:
        super().__init__("poison", mask=np.asarray(mask, dtype=np.float64).ravel(),
                         alpha=np.asarray(alpha, dtype=np.float64).ravel(),
                         indices=np.sort(np.asarray(indices)).astype(np.float64), clamp=clamp)
