"""Where a loader's batches live: the loader's own memory, or for pipelines that copy to a CUDA
device, page-locked host memory from torch, so that ToDevice's copies run asynchronously."""

from __future__ import annotations

import threading
from typing import Dict, List, Optional

from ..pipeline.plan import OutputPlan
from ..transforms.ops import ToDevice


class PinnedHostMemory:
    """allocate(bytes) -> address and deallocate(address) over torch's pinned host memory; the
    blocks stay referenced here until the loader gives them back."""

    def __init__(self) -> None:
        self._blocks: Dict[int, object] = {}
        self._lock = threading.Lock()

    def allocate(self, size: int) -> int:
        import torch

        block = torch.empty(max(int(size), 1), dtype=torch.uint8, pin_memory=True)
        with self._lock:
            self._blocks[block.data_ptr()] = block
        return block.data_ptr()

    def deallocate(self, address: int) -> None:
        with self._lock:
            self._blocks.pop(address, None)

    def __len__(self) -> int:
        return len(self._blocks)


def cuda_device_of(plans: List[OutputPlan]):
    """The CUDA device the first ToDevice to one copies to, or None when no output goes there."""
    for plan in plans:
        for step in plan.batch_steps:
            if isinstance(step, ToDevice) and step.device.type == "cuda":
                return step.device
    return None


def batch_memory_for(plans: List[OutputPlan]) -> Optional[PinnedHostMemory]:
    """Pinned memory when an output is copied to a CUDA device, else None (the loader's own)."""
    return PinnedHostMemory() if cuda_device_of(plans) is not None else None
