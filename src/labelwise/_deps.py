"""Optional dependencies: import one, or say exactly how to install it.

:func:`require` is the one place that turns a failed import of an optional package into a
:class:`~labelwise.exceptions.MissingDependencyError`. The install hint is read from the extras
table of labelwise's own metadata (``[project.optional-dependencies]`` in pyproject.toml, at run
time the ``Requires-Dist: ...; extra == "name"`` lines), so a hint never names an extra that does
not exist: ``pip install 'labelwise[torch]'`` when an extra lists the package, else
``pip install <package>``. torchattacks is the exception: its declared torchvision dependency
needs CUDA, so it is installed with ``pip install --no-deps torchattacks``.
"""

from __future__ import annotations

import functools
import importlib
import importlib.metadata
import re
from types import ModuleType

from .exceptions import MissingDependencyError

__all__ = ["extras_table", "install_hint", "require"]

# import name -> distribution name, where they differ
_DISTRIBUTIONS = {"sklearn": "scikit-learn", "yaml": "pyyaml", "PIL": "pillow"}
# packages whose install command is not an extra
_SPECIAL_HINTS = {"torchattacks": "pip install --no-deps torchattacks"}
_NOT_FOR_USERS = frozenset({"dev"})
_REQUIREMENT = re.compile(r"^\s*([A-Za-z0-9][A-Za-z0-9._-]*)")
_EXTRA = re.compile(r"""extra\s*==\s*["']([^"']+)["']""")


def _normalise(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


@functools.cache
def extras_table() -> dict[str, frozenset[str]]:
    """``{extra: {distribution, ...}}`` from the installed labelwise metadata (names
    normalised, e.g. ``scikit-learn``); empty when labelwise's metadata is not available."""
    try:
        requirements = importlib.metadata.requires("labelwise") or []
    except importlib.metadata.PackageNotFoundError:
        return {}
    table: dict[str, set[str]] = {}
    for line in requirements:
        name, extra = _REQUIREMENT.match(line), _EXTRA.search(line)
        if name is not None and extra is not None:
            table.setdefault(extra.group(1), set()).add(_normalise(name.group(1)))
    return {extra: frozenset(names) for extra, names in table.items()}


def install_hint(module: str, *, extra: str | None = None) -> str:
    """The command that installs the package providing ``module`` (e.g. ``"sklearn"``).

    ``extra`` is a preferred extra, used when the extras table lists the package there;
    otherwise the extra named like the package, else the smallest user-facing extra that lists
    it, else a plain ``pip install <package>``.
    """
    top = module.split(".")[0]
    if top in _SPECIAL_HINTS:
        return _SPECIAL_HINTS[top]
    dist = _normalise(_DISTRIBUTIONS.get(top, top))
    table = extras_table()
    holding = {name: deps for name, deps in table.items() if dist in deps}
    chosen: str | None = None
    if extra is not None and extra in holding:
        chosen = extra
    elif dist in holding:
        chosen = dist
    else:
        users = [name for name in holding if name not in _NOT_FOR_USERS]
        if users:
            chosen = min(users, key=lambda name: (len(holding[name]), name))
    if chosen is None:
        return f"pip install {dist}"
    return f"pip install 'labelwise[{chosen}]'"


def require(module: str, feature: str, *, extra: str | None = None) -> ModuleType:
    """Import ``module`` and return it, or raise :class:`MissingDependencyError`.

    The message says what needs it (``feature``, e.g. ``"the PyTorch adapter"``), why the
    import failed and the install command (:func:`install_hint`).
    """
    try:
        return importlib.import_module(module)
    except ImportError as exc:
        raise MissingDependencyError(
            f"{feature} needs {module.split('.')[0]}, which could not be imported ({exc}); "
            f"install it with: {install_hint(module, extra=extra)}"
        ) from exc
