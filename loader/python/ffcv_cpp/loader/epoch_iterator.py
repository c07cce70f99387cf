"""EpochIterator: one epoch's batches as tuples of tensors (or numpy arrays before ToTensor).

Each output's batch arrives from the workers as a numpy array over the batch's own memory; the
iterator runs the output's steps on whole batches (ToTensor, ToDevice, ...) and hands out the
tuple. A batch's memory belongs to it until every array and tensor made from it is gone, so a
batch kept in a list stays intact. With ToDevice to a CUDA device, the steps of the next batch
run on a side stream as soon as the workers have it, one batch ahead, and the consumer's stream
waits for them before it gets the batch.

Breaking out of a loop, starting another epoch, or leaving the interpreter stops the workers:
an iterator closes when it is exhausted, collected, replaced by a newer epoch of its loader
(whose ``__next__`` then raises), or at exit. ``stats()`` keeps the figures of an epoch that
ended.

Waiting for a batch looks for Ctrl-C every 100 ms (KeyboardInterrupt at once). Threads sharing an
iterator take turns, each batch going to one of them; ``close()`` from another thread ends a
wait in ``__next__`` (StopIteration). An iterator belongs to the process that made it: in a
child forked from it, ``__next__`` raises RuntimeError (make a new Loader in the child).
"""

from __future__ import annotations

import atexit
import os
import threading
import weakref
from typing import List, Optional

from ..pipeline.plan import OutputPlan
from .batch_memory import cuda_device_of
from .ragged import ragged_batch

_live: "weakref.WeakSet[EpochIterator]" = weakref.WeakSet()


@atexit.register
def _close_all() -> None:
    for iterator in list(_live):
        iterator.close()


def _cuda_side_stream(plans: List[OutputPlan]):
    device = cuda_device_of(plans)
    if device is None:
        return None
    import torch

    return torch.cuda.Stream(device=device)


def _plain_tensors(outputs):
    """The tensors of a batch's outputs, a ragged output's parts one by one."""
    import torch

    for output in outputs:
        if isinstance(output, tuple):
            yield from (item for item in output if isinstance(item, torch.Tensor))
        elif isinstance(output, torch.Tensor) and output.is_nested:
            yield output.values()
            yield output.offsets()
        elif isinstance(output, torch.Tensor):
            yield output


class EpochIterator:
    def __init__(self, native_epoch, plans: List[OutputPlan]) -> None:
        self._native = native_epoch
        self._plans = plans
        self._stream = _cuda_side_stream(plans)
        self._ahead: Optional[tuple] = None  # the next batch, its steps issued on the stream
        self._in_flight: List = []  # (event, host arrays) of copies that may still read them
        self._serving = threading.Lock()  # one __next__ at a time (the side stream's state)
        self._pid = os.getpid()
        _live.add(self)

    def __iter__(self) -> "EpochIterator":
        return self

    def __len__(self) -> int:
        return self._native.num_batches

    def __next__(self) -> tuple:
        with self._serving:
            if self._stream is None:
                arrays = self._native.next()
                if arrays is None:
                    self.close()
                    raise StopIteration
                return self._run_steps(arrays)
            return self._next_on_stream()

    def _run_steps(self, arrays) -> tuple:
        outputs = []
        for plan, batch in zip(self._plans, arrays):
            if plan.layout is not None:
                batch = ragged_batch(plan.layout, batch)
            for step in plan.batch_steps:
                batch = step.apply(batch)
            outputs.append(batch)
        return tuple(outputs)

    def _next_on_stream(self) -> tuple:
        import torch

        current = self._ahead if self._ahead is not None else self._issue(self._native.next())
        self._ahead = None
        if current is None:
            self.close()
            raise StopIteration
        if self._native.ready():  # start the next batch's copy now, without waiting for it
            self._ahead = self._issue(self._native.next())
        consumer = torch.cuda.current_stream(self._stream.device)
        consumer.wait_stream(self._stream)
        for tensor in _plain_tensors(current):
            if tensor.is_cuda:
                tensor.record_stream(consumer)
        return current

    def _issue(self, arrays) -> Optional[tuple]:
        """Runs a batch's steps on the side stream; its host memory is kept until they ran."""
        if arrays is None:
            return None
        import torch

        self._in_flight = [(event, held) for event, held in self._in_flight if not event.query()]
        with torch.cuda.stream(self._stream):
            outputs = self._run_steps(arrays)
            event = torch.cuda.Event()
            event.record(self._stream)
        self._in_flight.append((event, arrays))
        return outputs

    def stats(self) -> dict:
        """Seconds per stage of this epoch (reading, decoding, waiting), summed over threads,
        and the samples skipped; once the epoch ended (or was closed), its final figures."""
        return self._native.stats()

    def close(self) -> None:
        """Stops the workers now, also under a ``__next__`` waiting on another thread; batches
        handed out stay valid. In a forked child it only lets go of the parent's epoch."""
        self._ahead = None
        if os.getpid() != self._pid:
            self._in_flight = []
        if self._in_flight:
            for event, _ in self._in_flight:
                event.synchronize()
            self._in_flight = []
        self._native.close()
        _live.discard(self)

    def __del__(self) -> None:
        try:
            self.close()
        except Exception:  # pragma: no cover - interpreter shutdown
            pass
