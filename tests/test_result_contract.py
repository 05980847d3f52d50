"""One contract for every result class (subclasses of labelwise._contract.Result).

Each class is built through the public API on small data, then checked: arrays read-only
copies, ``to_dict`` strict JSON (also with NaN and infinities injected into every float field
and float array), ``value`` a float or None with a reason, ``higher_is_better`` set sensibly.
A new result class without an example here fails ``test_every_result_class_has_an_example``.
"""

from __future__ import annotations

import dataclasses
import importlib
import json
import math
import pkgutil
import warnings
from collections.abc import Callable
from typing import Any

import numpy as np
import pytest

import labelwise
from labelwise import Estimate, Ranking, Selection, rank_models, srs_estimate, srs_select
from labelwise._contract import Result
from labelwise.dependability import (
    k_activation_coverage,
    next_scenarios,
    scenario_coverage,
)
from labelwise.dependability.confusion import weighted_confusion
from labelwise.dependability.degradation import scenario_performance
from labelwise.dependability.interpretation import (
    OcclusionHeatmaps,
    precision_and_sensitivity,
    sweep,
)
from labelwise.dependability.neuron import NeuronKCoverage
from labelwise.dependability.patterns import activation_pattern
from labelwise.dependability.robustness import ConfidenceLoss
from labelwise.exceptions import DegenerateDataWarning, LabelwiseError
from labelwise.quality import (
    ActivationProfile,
    boundary_conditioning,
    centroid_positioning,
    covariate_shift,
    equivalence_partitioning,
    kmnc,
    mmd_shift,
    mmd_test,
    pairwise_boundary_conditioning,
)
from labelwise.quality.generation import GenerationTable, generate, linear_head
from labelwise.quality.surprise import surprise_coverage
from labelwise.sampling import sds_discrimination


def _all_result_classes() -> set[type[Result]]:
    for mod in pkgutil.walk_packages(labelwise.__path__, "labelwise."):
        try:
            importlib.import_module(mod.name)
        except ImportError:  # optional dependency missing
            continue
    out: set[type[Result]] = set()
    todo = list(Result.__subclasses__())
    while todo:
        cls = todo.pop()
        out.add(cls)
        todo.extend(cls.__subclasses__())
    return out


def _rng() -> np.random.Generator:
    return np.random.default_rng(0)


def _features() -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    rng = _rng()
    labels = np.repeat(np.arange(3), 20)
    feats = rng.normal(size=(60, 2)) + np.array([[0, 0], [4, 0], [0, 4]])[labels]
    probs = np.exp(-((feats[:, None, :] - np.array([[0, 0], [4, 0], [0, 4]])) ** 2).sum(axis=2))
    probs /= probs.sum(axis=1, keepdims=True)
    return feats, labels, probs


def _scenarios() -> dict[str, list[str]]:
    return {
        "weather": ["sunny", "rainy", "sunny", "foggy"],
        "road": ["stone", "tarmac", "tarmac", "stone"],
        "time": ["day", "night", "day", "day"],
    }


def _generated() -> Any:
    feats, labels, _ = _features()
    centroids = np.stack([feats[labels == c].mean(axis=0) for c in range(3)])
    head = linear_head(centroids.T * 2.0, -np.square(centroids).sum(axis=1))
    return generate(feats, labels, centroids, head, n=12, centroid_share=0.5, lo=0.3, hi=0.7, rng=0)


def _confidence_loss() -> ConfidenceLoss:
    # what labelwise.adapters.attacks.confidence_loss returns, without running a model
    p_before = np.array([0.9, 0.8, 0.6, 0.5])
    p_after = np.array([[0.7, 0.2], [0.85, 0.5], [0.6, 0.7], [0.4, 0.45]])
    losses = np.clip(p_before[:, None] - p_after, 0.0, 1.0)
    loss = losses.max(axis=1)
    return ConfidenceLoss(
        transformers=("noise", "FGSM(eps=0.1)"),
        targets=np.array([0, 1, 1, 2]),
        p_before=p_before,
        p_after=p_after,
        loss_by_transformer=losses,
        loss=loss,
        worst=np.where(loss > 0, losses.argmax(axis=1), -1),
        labelled=True,
        top_fraction=0.5,
    )


def _positions() -> tuple[np.ndarray, np.ndarray]:
    hot = np.array([[[True, False], [True, False]], [[False, False], [True, True]]])
    occluding = np.array([[[True, True], [False, False]], [[False, True], [False, True]]])
    return hot, occluding


def _heatmaps() -> np.ndarray:
    return np.linspace(0.0, 1.0, 2 * 3 * 3).reshape(2, 3, 3)


def _masks() -> np.ndarray:
    masks = np.zeros((2, 8, 8), dtype=bool)
    masks[:, 2:6, 2:6] = True
    return masks


EXAMPLES: dict[str, Callable[[], Result]] = {
    "Selection": lambda: srs_select(50, 10, rng=0),
    "Estimate": lambda: srs_estimate(np.array([1.0, 0.0, 1.0, 1.0])),
    "Ranking": lambda: rank_models(
        _rng().integers(0, 3, size=(3, 30)), _rng().integers(0, 3, size=30), n_bootstrap=50, rng=0
    ),
    "KActivationCoverage": lambda: k_activation_coverage(_rng().normal(size=(20, 5)), k=2),
    "UncoveredCells": lambda: (
        NeuronKCoverage(5, k=2).update(_rng().normal(size=(3, 5))).uncovered()
    ),
    "AdequacyCoverage": lambda: kmnc(_rng().normal(size=(30, 4)), _rng().normal(size=(9, 4)), k=5),
    "ActivationStatistics": lambda: ActivationProfile().update(_rng().normal(size=(7, 4))).result(),
    "EquivalencePartitioning": lambda: equivalence_partitioning(_features()[1], 3),
    "CentroidPositioning": lambda: centroid_positioning(
        _features()[0], _features()[1], _features()[0], _features()[1]
    ),
    "BoundaryConditioning": lambda: boundary_conditioning(_features()[2], _features()[1]),
    "PairwiseBoundaryConditioning": lambda: pairwise_boundary_conditioning(
        _features()[2], _features()[1]
    ),
    "SurpriseCoverage": lambda: surprise_coverage(
        np.array([0.1, 0.5, 2.0]), upper=1.0, n_buckets=4
    ),
    "ActivationPattern": lambda: activation_pattern(
        _rng().normal(size=(30, 6)), _rng().integers(0, 2, size=30), gamma=3
    ),
    "GroupPattern": lambda: activation_pattern(_rng().normal(size=(30, 6)), gamma=3).groups[0],
    "WeightedConfusion": lambda: weighted_confusion(
        [0, 1, 2, 2, 1], [0, 2, 2, 1, 1], [[0, 1, 2], [1, 0, 1], [3, 1, 0]]
    ),
    "ScenarioPerformance": lambda: scenario_performance(
        [0, 1, 1, 0, 1, 1], [0, 1, 0, 0, 1, 0], ["a", "a", "b", "b", "c", "c"], coverage=0.5
    ),
    "ScenarioCoverage": lambda: scenario_coverage(_scenarios(), k=2),
    "ProjectionTable": lambda: scenario_coverage(_scenarios(), k=2).tables[0],
    "ScenarioProposals": lambda: next_scenarios(_scenarios(), k=2, n=2),
    "ScenarioProposal": lambda: next_scenarios(_scenarios(), k=2, n=2)[0],
    "GeneratedSet": _generated,
    "GenerationTable": lambda: GenerationTable(
        sizes=(10, 20),
        splits=((50, 50),),
        accuracy=np.array([[90.0], [95.0]]),
        std=np.zeros((2, 1)),
        n_unreached=np.zeros((2, 1), dtype=np.int64),
        test_accuracy=93.0,
        repeats=1,
        lo=0.3,
        hi=0.7,
    ),
    "CovariateShift": lambda: covariate_shift(
        _features()[0], _features()[1], _features()[0] + 0.5, _features()[1], n_samples=200, rng=0
    ),
    "MMDTest": lambda: mmd_test(
        _rng().normal(size=(20, 2)), _rng().normal(size=(15, 2)) + 1, n_permutations=20, rng=0
    ),
    "MMDShift": lambda: mmd_shift(
        _features()[0],
        _features()[1],
        _features()[0] + 0.5,
        _features()[1],
        n_permutations=20,
        rng=0,
    ),
    "SDSDiscrimination": lambda: sds_discrimination(_rng().integers(0, 3, size=(4, 20))),
    "ConfidenceLoss": _confidence_loss,
    "InterpretationResult": lambda: precision_and_sensitivity(*_positions()),
    "InterpretationSweep": lambda: sweep(_heatmaps(), _masks(), [0.2, 0.5, 0.8]),
    "OcclusionHeatmaps": lambda: OcclusionHeatmaps(
        heatmaps=_heatmaps(),
        base_scores=np.array([0.9, 0.8]),
        attributions=np.zeros((2, 8, 8), dtype=np.float32),
        targets=np.array([1, 0]),
        window=(4, 4),
        stride=(2, 2),
        baseline=0.0,
        image_shape=(8, 8),
    ),
}


def _build(name: str) -> Result:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DegenerateDataWarning)
        return EXAMPLES[name]()


def _strict(d: Any) -> str:
    return json.dumps(d, allow_nan=False)


def test_every_result_class_has_an_example() -> None:
    names = {cls.__name__ for cls in _all_result_classes()}
    assert {"Selection", "Estimate", "AdequacyCoverage", "KActivationCoverage"} <= names
    assert names - set(EXAMPLES) == set()


@pytest.mark.parametrize("name", sorted(EXAMPLES))
def test_example_has_its_class(name: str) -> None:
    r = _build(name)
    assert type(r).__name__ == name
    assert isinstance(r, Result)
    assert dataclasses.is_dataclass(r)
    with pytest.raises(dataclasses.FrozenInstanceError):
        r.__setattr__(dataclasses.fields(r)[0].name, None)  # type: ignore[arg-type]


@pytest.mark.parametrize("name", sorted(EXAMPLES))
def test_arrays_are_read_only_copies(name: str) -> None:
    r = _build(name)
    for f in dataclasses.fields(r):  # type: ignore[arg-type]
        v = getattr(r, f.name)
        if isinstance(v, np.ndarray):
            assert not v.flags.writeable, f"{name}.{f.name} is writeable"
            if v.size:
                with pytest.raises(ValueError, match="read-only"):
                    v.flat[0] = v.flat[0]


def test_arrays_are_copied_from_the_caller() -> None:
    given = np.array([3, 1, 2])
    sel = Selection(given, "srs", 10)
    given[0] = 9
    assert sel.indices.tolist() == [3, 1, 2]
    assert not np.shares_memory(given, sel.indices)


def test_list_for_an_array_field_becomes_a_read_only_array() -> None:
    cls = dataclasses.replace(_build("EquivalencePartitioning"), scores=[1.0, 0.5, 1.5])
    assert isinstance(cls.scores, np.ndarray)
    assert not cls.scores.flags.writeable


@pytest.mark.parametrize("name", sorted(EXAMPLES))
def test_to_dict_is_strict_json(name: str) -> None:
    r = _build(name)
    d = r.to_dict()
    assert isinstance(d, dict)
    assert json.loads(_strict(d)) == d  # already plain JSON values, nothing to convert


def _float_fields(r: Result) -> list[str]:
    return [
        f.name
        for f in dataclasses.fields(r)  # type: ignore[arg-type]
        if isinstance(getattr(r, f.name), float)
        or (isinstance(getattr(r, f.name), np.ndarray) and getattr(r, f.name).dtype.kind == "f")
    ]


@pytest.mark.parametrize("name", sorted(EXAMPLES))
@pytest.mark.parametrize("bad", [math.nan, math.inf, -math.inf])
def test_to_dict_is_strict_json_with_non_finite_values(name: str, bad: float) -> None:
    r = _build(name)
    names = _float_fields(r)
    for field_name in names:
        old = getattr(r, field_name)
        if isinstance(old, np.ndarray):
            if not old.size:
                continue
            new: Any = old.copy()
            new.flat[0] = bad
        else:
            new = bad
        try:
            changed = dataclasses.replace(r, **{field_name: new})
        except LabelwiseError:  # a result may refuse the value (e.g. a share of NaN) instead
            continue
        s = _strict(changed.to_dict())
        assert "NaN" not in s and "Infinity" not in s


def test_non_finite_floats_become_null_under_their_key() -> None:
    e = dataclasses.replace(srs_estimate(np.array([1.0, 0.0])), ci_low=-math.inf)
    assert e.to_dict()["ci_low"] is None
    ep = _build("EquivalencePartitioning")
    scores = np.array(ep.scores, copy=True)
    scores[1] = math.nan
    assert dataclasses.replace(ep, scores=scores).to_dict()["scores"][1] is None


@pytest.mark.parametrize("name", sorted(EXAMPLES))
def test_value_and_direction(name: str) -> None:
    r = _build(name)
    cls = type(r)
    assert cls.higher_is_better in (True, False, None)
    if r.value is None:
        assert cls.value_missing_reason, f"{name}.value is None without a reason"
        assert cls.higher_is_better is None
    else:
        assert isinstance(r.value, float) and not isinstance(r.value, bool)
        assert not cls.value_missing_reason


def test_coverage_values_are_the_covered_share() -> None:
    r = _build("AdequacyCoverage")
    assert r.value == r.to_dict()["covered"] / r.to_dict()["total"]
    k = _build("KActivationCoverage")
    assert k.value == k.covered / k.total


def test_json_keys_kept() -> None:
    sel = srs_select(20, 5, rng=1)
    assert set(sel.to_dict()) == {
        "format",
        "method",
        "population_size",
        "budget",
        "params",
        "indices",
        "strata",
        "stratum_sizes",
        "rng_state",
        "diagnostics",
    }
    assert Selection.from_dict(json.loads(_strict(sel.to_dict()))).indices.tolist() == (
        sel.indices.tolist()
    )
    assert _build("CentroidPositioning").to_dict()["metric"] == "centroid_positioning"
    assert "distances" not in _build("CentroidPositioning").to_dict()
    assert "in_band" not in _build("BoundaryConditioning").to_dict()
    assert {"occupied", "total", "missing"} <= set(_build("ProjectionTable").to_dict())
    assert isinstance(_build("Estimate"), Estimate)
    assert isinstance(_build("Ranking"), Ranking)


def test_json_keys_kept_by_converted_classes() -> None:
    # the keys each class wrote before it moved to the contract's to_dict
    loss = _build("ConfidenceLoss").to_dict()
    assert set(loss) == {
        "metric",
        "n_inputs",
        "labelled",
        "mean",
        "maximum",
        "top_fraction",
        "n_top",
        "top_mean",
        "n_unharmed",
        "transformers",
        "targets",
        "p_before",
        "p_after",
        "loss",
        "worst",
    }
    assert loss["metric"] == "confidence_loss"
    assert loss["n_top"] == 2 and loss["n_unharmed"] == 1
    assert loss["transformers"] == [
        {"name": "noise", "mean_loss": pytest.approx(0.075), "n_worst": 1},
        {"name": "FGSM(eps=0.1)", "mean_loss": pytest.approx(0.2625), "n_worst": 2},
    ]
    assert set(_build("InterpretationResult").to_dict()) == {
        "interpret",
        "occsen",
        "per_image_interpret",
        "per_image_occsen",
        "n_hot",
        "n_occluding",
        "n_hot_occluding",
        "rho",
        "window",
        "stride",
        "notes",
    }
    cs = _build("CovariateShift").to_dict()
    assert cs["metric"] == "covariate_shift"
    assert set(cs) == {
        "metric",
        "classes",
        "divergence",
        "std_error",
        "n_train",
        "n_test",
        "components_train",
        "components_test",
        "n_components",
        "n_samples",
        "covariance_type",
        "overall",
    }
    for name, metric in (("MMDTest", "mmd_test"), ("MMDShift", "mmd_shift")):
        r = _build(name)
        fields = [f.name for f in dataclasses.fields(r)]  # type: ignore[arg-type]
        assert list(r.to_dict()) == ["metric", *fields]
        assert r.to_dict()["metric"] == metric
    assert "attributions" not in _build("OcclusionHeatmaps").to_dict()


@pytest.mark.parametrize("share", [0.0, 1.5, math.nan])
def test_confidence_loss_refuses_a_share_outside_0_1(share: float) -> None:
    with pytest.raises(LabelwiseError, match="top_fraction"):
        dataclasses.replace(_build("ConfidenceLoss"), top_fraction=share)


def _numpy_scalars(r: Result) -> list[str]:
    return [
        f"{f.name}={getattr(r, f.name)!r}"
        for f in dataclasses.fields(r)  # type: ignore[arg-type]
        if isinstance(getattr(r, f.name), np.generic)
    ]


@pytest.mark.parametrize("name", sorted(EXAMPLES))
def test_scalar_fields_are_python_numbers(name: str) -> None:
    # a NumPy scalar in a field printed as ci_high=np.float64(0.98) in a notebook
    assert _numpy_scalars(_build(name)) == []


def test_an_active_campaign_estimate_prints_plain_numbers() -> None:
    # before: Estimate(..., ci_high=np.float64(0.9814...), ...) from method="active"
    rng = np.random.default_rng(0)
    acts = rng.normal(size=(300, 4))
    probs = rng.dirichlet(np.ones(3), size=300)
    camp = labelwise.Campaign(acts, probs, method="active", rng=0)
    for _ in range(3):
        rows = camp.propose(10)
        camp.record(rows, (rng.random(rows.size) < 0.9).astype(float))
    est = camp.estimate()
    assert _numpy_scalars(est) == []
    assert "np." not in repr(est)


def test_a_selection_prints_without_its_generator_state() -> None:
    """repr(lw.ces_select(acts, 20)) in a notebook ran to 673 characters, over half of them the
    PCG64 state ('state': 243106250231066934302992256176160335035, 'inc': ...) and the CES
    objective trace: bookkeeping for extend, not what was selected."""
    acts = np.random.default_rng(0).normal(size=(200, 4))
    sel = labelwise.ces_select(acts, 20, rng=0)
    text = repr(sel)
    assert "bit_generator" not in text and "objective_trace" not in text
    assert text.startswith("Selection(indices=array([") and "method='ces'" in text
    assert len(text) < 500
    assert sel.rng_state is not None and "objective_trace" in sel.diagnostics  # still kept
    assert "rng_state" in sel.to_dict() and "diagnostics" in sel.to_dict()


def test_a_ranking_prints_as_the_rank_command_table() -> None:
    """A Ranking in a notebook showed only its arrays (the repr); ``table()`` is the table
    ``labelwise rank`` prints, best model first, from the same code."""
    import labelwise as lw

    pred = np.array([[0, 1, 1, 0, 1, 1], [0, 1, 0, 0, 1, 1], [1, 0, 0, 1, 0, 1]])
    labels = np.array([0, 1, 1, 0, 1, 1])
    r = lw.rank_models(pred, labels, model_names=["good", "mid", "bad"], rng=0)
    lines = r.table().splitlines()
    assert lines[0].split()[:4] == ["rank", "model", "accuracy", "95%"]
    assert [ln.split()[1] for ln in lines[1:]] == ["good", "mid", "bad"]
    assert lines[1].split()[2] == "1.0000" and all(ln == ln.rstrip() for ln in lines)
