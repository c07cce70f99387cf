"""Field: how one column of a .beton file is written and described.

The writer's side: ``kind`` names the native field, ``params`` its settings and ``to_native``
turns one value of a sample into what the native writer takes. The file's side, as Python FFCV
describes a field (``ffcv_cpp.reader.Reader`` builds its ``handlers`` from these):
``metadata_type`` (the numpy type of the field's column in the metadata table), ``to_binary`` /
``from_binary`` (the 1,024-byte argument blob of its descriptor) and ``get_decoder_class``
(the decoder of its default pipeline).
"""

from __future__ import annotations

from typing import Any, Dict

import numpy as np

# A field descriptor's argument blob.
ARG_TYPE = np.dtype([("", "<u1", 1024)])


class Field:
    """A column of the dataset."""

    kind = ""

    def params(self) -> Dict[str, Any]:
        return {}

    def to_native(self, value: Any) -> Any:
        return value

    def native(self, name: str):
        return (name, self.kind, self.params())

    @property
    def metadata_type(self) -> np.dtype:
        raise NotImplementedError(f"{type(self).__name__} does not declare its metadata_type")

    @classmethod
    def from_binary(cls, binary) -> "Field":
        """The field of a descriptor's argument blob; fields without arguments ignore it."""
        return cls()

    def to_binary(self):
        """The descriptor's argument blob (ARG_TYPE); all zeros for fields without arguments."""
        return np.zeros(1, dtype=ARG_TYPE)[0]

    def get_decoder_class(self):
        raise NotImplementedError(f"{type(self).__name__} has no default decoder")

    def __repr__(self) -> str:
        args = ", ".join(f"{k}={v!r}" for k, v in self.params().items())
        return f"{type(self).__name__}({args})"
