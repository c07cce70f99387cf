"""Classes for Python FFCV (the ``ffcv`` package), so that it reads and writes this project's
RaggedNDArray fields (docs/format.md, "RaggedNDArray").

Reading with Python FFCV::

    from ffcv.loader import Loader
    from ffcv.pipeline import PipelineSpec
    from ffcv_cpp.python_ffcv import RaggedNDArrayField, RaggedRowCountDecoder

    loader = Loader("coco.beton", batch_size=16,
                    custom_fields={"boxes": RaggedNDArrayField},
                    pipelines={"boxes": None,  # or [PaddedRaggedDecoder()]
                               "box_count": PipelineSpec("boxes", RaggedRowCountDecoder())})

Python FFCV's pipelines hold one fixed shape per output, so its decoder pads every sample to the
dataset's largest (``PaddedRaggedDecoder``) and ``RaggedRowCountDecoder`` gives each sample's
rows; this project's own loader pads to the batch's largest, or packs (``ffcv_cpp``'s
``RaggedDecoder``). ``DatasetWriter(fields={"boxes": RaggedNDArrayField(np.float32, (4,))})``
writes the field from Python FFCV, the same bytes as ``ffcv_cpp.writer``'s.

Importing this module needs Python FFCV (and numba, which it uses).
"""

from __future__ import annotations

from dataclasses import replace
from typing import Callable, Tuple

import numpy as np
from ffcv.fields.base import ARG_TYPE, Field
from ffcv.libffcv import memcpy
from ffcv.pipeline.allocation_query import AllocationQuery
from ffcv.pipeline.compiler import Compiler
from ffcv.pipeline.operation import Operation
from ffcv.pipeline.state import State

from .fields.ragged import (RAGGED_METADATA_TYPE, check_row_shape, ragged_arguments,
                            ragged_layout, rows_array)


class RaggedNDArrayField(Field):
    """Rows of ``dtype`` and ``row_shape`` per sample, any number of them; a sample's value is an
    array of shape ``(n, *row_shape)``. Metadata: ``ptr`` and ``rows`` (u64 each); a sample of 0
    rows has no data and ``ptr`` 0."""

    TYPE_ID = 255

    def __init__(self, dtype: np.dtype, row_shape: Tuple[int, ...] = ()) -> None:
        self.dtype = np.dtype(dtype)
        self.row_shape = tuple(int(extent) for extent in row_shape)
        check_row_shape(self.row_shape)
        self.row_bytes = int(self.dtype.itemsize * np.prod(self.row_shape, dtype=np.int64))

    @property
    def metadata_type(self) -> np.dtype:
        return RAGGED_METADATA_TYPE

    @staticmethod
    def from_binary(binary: ARG_TYPE) -> Field:
        return RaggedNDArrayField(*ragged_layout(binary))

    def to_binary(self) -> ARG_TYPE:
        return ragged_arguments(self.dtype, self.row_shape)

    def encode(self, destination, field, malloc):
        array = rows_array(field, self.dtype, self.row_shape)
        destination["rows"] = array.shape[0]
        destination["ptr"] = 0
        if array.shape[0] > 0:
            destination["ptr"], region = malloc(array.nbytes)
            region[:] = array.reshape(-1).view("<u1")

    def get_decoder_class(self):
        return PaddedRaggedDecoder


class PaddedRaggedDecoder(Operation):
    """Each sample's rows, then zero rows up to the dataset's largest sample (at least 1 row).

    A sample's bytes are its ``rows`` x the row's bytes, read from the start of its allocation:
    a longer allocation (a file whose metadata and data disagree) is read only that far, and a
    shorter one raises ValueError naming the sample, as this project's reader refuses such a
    file. Python FFCV runs the decoder in its loader's thread, which prints the error."""

    def declare_state_and_memory(self, previous_state: State):
        largest = max(1, int(self.metadata["rows"].max())) if len(self.metadata) else 1
        shape = (largest,) + self.field.row_shape
        return (replace(previous_state, jit_mode=True, shape=shape, dtype=self.field.dtype),
                AllocationQuery(shape, self.field.dtype))

    def generate_code(self) -> Callable:
        mem_read = self.memory_read
        my_memcpy = Compiler.compile(memcpy)
        my_range = Compiler.get_iterator()
        row_bytes = np.int64(self.field.row_bytes)

        def decoder(indices, destination, metadata, storage_state):
            # A sample whose data is shorter than its rows, reported after the loop (a raise
            # inside it would keep numba from running it in parallel).
            short = np.full(1, -1, dtype=np.int64)
            for ix in my_range(indices.shape[0]):
                sample = indices[ix]
                target = destination[ix].reshape(-1).view(np.uint8)
                target[:] = 0
                # rows <= the dataset's largest, which sized `target`.
                size = np.int64(metadata[sample]["rows"]) * row_bytes
                if size > 0:
                    data = mem_read(metadata[sample]["ptr"], storage_state)
                    if data.shape[0] < size:
                        short[0] = sample
                    else:
                        my_memcpy(data[:size], target[:size])
            if short[0] >= 0:
                sample = short[0]
                raise ValueError("RaggedNDArrayField: sample " + str(sample) + " has " +
                                 str(np.int64(metadata[sample]["rows"])) + " rows of " +
                                 str(row_bytes) + " bytes, but its data holds only " +
                                 str(mem_read(metadata[sample]["ptr"], storage_state).shape[0]) +
                                 " bytes: the file is damaged (its metadata and data disagree)")
            return destination[:indices.shape[0]]

        return decoder


class RaggedRowCountDecoder(Operation):
    """Each sample's number of rows, as int64 of shape (1,)."""

    def declare_state_and_memory(self, previous_state: State):
        return (replace(previous_state, jit_mode=True, shape=(1,), dtype=np.dtype("<i8")),
                AllocationQuery((1,), np.dtype("<i8")))

    def generate_code(self) -> Callable:
        my_range = Compiler.get_iterator()

        def decoder(indices, destination, metadata, storage_state):
            for ix in my_range(indices.shape[0]):
                destination[ix, 0] = metadata[indices[ix]]["rows"]
            return destination[:indices.shape[0]]

        return decoder
