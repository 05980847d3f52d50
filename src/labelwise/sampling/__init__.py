"""Who gets labelled: samplers that all return a :class:`labelwise.Selection`.

SRS, CSS, DDG/RDG and SDS read their input (a NumPy array, a memory-mapped ``.npy``, a zarr
array, a :class:`labelwise._chunks.ChunkedArray` directory of ``.npy`` chunks or a
``dask.array``) in row blocks through :mod:`labelwise._chunks`: per-row values (confidence,
impurity, vote, discrimination) are kept, never the whole (N, C) input, and a dask array's
blocks run as Dask tasks. The selection is the same as for the array in memory.
"""

from __future__ import annotations

from .ces import CES_OBJECTIVES, ces_objective, ces_select
from .css import confidence_strata, css_select
from .extend import extend
from .gini import GINI_COMBINE, ddg_select, deepgini_impurity, rdg_select
from .sds import SDSDiscrimination, sds_discrimination, sds_select
from .srs import srs_select

__all__ = [
    "CES_OBJECTIVES",
    "GINI_COMBINE",
    "SDSDiscrimination",
    "ces_objective",
    "ces_select",
    "confidence_strata",
    "css_select",
    "ddg_select",
    "deepgini_impurity",
    "extend",
    "rdg_select",
    "sds_discrimination",
    "sds_select",
    "srs_select",
]
