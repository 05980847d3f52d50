"""Add labels to an existing selection: the same method continues from its state."""

from __future__ import annotations

from typing import Any

from numpy.typing import ArrayLike

from .._results import Selection
from .._validation import RNGLike
from ..exceptions import LabelwiseError

__all__ = ["extend"]


def extend(
    selection: Selection,
    data: Any,
    additional: int,
    *,
    rng: RNGLike = None,
    labels: ArrayLike | None = None,
) -> Selection:
    """A selection with ``additional`` more rows, continuing ``selection``'s method.

    The first ``selection.budget`` indices are unchanged. ``data`` is what the method was
    run on (SRS: the pile or None; CSS: the confidences; CES: the activations; SDS: the
    models' predictions; DDG and RDG: the probabilities). By default
    the random stream continues from ``selection.rng_state``, so selecting n and extending by
    m is reproducible (and for SRS and for CES with whole groups, equal to selecting n + m at
    once with the same seed); pass ``rng`` to use another stream.

    CSS: the new total is allocated by the same rule with every stratum keeping at least
    what it has; the new rows are simple random draws from each stratum's unselected rows,
    so the stratified estimator stays valid.

    ``labels``: the true classes of ``selection.indices`` (in that order), for methods whose
    next rows learn from them (``cppi``: the new rows are :class:`labelwise.RankingCampaign`'s
    next active round after recording these labels, as a campaign that labels between rounds
    chooses them; the reproducibility above then holds for the same labels). Other methods'
    extensions do not use labels, and giving them is an error.

    SDS and RDG: the candidate set is rebuilt from the data and the stored state (so the data
    must be the same); the new rows are the remaining candidates in random order, then the
    next-highest scores, with a warning, once the candidates run out. Selecting n and
    extending by m equals selecting n + m with the same seed. DDG takes the next rows by
    impurity (``rng`` is not used).
    """
    if not isinstance(selection, Selection):
        raise LabelwiseError(f"selection must be a Selection, got {type(selection).__name__}")
    from .. import registry  # the table imports the samplers

    if selection.method not in registry.names():
        raise LabelwiseError(f"selections made by {selection.method!r} cannot be extended")
    spec = registry.get(selection.method)
    declared = spec.params
    for name, value in selection.params.items():  # a hand-edited file: the select rules
        if name in declared:
            try:
                declared[name].constraint.check(value, name)
            except LabelwiseError as exc:
                raise LabelwiseError(f"selection parameter {exc}; restore the file") from None
    if labels is not None and not spec.learns:
        raise LabelwiseError(
            f"labels: the next rows of {registry.with_article(selection.method)} selection do "
            "not depend on labels: extend it without labels"
        )
    try:
        if labels is not None:
            return spec.extend(selection, data, additional, rng, labels=labels)
        return spec.extend(selection, data, additional, rng)
    except KeyError as exc:  # a selection file without its method's parameters
        raise LabelwiseError(
            f"selection is missing its {selection.method} parameter {exc}: it cannot be "
            "extended (was it written by labelwise?)"
        ) from None
