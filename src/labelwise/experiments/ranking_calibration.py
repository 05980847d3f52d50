"""Does :class:`labelwise.RankingCampaign` mean what it says about the best model?

For one zoo (predictions and true labels), ``repetitions`` seeded campaigns label ``batch``
rows a round; at each size in ``sizes`` the measure records, for the model ranked first, how
often it is the true best against the P(best) the campaign reported for it (a calibrated
P(best) makes the two equal on average), the reliability of every reported P(best) >= 0.5,
and the mean error of the estimated accuracies of the ``top`` best-ranked models next to
that of the design-based PPI estimates of the same labels (the posterior's shrinkage is the
difference). ``python -m labelwise.experiments.ranking_calibration`` runs it on the 28-model
MNIST-1D zoo of ``labelwise study comparative`` (trained in about 2 minutes).
"""

from __future__ import annotations

import argparse
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
from numpy.typing import ArrayLike, NDArray

from .._validation import check_int
from ..exceptions import LabelwiseError
from ..ranking.campaign import RankingCampaign

__all__ = ["CalibrationRow", "best_model_calibration"]


@dataclass(frozen=True)
class CalibrationRow:
    """One size: means over the repetitions (``nan`` when no P(best) reached 0.5)."""

    n_labelled: int
    first_is_best: float  # share of campaigns whose first-ranked model is the true best
    first_prob_best: float  # mean P(best) reported for that model
    confident: int  # number of reported P(best) >= 0.5 (any model)
    confident_mean: float  # their mean
    confident_observed: float  # share of them that are the true best
    top_error: float  # mean (estimate - truth) of the `top` best-ranked models
    top_error_ppi: float  # the same for the design-based PPI estimates


def best_model_calibration(
    predictions: ArrayLike,
    labels: ArrayLike,
    *,
    sizes: Sequence[int] = (40, 90, 180),
    repetitions: int = 60,
    batch: int = 10,
    top: int = 3,
    seed: int = 0,
) -> list[CalibrationRow]:
    """Run the measure of the module docstring; one row per size."""
    pred = np.asarray(predictions)
    y = np.asarray(labels)
    if pred.ndim != 2 or y.shape != (pred.shape[1],):
        raise LabelwiseError(
            f"labels must have one entry per input of the (n_models, N) predictions, got "
            f"shapes {y.shape} and {pred.shape}"
        )
    repetitions = check_int(repetitions, "repetitions", minimum=1)
    batch = check_int(batch, "batch", minimum=1)
    top = check_int(top, "top", minimum=1, maximum=pred.shape[0])
    if not sizes or min(sizes) < 1 or max(sizes) > pred.shape[1]:
        raise LabelwiseError(f"sizes must be in [1, {pred.shape[1]}], got {list(sizes)}")
    truth = (pred == y[None, :]).mean(axis=1)
    best = int(np.argmax(truth))
    sizes = sorted(int(s) for s in sizes)
    # per size and repetition: first-ranked model, every model's P(best), the top error of
    # the posterior and of PPI
    first: dict[int, list[int]] = {s: [] for s in sizes}
    prob_best: dict[int, list[NDArray[np.float64]]] = {s: [] for s in sizes}
    errors: dict[int, list[tuple[float, float]]] = {s: [] for s in sizes}
    for r in range(repetitions):
        camp = RankingCampaign(pred, rng=np.random.default_rng([seed, r]))
        for size in sizes:
            while camp.n_labelled < size:
                rows = camp.propose(min(batch, size - camp.n_labelled))
                camp.record(rows, y[rows])
            rk = camp.ranking()
            ppi = rk.accuracy if rk.design_accuracy is None else rk.design_accuracy
            tops = rk.order[:top]
            first[size].append(int(rk.order[0]))
            prob_best[size].append(np.asarray(rk.prob_best, dtype=np.float64))
            errors[size].append(
                (
                    float(np.mean(rk.accuracy[tops] - truth[tops])),
                    float(np.mean(ppi[tops] - truth[tops])),
                )
            )
    out = []
    for size in sizes:
        f = np.asarray(first[size])
        pb = np.stack(prob_best[size])  # (repetitions, models)
        conf = pb >= 0.5
        n_conf = int(conf.sum())
        err = np.asarray(errors[size])
        out.append(
            CalibrationRow(
                n_labelled=size,
                first_is_best=float(np.mean(f == best)),
                first_prob_best=float(np.mean(pb[np.arange(f.size), f])),
                confident=n_conf,
                confident_mean=float(pb[conf].mean()) if n_conf else np.nan,
                confident_observed=float(conf[:, best].sum() / n_conf) if n_conf else np.nan,
                top_error=float(err[:, 0].mean()),
                top_error_ppi=float(err[:, 1].mean()),
            )
        )
    return out


def format_rows(rows: Sequence[CalibrationRow], top: int = 3) -> str:
    head = (
        "| labels | first is best | its P(best) | P(best) >= 0.5: n, mean, observed "
        f"| top-{top} error (PPI) |\n|---|---|---|---|---|"
    )
    lines = [head]
    for r in rows:
        lines.append(
            f"| {r.n_labelled} | {r.first_is_best:.2f} | {r.first_prob_best:.2f} | "
            f"{r.confident}, {r.confident_mean:.2f}, {r.confident_observed:.2f} | "
            f"{r.top_error:+.4f} ({r.top_error_ppi:+.4f}) |"
        )
    return "\n".join(lines)


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repetitions", type=int, default=60)
    parser.add_argument("--seed", type=int, default=0, help="seed of the zoo and campaigns")
    args = parser.parse_args(argv)
    if args.repetitions < 1:
        parser.error(f"--repetitions must be >= 1, got {args.repetitions}")
    from .zoo import default_zoo, train_zoo

    zoo = train_zoo(default_zoo(), seed=args.seed, progress=False)
    acc = np.sort(zoo.accuracies)[::-1]
    print(f"{zoo.n_models} models, best true accuracies {np.round(acc[:4], 4).tolist()}")
    rows = best_model_calibration(
        zoo.predictions, zoo.labels, repetitions=args.repetitions, seed=args.seed
    )
    print(format_rows(rows))


if __name__ == "__main__":
    main()
