from __future__ import annotations

import numpy as np

from .. import _native
from ..pipeline.operation import BatchStep, NativeStep


class NormalizeImage(BatchStep):
    """(v - mean[c]) / std[c] on the 0-255 scale, as ``type`` (float16 or float32), through the
    loader's per-channel lookup tables: per sample in the workers before ToTensor; on whole
    batches (on their device) after it, with the same tables and so the same bits. After
    ToTorchImage the channels are dimension 1 of a channels_last batch."""

    def __init__(self, mean: np.ndarray, std: np.ndarray, type: np.dtype) -> None:
        self.mean = [float(v) for v in np.asarray(mean).ravel()]
        self.std = [float(v) for v in np.asarray(std).ravel()]
        self.dtype = np.dtype(type)
        if self.dtype not in (np.float16, np.float32):
            raise ValueError(f"NormalizeImage's type must be float16 or float32, got {self.dtype}")
        table = _native.normalize_table(self.mean, self.std, self.dtype.name)
        self.table = np.frombuffer(table, dtype=self.dtype).reshape(len(self.mean), 256)
        self._device_tables = {}

    def native_twin(self):
        return NativeStep("normalize", mean=self.mean, std=self.std, dtype=self.dtype.name)

    def apply(self, batch):
        channels = len(self.mean)
        if isinstance(batch, np.ndarray):
            if batch.dtype != np.uint8 or batch.shape[-1] != channels:
                raise ValueError(f"NormalizeImage takes uint8 (..., {channels}) batches, got "
                                 f"{batch.dtype} {batch.shape}")
            offsets = np.arange(channels, dtype=np.int64) * 256
            return self.table.reshape(-1)[batch.astype(np.int64) + offsets]
        import torch

        channels_first = batch.dim() == 4 and batch.shape[1] == channels and \
            batch.shape[-1] != channels
        pixels = batch.permute(0, 2, 3, 1) if channels_first else batch
        if pixels.dtype != torch.uint8 or pixels.shape[-1] != channels:
            raise ValueError(f"NormalizeImage takes uint8 batches with {channels} channels, got "
                             f"{batch.dtype} {tuple(batch.shape)}")
        table = self._device_tables.get(pixels.device)
        if table is None:
            table = torch.from_numpy(self.table.copy()).reshape(-1).to(pixels.device)
            self._device_tables[pixels.device] = table
        offsets = torch.arange(channels, device=pixels.device, dtype=torch.int64) * 256
        out = torch.take(table, pixels.to(torch.int64) + offsets)
        return out.permute(0, 3, 1, 2) if channels_first else out
