"""The kinds of pipeline step.

A pipeline is a list of steps. Most run natively, per sample, inside the loader's worker threads
(decoders, flips, crops, cutout, ...) or once per batch there (mixup): they are ``NativeStep``
objects, which name a step of the loader's catalogue and its parameters. The rest run in the
consumer's thread on whole batches, after the native part (``ToTensor``, ``ToDevice``,
``ToTorchImage``, ``NormalizeImage`` after ``ToTensor``, a ``torch.nn.Module`` or any callable):
they are ``BatchStep`` objects.

``Operation`` is Python FFCV's base class for steps written in numba. Such code cannot run inside
native workers, so a pipeline that holds one is refused with a message that says what to do.
"""

from __future__ import annotations

from typing import Any, Dict


class Operation:
    """Python FFCV's base class for a step compiled with numba; refused by this loader.

    Write the step as a callable (or ``torch.nn.Module``) on whole batches placed after
    ``ToTensor()``, or in C++ as an op library (docs/python.md).
    """

    def generate_code(self):  # pragma: no cover - never called
        raise NotImplementedError


class NativeStep:
    """A step of the loader's catalogue: ``kind`` is "decoder", "operation" or
    "batch_operation", ``step`` its name in the catalogue, ``params`` its parameters."""

    kind = "operation"

    def __init__(self, step: str, **params: Any) -> None:
        self.step = step
        self.params: Dict[str, Any] = {k: _plain(v) for k, v in params.items() if v is not None}

    def native(self):
        return (self.step, dict(self.params))

    def __repr__(self) -> str:
        args = ", ".join(f"{k}={v!r}" for k, v in self.params.items())
        return f"{type(self).__name__}({args})"


class BatchStep:
    """A step on whole batches in the consumer's thread. ``apply`` takes the batch of one output
    (a torch tensor, or a numpy array before ``ToTensor``) and returns the new one."""

    # True for the steps that turn numpy batches into torch tensors (ToTensor).
    makes_tensor = False

    def apply(self, batch):
        raise NotImplementedError

    # Per-sample steps of the same meaning run natively when they come before ToTensor; steps
    # without a native twin return None.
    def native_twin(self):
        return None


def _plain(value: Any) -> Any:
    """A parameter as the native side takes it: bool, int, float, str or a list of numbers."""
    if isinstance(value, (bool, int, float, str)):
        return value
    if hasattr(value, "tolist"):  # numpy arrays and scalars, torch tensors
        value = value.tolist()
        if not isinstance(value, list):
            return value
    if isinstance(value, (list, tuple)):
        flat = []
        for item in value:
            if isinstance(item, (list, tuple)):
                flat.extend(_plain(item))
            else:
                flat.append(_plain(item))
        return flat
    return value
