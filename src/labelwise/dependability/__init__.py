"""Dependability metrics of a network (Cheng et al., RICC, Sec. II), NumPy core.

- :mod:`~labelwise.dependability.scenario` -- scenario k-projection coverage and the next
  scenarios to collect (II-A).
- :mod:`~labelwise.dependability.neuron` -- neuron k-activation coverage, streaming and
  mergeable (II-B).
- :mod:`~labelwise.dependability.patterns` -- the activation-pattern metric (II-C).
- :mod:`~labelwise.dependability.degradation` -- accuracy per scenario and discounted by
  scenario coverage (II-E).
- :mod:`~labelwise.dependability.confusion` -- weighted confusion with a severity matrix
  (II-H; the paper's Table I ships as ``"paper-table1"``).

Not yet here: adversarial confidence loss (II-D), interpretation precision and occlusion
sensitivity (II-F, II-G) and the ``labelwise dependability`` command.
"""

from __future__ import annotations

from .confusion import (
    SEVERITY_NAMES,
    SeverityMatrix,
    WeightedConfusion,
    load_severity,
    weighted_confusion,
)
from .degradation import ScenarioPerformance, scenario_performance
from .neuron import KActivationCoverage, NeuronKCoverage, UncoveredCells, k_activation_coverage
from .patterns import ActivationPattern, GroupPattern, activation_pattern, plot_activation_pattern
from .scenario import (
    ProjectionTable,
    ScenarioCoverage,
    ScenarioProposal,
    ScenarioProposals,
    next_scenarios,
    scenario_coverage,
)

__all__ = [
    "SEVERITY_NAMES",
    "ActivationPattern",
    "GroupPattern",
    "KActivationCoverage",
    "NeuronKCoverage",
    "ProjectionTable",
    "ScenarioCoverage",
    "ScenarioPerformance",
    "ScenarioProposal",
    "ScenarioProposals",
    "SeverityMatrix",
    "UncoveredCells",
    "WeightedConfusion",
    "activation_pattern",
    "k_activation_coverage",
    "load_severity",
    "next_scenarios",
    "plot_activation_pattern",
    "scenario_coverage",
    "scenario_performance",
    "weighted_confusion",
]
