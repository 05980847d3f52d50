"""What the labels say: estimators with intervals, and per-sample scores."""

from __future__ import annotations

from .estimators import ces_estimate, estimate, srs_estimate, stratified_estimate, wilson_interval
from .scores import correctness, regression_scores

__all__ = [
    "ces_estimate",
    "correctness",
    "estimate",
    "regression_scores",
    "srs_estimate",
    "stratified_estimate",
    "wilson_interval",
]
