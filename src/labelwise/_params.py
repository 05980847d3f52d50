"""Declarative parameter constraints (scikit-learn ``_param_validation`` style).

A sampler declares its tuning parameters once, next to its definition::

    CES_PARAMS = {"n_sections": Param(Interval(int, 1, 255), "K, sections", flag="--sections")}

    @validate_params(CES_PARAMS)
    def ces_select(activations, budget, *, n_sections=20, ...): ...

The decorator checks every declared keyword argument before the call, with one error style
(``"n_sections must be an integer in [1, 255], got 0"``), and attaches the table to the
function (``fn.__labelwise_params__``). The defaults stay in the signature and nowhere else:
:mod:`labelwise.registry` reads them with :func:`inspect.signature`, and the CLI builds its
options, conversions and help from the same table.
"""

from __future__ import annotations

import functools
import inspect
import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, TypeVar

import numpy as np

from .exceptions import LabelwiseError

__all__ = ["Interval", "Options", "Param", "Shares", "SharesOr", "validate_params"]

F = TypeVar("F", bound=Callable[..., Any])


class Constraint:
    """What values a parameter may take; ``check`` raises, ``parse`` reads CLI text."""

    def is_satisfied_by(self, value: Any) -> bool:  # pragma: no cover - abstract
        raise NotImplementedError

    def describe(self) -> str:  # pragma: no cover - abstract
        raise NotImplementedError

    def check(self, value: Any, name: str) -> None:
        if not self.is_satisfied_by(value):
            raise LabelwiseError(f"{name} must be {self.describe()}, got {value!r}")

    def parse(self, text: str) -> Any:
        return text

    def format(self, value: Any) -> str:
        return str(value)


@dataclass(frozen=True)
class Interval(Constraint):
    """A real or integer number in an interval; ``None`` ends are unbounded.

    ``closed`` is ``"both"``, ``"left"`` ([lo, hi)), ``"right"`` ((lo, hi]) or ``"neither"``.
    """

    kind: type
    low: float | None
    high: float | None
    closed: str = "both"

    def is_satisfied_by(self, value: Any) -> bool:
        if isinstance(value, bool):
            return False
        if self.kind is int:
            if not isinstance(value, int | np.integer):
                return False
        elif not isinstance(value, int | float | np.integer | np.floating):
            return False
        v = float(value)
        if not math.isfinite(v):
            return False
        lo_ok = self.low is None or (
            v >= self.low if self.closed in ("both", "left") else v > self.low
        )
        hi_ok = self.high is None or (
            v <= self.high if self.closed in ("both", "right") else v < self.high
        )
        return lo_ok and hi_ok

    def describe(self) -> str:
        what = "an integer" if self.kind is int else "a number"
        if self.low is None and self.high is None:
            return what
        if self.high is None:
            op = ">=" if self.closed in ("both", "left") else ">"
            return f"{what} {op} {self.low:g}"
        if self.low is None:
            op = "<=" if self.closed in ("both", "right") else "<"
            return f"{what} {op} {self.high:g}"
        left = "[" if self.closed in ("both", "left") else "("
        right = "]" if self.closed in ("both", "right") else ")"
        return f"{what} in {left}{self.low:g}, {self.high:g}{right}"

    def parse(self, text: str) -> Any:
        try:
            return self.kind(text)
        except ValueError:
            raise LabelwiseError(f"must be {self.describe()}, got {text!r}") from None


@dataclass(frozen=True)
class Options(Constraint):
    """One of a fixed set of values."""

    options: tuple[Any, ...]

    def is_satisfied_by(self, value: Any) -> bool:
        return isinstance(value, str | int | float) and value in self.options

    def describe(self) -> str:
        return f"one of {sorted(self.options)}"


@dataclass(frozen=True)
class Shares(Constraint):
    """A sequence of positive shares summing to 1 (``length`` fixed if given)."""

    def is_satisfied_by(self, value: Any) -> bool:
        if isinstance(value, str | bytes) or not isinstance(value, Sequence | np.ndarray):
            return False
        try:
            s = [float(x) for x in value]
        except (TypeError, ValueError):
            return False
        return (
            len(s) >= 1 and all(math.isfinite(x) and x > 0 for x in s) and abs(sum(s) - 1.0) <= 1e-6
        )

    def describe(self) -> str:
        return "positive shares summing to 1"

    def parse(self, text: str) -> Any:
        try:
            return tuple(float(x) for x in text.split(","))
        except ValueError:
            raise LabelwiseError(f"must be comma-separated numbers, got {text!r}") from None

    def format(self, value: Any) -> str:
        return ",".join(f"{float(x):g}" for x in value)


@dataclass(frozen=True)
class SharesOr(Constraint):
    """Shares (:class:`Shares`) or one of some named rules."""

    names: tuple[str, ...]

    def is_satisfied_by(self, value: Any) -> bool:
        if isinstance(value, str):
            return value in self.names
        return Shares().is_satisfied_by(value)

    def describe(self) -> str:
        return f"positive shares summing to 1 or one of {list(self.names)}"

    def parse(self, text: str) -> Any:
        return text if text in self.names else Shares().parse(text)

    def format(self, value: Any) -> str:
        return value if isinstance(value, str) else Shares().format(value)


@dataclass(frozen=True)
class Param:
    """A declared tuning parameter: its constraint, a one-line help and its CLI flag.

    ``flag`` defaults to ``--`` + the name with ``_`` as ``-``.
    """

    constraint: Constraint
    help: str
    flag: str | None = None


def validate_params(params: Mapping[str, Param]) -> Callable[[F], F]:
    """Check the declared keyword arguments of every call; attach ``__labelwise_params__``."""

    def decorate(fn: F) -> F:
        sig = inspect.signature(fn)
        unknown = set(params) - set(sig.parameters)
        if unknown:  # pragma: no cover - a programming error caught at import
            raise TypeError(f"{fn.__name__} has no parameters {sorted(unknown)}")

        @functools.wraps(fn)
        def wrapper(*args: Any, **kwargs: Any) -> Any:
            bound = sig.bind(*args, **kwargs)
            for name, p in params.items():
                if name in bound.arguments:
                    p.constraint.check(bound.arguments[name], name)
            return fn(*args, **kwargs)

        wrapper.__kwdefaults__ = fn.__kwdefaults__  # type: ignore[attr-defined]  # not copied by wraps
        wrapper.__labelwise_params__ = dict(params)  # type: ignore[attr-defined]
        return wrapper  # type: ignore[return-value]

    return decorate


def declared_params(fn: Callable[..., Any]) -> dict[str, Param]:
    """The parameter table a function was decorated with (empty if none)."""
    return dict(getattr(fn, "__labelwise_params__", {}))
