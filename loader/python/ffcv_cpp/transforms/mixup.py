from ..pipeline.operation import NativeStep


class ImageMixup(NativeStep):
    """Mixes image i of each batch with image i - 1, weights ~ Beta(alpha, alpha) (per sample,
    or one per batch with ``same_lambda``). Runs once per batch, in the loader's workers."""

    kind = "batch_operation"

    def __init__(self, alpha: float, same_lambda: bool) -> None:
        super().__init__("image_mixup", alpha=float(alpha), same_lambda=bool(same_lambda))


class LabelMixup(NativeStep):
    """(label_i, label_(i-1), weight_i) as float32 [3], with ImageMixup's weights."""

    kind = "batch_operation"

    def __init__(self, alpha: float, same_lambda: bool) -> None:
        super().__init__("label_mixup", alpha=float(alpha), same_lambda=bool(same_lambda))


class MixupToOneHot(NativeStep):
    """LabelMixup's rows as mixed one-hot targets of ``num_classes``."""

    kind = "batch_operation"

    def __init__(self, num_classes: int) -> None:
        super().__init__("mixup_to_one_hot", num_classes=int(num_classes))
