"""Shared pytest setup.

``make test-base`` runs the suite in a venv with only labelwise's base dependencies and sets
``LABELWISE_BASE_ONLY=1``. There, a test that stops because an optional package is missing (a
``MissingDependencyError`` from labelwise, or a ``ModuleNotFoundError`` for a package other than
labelwise) is reported as skipped, not failed; everything else must pass as usual.
"""

from __future__ import annotations

import os
from collections.abc import Iterator

import pytest

from labelwise.exceptions import MissingDependencyError

_BASE_ONLY = os.environ.get("LABELWISE_BASE_ONLY") == "1"


def _optional_missing(exc: BaseException) -> bool:
    if isinstance(exc, MissingDependencyError):
        return True
    return (
        isinstance(exc, ModuleNotFoundError)
        and exc.name is not None
        and exc.name.split(".")[0] != "labelwise"
    )


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo[None]) -> Iterator[None]:
    outcome = yield
    if not _BASE_ONLY or call.excinfo is None:
        return
    exc = call.excinfo.value
    if _optional_missing(exc):
        report = outcome.get_result()
        report.outcome = "skipped"
        report.longrepr = (str(item.path), item.location[1] or 0, f"base only: {exc}")
