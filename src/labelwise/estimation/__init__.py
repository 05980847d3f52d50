"""What the labels say: estimators with intervals, per-sample scores, and model rankings."""

from __future__ import annotations

from .comparison import (
    CLIFF_THRESHOLDS,
    cliffs_delta,
    jaccard_top_k,
    magnitude,
    rank_sum_test,
    spearman,
    wtl,
)
from .estimators import ces_estimate, estimate, srs_estimate, stratified_estimate, wilson_interval
from .ranking import rank_models
from .scores import correctness, regression_scores

__all__ = [
    "CLIFF_THRESHOLDS",
    "ces_estimate",
    "cliffs_delta",
    "correctness",
    "estimate",
    "jaccard_top_k",
    "magnitude",
    "rank_models",
    "rank_sum_test",
    "regression_scores",
    "spearman",
    "srs_estimate",
    "stratified_estimate",
    "wilson_interval",
    "wtl",
]
