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
