"""Field: how one column of a .beton file is written (the writer's side of a field)."""

from __future__ import annotations

from typing import Any, Dict


class Field:
    """A column of the dataset. ``kind`` names the native field, ``params`` its settings and
    ``to_native`` turns one value of a sample into what the native writer takes."""

    kind = ""

    def params(self) -> Dict[str, Any]:
        return {}

    def to_native(self, value: Any) -> Any:
        return value

    def native(self, name: str):
        return (name, self.kind, self.params())

    def __repr__(self) -> str:
        args = ", ".join(f"{k}={v!r}" for k, v in self.params().items())
        return f"{type(self).__name__}({args})"
