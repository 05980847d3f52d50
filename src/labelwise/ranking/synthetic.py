"""Seeded synthetic model zoos: latent item difficulty and correlated errors.

Every input ``i`` has a true class ``y_i``, a difficulty ``d_i ~ N(0, 1)`` and a confuser class
``r_i != y_i``. Models belong to families (e.g. one architecture trained several times); family
``f`` has its own difficulty ``h_fi ~ N(0, 1)`` and confuser ``r_fi``. Model ``m`` of family
``f`` is right on input ``i`` when
``sqrt(rho) d_i + sqrt(rho_f) h_fi + sqrt(1 - rho - rho_f) e_mi < Phi^-1(acc_m)`` with
``e_mi ~ N(0, 1)`` independent, so each model's expected accuracy is ``acc_m``, all models tend
to fail on the same hard inputs (``rho``) and a family's models even more so (``rho_f``). A
wrong model says the family's confuser with probability ``confusion`` (the global ``r_i`` with
probability ``shared_confusion`` instead), else a uniformly random other class. With a large
family of similar weak models the majority vote follows that family's errors.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
from numpy.typing import ArrayLike, NDArray
from scipy import special

from .._validation import RNGLike, check_int, check_rng
from ..exceptions import LabelwiseError

__all__ = ["SyntheticZoo", "synthetic_zoo"]


@dataclass(frozen=True, eq=False)
class SyntheticZoo:
    """Predictions of a synthetic zoo with the truth that generated them."""

    predictions: NDArray[np.int64]  # (n_models, N)
    labels: NDArray[np.int64]  # (N,)
    true_accuracy: NDArray[np.float64]  # (n_models,) realised accuracy on the N inputs
    n_classes: int


def synthetic_zoo(
    accuracies: ArrayLike,
    n_inputs: int,
    *,
    n_classes: int = 10,
    correlation: float = 0.5,
    confusion: float = 0.5,
    families: ArrayLike | None = None,
    family_correlation: float = 0.0,
    shared_confusion: float = 0.5,
    rng: RNGLike = None,
) -> SyntheticZoo:
    """A zoo whose model ``m`` is right on about ``accuracies[m]`` of ``n_inputs`` inputs.

    See the module docstring for the generator. ``correlation`` in [0, 1) and ``confusion``
    in [0, 1]; ``accuracies`` in (0, 1); ``families``: one integer family id per model
    (default: every model its own family); ``correlation + family_correlation < 1``.
    """
    acc = np.asarray(accuracies, dtype=np.float64)
    if acc.ndim != 1 or acc.size < 1 or not np.all((acc > 0) & (acc < 1)):
        raise LabelwiseError(f"accuracies must be a 1-D array in (0, 1), got {acc!r}")
    n = check_int(n_inputs, "n_inputs")
    c = check_int(n_classes, "n_classes", minimum=2)
    if not 0 <= correlation < 1:
        raise LabelwiseError(f"correlation must be in [0, 1), got {correlation}")
    if not 0 <= confusion <= 1 or not 0 <= shared_confusion <= 1:
        raise LabelwiseError(f"confusion must be in [0, 1], got {confusion}, {shared_confusion}")
    if not 0 <= family_correlation < 1 - correlation:
        raise LabelwiseError(
            f"family_correlation must be in [0, 1 - correlation), got {family_correlation}"
        )
    fam = np.arange(acc.size) if families is None else np.asarray(families, dtype=np.int64)
    if fam.shape != acc.shape:
        raise LabelwiseError(f"families must have one id per model, got shape {fam.shape}")
    _, fam = np.unique(fam, return_inverse=True)
    n_fam = int(fam.max()) + 1
    gen = check_rng(rng)
    labels = gen.integers(0, c, n)
    confuser = (labels + gen.integers(1, c, n)) % c
    fam_confuser = (labels[None, :] + gen.integers(1, c, (n_fam, n))) % c
    difficulty = gen.standard_normal(n)
    fam_difficulty = gen.standard_normal((n_fam, n))
    noise = gen.standard_normal((acc.size, n))
    z = (
        np.sqrt(correlation) * difficulty[None, :]
        + np.sqrt(family_correlation) * fam_difficulty[fam]
        + np.sqrt(1 - correlation - family_correlation) * noise
    )
    right = z < special.ndtri(acc)[:, None]
    other = (labels[None, :] + gen.integers(1, c, (acc.size, n))) % c
    which = np.where(
        gen.random(n)[None, :] < shared_confusion, confuser[None, :], fam_confuser[fam]
    )
    wrong = np.where(gen.random((acc.size, n)) < confusion, which, other)
    pred = np.where(right, labels[None, :], wrong).astype(np.int64)
    return SyntheticZoo(pred, labels, (pred == labels[None, :]).mean(axis=1), c)


def regime_zoo(regime: str, n_inputs: int, *, rng: RNGLike = None) -> SyntheticZoo:
    """A zoo of one of the study's regimes (:data:`REGIMES`), accuracies drawn at random.

    strong-close: 10 models, accuracies U(0.90, 0.94); weak: 12 models, U(0.35, 0.60);
    spread: 24 models, U(0.45, 0.95); small: 6 models, U(0.70, 0.85). Models fall into 2 to
    4 families of random sizes; the weak zoo's wrong models agree more often.
    """
    table: dict[str, tuple[int, float, float, float, float, float]] = {
        # n_models, low, high, correlation, family correlation, confusion
        "strong-close": (10, 0.90, 0.94, 0.4, 0.3, 0.5),
        "weak": (12, 0.35, 0.60, 0.3, 0.4, 0.8),
        "spread": (24, 0.45, 0.95, 0.3, 0.3, 0.6),
        "small": (6, 0.70, 0.85, 0.3, 0.3, 0.6),
    }
    if regime not in table:
        raise LabelwiseError(f"regime must be one of {sorted(table)}, got {regime!r}")
    gen = check_rng(rng)
    m, lo, hi, rho, rho_f, conf = table[regime]
    acc = gen.uniform(lo, hi, m)
    families = gen.integers(0, gen.integers(2, 5), m)
    return synthetic_zoo(
        acc,
        n_inputs,
        correlation=rho,
        family_correlation=rho_f,
        confusion=conf,
        shared_confusion=0.3,
        families=families,
        rng=gen,
    )


REGIMES: Sequence[str] = ("strong-close", "weak", "spread", "small")
