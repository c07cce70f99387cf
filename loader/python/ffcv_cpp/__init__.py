"""ffcv_cpp: FFCV's .beton loader and writer in C++, with Python FFCV's API.

Change ``from ffcv.X import Y`` to ``from ffcv_cpp.X import Y``: ``ffcv_cpp.loader`` (Loader,
OrderOption), ``ffcv_cpp.fields`` (and ``.decoders``), ``ffcv_cpp.transforms``,
``ffcv_cpp.writer`` (DatasetWriter), ``ffcv_cpp.pipeline`` (PipelineSpec). See docs/python.md
for what is the same, what is added, and what is refused.
"""

from . import _native
from .loader import Loader, OrderOption
from .writer import DatasetWriter

__version__ = "0.1.0"
__all__ = ["Loader", "OrderOption", "DatasetWriter"]
