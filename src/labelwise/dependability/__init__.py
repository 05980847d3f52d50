"""Dependability metrics of a network (Cheng et al., RICC, Sec. II), NumPy core.

- :mod:`~labelwise.dependability.scenario` -- scenario k-projection coverage and the next
  scenarios to collect (II-A).
- :mod:`~labelwise.dependability.neuron` -- neuron k-activation coverage, streaming and
  mergeable (II-B).
- :mod:`~labelwise.dependability.patterns` -- the activation-pattern metric (II-C).
- :mod:`~labelwise.dependability.robustness` -- confidence lost under attacks (FGSM, PGD,
  DeepFool via torchattacks) and perturbations (noise, brightness, rotation, patch) (II-D;
  the runner and transformers are in :mod:`labelwise.adapters.attacks` and need torch).
- :mod:`~labelwise.dependability.degradation` -- accuracy per scenario and discounted by
  scenario coverage (II-E).
- :mod:`~labelwise.dependability.interpretation` -- occlusion-based interpretation precision
  and occlusion-sensitivity covering against ground-truth masks (II-F, II-G; heatmaps with
  captum's ``Occlusion`` in :mod:`labelwise.adapters.occlusion`).
- :mod:`~labelwise.dependability.confusion` -- weighted confusion with a severity matrix
  (II-H; the paper's Table I ships as ``"paper-table1"``).

The ``labelwise dependability`` command runs them all on a model and a labelled input set.

Importing this package never imports torch: the names that run a model (``confidence_loss``, the
transformers, ``occlusion_heatmaps``) are re-exported lazily from :mod:`labelwise.adapters`.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

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
    plot_sweep,
    precision_and_sensitivity,
    sweep,
)
from .neuron import KActivationCoverage, NeuronKCoverage, UncoveredCells, k_activation_coverage
from .patterns import ActivationPattern, GroupPattern, activation_pattern, plot_activation_pattern
from .robustness import _ADAPTER_NAMES, ConfidenceLoss, plot_confidence_loss
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

if TYPE_CHECKING:
    from ..adapters.attacks import (
        DEFAULT_TRANSFORMERS,
        FGSM,
        PGD,
        Brightness,
        DeepFool,
        GaussianNoise,
        Patch,
        Rotation,
        confidence_loss,
    )
    from ..adapters.occlusion import occlusion_heatmaps

# name -> adapter module that defines it (runs a model; imported on first use)
_LAZY = {**dict.fromkeys(_ADAPTER_NAMES, "attacks"), "occlusion_heatmaps": "occlusion"}


def __getattr__(name: str) -> Any:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    import importlib

    return getattr(importlib.import_module(f"labelwise.adapters.{module}"), name)


def __dir__() -> list[str]:
    return sorted([*globals(), *_LAZY])
