"""Guided generation of test points in feature space (labelwise.quality.generation)."""

from __future__ import annotations

import numpy as np
import pytest

from labelwise.exceptions import DegenerateDataWarning, LabelwiseError
from labelwise.quality.generation import (
    GeneratedSet,
    generate,
    generation_table,
    linear_head,
)

LO, HI = 0.45, 0.7


@pytest.fixture(scope="module")
def blobs():
    """Three well separated Gaussian classes in 2-D, a fitted softmax head, train centroids."""
    rng = np.random.default_rng(0)
    means = np.array([[0.0, 0.0], [6.0, 0.0], [0.0, 6.0]])
    y_train = np.repeat(np.arange(3), 200)
    x_train = means[y_train] + rng.normal(size=(600, 2))
    y_test = np.repeat(np.arange(3), 60)
    x_test = means[y_test] + rng.normal(size=(180, 2))
    linear_model = pytest.importorskip("sklearn.linear_model")  # not a base dependency
    clf = linear_model.LogisticRegression(C=1.0, max_iter=1000).fit(x_train, y_train)
    head = linear_head(clf.coef_.T, clf.intercept_)
    centroids = np.stack([x_train[y_train == k].mean(axis=0) for k in range(3)])
    return x_test, y_test, centroids, head


def test_linear_head_matches_sklearn(blobs):
    x, y, _, head = blobs
    clf_probs = head(x)
    assert clf_probs.shape == (180, 3)
    np.testing.assert_allclose(clf_probs.sum(axis=1), 1.0)
    assert np.mean(clf_probs.argmax(axis=1) == y) > 0.95


@pytest.mark.parametrize("n,share", [(100, 0.3), (7, 0.5), (1, 0.0), (1, 1.0), (301, 0.7)])
def test_sizes_and_split_exact(blobs, n, share):
    x, y, centroids, head = blobs
    res = generate(x, y, centroids, head, n=n, centroid_share=share, lo=LO, hi=HI, rng=1)
    assert isinstance(res, GeneratedSet)
    assert len(res) == n and res.points.shape == (n, 2)
    assert res.n_centroid == round(n * share)
    assert res.n_boundary == n - round(n * share)
    for a in (res.source, res.kind, res.target, res.seed_index, res.t, res.reached):
        assert a.shape == (n,)
    assert np.all(res.target[res.kind == "centroid"] == -1)
    assert not res.reached[res.kind == "centroid"].any()
    assert np.all((res.t >= 0) & (res.t <= 1))
    with pytest.raises(ValueError):
        res.points[0, 0] = 1.0  # read-only


def test_sources_spread_evenly_and_seeds_from_source_class(blobs):
    x, y, centroids, head = blobs
    res = generate(x, y, centroids, head, n=100, centroid_share=0.5, lo=LO, hi=HI, rng=2)
    for kind in ("centroid", "boundary"):
        counts = np.bincount(res.source[res.kind == kind], minlength=3)
        assert counts.max() - counts.min() <= 1
    np.testing.assert_array_equal(y[res.seed_index], res.source)
    boundary = res.kind == "boundary"
    assert np.all(res.target[boundary] != res.source[boundary])


def test_centroid_points_interpolate_toward_centroid(blobs):
    x, y, centroids, head = blobs
    res = generate(
        x,
        y,
        centroids,
        head,
        n=50,
        centroid_share=1.0,
        lo=LO,
        hi=HI,
        centroid_t=(0.5, 0.8),
        rng=3,
    )
    seeds = x[res.seed_index]
    expected = seeds + res.t[:, None] * (centroids[res.source] - seeds)
    np.testing.assert_allclose(res.points, expected)
    assert np.all((res.t >= 0.5) & (res.t <= 0.8))


@pytest.mark.parametrize("target", ["second", "random"])
def test_centroid_points_correct_far_more_often_than_boundary(blobs, target):
    x, y, centroids, head = blobs
    res = generate(
        x, y, centroids, head, n=300, centroid_share=0.5, lo=LO, hi=HI, target=target, rng=4
    )
    assert res.accuracy_centroid is not None and res.accuracy_boundary is not None
    assert res.accuracy_centroid > 0.98
    assert res.accuracy_boundary < 0.85
    assert res.accuracy_centroid - res.accuracy_boundary > 0.15
    boundary = res.kind == "boundary"
    # the weak band on the top probability
    assert res.reached[boundary].mean() > 0.9
    conf = head(res.points).max(axis=1)
    assert np.all((conf[res.reached] >= LO - 1e-9) & (conf[res.reached] <= HI + 1e-9))
    np.testing.assert_allclose(res.confidence, conf)
    # centroid points are confident, boundary points are weak
    assert np.median(res.confidence[~boundary]) > HI
    assert res.n_unreached == int(boundary.sum() - res.reached.sum())


def test_pure_splits_accuracy_none_for_missing_kind(blobs):
    x, y, centroids, head = blobs
    only_c = generate(x, y, centroids, head, n=20, centroid_share=1.0, lo=LO, hi=HI, rng=5)
    only_b = generate(x, y, centroids, head, n=20, centroid_share=0.0, lo=LO, hi=HI, rng=5)
    assert only_c.accuracy_boundary is None and only_c.accuracy == only_c.accuracy_centroid
    assert only_b.accuracy_centroid is None and only_b.accuracy == only_b.accuracy_boundary


def test_unreached_band_is_reported(blobs):
    x, y, centroids, head = blobs

    def hard(features):  # one-hot probabilities: the confidence is always 1
        return np.eye(3)[head(features).argmax(axis=1)]

    with pytest.warns(DegenerateDataWarning, match="none of the"):
        res = generate(x, y, centroids, hard, n=30, centroid_share=0.0, lo=0.5, hi=0.6, rng=0)
    assert res.n_unreached == 30 and not res.reached.any()
    # a steep head with a tight iteration cap misses the band for some points, without warning
    steep = linear_head(head.weights * 3, head.bias * 3)
    res = generate(
        x, y, centroids, steep, n=60, centroid_share=0.0, lo=0.5, hi=0.6, max_iter=3, rng=0
    )
    assert 0 < res.n_unreached < 60
    conf = steep(res.points).max(axis=1)
    assert not np.any((conf[~res.reached] >= 0.5) & (conf[~res.reached] <= 0.6))


def test_reproducible_with_seed(blobs):
    x, y, centroids, head = blobs
    kw = dict(n=60, centroid_share=0.3, lo=LO, hi=HI)
    a = generate(x, y, centroids, head, **kw, rng=11)
    b = generate(x, y, centroids, head, **kw, rng=np.random.default_rng(11))
    c = generate(x, y, centroids, head, **kw, rng=12)
    np.testing.assert_array_equal(a.points, b.points)
    np.testing.assert_array_equal(a.source, b.source)
    assert not np.array_equal(a.points, c.points)


def test_generation_table_layout_and_trend(blobs):
    x, y, centroids, head = blobs
    sizes = (30, 60)
    table = generation_table(x, y, centroids, head, sizes=sizes, lo=LO, hi=HI, repeats=2, rng=0)
    assert table.accuracy.shape == (2, 5) and table.std.shape == (2, 5)
    assert table.splits == ((0, 100), (30, 70), (50, 50), (70, 30), (100, 0))
    assert np.all((table.accuracy >= 0) & (table.accuracy <= 100))
    # accuracy grows with the centroid share, as in Table 2 for MNIST/FMNIST
    assert np.all(table.accuracy[:, -1] > table.accuracy[:, 0] + 15)
    assert np.all(table.accuracy[:, -1] > 95)
    assert table.test_accuracy > 95
    text = table.format_table(dataset="blobs", model="linear")
    lines = text.splitlines()
    assert lines[0].split()[:4] == ["Dataset", "Model", "Accuracy", "#samples"]
    assert "0-100 split" in lines[0] and "100-0 split" in lines[0]
    assert lines[1].split()[:2] == ["blobs", "linear"]
    assert lines[1].split()[3] == "30" and lines[2].split()[1] == "60"
    assert f"{table.accuracy[1, 2]:.2f}" in lines[2]
    again = generation_table(x, y, centroids, head, sizes=sizes, lo=LO, hi=HI, repeats=2, rng=0)
    np.testing.assert_array_equal(table.accuracy, again.accuracy)


def test_generation_table_default_grid(blobs):
    x, y, centroids, head = blobs
    table = generation_table(x, y, centroids, head, lo=LO, hi=HI, rng=0)
    assert table.sizes == (100, 300, 700, 1000)
    assert table.accuracy.shape == (4, 5)
    assert str(table).splitlines()[0].split()[:2] == ["Accuracy", "#samples"]


@pytest.mark.parametrize(
    "kwargs,match",
    [
        (dict(lo=0.7, hi=0.4), "lo must be below hi"),
        (dict(lo=-0.1), "lo must be in"),
        (dict(centroid_share=1.5), "centroid_share must be in"),
        (dict(centroid_share=-0.1), "centroid_share must be in"),
        (dict(n=0), "n must be"),
        (dict(n=2.5), "n must be an integer"),
        (dict(hi=0.3), "hi must be >= 1/C"),
        (dict(centroid_t=(0.8, 0.2)), "centroid_t"),
        (dict(target="nearest"), "target must be"),
        (dict(max_iter=0), "max_iter"),
    ],
)
def test_bad_parameters(blobs, kwargs, match):
    x, y, centroids, head = blobs
    args = dict(n=10, centroid_share=0.5, lo=0.2, hi=0.6, rng=0) | kwargs
    with pytest.raises(LabelwiseError, match=match):
        generate(x, y, centroids, head, **args)


def test_bad_data(blobs):
    x, y, centroids, head = blobs
    kw = dict(n=10, centroid_share=0.5, lo=LO, hi=HI)
    with pytest.raises(LabelwiseError, match="same length"):
        generate(x, y[:-1], centroids, head, **kw)
    with pytest.raises(LabelwiseError, match="has no centroid"):
        generate(x, y, centroids[:2], head, **kw)  # class 2 absent from training features
    with pytest.raises(LabelwiseError, match="integer"):
        generate(x, y.astype(float), centroids, head, **kw)
    with pytest.raises(LabelwiseError, match="columns"):
        generate(x, y, centroids[:, :1], head, **kw)
    with pytest.raises(LabelwiseError, match="shape"):
        generate(x, y, centroids, lambda f: np.ones((len(f), 2)) / 2, **kw)
    with pytest.raises(LabelwiseError, match="finite"):
        bad = x.copy()
        bad[3, 0] = np.nan
        generate(bad, y, centroids, head, **kw)
    with pytest.raises(LabelwiseError, match="split"):
        generation_table(x, y, centroids, head, splits=((30, 60),), sizes=(10,), lo=LO, hi=HI)
    with pytest.raises(LabelwiseError, match="lo must be below hi"):
        generation_table(x, y, centroids, head, sizes=(10,), lo=0.8, hi=0.5)
    with pytest.raises(LabelwiseError, match="bias"):
        linear_head(np.ones((2, 3)), np.ones(2))
