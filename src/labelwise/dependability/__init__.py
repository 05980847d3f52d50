"""Dependability metrics of a network (Cheng et al., RICC, Sec. II), NumPy core.

- :mod:`~labelwise.dependability.scenario` -- scenario k-projection coverage and the next
  scenarios to collect (II-A).
- :mod:`~labelwise.dependability.neuron` -- neuron k-activation coverage, streaming and
  mergeable (II-B).
- :mod:`~labelwise.dependability.patterns` -- the activation-pattern metric (II-C).
- :mod:`~labelwise.dependability.robustness` -- confidence lost under attacks (FGSM, PGD,
  DeepFool via torchattacks) and perturbations (noise, brightness, rotation, patch) (II-D;
  needs torch).
- :mod:`~labelwise.dependability.degradation` -- accuracy per scenario and discounted by
  scenario coverage (II-E).
- :mod:`~labelwise.dependability.interpretation` -- occlusion-based interpretation precision
  and occlusion-sensitivity covering against ground-truth masks (II-F, II-G; heatmaps with
  captum's ``Occlusion``).
- :mod:`~labelwise.dependability.confusion` -- weighted confusion with a severity matrix
  (II-H; the paper's Table I ships as ``"paper-table1"``).

The ``labelwise dependability`` command runs them all on a model and a labelled input set.
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
from .interpretation import (
    InterpretationResult,
    InterpretationSweep,
    OcclusionHeatmaps,
    interpretation_metrics,
    occluding_positions,
    occlusion_grid_shape,
    occlusion_heatmaps,
    plot_sweep,
    precision_and_sensitivity,
    sweep,
)
from .neuron import KActivationCoverage, NeuronKCoverage, UncoveredCells, k_activation_coverage
from .patterns import ActivationPattern, GroupPattern, activation_pattern, plot_activation_pattern
from .robustness import (
    DEFAULT_TRANSFORMERS,
    FGSM,
    PGD,
    Brightness,
    ConfidenceLoss,
    DeepFool,
    GaussianNoise,
    Patch,
    Rotation,
    confidence_loss,
    plot_confidence_loss,
)
from .scenario import (
    ProjectionTable,
    ScenarioCoverage,
    ScenarioProposal,
    ScenarioProposals,
    next_scenarios,
    scenario_coverage,
)

__all__ = [
    "DEFAULT_TRANSFORMERS",
    "FGSM",
    "PGD",
    "SEVERITY_NAMES",
    "ActivationPattern",
    "Brightness",
    "ConfidenceLoss",
    "DeepFool",
    "GaussianNoise",
    "GroupPattern",
    "InterpretationResult",
    "InterpretationSweep",
    "KActivationCoverage",
    "NeuronKCoverage",
    "OcclusionHeatmaps",
    "Patch",
    "ProjectionTable",
    "Rotation",
    "ScenarioCoverage",
    "ScenarioPerformance",
    "ScenarioProposal",
    "ScenarioProposals",
    "SeverityMatrix",
    "UncoveredCells",
    "WeightedConfusion",
    "activation_pattern",
    "confidence_loss",
    "interpretation_metrics",
    "k_activation_coverage",
    "load_severity",
    "next_scenarios",
    "occluding_positions",
    "occlusion_grid_shape",
    "occlusion_heatmaps",
    "plot_activation_pattern",
    "plot_confidence_loss",
    "plot_sweep",
    "precision_and_sensitivity",
    "scenario_coverage",
    "scenario_performance",
    "sweep",
    "weighted_confusion",
]
