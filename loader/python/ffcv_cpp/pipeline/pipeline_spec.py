"""PipelineSpec: one output of the loader, as Python FFCV spells it."""

from __future__ import annotations

from typing import Optional, Sequence


class PipelineSpec:
    """An output made from field ``source`` through ``decoder`` (None: the field's default)
    and ``transforms``. The output's name is the key of the ``pipelines`` mapping."""

    def __init__(self, source: str, decoder=None, transforms: Optional[Sequence] = None) -> None:
        if not isinstance(source, str):
            raise TypeError(f"PipelineSpec's source must be a field name, got {type(source).__name__}")
        self.source = source
        self.decoder = decoder
        self.transforms = list(transforms or [])
