"""The result contract: one base for every frozen result dataclass.

A result type is ``@dataclass(frozen=True)`` and inherits :class:`Result`, which gives it

- read-only arrays: after ``__post_init__`` every ``numpy.ndarray`` field (and every field
  annotated ``NDArray``, given as a list or tuple) is a read-only copy (a class with its own
  ``__post_init__`` converts dtypes first, then calls ``super().__post_init__()``);
- plain scalars: a NumPy scalar given for a field (``np.float64(0.98)`` from a reduction)
  becomes the Python number, so results print as ``ci_high=0.98`` in a notebook;
- ``to_dict()``: the fields, in order, through :func:`labelwise._json.jsonable` (NumPy values to
  Python, NaN and infinities to ``null``, nested results through their own ``to_dict``). A
  class shapes its JSON with

  * ``_json_head``: constant keys written first (e.g. ``{"metric": "nc"}``);
  * ``field(metadata=JSON_OMIT)``: a field left out (e.g. per-input arrays);
  * ``field(metadata=json_key("name"))``: a field written under another key;
  * ``_json_properties``: properties appended after the fields (e.g. ``budget``);

- ``value``: the headline number, a field or a property documented by each class (e.g. the
  accuracy of an :class:`~labelwise.Estimate`, the covered share of a coverage result), or
  ``None`` when the result has no single number; ``value_missing_reason`` then says why;
- ``higher_is_better``: True or False when a larger ``value`` means a better model or test set,
  None when that depends on the purpose (or there is no ``value``).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from types import MappingProxyType
from typing import TYPE_CHECKING, Any, ClassVar

import numpy as np
from numpy.typing import NDArray

from ._json import jsonable

__all__ = ["JSON_OMIT", "Result", "json_key"]

#: ``field(metadata=JSON_OMIT)`` leaves a field out of ``to_dict``.
JSON_OMIT: Mapping[str, Any] = MappingProxyType({"json": False})


def json_key(name: str) -> Mapping[str, Any]:
    """``field(metadata=json_key(name))`` writes a field under ``name`` in ``to_dict``."""
    return MappingProxyType({"json_key": name})


def _readonly(a: Any, dtype: Any = None) -> NDArray[Any]:
    """A read-only copy of ``a`` (for the arrays of frozen result types)."""
    out = np.array(a, dtype=dtype, copy=True)
    out.setflags(write=False)
    return out


def _is_frozen_copy(a: NDArray[Any]) -> bool:
    """True for an array made by :func:`_readonly` (read-only and owning its data)."""
    return not a.flags.writeable and a.base is None


class Result:
    """Mixin for frozen result dataclasses (see the module docstring)."""

    higher_is_better: ClassVar[bool | None] = None
    value_missing_reason: ClassVar[str] = ""
    _json_head: ClassVar[Mapping[str, Any]] = MappingProxyType({})
    _json_properties: ClassVar[tuple[str, ...]] = ()

    if TYPE_CHECKING:

        @property
        def value(self) -> float | None:
            """The headline number (see each class)."""

    def __post_init__(self) -> None:
        for f in dataclasses.fields(self):  # type: ignore[arg-type]
            v = getattr(self, f.name)
            if isinstance(v, np.ndarray):
                if not _is_frozen_copy(v):
                    object.__setattr__(self, f.name, _readonly(v))
            elif isinstance(v, np.generic):
                object.__setattr__(self, f.name, v.item())
            elif v is not None and str(f.type).startswith("NDArray"):
                object.__setattr__(self, f.name, _readonly(v))  # e.g. a list passed for an array

    def to_dict(self) -> dict[str, Any]:
        """A JSON-ready dict (strict JSON: non-finite floats are ``None``)."""
        out: dict[str, Any] = {k: jsonable(v) for k, v in self._json_head.items()}
        for f in dataclasses.fields(self):  # type: ignore[arg-type]
            if f.metadata.get("json", True):
                out[f.metadata.get("json_key", f.name)] = jsonable(getattr(self, f.name))
        for name in self._json_properties:
            out[name] = jsonable(getattr(self, name))
        return out
