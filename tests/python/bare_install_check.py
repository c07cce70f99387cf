"""The wheel alone, with numpy and nothing else: it imports, writes a file from Python and reads
it back as numpy batches. Run by run_pytest.sh in an empty venv."""

import importlib.util
import os
import sys

import numpy as np

import ffcv_cpp
from ffcv_cpp.fields import IntField, NDArrayField, RGBImageField
from ffcv_cpp.fields.decoders import IntDecoder, NDArrayDecoder, SimpleRGBImageDecoder
from ffcv_cpp.loader import Loader, OrderOption
from ffcv_cpp.writer import DatasetWriter

assert importlib.util.find_spec("torch") is None, "the bare venv must not have torch"
assert "site-packages" in ffcv_cpp.__file__, ffcv_cpp.__file__

rng = np.random.default_rng(0)
images = rng.integers(0, 256, size=(20, 12, 10, 3), dtype=np.uint8)
vectors = rng.normal(size=(20, 4)).astype(np.float32)
samples = [(images[i], i * 3, vectors[i]) for i in range(20)]
path = os.path.abspath("bare.beton")
DatasetWriter(path, {"image": RGBImageField(), "label": IntField(),
                     "vector": NDArrayField(np.float32, (4,))}, progress=False
              ).from_indexed_dataset(samples)
loader = Loader(path, batch_size=6, order=OrderOption.SEQUENTIAL, drop_last=False,
                pipelines={"image": [SimpleRGBImageDecoder()], "label": [IntDecoder()],
                           "vector": [NDArrayDecoder()]})
batches = list(loader)
assert all(isinstance(value, np.ndarray) for batch in batches for value in batch)
assert np.array_equal(np.concatenate([b[0] for b in batches]), images)
assert np.array_equal(np.concatenate([b[1] for b in batches])[:, 0], np.arange(20) * 3)
assert np.array_equal(np.concatenate([b[2] for b in batches]), vectors)
print(f"bare install: ffcv_cpp {ffcv_cpp.__version__} from {os.path.dirname(ffcv_cpp.__file__)} "
      f"wrote and read {len(samples)} samples on Python {sys.version.split()[0]}")
