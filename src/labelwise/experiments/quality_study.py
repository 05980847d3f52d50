"""``labelwise study quality``: the dataset-characterisation paper's Table 1 (test-set quality
per model) and Table 2 (the head's accuracy on generated centroid / boundary points) for
models trained here on digits and MNIST-1D.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from ..quality.generation import GenerationTable, generation_table, linear_head
from ..quality.report import QualityReport, quality_report

__all__ = ["QualityStudyRow", "format_quality_table", "run_quality_study"]


@dataclass
class QualityStudyRow:
    dataset: str
    model: str
    accuracy: float
    report: QualityReport
    generation: GenerationTable


def _digits(shift: str) -> Callable[[int], tuple[str, str, Any, Any, Any, Any, Any]]:
    def build(seed: int) -> tuple[str, str, Any, Any, Any, Any, Any]:
        from .digits import digits_context

        ctx = digits_context(shift, seed=seed)
        name = "digits" if shift == "none" else f"digits ({shift})"
        return (
            name,
            "LeNet (CNN)",
            ctx.model,
            ctx.train_images,
            ctx.train_labels,
            ctx.images,
            ctx.labels,
        )

    return build


def _mnist1d(seed: int) -> tuple[str, str, Any, Any, Any, Any, Any]:
    from .mnist1d import load_mnist1d, mnist1d_context

    ctx = mnist1d_context(None, seed=seed)
    x_train, y_train, _, _ = load_mnist1d(seed=seed)
    return "MNIST-1D", "CNN-1D", ctx.model, x_train, y_train, ctx.images, ctx.labels


CONTEXTS = (_digits("none"), _digits("patch"), _mnist1d)


def run_quality_study(
    *,
    seed: int = 0,
    sizes: Sequence[int] = (100, 300, 700, 1000),
    repeats: int = 1,
    lo: float = 0.0,
    hi: float = 0.6,
    contexts: Sequence[Callable[[int], tuple[str, str, Any, Any, Any, Any, Any]]] = CONTEXTS,
    log: Callable[[str], None] = print,
) -> list[QualityStudyRow]:
    from ..adapters.torch import capture
    from ..adapters.training import last_linear

    rows = []
    for build in contexts:
        t = time.perf_counter()
        name, model_name, model, x_train, y_train, x_test, y_test = build(seed)
        train = capture(model, x_train, progress=False)
        test = capture(model, x_test, progress=False)
        report = quality_report(
            train.activations, y_train, test.activations, y_test, test.outputs, lo=lo, hi=hi
        )
        head = linear_head(*last_linear(model))
        classes = np.unique(y_train)
        centroids = np.stack([train.activations[y_train == c].mean(axis=0) for c in classes])
        gen = generation_table(
            test.activations,
            y_test,
            centroids,
            head,
            sizes=sizes,
            lo=lo,
            hi=hi,
            repeats=repeats,
            rng=seed,
        )
        acc = float(np.mean(test.outputs.argmax(axis=1) == y_test))
        rows.append(QualityStudyRow(name, model_name, acc, report, gen))
        log(f"  {name} / {model_name}: accuracy {acc:.3f} ({time.perf_counter() - t:.1f} s)")
    return rows


def format_quality_table(rows: Sequence[QualityStudyRow]) -> str:
    """Table 1 layout: one row per dataset and model, the quality metrics as columns."""
    adequacy = list(rows[0].report.adequacy) if rows else []
    head = (
        f"  {'Dataset':<16}{'Model':<13}{'Acc':>6}{'EP-sd':>7}{'Centr':>7}{'Bound':>7}"
        f"{'Pairs':>7}{'JSD':>7}{'MMD2':>8}{'p':>7}{'shifted':>9}"
        + "".join(f"{a:>13}" for a in adequacy)
    )
    lines = [head]
    for r in rows:
        o = r.report.overall
        lines.append(
            f"  {r.dataset:<16}{r.model:<13}{r.accuracy:>6.3f}{o['imbalance']:>7.3f}"
            f"{o['centroid_share']:>7.3f}{o['boundary_share']:>7.3f}{o['pair_coverage']:>7.3f}"
            f"{o['shift_jsd']:>7.3f}{o['shift_mmd2']:>8.4f}{o['shift_p']:>7.3f}"
            f"{o['shift_classes']:>6}/{_tested(r.report):<2}"
            + "".join(f"{r.report.adequacy[a]:>13.3f}" for a in adequacy)
        )
    lines.append(
        "  EP-sd: spread of n_c C / N (0 ideal); Centr: share within the class's median "
        "training distance of its centroid; Bound: share with confidence in the band; Pairs: "
        "class pairs with a boundary input; JSD: train-test covariate shift (bits)\n"
        "  MMD2: kernel MMD² of train vs test features per class, weighted by class size; p: its "
        "permutation p-value (within-class permutations); shifted: classes with Holm-adjusted "
        "p <= 0.05"
    )
    return "\n".join(lines)


def _tested(report: QualityReport) -> int:
    """Classes whose shift was tested (the report lists classes without test inputs too)."""
    return sum(bool(np.isfinite(r["shift_p"])) for r in report.rows)
