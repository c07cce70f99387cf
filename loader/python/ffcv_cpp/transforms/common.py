from __future__ import annotations

import numpy as np

from ..pipeline.operation import BatchStep


class Squeeze(BatchStep):
    """Drops the batch's size-1 dimensions ``dims`` (all of them when none is given), as
    ``tensor.squeeze`` does: e.g. labels (N, 1) to (N,)."""

    def __init__(self, *dims: int) -> None:
        self.dims = tuple(dims)

    def apply(self, batch):
        if isinstance(batch, np.ndarray):
            return np.squeeze(batch, axis=self.dims or None)
        return batch.squeeze(self.dims) if self.dims else batch.squeeze()
