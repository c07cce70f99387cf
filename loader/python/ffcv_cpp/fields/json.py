"""JSON fields: a JSON document per sample, stored as its UTF-8 text and a NUL byte."""

from __future__ import annotations

import json

import numpy as np

from .bytes import BytesField

SEPARATOR = 0  # the NUL byte after each document


class JSONField(BytesField):
    """A JSON-compatible value per sample (dict, list, ...). Read it with ``BytesDecoder`` and
    turn the batch back into values with ``JSONField.unpack``."""

    kind = "json"

    def to_native(self, value):
        return json.dumps(value)

    @staticmethod
    def unpack(batch):
        """The values of a batch (N, size) of JSONField rows, or of one row (size,)."""
        if hasattr(batch, "numpy"):
            batch = batch.cpu().numpy()
        batch = np.asarray(batch)
        single = batch.ndim == 1
        rows = [batch] if single else batch
        values = []
        for row in rows:
            end = np.flatnonzero(row == SEPARATOR)
            text = row[: end[0] if len(end) else len(row)].tobytes().decode("utf8")
            values.append(json.loads(text))
        return values[0] if single else values
