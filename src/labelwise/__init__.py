"""labelwise: test deep neural networks in the field with as few human labels as possible."""

from __future__ import annotations

from ._results import Estimate, Selection
from .estimation import (
    ces_estimate,
    correctness,
    estimate,
    regression_scores,
    srs_estimate,
    stratified_estimate,
    wilson_interval,
)
from .exceptions import DegenerateDataWarning, LabelwiseError, MissingDependencyError
from .sampling import (
    ces_objective,
    ces_select,
    confidence_strata,
    css_select,
    extend,
    srs_select,
)

__version__ = "0.1.0"

__all__ = [
    "DegenerateDataWarning",
    "Estimate",
    "LabelwiseError",
    "MissingDependencyError",
    "Selection",
    "__version__",
    "ces_estimate",
    "ces_objective",
    "ces_select",
    "confidence_strata",
    "correctness",
    "css_select",
    "estimate",
    "extend",
    "regression_scores",
    "srs_estimate",
    "srs_select",
    "stratified_estimate",
    "wilson_interval",
]
