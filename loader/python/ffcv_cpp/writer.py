"""DatasetWriter: a .beton file from any indexable dataset, with Python FFCV's arguments.

The native writer's threads do the image work (resizing, JPEG encoding) in parallel; they take
the GIL only to call the dataset's ``__getitem__`` and copy what it returns. The file is the
same bytes ``ffcv write`` produces for the same samples and settings, and Python FFCV reads it.
"""

from __future__ import annotations

import os
import sys
from typing import Any, Mapping, Optional, Sequence

import numpy as np

from . import _native
from .fields.base import Field
from .arguments import index_array, whole_number

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
    the random write decisions (write_mode="proportion") and ``shuffle_indices``.

    An existing ``fname`` is replaced when it is a .beton file or empty (a
    ``tempfile.NamedTemporaryFile()``); any other file only with ``force=True`` (the rule of
    ``ffcv write`` and its ``--force``)."""

    def __init__(self, fname: str, fields: Mapping[str, Field], page_size: int = 4 * MIN_PAGE_SIZE,
                 num_workers: int = -1, seed: int = 0, progress: bool = True,
                 force: bool = False) -> None:
        if not fields:
            raise ValueError("DatasetWriter needs at least one field")
        for name, field in fields.items():
            if not isinstance(field, Field):
                raise TypeError(f"field {name!r} must be one of ffcv_cpp.fields (RGBImageField, "
                                f"IntField, ...), got {type(field).__name__}")
        self.fname = os.fsdecode(fname)
        self.fields = dict(fields)
        # The writer checks the page size's rule (a power of two of at least 2 MiB).
        self.page_size = whole_number(page_size, "page_size", MIN_PAGE_SIZE, 2**64 - 1)
        self.num_workers = max(whole_number(num_workers, "num_workers", -1, 2**31 - 1), 0)
        self.seed = whole_number(seed, "seed", 0, 2**64 - 1)
        self.progress = progress
        self.force = bool(force)
        self.summary: Optional[dict] = None

    def _check_output(self) -> None:
        """Refuses, before any work, an ``fname`` that names a folder, or an existing file that
        is neither a .beton nor empty unless ``force``."""
        if os.path.isdir(self.fname):
            raise IsADirectoryError(f"DatasetWriter: fname {self.fname!r} is a folder; name the "
                                    "file to write")
        if os.path.exists(self.fname) and not self.force and \
                not _native.replaceable_without_force(self.fname):
            raise FileExistsError(f"DatasetWriter: fname {self.fname!r} exists and is not a "
                                  ".beton file or an empty file; pass force=True to replace it")

    def from_indexed_dataset(self, dataset: Any, indices: Optional[Sequence[int]] = None,
                             chunksize: int = 100, shuffle_indices: bool = False) -> dict:
        """Writes ``dataset[i]`` for i in ``indices`` (integers, in this order; all of
        ``range(len(dataset))`` by default), each a tuple with one value per field. An index
        listed twice is written twice. ``chunksize`` is accepted for Python FFCV's signature.
        Returns the write's summary (also kept in ``self.summary``)."""
        chosen = np.arange(len(dataset)) if indices is None else \
            index_array(indices, "indices", allow_negative=True)
        self._check_output()
        names = list(self.fields)
        fields = list(self.fields.values())

        def get_sample(i: int):
            index = int(chosen[i])
            sample = dataset[index]
            if not isinstance(sample, (tuple, list)) or len(sample) != len(fields):
                raise ValueError(f"dataset[{index}] must be a tuple of {len(fields)} "
                                 f"values (one per field), got {type(sample).__name__}")
            values = []
            for name, field, value in zip(names, fields, sample):
                try:
                    values.append(field.to_native(value))
                except (ValueError, TypeError) as error:
                    if type(error) not in (ValueError, TypeError):
                        raise
                    raise type(error)(f"dataset[{index}], field {name!r}: {error}") from None
            return tuple(values)

        progress = _Progress(len(chosen), self.fname) if self.progress else None
        try:
            self.summary = _native.write_samples(
                self.fname, [field.native(name) for name, field in self.fields.items()],
                get_sample, len(chosen), self.num_workers, self.page_size, self.seed,
                shuffle_indices, progress, None if indices is None else chosen.tolist())
        finally:
            if progress is not None:
                progress.close()
        return self.summary

    def from_webdataset(self, *args, **kwargs):
        raise NotImplementedError("from_webdataset is not supported: wrap the shards in an "
                                  "indexable dataset and use from_indexed_dataset")
