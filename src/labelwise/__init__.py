"""labelwise: test deep neural networks in the field with as few human labels as possible."""

from __future__ import annotations

from . import _startup

if _startup.run_as_entry():  # python -m labelwise[.cli]: a Ctrl-C while it starts ends quietly
    _startup.install()

from . import registry
from ._chunks import ChunkedArray, block_bytes, open_array
from ._results import Estimate, Ranking, Selection
from .campaign import Campaign
from .estimation import (
    ces_estimate,
    cliffs_delta,
    correctness,
    estimate,
    jaccard_top_k,
    magnitude,
    rank_models,
    rank_sum_test,
    regression_scores,
    spearman,
    srs_estimate,
    stratified_estimate,
    wilson_interval,
    wtl,
)
from .exceptions import DegenerateDataWarning, LabelwiseError, MissingDependencyError
from .piles import ImageSpec, Pile, open_pile
from .ranking import RankingCampaign, cppi_select
from .sampling import (
    SDSDiscrimination,
    ces_objective,
    ces_select,
    confidence_strata,
    css_select,
    ddg_select,
    deepgini_impurity,
    extend,
    rdg_select,
    sds_discrimination,
    sds_select,
    srs_select,
)

__version__ = "0.1.0"

__all__ = [
    "Campaign",
    "ChunkedArray",
    "DegenerateDataWarning",
    "Estimate",
    "ImageSpec",
    "LabelwiseError",
    "MissingDependencyError",
    "Pile",
    "Ranking",
    "RankingCampaign",
    "SDSDiscrimination",
    "Selection",
    "__version__",
    "block_bytes",
    "ces_estimate",
    "ces_objective",
    "ces_select",
    "cliffs_delta",
    "confidence_strata",
    "correctness",
    "cppi_select",
    "css_select",
    "ddg_select",
    "deepgini_impurity",
    "estimate",
    "extend",
    "jaccard_top_k",
    "magnitude",
    "open_array",
    "open_pile",
    "rank_models",
    "rank_sum_test",
    "rdg_select",
    "registry",
    "regression_scores",
    "sds_discrimination",
    "sds_select",
    "spearman",
    "srs_estimate",
    "srs_select",
    "stratified_estimate",
    "wilson_interval",
    "wtl",
]
