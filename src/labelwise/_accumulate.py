"""The accumulator protocol: mergeable state for metrics computed over data in chunks.

An accumulator (torchmetrics' pattern) has

- ``update(batch)``: add a batch of rows; returns the accumulator;
- ``merge(other)``: fold in an accumulator of the same kind and setup built on other rows
  (another chunk, another worker); returns the accumulator;
- ``reset()``: forget every row, keep the setup; returns the accumulator;
- ``result()``: the metric so far, a frozen :class:`labelwise._contract.Result`.

Exactness: for any split of the rows into chunks, updating one accumulator per chunk and
merging them gives the same ``result()`` as one ``update`` with all the rows (the coverage
accumulators keep boolean or bit tables merged by OR; the activation profile's min and max
merge exactly, its mean and standard deviation by Chan et al.'s pairwise formulas, exact up to
rounding). ``tests/test_accumulators.py`` checks this for every accumulator below.

Accumulators in labelwise:

- :class:`labelwise.dependability.NeuronKCoverage`: neuron k-activation coverage, the one
  neuron-coverage core (bit-packed, numba);
- :class:`labelwise.quality.NeuronCoverage` (NC, counted by ``NeuronKCoverage`` with k = 1),
  :class:`~labelwise.quality.KMultisectionCoverage`,
  :class:`~labelwise.quality.NeuronBoundaryCoverage`,
  :class:`~labelwise.quality.StrongNeuronActivationCoverage`,
  :class:`~labelwise.quality.TopKNeuronCoverage`;
- :class:`labelwise.quality.ActivationProfile`: the per-neuron range (min, max) and moments
  over the training activations that KMNC, NBC and SNAC need.
"""

from __future__ import annotations

from typing import Any, Protocol, TypeVar, runtime_checkable

from ._contract import Result

__all__ = ["Accumulator"]

A = TypeVar("A", bound="Accumulator")


@runtime_checkable
class Accumulator(Protocol):
    """update / merge / reset / result (see the module docstring)."""

    def update(self: A, batch: Any) -> A:
        """Add a batch of rows."""
        ...

    def merge(self: A, other: Any) -> A:
        """Fold in an accumulator of the same kind and setup."""
        ...

    def reset(self: A) -> A:
        """Forget every row (the setup stays)."""
        ...

    def result(self) -> Result:
        """The metric over every row seen so far."""
        ...
