"""DatasetWriter: a .beton file from any indexable dataset, with Python FFCV's arguments.

The native writer's threads do the image work (resizing, JPEG encoding) in parallel; they take
the GIL only to call the dataset's ``__getitem__`` and copy what it returns. The file is the
same bytes ``ffcv write`` produces for the same samples and settings, and Python FFCV reads it.
"""

from __future__ import annotations

import sys
from typing import Any, Mapping, Optional, Sequence

import numpy as np

from . import _native
from .fields.base import Field

MIN_PAGE_SIZE = 1 << 21


class _Progress:
    """A progress bar on stderr (tqdm's when installed)."""

    def __init__(self, total: int, description: str) -> None:
        try:
            from tqdm import tqdm

            self._bar = tqdm(total=total, desc=description, unit="sample")
        except ImportError:
            self._bar = None
        self._done = 0

    def __call__(self, done: int, total: int) -> None:
        if self._bar is not None:
            self._bar.update(done - self._done)
        elif sys.stderr.isatty():
            print(f"\r{done}/{total} samples", end="", file=sys.stderr, flush=True)
        self._done = done

    def close(self) -> None:
        if self._bar is not None:
            self._bar.close()


class DatasetWriter:
    """Writes ``fname`` with ``fields`` ({name: Field}, in column order). ``page_size`` is a
    power of two of at least 2 MiB; ``num_workers`` -1 or 0 means one per core. ``seed`` keys
    the random write decisions (write_mode="proportion") and ``shuffle_indices``."""

    def __init__(self, fname: str, fields: Mapping[str, Field], page_size: int = 4 * MIN_PAGE_SIZE,
                 num_workers: int = -1, seed: int = 0, progress: bool = True) -> None:
        if not fields:
            raise ValueError("DatasetWriter needs at least one field")
        for name, field in fields.items():
            if not isinstance(field, Field):
                raise TypeError(f"field {name!r} must be one of ffcv_cpp.fields (RGBImageField, "
                                f"IntField, ...), got {type(field).__name__}")
        self.fname = str(fname)
        self.fields = dict(fields)
        self.page_size = int(page_size)
        self.num_workers = max(int(num_workers), 0)
        self.seed = int(seed)
        self.progress = progress
        self.summary: Optional[dict] = None

    def from_indexed_dataset(self, dataset: Any, indices: Optional[Sequence[int]] = None,
                             chunksize: int = 100, shuffle_indices: bool = False) -> dict:
        """Writes ``dataset[i]`` for i in ``indices`` (all of ``range(len(dataset))`` by
        default), each a tuple with one value per field. ``chunksize`` is accepted for Python
        FFCV's signature. Returns the write's summary (also kept in ``self.summary``)."""
        chosen = np.arange(len(dataset)) if indices is None else np.asarray(indices, dtype=np.int64)
        fields = list(self.fields.values())

        def get_sample(i: int):
            sample = dataset[int(chosen[i])]
            if not isinstance(sample, (tuple, list)) or len(sample) != len(fields):
                raise ValueError(f"dataset[{int(chosen[i])}] must be a tuple of {len(fields)} "
                                 f"values (one per field), got {type(sample).__name__}")
            return tuple(field.to_native(value) for field, value in zip(fields, sample))

        progress = _Progress(len(chosen), self.fname) if self.progress else None
        try:
            self.summary = _native.write_samples(
                self.fname, [field.native(name) for name, field in self.fields.items()],
                get_sample, len(chosen), self.num_workers, self.page_size, self.seed,
                shuffle_indices, progress)
        finally:
            if progress is not None:
                progress.close()
        return self.summary

    def from_webdataset(self, *args, **kwargs):
        raise NotImplementedError("from_webdataset is not supported: wrap the shards in an "
                                  "indexable dataset and use from_indexed_dataset")
