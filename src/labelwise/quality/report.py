"""One per-class summary of a test set's quality in a model's feature space (issue 7).

:func:`quality_report` combines equivalence partitioning, centroid positioning, boundary
conditioning (and pair-wise), covariate shift, and the classic adequacy metrics over the same
features; :func:`plot_quality` draws the box plots of the paper's Figures 4 and 5.
"""

from __future__ import annotations

import os
import warnings
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
from numpy.typing import ArrayLike, NDArray

from .._plotting import pyplot, save_figure
from ..exceptions import DegenerateDataWarning, user_stacklevel
from .adequacy import ActivationProfile, kmnc, nbc, neuron_coverage, snac, tknc
from .feature_space import (
    _check_probabilities,
    boundary_conditioning,
    centroid_positioning,
    covariate_shift,
    equivalence_partitioning,
    pairwise_boundary_conditioning,
)
from .shift import mmd_shift

__all__ = ["QualityReport", "plot_quality", "quality_report"]


@dataclass
class QualityReport:
    """Per-class rows and the overall summary of :func:`quality_report`.

    ``rows`` has one dict per class of the model (0 .. C-1, C = probability columns), classes
    without test inputs included (``n_test`` 0, ``equivalence`` 0, the other shares NaN):
    ``equivalence`` n_c C / N (1 ideal), ``centroid_share`` and ``boundary_share`` shares in
    [0, 1], ``shift_jsd`` in bits [0, 1], ``shift_mmd2`` the kernel MMD² (>= 0 in expectation),
    ``shift_p`` its permutation p-value, ``shift_flag`` Holm-adjusted p <= the level.
    """

    classes: NDArray[np.int64]
    rows: list[dict[str, Any]]
    overall: dict[str, Any]
    adequacy: dict[str, float]
    details: dict[str, Any] = field(default_factory=dict)
    distances: NDArray[np.float64] | None = None
    confidences: NDArray[np.float64] | None = None
    test_labels: NDArray[np.int64] | None = None

    def table(self) -> str:
        head = (
            f"  {'class':>5} {'n':>6} {'EP':>7} {'centroid':>9} {'boundary':>9} {'shift JSD':>10}"
            f" {'MMD2':>8} {'p':>6}"
        )
        lines = [head]
        for r in self.rows:
            lines.append(
                f"  {r['class']:>5} {r['n_test']:>6} {r['equivalence']:>7.3f} "
                f"{_num(r['centroid_share'], 9, 3)} {_num(r['boundary_share'], 9, 3)} "
                f"{_num(r['shift_jsd'], 10, 3)} {_num(r['shift_mmd2'], 8, 4)} "
                f"{_num(r['shift_p'], 6, 3)}{'*' if r['shift_flag'] else ''}"
            )
        o = self.overall
        lines.append(
            f"  {'all':>5} {int(o['n_test']):>6} {o['imbalance']:>7.3f} "
            f"{_num(o['centroid_share'], 9, 3)} {_num(o['boundary_share'], 9, 3)} "
            f"{_num(o['shift_jsd'], 10, 3)} {_num(o['shift_mmd2'], 8, 4)} "
            f"{_num(o['shift_p'], 6, 3)}{'*' if o['shift_flag'] else ''}"
        )
        lines.append(
            "  EP: n_c C / N (ideal 1; 'all' row: their spread); centroid: share within "
            f"{o.get('radius', 1.0):g} x the class's median training distance of its centroid; "
            "boundary: share with confidence (top probability) in "
            f"[{o.get('lo', 0.0):g}, {o.get('hi', 0.6):g}]; shift: Jensen-Shannon divergence "
            "(bits, no null: near 1 even on clean data)"
        )
        lines.append(
            "  MMD2: kernel MMD² train vs test features (unbiased: near 0, even slightly below, "
            "when nothing shifted), p: its permutation p-value (per class; "
            "'all': within-class permutations); * = shifted at level "
            f"{self.overall.get('shift_level', 0.05):g} (per class Holm-adjusted)"
        )
        absent = [r["class"] for r in self.rows if r["n_test"] == 0]
        if absent:
            lines.append(
                f"  class(es) {absent} have no test inputs (EP 0): nothing to measure, shown as '-'"
            )
        if any(
            not np.isfinite(r[k])
            for r in self.rows
            if r["n_test"] > 0
            for k in ("shift_jsd", "shift_mmd2", "shift_p")
        ):
            lines.append("  shift '-': fewer than 2 training or test inputs in the class")
        lines.append(
            f"  pair-wise boundary coverage {o['pair_coverage']:.3f}; "
            + "; ".join(f"{k} {v:.3f}" for k, v in self.adequacy.items())
        )
        lines.append(
            "  (shares in [0, 1]: class pairs (a, b) with a test input of a in the band whose top "
            "two classes are a and b; NC neurons > 0 for some test input; KMNC sections of the "
            "neurons' training ranges hit; NBC neurons' below/above-training-range corners hit; "
            "SNAC above-range corners; TKNC neurons the layer's largest for some input)"
        )
        return "\n".join(lines)

    def to_dict(self) -> dict[str, Any]:
        return {
            "classes": self.rows,
            "overall": self.overall,
            "adequacy": self.adequacy,
            "details": self.details,
        }


def quality_report(
    train_features: ArrayLike,
    train_labels: ArrayLike,
    test_features: ArrayLike,
    test_labels: ArrayLike,
    test_probabilities: ArrayLike,
    *,
    radius: float = 1.0,
    lo: float = 0.0,
    hi: float = 0.6,
    kmnc_sections: int = 100,
    shift_level: float = 0.05,
    rng: Any = 0,
) -> QualityReport:
    """Per-class quality of a test set, with the classic adequacy metrics for comparison.

    Covariate shift is reported twice: the paper's Jensen-Shannon divergence
    (:func:`~labelwise.quality.feature_space.covariate_shift`) and the kernel MMD two-sample
    test (:func:`~labelwise.quality.shift.mmd_shift`, level ``shift_level``), whose p-value
    separates clean from shifted test sets.
    """
    # (M, C) softmax rows with every test label < C, checked before C is read from them
    n_classes = _check_probabilities(test_probabilities, test_labels)[4]
    ep = equivalence_partitioning(test_labels, n_classes)
    cp = centroid_positioning(
        train_features, train_labels, test_features, test_labels, radius=radius
    )
    bc = boundary_conditioning(test_probabilities, test_labels, lo=lo, hi=hi)
    pbc = pairwise_boundary_conditioning(test_probabilities, test_labels, lo=lo, hi=hi)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always", DegenerateDataWarning)
        cs = covariate_shift(train_features, train_labels, test_features, test_labels, rng=rng)
    for w in dict.fromkeys(str(w.message) for w in caught):
        warnings.warn(w, DegenerateDataWarning, stacklevel=user_stacklevel())
    ms = mmd_shift(
        train_features, train_labels, test_features, test_labels, level=shift_level, rng=rng
    )
    shares = dict(zip(cp.classes.tolist(), cp.shares.tolist(), strict=True))
    jsd = dict(zip(cs.classes.tolist(), cs.divergence.tolist(), strict=True))
    mmd = {int(c): j for j, c in enumerate(ms.classes)}
    y = np.asarray(test_labels).astype(np.int64)
    rows = []
    # every class of the model, those without test inputs too (their EP of 0 is the finding)
    for c in range(n_classes):
        rows.append(
            {
                "class": c,
                "n_test": int((y == c).sum()),
                "equivalence": float(ep.scores[c]),
                "centroid_share": float(shares.get(c, np.nan)),
                "boundary_share": float(bc.shares[c]),
                "shift_jsd": float(jsd.get(c, np.nan)),
                "shift_mmd2": float(ms.statistic[mmd[c]]) if c in mmd else np.nan,
                "shift_p": float(ms.p_value[mmd[c]]) if c in mmd else np.nan,
                "shift_flag": bool(ms.shifted[mmd[c]]) if c in mmd else False,
            }
        )
    profile = ActivationProfile.from_activations(np.asarray(train_features, dtype=np.float64))
    test = np.asarray(test_features, dtype=np.float64)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DegenerateDataWarning)  # constant neurons in KMNC
        adequacy = {
            "NC": neuron_coverage(test).value,
            f"KMNC(k={kmnc_sections})": kmnc(profile, test, k=kmnc_sections).value,
            "NBC": nbc(profile, test).value,
            "SNAC": snac(profile, test).value,
            "TKNC(k=1)": tknc(test, k=1).value,
        }
    overall = {
        "n_test": float(y.size),
        "imbalance": ep.imbalance,
        "centroid_share": cp.overall,
        "boundary_share": bc.overall,
        "pair_coverage": pbc.pair_coverage,
        "shift_jsd": float(np.nanmean(cs.divergence))
        if np.isfinite(cs.divergence).any()
        else np.nan,
        "shift_mmd2": ms.overall_statistic,
        "shift_p": ms.overall_p,
        "shift_flag": ms.overall_shifted,
        "shift_classes": int(ms.shifted.sum()),
        "shift_level": ms.level,
        "radius": cp.radius,
        "lo": bc.lo,
        "hi": bc.hi,
    }
    probs = np.asarray(test_probabilities, dtype=np.float64)
    return QualityReport(
        classes=np.arange(n_classes),
        rows=rows,
        overall=overall,
        adequacy=adequacy,
        details={
            "equivalence_partitioning": ep.to_dict(),
            "centroid_positioning": cp.to_dict(),
            "boundary_conditioning": bc.to_dict(),
            "pairwise_boundary_conditioning": pbc.to_dict(),
            "covariate_shift": cs.to_dict(),
            "mmd_shift": ms.to_dict(),
        },
        distances=np.asarray(cp.distances),
        confidences=probs.max(axis=1),
        test_labels=y,
    )


def _num(v: float, width: int, digits: int) -> str:
    """A table cell: the value, or '-' where there is nothing to measure (NaN)."""
    return f"{v:>{width}.{digits}f}" if np.isfinite(v) else f"{'-':>{width}}"


def plot_quality(report: QualityReport, path: str | os.PathLike[str]) -> Path | None:
    """Box plots per class of the normalised centroid distance and of the confidence."""
    plt = pyplot()
    if plt is None or report.distances is None or report.confidences is None:
        return None
    y = report.test_labels
    assert y is not None
    classes = [c for c in report.classes.tolist() if (y == c).any()]
    fig, axes = plt.subplots(1, 2, figsize=(10, 3.4), dpi=110)
    dist = [report.distances[y == c] for c in classes]
    axes[0].boxplot(dist, tick_labels=classes)
    o = report.overall
    radius = float(o.get("radius", 1.0))
    # the chart's scale is the data's: a radius far above every distance (--radius 1e308)
    # would squash the boxes to a line (and overflow matplotlib's ticks); the legend says so
    finite = [float(np.max(d[np.isfinite(d)])) for d in dist if np.isfinite(d).any()]
    top = max(finite, default=1.0)
    if radius <= 1.5 * top:
        axes[0].axhline(
            radius, color="tab:red", linestyle="--", linewidth=1, label=f"radius {radius:g}"
        )
    else:
        axes[0].plot(
            [], [], color="tab:red", linestyle="--", label=f"radius {radius:g} (above the chart)"
        )
    axes[0].set_title("distance to the class centroid (normalised)", fontsize=9)
    axes[0].set_ylabel("distance / median training distance")
    axes[0].legend(fontsize=8, loc="upper right")
    axes[1].boxplot([report.confidences[y == c] for c in classes], tick_labels=classes)
    axes[1].axhspan(
        float(o.get("lo", 0.0)),
        float(o.get("hi", 0.6)),
        color="tab:orange",
        alpha=0.15,
        label=f"weak-confidence band [{o.get('lo', 0.0):g}, {o.get('hi', 0.6):g}]",
    )
    axes[1].set_title("confidence (top softmax probability)", fontsize=9)
    axes[1].set_ylabel("top class probability")
    axes[1].set_ylim(-0.02, 1.02)
    axes[1].legend(fontsize=8, loc="lower left")
    for ax in axes:
        ax.set_xlabel("class")
        ax.grid(alpha=0.3)
    fig.tight_layout()
    return save_figure(fig, path)
