"""Who gets labelled: samplers that all return a :class:`labelwise.Selection`."""

from __future__ import annotations

from .ces import CES_OBJECTIVES, ces_objective, ces_select
from .css import confidence_strata, css_select
from .extend import extend
from .srs import srs_select

__all__ = [
    "CES_OBJECTIVES",
    "ces_objective",
    "ces_select",
    "confidence_strata",
    "css_select",
    "extend",
    "srs_select",
]
