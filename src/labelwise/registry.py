"""The table of sampling methods: one entry per method drives the whole library.

:func:`labelwise.extend`, :func:`labelwise.estimate`, the CLI's ``select`` options and help,
the demo and the studies all look methods up here, so adding a method is one
:func:`register` call. An entry holds the select and extend functions, what data the method
needs, its estimator (None for ranking methods) and its tuning parameters: their constraints
come from the table the select function was decorated with
(:func:`labelwise._params.validate_params`), their defaults from its signature, so each is
written once.

>>> from labelwise import registry
>>> registry.names(purpose="accuracy")
('srs', 'css', 'ces')
>>> registry.get("ces").defaults()["n_sections"]
20
"""

from __future__ import annotations

import inspect
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from numpy.typing import ArrayLike

from ._params import Param, declared_params
from ._results import Estimate, Selection
from .exceptions import LabelwiseError
from .io import shell_arg

__all__ = [
    "NEEDS",
    "Method",
    "get",
    "methods",
    "names",
    "rank_instead",
    "register",
    "with_article",
]

#: What a method is run on, by the key its data is recorded under in a selection directory.
NEEDS: dict[str | None, str] = {
    None: "population size (or any array with one row per input)",
    "activations": "activations: (N, m) last-hidden-layer outputs",
    "probs": "probabilities/confidences: (N, C) class probabilities or (N,) confidences",
    "predictions": "predictions of several models: (M, N) classes or (M, N, C) probabilities",
}

Estimator = Callable[..., Estimate]


@dataclass(frozen=True)
class Method:
    """One sampling method.

    Attributes
    ----------
    name:
        Short name, as in ``Selection.method`` and ``labelwise select --method``.
    title:
        One line: what it is and where it is from (paper, section).
    purpose:
        ``"accuracy"`` (estimate one model's accuracy or 1-MSE) or ``"ranking"``.
    data:
        The key of the data it runs on (see :data:`NEEDS`): None (SRS: the pile's size),
        ``"activations"``, ``"probs"`` or ``"predictions"``.
    select:
        ``select(data, budget, **params, rng=...) -> Selection``.
    extend:
        ``extend(selection, data, additional, rng) -> Selection`` (and ``labels=`` where
        :attr:`learns`).
    prefixes:
        Whether every prefix of a selection is itself a selection of the method (SRS, CES,
        SDS, DDG, RDG; not CSS, whose allocation depends on the budget).
    data_ndim:
        The array ranks the data may have (empty: any), checked by the CLI before selecting.
    estimator:
        ``estimator(selection, scores, *, confidence, metric) -> Estimate`` (scores aligned
        with ``selection.indices``); None for ranking methods (``labelwise rank`` ranks
        ``"cppi"`` selections with :meth:`labelwise.RankingCampaign.from_selection`, the
        others with :func:`labelwise.rank_models`).
    requires:
        What the select function requires of its data, in words, where it asks more than its
        data key says (DeepGini reads probabilities, never class labels); ``None``: what
        ``NEEDS[data]`` says. :attr:`needs` (shown by ``labelwise select --help`` and in its
        errors) is this text.
    learns:
        Whether its extension learns from the labels of the rows selected so far
        (``extend(selection, data, additional, rng, labels=...)``; ``cppi``: the ranking
        campaign's active rounds). The others' extensions are label-free.
    """

    name: str
    title: str
    purpose: str
    data: str | None
    select: Callable[..., Selection]
    extend: Callable[..., Selection]
    estimator: Estimator | None = None
    data_ndim: tuple[int, ...] = ()
    prefixes: bool = True

    requires: str | None = None
    learns: bool = False

    @property
    def needs(self) -> str:
        """What the method needs, in words: :attr:`requires`, else ``NEEDS[data]``."""
        return self.requires if self.requires is not None else NEEDS[self.data]

    @property
    def params(self) -> dict[str, Param]:
        """The tuning parameters, as declared next to the select function."""
        return declared_params(self.select)

    def defaults(self) -> dict[str, Any]:
        """Every tuning parameter's default, read from the select function's signature."""
        sig = inspect.signature(self.select)
        return {name: sig.parameters[name].default for name in self.params}

    def takes_progress(self) -> bool:
        return "progress" in inspect.signature(self.select).parameters

    def run(self, data: Any, budget: int, *, rng: Any = None, **params: Any) -> Selection:
        """``select`` with only this method's parameters (unknown ones are an error)."""
        extra = set(params) - set(self.params) - {"progress"}
        if extra:
            raise LabelwiseError(
                f"parameters must be among {sorted(self.params)} for {self.name}, "
                f"got {sorted(extra)}"
            )
        if "progress" in params and not self.takes_progress():
            params.pop("progress")
        return self.select(data, budget, rng=rng, **params)

    def estimate(
        self,
        selection: Selection,
        scores: ArrayLike,
        *,
        confidence: float = 0.95,
        metric: str | None = None,
    ) -> Estimate:
        if self.estimator is None:
            raise LabelwiseError(
                f"selection.method must have an accuracy estimator, got {self.name!r} (a "
                "ranking method: use labelwise.rank_models)"
            )
        return self.estimator(selection, scores, confidence=confidence, metric=metric)


_METHODS: dict[str, Method] = {}


def register(method: Method, *, replace: bool = False) -> Method:
    """Add a method to the table (``replace=True`` to overwrite an entry)."""
    if method.purpose not in ("accuracy", "ranking"):
        raise LabelwiseError(f"purpose must be 'accuracy' or 'ranking', got {method.purpose!r}")
    if method.data not in NEEDS:
        raise LabelwiseError(f"data must be one of {list(NEEDS)}, got {method.data!r}")
    if (method.estimator is None) != (method.purpose == "ranking"):
        raise LabelwiseError("estimator must be given exactly for accuracy methods")
    if method.name in _METHODS and not replace:
        raise LabelwiseError(f"name must be new, got {method.name!r} (already registered)")
    _METHODS[method.name] = method
    return method


def get(name: str) -> Method:
    """The method called ``name``."""
    try:
        return _METHODS[name]
    except KeyError:
        raise LabelwiseError(f"method must be one of {list(_METHODS)}, got {name!r}") from None


def with_article(name: str) -> str:
    """``name`` after "a" or "an" as it is read aloud: a name without a vowel is an acronym,
    read letter by letter ("an srs", "an rdg", "a css"); any other name is read as a word ("an
    active", "a stratified", "a ces", "a cppi", a registered "a margin"). Messages printed
    "started a active campaign", "a srs selection"; every registered name was once taken as
    an acronym, so a method registered as "margin" gave "an margin"."""
    spelled = not any(c in "aeiouy" for c in name.lower())
    vowel_sound = name[:1].lower() in ("aefhilmnorsx" if spelled else "aeiou")
    return f"{'an' if vowel_sound else 'a'} {name}"


def rank_instead(method: str, directory: Any, labels: Any) -> str:
    """What a command that estimates says of a ranking method's selection (no estimator):
    the ``labelwise rank`` command that uses its labels."""
    return (
        f"{with_article(method)} selection ranks models and has no accuracy estimate; run "
        f"'labelwise rank {shell_arg(directory)} --labels {shell_arg(labels)}'"
    )


def names(purpose: str | None = None) -> tuple[str, ...]:
    """Registered names in registration order, optionally only one ``purpose``."""
    return tuple(n for n, m in _METHODS.items() if purpose is None or m.purpose == purpose)


def methods(purpose: str | None = None) -> Mapping[str, Method]:
    return {n: _METHODS[n] for n in names(purpose)}


# ------------------------------------------------------------------------- the built-ins


def _register_builtins() -> None:
    from .estimation.estimators import ces_estimate, srs_estimate, stratified_estimate
    from .ranking import campaign as ranking_campaign
    from .sampling import ces, css, gini, sds, srs

    def mean_estimator(fn: Callable[..., Estimate]) -> Estimator:
        def est(
            selection: Selection, scores: ArrayLike, *, confidence: float, metric: str | None
        ) -> Estimate:
            return fn(
                scores,
                population_size=selection.population_size,
                confidence=confidence,
                metric=metric,
            )

        return est

    def css_estimator(
        selection: Selection, scores: ArrayLike, *, confidence: float, metric: str | None
    ) -> Estimate:
        if selection.strata is None or selection.stratum_sizes is None:
            raise LabelwiseError("a CSS selection must carry its strata")
        return stratified_estimate(
            scores, selection.strata, selection.stratum_sizes, confidence=confidence, metric=metric
        )

    probabilities = "predictions of several models: (M, N, C) probabilities"  # DeepGini
    for m in (
        Method(
            "srs",
            "simple random sampling (Li et al. 2019, Sec. 2.3)",
            "accuracy",
            None,
            srs.srs_select,
            srs._srs_extend,
            mean_estimator(srs_estimate),
        ),
        Method(
            "css",
            "confidence-based stratified sampling (Li et al. 2019, Sec. 3.1)",
            "accuracy",
            "probs",
            css.css_select,
            css._css_extend,
            css_estimator,
            prefixes=False,
        ),
        Method(
            "ces",
            "cross-entropy sampling (Li et al. 2019, Sec. 3.2, Algorithm 1)",
            "accuracy",
            "activations",
            ces.ces_select,
            ces._ces_extend,
            mean_estimator(ces_estimate),
            data_ndim=(2, 3, 4, 5),  # a layer's (N, m) or (N, C, H, W) outputs, as CES reads
        ),
        Method(
            "sds",
            "sample discrimination based selection (Meng et al. 2021, Algorithm 1)",
            "ranking",
            "predictions",
            sds.sds_select,
            sds._sds_extend,
            data_ndim=(2, 3),
        ),
        Method(
            "ddg",
            "deterministic DeepGini, highest impurity (Meng et al. 2021, Sec. IV-B)",
            "ranking",
            "predictions",
            gini.ddg_select,
            gini._ddg_extend,
            data_ndim=(3,),
            requires=probabilities,
        ),
        Method(
            "rdg",
            "random DeepGini, draw among the most impure (Meng et al. 2021, Sec. IV-B)",
            "ranking",
            "predictions",
            gini.rdg_select,
            gini._rdg_extend,
            data_ndim=(3,),
            requires=probabilities,
        ),
        Method(
            "cppi",
            "consensus-PPI active ranking, one label-free batch (labelwise.RankingCampaign)",
            "ranking",
            "predictions",
            ranking_campaign.cppi_select,
            ranking_campaign._cppi_extend,
            data_ndim=(2, 3),
            learns=True,
        ),
    ):
        register(m)


_register_builtins()
