"""One JSON rule for every result and file labelwise writes.

``jsonable(obj)`` turns nested results into plain JSON values:

- NumPy scalars and arrays become Python numbers and (nested) lists;
- non-finite floats (NaN, +inf, -inf) become ``null``: strict JSON has no spelling for them,
  and a reader must not mistake a missing bound for a number (an unbounded interval from one
  regression label is written ``"ci_low": null``);
- objects with a ``to_dict()`` method (every result type) are converted through it;
- mappings, lists, tuples and sets recurse; tuples and sets become lists;
- anything else that JSON cannot hold raises ``TypeError`` naming its type.

``dumps`` applies the rule and never writes ``NaN`` or ``Infinity``.
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping
from typing import Any

import numpy as np

__all__ = ["dumps", "jsonable"]


def jsonable(obj: Any) -> Any:
    """``obj`` as plain JSON values (see the module docstring for the rule)."""
    if obj is None or isinstance(obj, bool | str):
        return obj
    if isinstance(obj, np.bool_):
        return bool(obj)
    if isinstance(obj, int | np.integer):
        return int(obj)
    if isinstance(obj, float | np.floating):
        v = float(obj)
        return v if math.isfinite(v) else None
    if isinstance(obj, np.ndarray):
        if obj.dtype.kind in "biu":
            return obj.tolist()
        return [jsonable(v) for v in obj.tolist()] if obj.ndim else jsonable(obj.item())
    if isinstance(obj, Mapping):
        return {str(k): jsonable(v) for k, v in obj.items()}
    if isinstance(obj, list | tuple | set | frozenset):
        return [jsonable(v) for v in obj]
    to_dict = getattr(obj, "to_dict", None)
    if callable(to_dict):
        return jsonable(to_dict())
    raise TypeError(f"not JSON-serialisable: {type(obj).__name__}")


def dumps(obj: Any, *, indent: int | None = 2) -> str:
    """``json.dumps`` of ``jsonable(obj)``: strict JSON, non-finite floats as ``null``."""
    return json.dumps(jsonable(obj), indent=indent, allow_nan=False)
