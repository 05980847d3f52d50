"""Errors and warnings raised by labelwise."""

from __future__ import annotations

__all__ = ["DegenerateDataWarning", "LabelwiseError", "MissingDependencyError"]


class LabelwiseError(ValueError):
    """Invalid input or state. A ``ValueError`` so callers can catch either."""


class MissingDependencyError(ImportError):
    """An optional framework is needed; the message names the ``pip install`` extra."""


class DegenerateDataWarning(UserWarning):
    """Legal but degenerate data (e.g. all labelled inputs correct, a stratum with one label).

    The result is still returned, computed conservatively; the warning says what was done.
    """


def user_stacklevel() -> int:
    """The ``stacklevel`` for :func:`warnings.warn` that names the caller's line: the first
    frame outside the labelwise package (as pandas' ``find_stack_level``), however many
    labelwise calls lie between (``estimate`` -> the registry -> ``srs_estimate`` -> ...)."""
    import inspect
    import os

    package = os.path.dirname(__file__)
    frame = inspect.currentframe()
    level = 0
    while frame is not None and os.path.dirname(frame.f_code.co_filename).startswith(package):
        frame = frame.f_back
        level += 1
    return max(level, 1)
