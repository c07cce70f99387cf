"""Batches of ragged outputs: a varying number of rows per sample (boxes, labels, token ids).

A ragged output of a batch arrives as one of two pairs, named by the decoder's ``layout``:

``PackedRows(values, offsets)``
    every sample's rows back to back, ``values[offsets[i]:offsets[i + 1]]`` being sample i's;
    ``ToTensor()`` makes it one torch nested tensor of the jagged layout over the same memory
    (``torch.nested.nested_tensor_from_jagged``), which ``ToDevice`` moves whole.
``PaddedRows(values, lengths)``
    ``values[i, :lengths[i]]`` are sample i's rows, zero rows after them up to the batch's largest
    sample; ``ToTensor()`` makes both tensors.

Neither is ever padded to the dataset's largest sample.
"""

from __future__ import annotations

from typing import Any, NamedTuple


def _tensors(pair) -> tuple:
    """Both parts of a pair as torch tensors over the same memory."""
    import torch

    return tuple(item if isinstance(item, torch.Tensor) else torch.from_numpy(item)
                 for item in pair)


class PackedRows(NamedTuple):
    values: Any
    offsets: Any

    def to_tensor(self):
        import torch

        return torch.nested.nested_tensor_from_jagged(*_tensors(self))


class PaddedRows(NamedTuple):
    values: Any
    lengths: Any

    def to_tensor(self):
        return PaddedRows(*_tensors(self))

    def to(self, *args, **kwargs):
        return PaddedRows(self.values.to(*args, **kwargs), self.lengths.to(*args, **kwargs))


_LAYOUTS = {"packed": PackedRows, "padded": PaddedRows}


def ragged_batch(layout: str, pair) -> Any:
    """The native pair of a ragged output as its named pair."""
    return _LAYOUTS[layout](*pair)
