"""Loader: batches of a .beton file, with Python FFCV's arguments and meanings.

Python FFCV's arguments keep their names and meanings. This loader's own settings (the process
cache's budget, the QUASI_RANDOM window, the storage throttle, what a failing sample does, the
HTTP limits) are keyword arguments named as in the loader-settings table, which every front end
of the project reads (ffcv/settings/loader_settings.hpp); ``Loader.settings()`` lists them.
"""

from __future__ import annotations

import os
import warnings
import weakref
from enum import Enum, auto
from typing import Any, Callable, Dict, List, Mapping, Optional, Sequence

import numpy as np

from .. import _native
from ..arguments import index_array, whole_number
from ..pipeline.operation import NativeStep
from ..pipeline.pipeline_spec import PipelineSpec
from ..pipeline.plan import OutputPlan, plan_output
from ..transforms.ops import ToTensor
from . import batch_memory
from .epoch_iterator import EpochIterator


class OrderOption(Enum):
    SEQUENTIAL = auto()
    RANDOM = auto()
    QUASI_RANDOM = auto()


# The orders a Loader takes (Python FFCV's name for their type).
ORDER_TYPE = OrderOption

_ORDER_NAMES = {OrderOption.SEQUENTIAL: "sequential", OrderOption.RANDOM: "random",
                OrderOption.QUASI_RANDOM: "quasi_random"}
# Python FFCV's arguments that are rows of the settings table under the same name.
_FFCV_SETTINGS = ("num_workers", "os_cache", "order", "seed", "drop_last", "batches_ahead")


def _rank_and_world_size():
    """This process's rank and the world size: torch.distributed's when it is initialised,
    else the RANK and WORLD_SIZE variables torchrun sets."""
    try:
        import torch.distributed as dist

        if dist.is_available() and dist.is_initialized():
            return dist.get_rank(), dist.get_world_size()
    except ImportError:
        pass
    if "RANK" in os.environ and "WORLD_SIZE" in os.environ:
        return int(os.environ["RANK"]), int(os.environ["WORLD_SIZE"])
    raise ValueError("distributed=True needs torch.distributed initialised, or RANK and "
                     "WORLD_SIZE in the environment")


class Loader:
    """Batches of ``fname`` (a path or an http(s):// URL) through ``pipelines``.

    Python FFCV's arguments: ``batch_size``, ``num_workers`` (-1 or 0: one per core),
    ``os_cache`` (True: the OS page cache; False: the process cache), ``order``
    (OrderOption), ``distributed`` (each rank reads its share), ``seed`` (None: a random one),
    ``indices`` (a subset of integers; one listed twice is loaded twice), ``pipelines``
    ({output: [decoder?, steps...] | PipelineSpec | None}), ``custom_fields`` (must be empty),
    ``drop_last``, ``batches_ahead``, ``recompile`` (accepted: a decoder's ``output_size`` set
    between epochs applies to the next epoch either way, as in FFCV). Any other keyword is a
    setting of the loader-settings table (see ``Loader.settings()``), e.g.
    ``cache_budget_mib=4096``, ``window_pages=16``, ``on_error="skip"``,
    ``storage_bandwidth_mbs=100``.
    """

    def __init__(self, fname: str, batch_size: int, num_workers: int = -1,
                 os_cache: bool = True, order: OrderOption = OrderOption.SEQUENTIAL,
                 distributed: bool = False, seed: Optional[int] = None,
                 indices: Optional[Sequence[int]] = None,
                 pipelines: Optional[Mapping[str, Any]] = None,
                 custom_fields: Optional[Mapping[str, Any]] = None, drop_last: bool = True,
                 batches_ahead: int = 3, recompile: bool = False, **settings: Any) -> None:
        if not isinstance(batch_size, (int, np.integer)) or isinstance(batch_size, bool) \
                or not 1 <= batch_size < 2**64:
            raise ValueError(f"batch_size must be a positive integer (below 2**64), got "
                             f"{batch_size!r}")
        if custom_fields:
            raise ValueError("custom_fields is not supported: the reader knows the built-in "
                             "fields (RGBImage, Int, Float, NDArray, Bytes, JSON) by their ids")
        if order not in _ORDER_NAMES:
            raise ValueError(f"order must be an OrderOption, got {order!r} (a custom "
                             "TraversalOrder is not supported)")
        self._args = dict(fname=fname, batch_size=batch_size, num_workers=num_workers,
                          os_cache=os_cache, order=order, distributed=distributed, seed=seed,
                          indices=indices, pipelines=dict(pipelines or {}), drop_last=drop_last,
                          batches_ahead=batches_ahead, recompile=recompile, **settings)
        if seed is None and distributed:
            # Every rank must draw the same order, as torch's DistributedSampler's default does.
            warnings.warn("no seed given with distributed=True: seed 0, which every rank shares")
            seed = 0
        elif seed is None:
            seed = int(np.random.randint(0, np.iinfo("int32").max))
        self.fname = str(fname)
        self.batch_size = int(batch_size)
        self.order = order
        self.seed = whole_number(seed, "seed", 0)
        self.distributed = distributed
        self.drop_last = drop_last
        self.batches_ahead = batches_ahead
        self.recompile = recompile
        self.next_epoch = 0
        self.rank, self.world_size = _rank_and_world_size() if distributed else (0, 1)
        self._settings: Dict[str, Any] = dict(settings)
        self._settings.update(num_workers=max(whole_number(num_workers, "num_workers", -1), 0),
                              os_cache=bool(os_cache), order=_ORDER_NAMES[order], seed=self.seed,
                              drop_last=bool(drop_last),
                              batches_ahead=whole_number(batches_ahead, "batches_ahead", 0))
        self.indices = None if indices is None else index_array(indices, "indices")
        self._last_epoch: Optional[weakref.ref] = None
        self._reader = None
        fields = self._open(pipelines or {})
        self.num_workers = self._native.num_workers
        self.field_types = dict(fields)

    def _open(self, pipelines: Mapping[str, Any]):
        # The file's fields first, to resolve the pipelines against them; opened once.
        self._file = _native.NativeFile(self.fname, dict(self._settings))
        fields: List = self._file.fields()
        self.plans = _plans(pipelines, dict(fields))
        self._build_native()
        return fields

    def _build_native(self) -> None:
        """The native loader of the plans' steps as their parameters are now."""
        indices = None if self.indices is None else [int(i) for i in self.indices]
        self.batch_memory = batch_memory.batch_memory_for(self.plans)
        memory = None if self.batch_memory is None else (self.batch_memory.allocate,
                                                         self.batch_memory.deallocate)
        self._native_plans = [plan.native() for plan in self.plans]
        self._native = _native.NativeLoader(self._file, self.batch_size, dict(self._settings),
                                            self.rank, self.world_size, 0, indices,
                                            self._native_plans, memory)
        for plan, (_, _, _, layout) in zip(self.plans, self._native.outputs()):
            plan.layout = layout
        if self._batch_memory_bytes() >= 2**63:
            raise ValueError(f"batch_size {self.batch_size} is too large: "
                             f"{self._batch_memory_text()}, more than memory can address")

    def _batch_memory_bytes(self) -> int:
        """The least memory an epoch's batches take: batches_ahead + 2 batches in flight, each
        of batch_size samples of every output (a ragged output counted at one row a sample)."""
        sample = sum(np.dtype(dtype).itemsize * int(np.prod(shape, dtype=object))
                     for _, dtype, shape, _ in self._native.outputs())
        return (self.batches_ahead + 2) * self.batch_size * sample

    def _batch_memory_text(self) -> str:
        outputs = ", ".join(f"{name} {dtype}{list(shape)}"
                            for name, dtype, shape, _ in self._native.outputs())
        return (f"{self.batches_ahead + 2} batches in flight (batches_ahead + 2) of {outputs} "
                f"take at least {_byte_size_text(self._batch_memory_bytes())}")

    def _start(self, epoch: Any, first_batch: Any) -> EpochIterator:
        epoch = whole_number(epoch, "epoch", 0, 2**64 - 1)
        first_batch = whole_number(first_batch, "first_batch", 0, 2**64 - 1)
        if [plan.native() for plan in self.plans] != self._native_plans:
            # A step's parameters changed since the last epoch (progressive resizing sets a
            # decoder's output_size): the workers and the batch memory are made anew for them.
            previous = self._last_epoch() if self._last_epoch is not None else None
            if previous is not None:
                previous.close()
            self._build_native()
        try:
            native = self._native.epoch(epoch, first_batch)
        except MemoryError:
            raise MemoryError(f"batch_size {self.batch_size}: the batch memory cannot be "
                              f"allocated: {self._batch_memory_text()}; lower batch_size or "
                              "batches_ahead, or make the outputs smaller") from None
        iterator = EpochIterator(native, list(self.plans))
        self._last_epoch = weakref.ref(iterator)
        return iterator

    @property
    def reader(self):
        """The file's tables (``ffcv_cpp.reader.Reader``: header, handlers, metadata,
        allocation table), as Python FFCV's ``Loader.reader``; made on first use, for a local
        file."""
        if self._reader is None:
            from ..reader import Reader

            self._reader = Reader(self.fname)
        return self._reader

    @staticmethod
    def settings() -> List[Dict[str, str]]:
        """The loader-settings table: name, default, value, rule and doc of each keyword."""
        return _native.loader_setting_table()

    @property
    def window_pages(self) -> int:
        """QUASI_RANDOM's window in pages: window_pages, or the one the process cache's budget
        holds when that is 0; 0 with the OS cache (FFCV's rule, 2 x batch size, applies)."""
        return self._native.window_pages

    def outputs(self) -> List:
        """(name, numpy type, per-sample shape) of each output of the native part; a ragged
        output's shape is that of one row (``ragged_layouts()``)."""
        return [(name, dtype, shape) for name, dtype, shape, _ in self._native.outputs()]

    def ragged_layouts(self) -> Dict[str, str]:
        """The ragged outputs (a varying number of rows per sample) and their batch layout,
        "packed" or "padded"."""
        return {plan.name: plan.layout for plan in self.plans if plan.layout}

    def sample_geometry(self, output: str, epoch: int, index: int) -> List[tuple]:
        """Where sample ``index``'s pixels of image output ``output`` go in epoch ``epoch``, with
        the same random draws as that epoch's batches: one ``(scale_x, shift_x, scale_y,
        shift_y, width, height)`` per pixel-moving step (the decoder's crop, a flip, a
        translate), a point ``(x, y)`` landing at ``(scale_x * x + shift_x, scale_y * y +
        shift_y)`` on a canvas of ``width`` x ``height``. Boxes that follow the image
        (``RaggedDecoder(follows=...)``) move by these maps. Ask between epochs."""
        if not isinstance(output, str):
            raise TypeError(f"output must be the name of an output (str), got {output!r}")
        return self._native.sample_geometry(output, whole_number(epoch, "epoch", 0, 2**64 - 1),
                                            whole_number(index, "index", 0, 2**64 - 1))

    def __len__(self) -> int:
        return self._native.batches_per_epoch

    def __iter__(self) -> EpochIterator:
        epoch = self.next_epoch
        self.next_epoch += 1
        return self._start(epoch, 0)

    def filter(self, field_name: str, condition: Callable[[Any], bool]) -> "Loader":
        """A loader like this one over the samples whose ``field_name`` output (through this
        loader's pipeline for it, or the field's default decoder) satisfies ``condition``, called
        with one sample's value at a time, as Python FFCV's ``filter``."""
        pipelines: Dict[str, Any] = {name: None for name in self.field_types}
        own = self._args["pipelines"].get(field_name)
        if own is None:
            del pipelines[field_name]
        else:
            pipelines[field_name] = own
        probe = Loader(**{**self._args, "pipelines": pipelines, "order": OrderOption.SEQUENTIAL,
                          "drop_last": False, "distributed": False, "seed": 0})
        positions = np.arange(probe._native.num_samples) if self.indices is None else self.indices
        selected, position = [], 0
        for (batch,) in probe:
            for sample in batch:
                if condition(sample):
                    selected.append(int(positions[position]))
                position += 1
        return Loader(**{**self._args, "indices": selected})

    def epoch(self, epoch: int, first_batch: int = 0) -> EpochIterator:
        """The iterator of epoch ``epoch`` from batch ``first_batch`` (to resume): the same
        batches as the epoch's iterator from the start gives from that batch on."""
        return self._start(epoch, first_batch)


def _plans(pipelines: Mapping[str, Any], field_types: Dict[str, str]) -> List[OutputPlan]:
    """The outputs in Python FFCV's order: the file's fields (their pipeline, or the default
    pipeline, or none when mapped to None), then the other outputs in the mapping's order.
    ``field_types`` maps each field of the file to its type's name."""
    field_names = list(field_types)
    specs: Dict[str, Optional[PipelineSpec]] = {}
    for name, spec in pipelines.items():
        if spec is None or isinstance(spec, PipelineSpec):
            specs[name] = spec
        elif isinstance(spec, (list, tuple)):
            specs[name] = PipelineSpec(name, transforms=spec)
        else:
            raise ValueError(f"the pipeline for {name!r} must be a list of steps, a "
                             f"PipelineSpec or None, got {type(spec).__name__}")
    for name, spec in specs.items():
        if spec is not None and spec.source not in field_names:
            raise ValueError(f"pipeline {name!r} reads field {spec.source!r}, which the file "
                             f"does not have (fields: {', '.join(field_names)})")
    order = [n for n in field_names if not (n in specs and specs[n] is None)]
    order += [n for n in specs if n not in field_names and specs[n] is not None]
    plans = []
    for name in order:
        spec = specs.get(name) or PipelineSpec(name)
        if spec.decoder is None and not spec.transforms and \
                field_types[spec.source] != "RaggedNDArray" and _torch_available():
            # FFCV's default pipeline: the field's default decoder, then ToTensor. A ragged
            # field (not one of FFCV's) keeps its packed rows (docs/python.md).
            spec = PipelineSpec(spec.source, None, [ToTensor()])
        decoder = spec.decoder
        if decoder is not None and not (isinstance(decoder, NativeStep) and decoder.kind == "decoder"):
            raise TypeError(f"pipeline {name!r}: {type(decoder).__name__} is not a decoder")
        plans.append(plan_output(name, spec.source, decoder, spec.transforms))
    return plans


def _torch_available() -> bool:
    try:
        import torch  # noqa: F401
    except ImportError:
        return False
    return True


def _byte_size_text(size: int) -> str:
    """``size`` bytes as "1,808 bytes" or "9.04 PB"."""
    if size < 10**4:
        return f"{size:,} bytes"
    for unit in ("kB", "MB", "GB", "TB", "PB", "EB", "ZB"):
        size /= 1000
        if size < 1000:
            break
    return f"{size:.3g} {unit}"
