"""The scikit-learn zoos used as real ranking test beds (labelwise.experiments.sklearn_zoos)."""

from __future__ import annotations

import numpy as np
import pytest

import labelwise as lw
from labelwise.experiments.sklearn_zoos import (
    METHODS,
    SklearnZoo,
    compare,
    format_comparison,
    sklearn_zoo,
)
from labelwise.ranking import synthetic_zoo


def test_digits_zoo_is_the_documented_herd() -> None:
    zoo = sklearn_zoo("digits")
    acc = zoo.true_accuracy
    assert zoo.predictions.shape == (23, 1197) and zoo.probabilities.shape == (23, 1197, 10)
    np.testing.assert_allclose(zoo.probabilities.sum(axis=2), 1, atol=1e-5)
    order = np.argsort(-acc)
    # the two best are the 1- and 3-nearest-neighbour models; both agree with the vote less
    # than the extra trees behind them (the module docstring's herd)
    assert [zoo.model_names[i] for i in order[:2]] == ["knn1", "knn3"]
    vote = lw.sampling.sds.majority_vote(zoo.predictions)
    agree = (zoo.predictions == vote[None, :]).mean(axis=1)
    et = zoo.model_names.index("et")
    assert acc[et] < acc[order[1]] and agree[et] > agree[order[0]] and agree[et] > agree[order[1]]
    assert 0.3 < acc.min() < 0.35 and 0.98 < acc.max() < 0.99


def _toy() -> SklearnZoo:
    z = synthetic_zoo([0.95, 0.7, 0.6, 0.5], 600, n_classes=3, rng=0)
    probs = np.eye(3, dtype=np.float32)[z.predictions]
    return SklearnZoo("toy", ("a", "b", "c", "d"), z.predictions, probs, z.labels)


def test_compare_measures_every_method() -> None:
    res = compare(_toy(), sizes=(40, 80), repetitions=2, k=1)
    assert set(res.values) == set(METHODS)
    for meth in METHODS:
        sp = res.values[meth]["spearman"]
        assert sp.shape == (2, 2) and np.all(np.isfinite(sp))
    # the best model is 0.25 ahead: every labelled method finds it at 80 labels, no regret
    for meth in ("SRS", "SDS", "CPPI"):
        assert res.mean(meth, "best")[-1] == 1.0 and res.mean(meth, "regret")[-1] == 0.0
    # the vote uses no label: the same at every size and repetition
    assert np.ptp(res.values["vote"]["spearman"]) == 0
    text = format_comparison(res)
    assert "| CPPI |" in text and "of 2 sizes" in text


def test_bad_arguments() -> None:
    with pytest.raises(lw.LabelwiseError, match="dataset must be one of"):
        sklearn_zoo("cifar")
    with pytest.raises(lw.LabelwiseError, match="sizes must be in"):
        compare(_toy(), sizes=(0, 10))
    with pytest.raises(lw.LabelwiseError, match="repetitions"):
        compare(_toy(), repetitions=0)
