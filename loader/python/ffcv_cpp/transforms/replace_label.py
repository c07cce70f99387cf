import numpy as np

from ..pipeline.operation import NativeStep


class ReplaceLabel(NativeStep):
    """Sets the label of the dataset indices ``indices`` to ``new_label``."""

    def __init__(self, indices, new_label: int) -> None:
        super().__init__("replace_label", indices=np.asarray(indices).astype(np.float64),
                         label=int(new_label))
