"""Reader: a .beton file's header, fields, metadata and allocation table, as Python FFCV's
``ffcv.reader.Reader`` gives them.

The file is first opened by the loader core, which validates all of it (every pointer, size and
sample id) and raises one clear error for a damaged file; the tables are then numpy arrays over
a read-only memory map of the file, not copies of it.
"""

from __future__ import annotations

import os
from typing import Any, Dict, Mapping, Type

import numpy as np

from . import _native
from .fields.base import Field
from .types import (ALLOC_TABLE_TYPE, FieldDescType, HeaderType, get_handlers,
                    get_metadata_type)


def _read_only_view(path: str, dtype: np.dtype, offset: int, count: int) -> np.ndarray:
    if count == 0:
        empty = np.zeros(0, dtype=dtype)
        empty.setflags(write=False)
        return empty
    return np.memmap(path, dtype=dtype, mode="r", offset=offset, shape=(count,))


def _field_name(raw: np.ndarray) -> str:
    data = bytes(raw)
    return data[:data.index(0) if 0 in data else len(data)].decode("ascii")


class Reader:
    """The tables of the .beton at ``fname`` (a local path). ``custom_handlers`` ({field name:
    Field class}) reads a field through that class's ``from_binary``, as ``Loader``'s
    ``custom_fields`` names them. Attributes: ``header``, ``num_samples``, ``page_size``,
    ``num_fields``, ``field_descriptors``, ``field_names``, ``handlers`` ({name: Field}),
    ``metadata_type``, ``metadata`` (one record per sample; columns ``f0``, ``f1``, ...) and
    ``alloc_table`` (``sample_id``, ``ptr``, ``size``), all read-only."""

    def __init__(self, fname: Any, custom_handlers: Mapping[str, Type[Field]] = {}) -> None:
        self._fname = os.fsdecode(fname)
        if "://" in self._fname:
            raise ValueError(f"Reader maps a local file; {self._fname!r} is a URL (Loader reads "
                             "URLs)")
        self._custom_handlers = dict(custom_handlers)
        _native.NativeFile(self._fname, {})  # validates the whole file, or raises
        self.read_header()
        self.read_field_descriptors()
        self.read_metadata()
        self.read_allocation_table()

    @property
    def file_name(self) -> str:
        return self._fname

    def read_header(self) -> None:
        self.header = _read_only_view(self._fname, HeaderType, 0, 1)[0]
        self.num_samples = self.header["num_samples"]
        self.page_size = self.header["page_size"]
        self.num_fields = self.header["num_fields"]

    def read_field_descriptors(self) -> None:
        self.field_descriptors = _read_only_view(self._fname, FieldDescType, HeaderType.itemsize,
                                                 int(self.num_fields))
        self.field_names = [_field_name(name) for name in self.field_descriptors["name"]]
        handlers = get_handlers(self.field_descriptors)
        for index, name in enumerate(self.field_names):
            if name in self._custom_handlers:
                handlers[index] = self._custom_handlers[name].from_binary(
                    self.field_descriptors[index]["arguments"])
            if handlers[index] is None:
                raise ValueError(f"Must specify a custom_field entry for custom field {name}")
        self.handlers: Dict[str, Field] = dict(zip(self.field_names, handlers))
        self.metadata_type = get_metadata_type(handlers)

    def read_metadata(self) -> None:
        offset = HeaderType.itemsize + self.field_descriptors.nbytes
        self.metadata = _read_only_view(self._fname, self.metadata_type, offset,
                                        int(self.num_samples))

    def read_allocation_table(self) -> None:
        offset = int(self.header["alloc_table_ptr"])
        count = (os.path.getsize(self._fname) - offset) // ALLOC_TABLE_TYPE.itemsize
        self.alloc_table = _read_only_view(self._fname, ALLOC_TABLE_TYPE, offset, count)
