from .epoch_iterator import EpochIterator
from .loader import Loader, OrderOption

__all__ = ["Loader", "OrderOption", "EpochIterator"]
