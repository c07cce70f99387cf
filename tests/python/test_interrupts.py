"""Waits that Ctrl-C ends, iterators shared by threads or left to a forked child, and the
figures of an epoch that ended.

What may hang without its fix runs in a child process with a timeout, so that a regression fails
instead of stalling the suite; a Ctrl-C is a SIGINT the child sends itself from a timer thread.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
import time

import numpy as np
import pytest

from ffcv_cpp.fields import IntField
from ffcv_cpp.fields.basics import IntDecoder
from ffcv_cpp.loader import Loader, OrderOption
from ffcv_cpp.writer import DatasetWriter

# Generous for a slow 2-core machine: without the fixes these waits took 29 to 60 s, or for ever.
PROMPT_SECONDS = 5


class Indices:
    """Sample i holds the integer i."""

    def __init__(self, count: int) -> None:
        self.count = count

    def __len__(self) -> int:
        return self.count

    def __getitem__(self, index: int):
        return (index,)


@pytest.fixture(scope="module")
def index_file(tmp_path_factory) -> str:
    path = str(tmp_path_factory.mktemp("interrupts") / "indices.beton")
    DatasetWriter(path, {"index": IntField()}, num_workers=2, progress=False
                  ).from_indexed_dataset(Indices(200))
    return path


def run_child(code: str, *args: str, timeout: float = 90) -> dict:
    """Runs `code` in a fresh interpreter; it prints one JSON line last, returned here."""
    env = dict(os.environ, no_proxy="127.0.0.1,localhost", NO_PROXY="127.0.0.1,localhost")
    try:
        done = subprocess.run([sys.executable, "-c", textwrap.dedent(code), *args], env=env,
                              capture_output=True, text=True, timeout=timeout)
    except subprocess.TimeoutExpired as expired:
        pytest.fail(f"the child did not end within {timeout} s; its stderr: {expired.stderr}")
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout.strip().splitlines()[-1])


# A child's preamble: send_sigint(after) sends this process a SIGINT from a timer thread, as a
# Ctrl-C would; interrupted(call) runs call() and gives the seconds to its KeyboardInterrupt.
PREAMBLE = """
import json, os, signal, sys, threading, time

def send_sigint(after):
    threading.Timer(after, lambda: os.kill(os.getpid(), signal.SIGINT)).start()

def interrupted(call, after=0.5):
    send_sigint(after)
    start = time.monotonic()
    try:
        call()
    except KeyboardInterrupt:
        return time.monotonic() - start - after
    return None
"""


def test_ctrl_c_ends_a_slow_next_at_once(raw_file):
    """Every page read waits 30 s: next() waits that long for its batch unless Ctrl-C ends it."""
    result = run_child(PREAMBLE + """
from ffcv_cpp.loader import Loader
loader = Loader(sys.argv[1], batch_size=4, num_workers=2, os_cache=False,
                storage_latency_ms=30000)
iterator = iter(loader)
print(json.dumps({"seconds": interrupted(lambda: next(iterator))}))
""", raw_file)
    assert result["seconds"] is not None, "next() returned a batch instead of being interrupted"
    assert result["seconds"] < PROMPT_SECONDS


def test_ctrl_c_ends_opening_a_url_on_a_silent_server():
    """A server that accepts the connection and never answers: the open would wait out its
    stall timeout four times (about 60 s)."""
    result = run_child(PREAMBLE + """
import socket
from ffcv_cpp.loader import Loader
server = socket.socket()
server.bind(("127.0.0.1", 0))
server.listen(16)
url = "http://127.0.0.1:%d/data.beton" % server.getsockname()[1]
print(json.dumps({"seconds": interrupted(lambda: Loader(url, batch_size=4))}))
""")
    assert result["seconds"] is not None
    assert result["seconds"] < PROMPT_SECONDS


# A write of 1000 samples whose __getitem__ runs `body` (index in scope) before it returns, and
# that Ctrl-C interrupts after 1 s: the seconds it took to raise KeyboardInterrupt, and the files
# left in the output's folder.
WRITE_INTERRUPTED = PREAMBLE + """
from ffcv_cpp.fields import IntField
from ffcv_cpp.writer import DatasetWriter

class Dataset:
    def __len__(self):
        return 1000
    def __getitem__(self, index):
        exec(sys.argv[2])
        return (index,)

path = os.path.join(sys.argv[1], "out.beton")
writer = DatasetWriter(path, {"x": IntField()}, num_workers=2, progress=False)
seconds = interrupted(lambda: writer.from_indexed_dataset(Dataset()), after=1.0)
print(json.dumps({"seconds": seconds, "left": sorted(os.listdir(sys.argv[1]))}))
"""


@pytest.mark.parametrize("body", [
    # Sample 5's __getitem__ never returns: the write waits for it in order; Ctrl-C must still
    # end the call at once, leave no file behind, and let the interpreter exit.
    "if index == 5: threading.Event().wait()",
    # Slow (50 ms a sample) but never stuck: the write stops within its grace and cleans up.
    "time.sleep(0.05)",
], ids=["blocked", "slow"])
def test_ctrl_c_ends_a_write_and_removes_its_temporary(tmp_path, body):
    out = tmp_path / "out"
    out.mkdir()
    result = run_child(WRITE_INTERRUPTED, str(out), body, timeout=60)
    assert result["seconds"] is not None
    assert result["seconds"] < PROMPT_SECONDS
    assert result["left"] == []


def test_two_threads_sharing_an_iterator_get_each_batch_once(index_file):
    """Without turns, the thread that lost the race for the last batch waited for ever."""
    result = run_child("""
import json, os, sys, threading
import numpy as np
from ffcv_cpp.loader import Loader, OrderOption
loader = Loader(sys.argv[1], batch_size=2, num_workers=2, order=OrderOption.SEQUENTIAL)
iterator = iter(loader)
taken, errors = [[], []], []

def take(k):
    try:
        for (index,) in iterator:
            taken[k].append(np.asarray(index).ravel().tolist())
    except Exception as error:
        errors.append(repr(error))

threads = [threading.Thread(target=take, args=(k,), daemon=True) for k in range(2)]
for thread in threads:
    thread.start()
for thread in threads:
    thread.join(timeout=30)
hung = sum(thread.is_alive() for thread in threads)
print(json.dumps({"hung": hung, "taken": taken, "errors": errors}), flush=True)
os._exit(0)
""", index_file)
    assert result["hung"] == 0, "a thread still waits in next() after the epoch's end"
    assert result["errors"] == []
    batches = sorted(result["taken"][0] + result["taken"][1])
    assert batches == [[i, i + 1] for i in range(0, 200, 2)]


def test_close_from_another_thread_ends_a_waiting_next(raw_file):
    """next() waits 30 s for its pages; close() on another thread stops the epoch, and the
    waiting next() ends the iteration instead of handing out a batch 30 s later."""
    loader = Loader(raw_file, batch_size=4, num_workers=2, os_cache=False,
                    storage_latency_ms=30000)
    iterator = iter(loader)
    import threading

    threading.Timer(0.5, iterator.close).start()
    start = time.monotonic()
    with pytest.raises(StopIteration):
        next(iterator)
    assert time.monotonic() - start < PROMPT_SECONDS


def test_a_forked_child_cannot_use_the_parents_iterator(index_file):
    """The child has none of the epoch's threads: its next() raises, naming the fork, a new
    Loader works there, and the child exits (closing the iterator left to it)."""
    result = run_child("""
import json, os, sys
import numpy as np
from ffcv_cpp.loader import Loader, OrderOption
path = sys.argv[1]
loader = Loader(path, batch_size=4, num_workers=2, order=OrderOption.SEQUENTIAL)
iterator = iter(loader)
first = next(iterator)
child = os.fork()
if child == 0:
    report = {}
    try:
        next(iterator)
        report["next"] = "returned"
    except RuntimeError as error:
        report["next"] = str(error)
    fresh = Loader(path, batch_size=4, num_workers=2, order=OrderOption.SEQUENTIAL)
    report["fresh"] = np.asarray(next(iter(fresh))[0]).ravel().tolist()
    with open(sys.argv[2], "w") as out:
        json.dump(report, out)
    sys.exit(0)
_, status = os.waitpid(child, 0)
report = json.load(open(sys.argv[2])) if os.path.exists(sys.argv[2]) else {}
report["status"] = status
report["parent_next"] = np.asarray(next(iterator)[0]).ravel().tolist()
print(json.dumps(report))
""", index_file, index_file + ".fork.json", timeout=60)
    os.remove(index_file + ".fork.json")
    assert result["status"] == 0
    assert "fork" in result["next"] and "new Loader" in result["next"]
    assert result["fresh"] == [0, 1, 2, 3]
    assert result["parent_next"] == [4, 5, 6, 7]  # the parent's epoch goes on


def test_stats_keep_the_figures_of_an_epoch_that_ended(tmp_path):
    """One sample's JPEG is damaged and skipped: after the loop, stats() still says so."""
    from conftest import ImagesAndLabels
    from ffcv_cpp.fields import RGBImageField

    path = tmp_path / "damaged.beton"
    DatasetWriter(str(path), {"image": RGBImageField(write_mode="jpg"), "label": IntField()},
                  num_workers=2, progress=False
                  ).from_indexed_dataset(ImagesAndLabels(20, seed=4, fixed_size=True))
    data = bytearray(path.read_bytes())
    starts = [i for i in range(len(data) - 2) if data[i:i + 3] == b"\xff\xd8\xff"]
    assert len(starts) == 20
    data[starts[7]:starts[7] + 2] = b"\0\0"  # no longer a JPEG
    path.write_bytes(bytes(data))

    loader = Loader(str(path), batch_size=4, num_workers=2, on_error="skip",
                    max_skipped_fraction=0.1, drop_last=False)
    iterator = iter(loader)
    samples = sum(len(label) for _, label in iterator)
    assert samples == 19
    stats = iterator.stats()
    assert stats["skipped_samples"] == 1
    assert stats["samples"] >= 19 and stats["batches"] == 5
