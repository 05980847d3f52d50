"""Two more real zoos for ranking: scikit-learn models on digits and on MNIST-1D.

``labelwise study comparative`` ranks one zoo of 28 PyTorch models on MNIST-1D. Real zoos
differ in ways synthetic ones do not, so this module trains two more in under a minute, from
bundled or generated data only, with 23 models of 11 kinds (logistic regression at four
strengths, k-nearest neighbours with k = 1..60, RBF SVMs, random forests and extra trees,
naive Bayes, LDA, decision trees, MLPs):

* ``digits``: scikit-learn's 8 x 8 digits, 600 training images, a pile of 1,197; accuracies
  0.32-0.98, the top five within 0.011. The vote is right on 96.8 % of the pile, but the two
  best models (1- and 3-nearest neighbours) agree with it *less* than the forests and the
  9-nearest-neighbour model behind them: a herd.
* ``mnist1d``: MNIST-1D (``make_dataset``, 3,000 training signals, a pile of 5,000);
  accuracies 0.21-0.73, a weak zoo whose vote is right on 54 % of the pile and ranks the
  models at Spearman 0.12.

:func:`compare` runs, per repetition, SRS, SDS, DDG and RDG (one selection each, its prefixes
at every size, accuracies on the labelled rows), the majority vote (no labels) and the
:class:`labelwise.RankingCampaign` (CPPI, 5 rows a round, its consensus-PPI estimate), with the
measures of :mod:`labelwise.experiments.comparative`. ``python -m
labelwise.experiments.sklearn_zoos`` prints the table of both zoos.
"""

from __future__ import annotations

import argparse
import time
import warnings
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from numpy.typing import NDArray

from .._validation import check_int
from ..exceptions import DegenerateDataWarning, LabelwiseError
from ..sampling.sds import majority_vote
from .comparative import (
    REPORT_SIZES,
    campaign_estimates,
    estimate_quality,
    prefix_estimates,
    zoo_selection,
)

__all__ = ["SklearnZoo", "ZooComparison", "compare", "format_comparison", "sklearn_zoo"]

DATASETS = ("digits", "mnist1d")
#: Methods compared, in table order ("vote" uses no label).
METHODS = ("SRS", "SDS", "DDG", "RDG", "vote", "CPPI")


@dataclass(frozen=True)
class SklearnZoo:
    """Predicted classes (n_models, N), probabilities (n_models, N, C) and true labels (N,)."""

    name: str
    model_names: tuple[str, ...]
    predictions: NDArray[np.int64]
    probabilities: NDArray[np.float32]
    labels: NDArray[np.int64]

    @property
    def true_accuracy(self) -> NDArray[np.float64]:
        return np.asarray((self.predictions == self.labels[None, :]).mean(axis=1))


def _models(seed: int) -> dict[str, Any]:
    from sklearn.discriminant_analysis import LinearDiscriminantAnalysis
    from sklearn.ensemble import ExtraTreesClassifier, RandomForestClassifier
    from sklearn.linear_model import LogisticRegression
    from sklearn.naive_bayes import GaussianNB
    from sklearn.neighbors import KNeighborsClassifier
    from sklearn.neural_network import MLPClassifier
    from sklearn.svm import SVC
    from sklearn.tree import DecisionTreeClassifier

    out: dict[str, Any] = {}
    for c in (0.001, 0.01, 0.1, 1.0):
        out[f"lr{c}"] = LogisticRegression(C=c, max_iter=300)
    for k in (1, 3, 9, 25, 60):
        out[f"knn{k}"] = KNeighborsClassifier(k)
    for g in (0.0003, 0.001, 0.003):
        out[f"svm{g}"] = SVC(gamma=g, probability=True, random_state=seed)
    for d in (3, 6, None):
        out[f"rf{d}"] = RandomForestClassifier(50, max_depth=d, random_state=seed)
    out["et"] = ExtraTreesClassifier(100, random_state=seed)
    out["nb"] = GaussianNB()
    out["lda"] = LinearDiscriminantAnalysis()
    for d in (4, 8):
        out[f"tree{d}"] = DecisionTreeClassifier(max_depth=d, random_state=seed)
    for h in (8, 32, 128):
        out[f"mlp{h}"] = MLPClassifier((h,), max_iter=300, random_state=seed)
    return out


def sklearn_zoo(dataset: str, *, seed: int = 0) -> SklearnZoo:
    """Train the 23 models of the module docstring on ``dataset`` and predict its pile."""
    if dataset not in DATASETS:
        raise LabelwiseError(f"dataset must be one of {list(DATASETS)}, got {dataset!r}")
    seed = check_int(seed, "seed", minimum=0)
    if dataset == "digits":
        from sklearn.datasets import load_digits

        d = load_digits()
        x, y = d.data / 16.0, d.target.astype(np.int64)
        idx = np.random.default_rng(seed).permutation(y.size)
        x_tr, y_tr, x_op, y_op = x[idx[:600]], y[idx[:600]], x[idx[600:]], y[idx[600:]]
    else:
        from .mnist1d import load_mnist1d

        xt, yt, x_op, y_op = load_mnist1d(10_000, seed=3 + seed)
        x_tr, y_tr = xt[:3000], yt[:3000]
    preds, probs, names = [], [], []
    with warnings.catch_warnings():
        # small MLPs stop at max_iter, collinear LDA: expected on these data, not errors
        warnings.simplefilter("ignore")
        for name, model in _models(seed).items():
            model.fit(x_tr, y_tr)
            p = np.zeros((y_op.size, 10), dtype=np.float32)
            p[:, model.classes_] = model.predict_proba(x_op)
            preds.append(p.argmax(axis=1))
            probs.append(p)
            names.append(name)
    return SklearnZoo(
        dataset,
        tuple(names),
        np.asarray(preds, dtype=np.int64),
        np.asarray(probs, dtype=np.float32),
        np.asarray(y_op, dtype=np.int64),
    )


@dataclass
class ZooComparison:
    """Per method: (repetitions, sizes) arrays of Spearman, Jaccard@k, regret, first-is-best."""

    zoo: str
    sizes: tuple[int, ...]
    k: int
    values: dict[str, dict[str, NDArray[np.float64]]] = field(default_factory=dict)

    def mean(self, method: str, metric: str) -> NDArray[np.float64]:
        return np.asarray(self.values[method][metric].mean(axis=0))


def compare(
    zoo: SklearnZoo,
    *,
    sizes: Sequence[int] = REPORT_SIZES,
    repetitions: int = 20,
    seed: int = 0,
    k: int | None = None,
) -> ZooComparison:
    """The methods of :data:`METHODS` on ``zoo`` (module docstring)."""
    repetitions = check_int(repetitions, "repetitions", minimum=1)
    sizes = tuple(sorted(int(s) for s in sizes))
    m, n = zoo.predictions.shape
    if not sizes or sizes[0] < 1 or sizes[-1] > n:
        raise LabelwiseError(f"sizes must be in [1, {n}], got {list(sizes)}")
    k = max(1, round(m / 4)) if k is None else check_int(k, "k", minimum=1, maximum=m)
    truth = zoo.true_accuracy
    correct = zoo.predictions == zoo.labels[None, :]
    res = ZooComparison(zoo.name, sizes, k)
    metrics = ("spearman", "jaccard", "regret", "best")
    for meth in METHODS:
        res.values[meth] = {q: np.empty((repetitions, len(sizes))) for q in metrics}
    # the vote: each model's agreement with the majority vote on the whole pile, no label
    agree = (zoo.predictions == majority_vote(zoo.predictions)[None, :]).mean(axis=1)
    vote_q = estimate_quality(np.tile(agree, (len(sizes), 1)), truth, (k,))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DegenerateDataWarning)
        for r in range(repetitions):
            seeds = np.random.SeedSequence([seed, r]).spawn(len(METHODS))
            for j, meth in enumerate(METHODS):
                if meth == "vote":
                    q = vote_q
                else:
                    gen = np.random.default_rng(seeds[j])
                    if meth == "CPPI":
                        est = campaign_estimates(zoo.predictions, zoo.labels, sizes, gen)
                    else:
                        sel = zoo_selection(
                            meth, zoo.predictions, zoo.probabilities, sizes[-1], gen
                        )
                        est = prefix_estimates(correct, sel.indices, sizes)
                    q = estimate_quality(est, truth, (k,))
                vals = res.values[meth]
                vals["spearman"][r] = q["spearman"]
                vals["jaccard"][r] = q["jaccard"][k]
                vals["regret"][r] = q["regret"]
                vals["best"][r] = q["best"]
    return res


def format_comparison(res: ZooComparison) -> str:
    """A markdown table: mean over sizes (worst size in brackets), and where CPPI trails."""
    lines = [
        f"| {res.zoo} | Spearman | Jaccard@{res.k} | regret | first is best |",
        "|---|---|---|---|---|",
    ]
    for meth in METHODS:
        sp = res.mean(meth, "spearman")
        ja = res.mean(meth, "jaccard")
        lines.append(
            f"| {meth} | {sp.mean():.3f} [{sp.min():.3f}] | {ja.mean():.3f} [{ja.min():.3f}] "
            f"| {res.mean(meth, 'regret').mean():.4f} | {res.mean(meth, 'best').mean():.2f} |"
        )
    base = [mt for mt in METHODS if mt != "CPPI"]
    trail = []
    for metric in ("spearman", "jaccard"):
        best = np.max([res.mean(mt, metric) for mt in base], axis=0)
        trail.append(int((res.mean("CPPI", metric) < best - 1e-12).sum()))
    worse = int((res.mean("CPPI", "regret") > res.mean("SRS", "regret") + 1e-12).sum())
    lines.append(
        f"\nCPPI below the best of {', '.join(base)} at {trail[0]} (Spearman) and {trail[1]} "
        f"(Jaccard@{res.k}) of {len(res.sizes)} sizes; regret above SRS's at {worse}."
    )
    return "\n".join(lines)


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repetitions", type=int, default=20)
    parser.add_argument("--seed", type=int, default=0, help="seed of the zoos and the draws")
    parser.add_argument("--zoo", choices=DATASETS, action="append", help="default: both")
    args = parser.parse_args(argv)
    if args.repetitions < 1:
        parser.error("--repetitions must be at least 1")
    if args.seed < 0:
        parser.error("--seed must be >= 0")
    for name in args.zoo or DATASETS:
        t = time.perf_counter()
        zoo = sklearn_zoo(name, seed=args.seed)
        acc = np.sort(zoo.true_accuracy)[::-1]
        print(
            f"{name}: {len(zoo.model_names)} models on {zoo.labels.size} inputs, accuracies "
            f"{acc[-1]:.3f}-{acc[0]:.3f} (top five {', '.join(f'{a:.4f}' for a in acc[:5])})"
        )
        res = compare(zoo, repetitions=args.repetitions, seed=args.seed)
        print(format_comparison(res))
        print(f"({time.perf_counter() - t:.0f} s; sizes {', '.join(map(str, res.sizes))})\n")


if __name__ == "__main__":  # pragma: no cover
    main()
