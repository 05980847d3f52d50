"""Labelling campaigns: which rows to label next, and an honest estimate from the labels so far.

:class:`Campaign` runs a probability design batch by batch (stratified with Neyman allocation,
model-assisted, active, or simple random) and estimates the model's accuracy (or 1-MSE) with a
design-based interval, or an anytime-valid confidence sequence. NumPy/SciPy only.
"""

from __future__ import annotations

from .campaign import METHODS, Campaign

__all__ = ["METHODS", "Campaign"]
