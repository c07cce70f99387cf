"""Batches kept, threads, the GIL, iterators made and dropped, interpreter exit, bad arguments."""

from __future__ import annotations

import os
import subprocess
import sys
import threading
import time

import numpy as np
import pytest
import torch

from conftest import ImagesAndLabels
from ffcv_cpp.fields import IntField, RGBImageField
from ffcv_cpp.fields.basics import IntDecoder
from ffcv_cpp.fields.decoders import RandomResizedCropRGBImageDecoder
from ffcv_cpp.loader import Loader, OrderOption
from ffcv_cpp.pipeline import PipelineSpec
from ffcv_cpp.pipeline.operation import NativeStep, Operation
from ffcv_cpp.transforms import RandomHorizontalFlip, Squeeze, ToTensor
from ffcv_cpp.writer import DatasetWriter


def image_loader(path, **kwargs):
    settings = dict(batch_size=2, num_workers=2, order=OrderOption.RANDOM, seed=5)
    settings.update(kwargs)
    return Loader(path, pipelines={
        "image": [RandomResizedCropRGBImageDecoder(16), RandomHorizontalFlip(), ToTensor()],
        "label": [IntDecoder(), ToTensor(), Squeeze()]}, **settings)


def threads_fds_rss():
    rss_pages = int(open("/proc/self/statm").read().split()[1])
    return (len(os.listdir("/proc/self/task")), len(os.listdir("/proc/self/fd")),
            rss_pages * os.sysconf("SC_PAGE_SIZE"))


def test_keeping_every_batch_leaves_each_intact(tmp_path):
    path = str(tmp_path / "many.beton")
    DatasetWriter(path, {"image": RGBImageField(write_mode="jpg"), "label": IntField()},
                  num_workers=2, progress=False
                  ).from_indexed_dataset(ImagesAndLabels(240, seed=12, fixed_size=False))
    loader = image_loader(path, batches_ahead=1)
    copies = [tuple(t.clone() for t in batch) for batch in loader.epoch(0)]
    kept = list(loader.epoch(0))  # 120 batches held at once; the ring has 3 slots
    assert len(kept) == len(copies) == 120
    for (image, label), (image_copy, label_copy) in zip(kept, copies):
        assert torch.equal(image, image_copy) and torch.equal(label, label_copy)
    # The memory of batches still held is theirs: a later epoch does not touch it.
    later = [batch for batch in loader.epoch(1)]
    assert all(torch.equal(k[0], c[0]) for k, c in zip(kept, copies))
    assert not all(torch.equal(k[0], l[0]) for k, l in zip(kept, later))


def test_a_python_thread_runs_while_the_loader_waits(jpeg_file):
    """The epoch waits on slow storage (20 ms per page read); a thread counting meanwhile gets
    the GIL for that whole time, which it would not if next() held it."""
    loader = image_loader(jpeg_file, batch_size=8, os_cache=False, storage_latency_ms=20,
                          cache_readers=1)
    counts, stop = [0], threading.Event()

    def count():
        while not stop.is_set():
            counts[0] += 1

    counter = threading.Thread(target=count)
    counter.start()
    waited = 0.0
    try:
        iterator = iter(loader)
        while True:
            started = time.perf_counter()
            before = counts[0]
            try:
                next(iterator)
            except StopIteration:
                break
            if time.perf_counter() - started > 0.01:  # a real wait
                waited += 1
                assert counts[0] - before > 100, "the counting thread did not run during the wait"
    finally:
        stop.set()
        counter.join()
    assert waited >= 1


def test_a_thousand_iterators_dropped_mid_epoch_leave_no_thread_fd_or_memory(jpeg_file):
    loader = image_loader(jpeg_file)
    for _ in range(20):  # warm up allocators and caches
        next(iter(loader))
    threads, fds, rss = threads_fds_rss()
    for _ in range(1000):
        iterator = iter(loader)
        next(iterator)
        del iterator
    after_threads, after_fds, after_rss = threads_fds_rss()
    assert after_threads == threads
    assert after_fds == fds
    assert after_rss - rss < 32 << 20


def test_len_break_and_a_new_epoch_behave_as_in_ffcv(jpeg_file):
    loader = image_loader(jpeg_file, batch_size=10, drop_last=True)
    assert len(loader) == 9
    for position, _ in enumerate(loader):
        if position == 2:
            break  # the workers stop with the iterator
    assert sum(1 for _ in loader) == 9
    first = iter(loader)
    next(first)
    second = iter(loader)  # a new epoch stops the old one
    assert len(list(second)) == 9
    with pytest.raises(RuntimeError, match="was stopped"):
        next(first)


def test_the_interpreter_exits_cleanly_with_an_iterator_alive(jpeg_file):
    script = ("import sys; sys.path.insert(0, sys.argv[2]); from test_lifecycle import image_loader\n"
              "loader = image_loader(sys.argv[1]); it = iter(loader); next(it)\n"
              "kept = next(it)\nprint('ok')\n")
    done = subprocess.run([sys.executable, "-c", script, jpeg_file, os.path.dirname(__file__)],
                          capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "ok"


class NumbaStyle(Operation):
    def generate_code(self):
        return lambda images, _: images


@pytest.mark.parametrize("arguments, error, message", [
    (dict(batch_size=-1), ValueError, "batch_size must be a positive integer"),
    (dict(batch_size=0), ValueError, "batch_size must be a positive integer"),
    (dict(pipelines={"image": [NativeStep("no_such_decoder")]}), ValueError,
     "unknown operation 'no_such_decoder'"),
    (dict(pipelines={"image": [IntDecoder()]}), ValueError, "int decoder needs a Int field"),
    (dict(pipelines={"pixels": PipelineSpec("imagez")}), ValueError,
     "reads field 'imagez', which the file does not have"),
    (dict(pipelines={"image": [RandomResizedCropRGBImageDecoder(16), NumbaStyle()]}), TypeError,
     "NumbaStyle is an Operation"),
    (dict(pipelines={"image": [RandomResizedCropRGBImageDecoder(16), ToTensor(),
                               RandomHorizontalFlip()]}), ValueError, "place it before ToTensor"),
    (dict(cache_budget=512), ValueError, "unknown loader setting 'cache_budget'"),
    (dict(on_error="ignore"), ValueError, "on_error"),
    (dict(order="random"), ValueError, "order must be an OrderOption"),
    (dict(custom_fields={"image": object}), ValueError, "custom_fields is not supported"),
])
def test_bad_arguments_are_one_clear_python_exception(jpeg_file, arguments, error, message):
    settings = dict(batch_size=4)
    settings.update(arguments)
    with pytest.raises(error, match=message):
        Loader(jpeg_file, **settings)


def test_a_missing_file_is_an_os_error(tmp_path):
    with pytest.raises(OSError, match="missing.beton"):
        Loader(str(tmp_path / "missing.beton"), batch_size=4)


def test_settings_are_the_tables(jpeg_file):
    names = [row["name"] for row in Loader.settings()]
    assert {"num_workers", "order", "cache_budget_mib", "window_pages", "on_error"} <= set(names)
    loader = image_loader(jpeg_file, batch_size=8, os_cache=False,
                          order=OrderOption.QUASI_RANDOM, cache_budget_mib=64, window_pages=1)
    assert loader.window_pages == 1
    assert len(list(loader)) == len(loader)


def test_an_iterator_keeps_its_loader_alive(jpeg_file):
    import gc

    iterator = iter(image_loader(jpeg_file, batch_size=10))  # no other reference to the loader
    gc.collect()
    assert sum(1 for _ in iterator) == 9


class CountedHostMemory:
    """Batch memory from numpy, counted: what PinnedHostMemory does with torch's pinned memory
    for ToDevice to a GPU, checked here on the CPU."""

    def __init__(self):
        self.blocks = {}
        self.allocated = 0

    def allocate(self, size):
        block = np.empty(size + 64, dtype=np.uint8)
        address = (block.ctypes.data + 63) // 64 * 64
        self.blocks[address] = (block, size)
        self.allocated += 1
        return address

    def deallocate(self, address):
        del self.blocks[address]

    def holds(self, array):
        start = array.ctypes.data
        return any(a <= start and start + array.nbytes <= a + size
                   for a, (_, size) in self.blocks.items())


def test_batches_live_in_the_memory_the_package_provides(jpeg_file, monkeypatch):
    import gc

    from ffcv_cpp.loader import batch_memory

    memory = CountedHostMemory()
    monkeypatch.setattr(batch_memory, "batch_memory_for", lambda plans: memory)
    loader = image_loader(jpeg_file, batch_size=4, batches_ahead=1)
    kept = []
    for image, label in loader:
        assert memory.holds(image.numpy()) and memory.holds(label.numpy())
        kept.append((image, label))  # 24 batches held: the ring's 3 slots and 21 more
    assert memory.allocated >= 24 * 2  # two outputs per batch
    del kept, image, label, loader
    gc.collect()
    assert memory.blocks == {}
