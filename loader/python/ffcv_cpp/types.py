"""The .beton file's own types, as Python FFCV's ``ffcv.types`` names them: the header, a field
descriptor, an allocation-table entry, the field classes by type id, and the metadata record
of a list of fields (docs/format.md has the bytes)."""

from __future__ import annotations

from typing import List, Optional

import numpy as np

from .fields import (BytesField, Field, FloatField, IntField, JSONField, NDArrayField,
                     RGBImageField, TorchTensorField)
from .fields.ragged import RaggedNDArrayField, is_ragged_arguments

CURRENT_VERSION = 2

HeaderType = np.dtype([("version", "<u2"), ("num_fields", "<u2"), ("page_size", "<u4"),
                       ("num_samples", "<u8"), ("alloc_table_ptr", "<u8")], align=True)

ALLOC_TABLE_TYPE = np.dtype([("sample_id", "<u8"), ("ptr", "<u8"), ("size", "<u8")])

FieldDescType = np.dtype([("type_id", "<u1"), ("name", ("<u1", 16)),
                          ("arguments", ("<u1", (1024,)))], align=True)

# The field class of each type id; 255 is a field Python FFCV does not know (custom_fields).
TYPE_ID_HANDLER = {255: None, 0: FloatField, 1: IntField, 2: RGBImageField, 3: BytesField,
                   4: NDArrayField, 5: JSONField, 6: TorchTensorField}


def handler_of(descriptor) -> Optional[Field]:
    """The field a descriptor describes; None for type id 255 unless its arguments are a
    RaggedNDArrayField's (this package's own field of that id). TorchTensorField is read as an
    NDArrayField (the from_binary it inherits), as Python FFCV reads it."""
    type_id = int(descriptor["type_id"])
    if type_id not in TYPE_ID_HANDLER:
        raise ValueError(f"unknown field type id {type_id}")
    if type_id == 255:
        arguments = descriptor["arguments"]
        return RaggedNDArrayField.from_binary(arguments) if is_ragged_arguments(arguments) \
            else None
    return TYPE_ID_HANDLER[type_id].from_binary(descriptor["arguments"])


def get_handlers(field_descriptors) -> List[Optional[Field]]:
    return [handler_of(descriptor) for descriptor in field_descriptors]


def get_metadata_type(handlers: List[Field]) -> np.dtype:
    """One sample's metadata record: the fields' columns f0, f1, ... laid out as numpy's
    ``align=True`` lays them out."""
    return np.dtype([("", handler.metadata_type) for handler in handlers], align=True)
