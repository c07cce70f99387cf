"""Steps on whole batches in the consumer's thread: tensors, devices, layouts and types."""

from __future__ import annotations

import numpy as np

from ..pipeline.operation import BatchStep, NativeStep


def _torch():
    try:
        import torch
    except ImportError as error:  # pragma: no cover - depends on the environment
        raise ImportError("this step needs torch (pip install torch)") from error
    return torch


class ToTensor(BatchStep):
    """The batch as a torch tensor over the same memory (no copy)."""

    makes_tensor = True

    def apply(self, batch):
        torch = _torch()
        if hasattr(batch, "to_tensor"):  # a ragged output's pair (ffcv_cpp.loader.ragged)
            return batch.to_tensor()
        return batch if isinstance(batch, torch.Tensor) else torch.from_numpy(batch)


class ToDevice(BatchStep):
    """Copies the batch to ``device``. With CUDA the loader's iterator runs the copy (and the
    steps after it) on a side stream, one batch ahead of the one it hands out."""

    def __init__(self, device, non_blocking: bool = True) -> None:
        self.device = _torch().device(device)
        self.non_blocking = non_blocking

    def apply(self, batch):
        return batch.to(self.device, non_blocking=self.non_blocking)


class ToTorchImage(BatchStep):
    """(N, H, W, C) to (N, C, H, W): a view of the same memory, which is the channels_last
    layout; ``channels_last=False`` makes a contiguous NCHW copy."""

    def __init__(self, channels_last: bool = True, convert_back_int16: bool = True) -> None:
        self.channels_last = channels_last
        self.convert_back_int16 = convert_back_int16  # accepted for Python FFCV's signature

    def apply(self, batch):
        image = batch.permute(0, 3, 1, 2)
        return image if self.channels_last else image.contiguous()


def torch_dtype(dtype):
    """A torch dtype for a torch dtype, numpy dtype or its name."""
    torch = _torch()
    if isinstance(dtype, torch.dtype):
        return dtype
    return torch.from_numpy(np.zeros(0, dtype=np.dtype(dtype))).dtype


def numpy_dtype_name(dtype) -> str:
    """The numpy name ("float32") of a numpy dtype, its name, or a torch dtype."""
    text = str(dtype)
    return np.dtype(text[len("torch."):] if text.startswith("torch.") else dtype).name


class Convert(BatchStep):
    """Casts to ``target_dtype`` (torch or numpy): per sample in the workers before ToTensor,
    on the batch after it."""

    def __init__(self, target_dtype) -> None:
        self.target_dtype = target_dtype

    def native_twin(self):
        return NativeStep("convert", dtype=numpy_dtype_name(self.target_dtype))

    def apply(self, batch):
        if isinstance(batch, np.ndarray):
            return batch.astype(numpy_dtype_name(self.target_dtype))
        return batch.to(torch_dtype(self.target_dtype))


class View(BatchStep):
    """Reinterprets the batch's bytes as ``target_dtype``."""

    def __init__(self, target_dtype) -> None:
        self.target_dtype = target_dtype

    def apply(self, batch):
        if isinstance(batch, np.ndarray):
            return batch.view(numpy_dtype_name(self.target_dtype))
        return batch.view(torch_dtype(self.target_dtype))
