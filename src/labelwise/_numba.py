"""Numba threading shared by the compiled kernels."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

import numba as nb


@contextmanager
def threads_for(work: int, threshold: int, *, tasks_per_thread: int) -> Iterator[int]:
    """Run a parallel kernel on numba's threads only when ``work >= threshold``.

    Small inputs run on one thread (``numba.set_num_threads`` is thread-local and restored
    afterwards): thread start-up costs more than the work there, and stalls when the
    machine is busy. Yields how many tasks to split the work into.
    """
    if work >= threshold:
        yield tasks_per_thread * nb.get_num_threads()
        return
    before = nb.get_num_threads()
    nb.set_num_threads(1)
    try:
        yield 1
    finally:
        nb.set_num_threads(before)
