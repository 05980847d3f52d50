"""PEP 562 lazy attributes for the experiment modules (NumPy level, no torch)."""

from __future__ import annotations

from collections.abc import Callable, Mapping, MutableMapping
from typing import Any


def lazy_attributes(
    module_globals: MutableMapping[str, Any], builders: Mapping[str, Callable[[], Any]]
) -> tuple[Callable[[str], Any], Callable[[], list[str]]]:
    """A module's ``(__getattr__, __dir__)`` that build ``builders[name]()`` on first access.

    PEP 562: a model class is created by its builder (in :mod:`labelwise.adapters.training`,
    which imports torch) only when the attribute is read, so that importing the module does
    not import torch. The names are kept out of ``__all__`` by the caller: a star import must
    not need torch.
    """
    module_name = module_globals["__name__"]

    def __getattr__(name: str) -> Any:
        builder = builders.get(name)
        if builder is None:
            raise AttributeError(f"module {module_name!r} has no attribute {name!r}")
        return builder()

    def __dir__() -> list[str]:
        return sorted([*module_globals, *builders])

    return __getattr__, __dir__
