"""A zoo of small classifiers trained here, for comparative testing (ranking many models).

The SDS paper (Meng et al., "Measuring Discrimination to Boost Comparative Testing for
Multiple Deep Learning Models", ICSE 2021, Sec. IV-A, Table I) ranks 80 real models, 28 of
them for MNIST, by their accuracy on a 10,000-input test set, from a few labelled inputs.
This module builds the analogue on MNIST-1D (Greydanus, 2020; generated locally, nothing is
downloaded): one shared operational pile and a zoo of linear models, MLPs and 1D CNNs of
varied width, depth, training length, training-set size and seed, each trained
deterministically in seconds on one CPU thread, so that the study trains its own models.

* :class:`ModelSpec` -- one model's architecture and training recipe;
* :func:`default_zoo` -- 28 specs (the paper's MNIST count) whose operational accuracies
  are spread over about 0.68-0.96, with a dense group of close CNNs at the top;
* :func:`small_zoo` -- a few of them, spread in accuracy (the paper's Sec. VI-D, four
  models);
* :func:`train_zoo` -- generate the data, train every model and run it once over the pile,
  returning a :class:`Zoo` (labels, predictions, probabilities, last-hidden-layer
  activations and accuracies of every model).

torch, mnist1d and scikit-learn are imported lazily: importing this module imports none of
them. Training uses :func:`labelwise.adapters.training.fit` (Adam with a one-cycle
learning-rate schedule).

With the defaults (``default_zoo()``, ``n_samples=10_000``: 5,000 training and 5,000
operational signals) the whole zoo trains in about a minute on one thread of a 2-core CPU;
accuracies range over 0.680-0.964 for ``seed=0`` (see :func:`default_zoo`).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import numpy as np
from numpy.typing import NDArray

from labelwise._validation import check_int
from labelwise.adapters.training import require_torch, train_zoo_models
from labelwise.exceptions import LabelwiseError

if TYPE_CHECKING:
    pass

__all__ = [
    "DATASETS",
    "FAMILIES",
    "ModelSpec",
    "Zoo",
    "default_zoo",
    "small_zoo",
    "train_zoo",
]

FAMILIES: tuple[str, ...] = ("linear", "mlp", "cnn")
"""Model families accepted by :class:`ModelSpec`."""

DATASETS: tuple[str, ...] = ("mnist1d", "digits")
"""Datasets accepted by :func:`train_zoo`."""

N_CLASSES = 10


# -------------------------------------------------------------------------------- specs


@dataclass(frozen=True)
class ModelSpec:
    """One model of a zoo: architecture and training recipe.

    Architectures (inputs are length-``L`` signals: 40 for MNIST-1D, 64 flattened pixels
    for the digits):

    * ``"linear"`` -- softmax regression, ``Linear(L, 10)``; ``width`` and ``depth`` must
      be 0 (the model has no hidden layer, so :attr:`Zoo.activations` holds ``None``);
    * ``"mlp"`` -- ``depth`` hidden layers of ``width`` units, each ``Linear -> ReLU``
      (then ``Dropout(dropout)`` if ``dropout > 0``), and a ``Linear(width, 10)`` head;
    * ``"cnn"`` -- ``depth`` blocks ``Conv1d(width channels, kernel_size, same padding)
      -> ReLU -> MaxPool1d(2)``, then ``Flatten -> Linear(width * (L >> depth), hidden)
      -> ReLU`` (then ``Dropout``) and a ``Linear(hidden, 10)`` head.

    Training: :func:`~labelwise.adapters.training.fit` with Adam, cross-entropy,
    a one-cycle schedule peaking at ``learning_rate``, ``epochs`` passes over a random
    ``train_fraction`` of the training set in mini-batches of ``batch_size``. ``seed``
    together with the zoo's seed (see :func:`train_zoo`) fixes the initial weights, the
    batch order and the training subset.
    """

    name: str
    family: str
    width: int = 0
    depth: int = 0
    epochs: int = 20
    seed: int = 0
    learning_rate: float = 3e-3
    kernel_size: int = 5
    hidden: int = 64
    dropout: float = 0.0
    train_fraction: float = 1.0
    batch_size: int = 128

    def __post_init__(self) -> None:
        if not isinstance(self.name, str) or not self.name.strip():
            raise LabelwiseError(f"name must be a non-empty string; got {self.name!r}")
        if self.family not in FAMILIES:
            raise LabelwiseError(f"family must be one of {FAMILIES}; got {self.family!r}")
        minimum = 0 if self.family == "linear" else 1
        maximum = 0 if self.family == "linear" else None
        check_int(self.width, "width", minimum=minimum, maximum=maximum)
        check_int(self.depth, "depth", minimum=minimum, maximum=maximum)
        check_int(self.epochs, "epochs", minimum=1)
        check_int(self.seed, "seed", minimum=0, maximum=2**32 - 1)
        check_int(self.kernel_size, "kernel_size", minimum=1)
        if self.kernel_size % 2 == 0:
            raise LabelwiseError(f"kernel_size must be odd; got {self.kernel_size}")
        check_int(self.hidden, "hidden", minimum=1)
        check_int(self.batch_size, "batch_size", minimum=1)
        if not _is_real(self.learning_rate) or not (
            math.isfinite(self.learning_rate) and self.learning_rate > 0
        ):
            raise LabelwiseError(f"learning_rate must be positive; got {self.learning_rate!r}")
        if not _is_real(self.dropout) or not 0.0 <= self.dropout < 1.0:
            raise LabelwiseError(f"dropout must be in [0, 1); got {self.dropout!r}")
        if not _is_real(self.train_fraction) or not 0.0 < self.train_fraction <= 1.0:
            raise LabelwiseError(f"train_fraction must be in (0, 1]; got {self.train_fraction!r}")

    @property
    def has_hidden_layer(self) -> bool:
        """Whether the model has a hidden layer (every family except ``"linear"``)."""
        return self.family != "linear"


def _is_real(value: Any) -> bool:
    return isinstance(value, int | float | np.integer | np.floating) and not isinstance(value, bool)


def _cnn(
    width: int,
    depth: int,
    epochs: int,
    *,
    k: int = 5,
    lr: float = 1e-2,
    hidden: int = 64,
    fraction: float = 1.0,
    seed: int = 0,
) -> ModelSpec:
    name = f"cnn{width}x{depth}-k{k}" + ("" if hidden == 64 else f"-h{hidden}") + f"-e{epochs}"
    name += _suffix(lr, 1e-2, fraction, seed)
    return ModelSpec(
        name,
        "cnn",
        width,
        depth,
        epochs,
        seed,
        lr,
        kernel_size=k,
        hidden=hidden,
        train_fraction=fraction,
    )


def _mlp(
    width: int,
    depth: int,
    epochs: int,
    *,
    lr: float = 3e-3,
    dropout: float = 0.0,
    fraction: float = 1.0,
    seed: int = 0,
) -> ModelSpec:
    name = f"mlp{width}x{depth}-e{epochs}"
    if dropout:
        name += f"-drop{dropout:g}"
    name += _suffix(lr, 3e-3, fraction, seed)
    return ModelSpec(
        name, "mlp", width, depth, epochs, seed, lr, dropout=dropout, train_fraction=fraction
    )


def _suffix(lr: float, default_lr: float, fraction: float, seed: int) -> str:
    out = ""
    if lr != default_lr:
        out += f"-lr{lr:g}"
    if fraction != 1.0:
        out += f"-frac{fraction:g}"
    if seed:
        out += f"-s{seed}"
    return out


def default_zoo() -> list[ModelSpec]:
    """The default zoo: 28 models (the paper's MNIST count), 22 CNNs and 6 MLPs.

    Accuracies are spread by architecture (1-3 conv blocks of 8-48 channels with kernels
    3-7; MLPs of 2-3 hidden layers of 128-256 units, some with dropout), training length
    (6-60 epochs), learning rate, training-set size (a quarter, half or all of the 5,000
    training signals) and seed. As in the paper's MNIST zoo (0.88-0.996, most models
    within a point of each other near the top), there is a dense group of close models
    at the top and a tail below. One-hidden-layer or narrower MLPs and a linear model are
    left out: on MNIST-1D they reach only 0.28-0.62 and would stretch the range far
    beyond the paper's.

    Measured operational accuracy with :func:`train_zoo`'s defaults (5,000 operational
    signals; seed 0, seeds 1 and 2 in brackets), from the most to the least accurate at
    seed 0:

    ===============================  =======================
    model                            accuracy
    ===============================  =======================
    ``cnn48x3-k5-e16``               0.964 (0.967, 0.962)
    ``cnn32x3-k5-e20-s1``            0.962 (0.969, 0.962)
    ``cnn32x3-k5-e20``               0.961 (0.961, 0.953)
    ``cnn32x3-k5-e20-s2``            0.956 (0.966, 0.959)
    ``cnn32x2-k5-e20``               0.951 (0.962, 0.952)
    ``cnn32x3-k7-e16``               0.950 (0.943, 0.954)
    ``cnn24x3-k3-e20``               0.945 (0.945, 0.959)
    ``cnn24x2-k5-e16``               0.928 (0.942, 0.934)
    ``cnn32x3-k5-e20-frac0.5``       0.924 (0.927, 0.912)
    ``cnn32x3-k5-e20-frac0.5-s1``    0.916 (0.917, 0.921)
    ``cnn16x3-k5-e20``               0.912 (0.933, 0.923)
    ``cnn16x3-k3-e16``               0.906 (0.927, 0.921)
    ``cnn32x3-k5-e12-lr0.005``       0.901 (0.912, 0.899)
    ``cnn8x2-k5-e20``                0.878 (0.863, 0.823)
    ``cnn32x3-k5-e10-lr0.005``       0.873 (0.871, 0.880)
    ``cnn8x3-k5-e20``                0.850 (0.860, 0.845)
    ``cnn16x2-k5-e12``               0.848 (0.892, 0.868)
    ``cnn32x3-k5-e8-lr0.005``        0.842 (0.849, 0.837)
    ``cnn32x3-k5-e24-frac0.25``      0.825 (0.844, 0.838)
    ``cnn32x3-k5-e6-lr0.005``        0.763 (0.768, 0.714)
    ``cnn16x1-k7-h32-e20``           0.760 (0.788, 0.833)
    ``mlp256x3-e40-drop0.2-s1``      0.746 (0.755, 0.749)
    ``mlp256x3-e40-drop0.2``         0.746 (0.762, 0.755)
    ``mlp256x3-e60``                 0.730 (0.743, 0.733)
    ``cnn8x1-k5-h32-e20``            0.724 (0.766, 0.720)
    ``mlp256x2-e40``                 0.690 (0.711, 0.695)
    ``mlp128x3-e60``                 0.687 (0.698, 0.708)
    ``mlp256x2-e40-drop0.3``         0.680 (0.694, 0.678)
    ===============================  =======================

    Seed 0: range 0.680-0.964 (28.4 points), 28 distinct accuracies; neighbours in the
    ranking are a median 0.56 points apart (0.02 to 6.2; two pairs differ by a single
    input). Seeds 1 and 2: ranges 0.694-0.969 and 0.678-0.962. The ranking changes
    somewhat with the seed, mostly among models within a point or two of each other.

    Names read ``cnn<channels>x<blocks>-k<kernel>[-h<hidden>]-e<epochs>`` and
    ``mlp<width>x<depth>-e<epochs>``, then any dropout, a learning rate other than the
    family's usual one (0.01 for the CNNs, 0.003 for the MLPs), the training fraction if
    below 1 and the seed if not 0.
    """
    return [
        # CNNs, strong: full data, many epochs
        _cnn(32, 3, 20),
        _cnn(32, 3, 20, seed=1),
        _cnn(32, 3, 20, seed=2),
        _cnn(48, 3, 16),
        _cnn(32, 3, 16, k=7),
        _cnn(32, 2, 20),
        _cnn(24, 2, 16),
        _cnn(24, 3, 20, k=3),
        _cnn(32, 3, 12, lr=5e-3),
        _cnn(16, 3, 20),
        # CNNs, weaker: fewer epochs, smaller, or less data
        _cnn(32, 3, 20, fraction=0.5),
        _cnn(32, 3, 20, fraction=0.5, seed=1),
        _cnn(16, 3, 16, k=3),
        _cnn(32, 3, 10, lr=5e-3),
        _cnn(16, 2, 12),
        _cnn(8, 3, 20),
        _cnn(32, 3, 8, lr=5e-3),
        _cnn(32, 3, 24, fraction=0.25),
        _cnn(8, 2, 20),
        _cnn(32, 3, 6, lr=5e-3),
        _cnn(16, 1, 20, k=7, hidden=32),
        _cnn(8, 1, 20, hidden=32),
        # MLPs
        _mlp(256, 3, 40, dropout=0.2),
        _mlp(256, 3, 40, dropout=0.2, seed=1),
        _mlp(256, 3, 60),
        _mlp(256, 2, 40),
        _mlp(128, 3, 60),
        _mlp(256, 2, 40, dropout=0.3),
    ]


# Names of default_zoo() from the most to the least accurate, as measured with
# train_zoo's defaults (seed 0, see default_zoo); small_zoo picks evenly spaced ranks.
_RANKING: tuple[str, ...] = (
    "cnn48x3-k5-e16",
    "cnn32x3-k5-e20-s1",
    "cnn32x3-k5-e20",
    "cnn32x3-k5-e20-s2",
    "cnn32x2-k5-e20",
    "cnn32x3-k7-e16",
    "cnn24x3-k3-e20",
    "cnn24x2-k5-e16",
    "cnn32x3-k5-e20-frac0.5",
    "cnn32x3-k5-e20-frac0.5-s1",
    "cnn16x3-k5-e20",
    "cnn16x3-k3-e16",
    "cnn32x3-k5-e12-lr0.005",
    "cnn8x2-k5-e20",
    "cnn32x3-k5-e10-lr0.005",
    "cnn8x3-k5-e20",
    "cnn16x2-k5-e12",
    "cnn32x3-k5-e8-lr0.005",
    "cnn32x3-k5-e24-frac0.25",
    "cnn32x3-k5-e6-lr0.005",
    "cnn16x1-k7-h32-e20",
    "mlp256x3-e40-drop0.2-s1",
    "mlp256x3-e40-drop0.2",
    "mlp256x3-e60",
    "cnn8x1-k5-h32-e20",
    "mlp256x2-e40",
    "mlp128x3-e60",
    "mlp256x2-e40-drop0.3",
)


def small_zoo(n: int = 4) -> list[ModelSpec]:
    """``n`` specs of :func:`default_zoo`, spread in accuracy (the paper's Sec. VI-D).

    The models sit at evenly spaced accuracy ranks of the default zoo (as measured with
    :func:`train_zoo`'s defaults, ``seed=0``), always including the most and the least
    accurate; they are listed in :func:`default_zoo`'s order, so that :meth:`Zoo.select`
    can pick them out of a trained default zoo (``zoo.select([s.name for s in
    small_zoo()])``). ``n=4`` gives ranks 1, 10, 19 and 28: ``cnn48x3-k5-e16`` (0.964),
    ``cnn32x3-k5-e20-frac0.5-s1`` (0.916), ``cnn32x3-k5-e24-frac0.25`` (0.825) and
    ``mlp256x2-e40-drop0.3`` (0.680), about 10 s of training.
    """
    specs = default_zoo()
    n = check_int(n, "n", minimum=2, maximum=len(specs))
    picked = {_RANKING[round(i)] for i in np.linspace(0, len(_RANKING) - 1, n)}
    return [s for s in specs if s.name in picked]


# ---------------------------------------------------------------------------------- zoo


@dataclass(frozen=True, eq=False)
class Zoo:
    """Trained models' outputs on one shared operational pile.

    Attributes
    ----------
    dataset:
        ``"mnist1d"`` or ``"digits"``.
    seed:
        The zoo's seed (data generation and, with each spec's seed, training).
    names:
        The models' names, in order.
    specs:
        The models' :class:`ModelSpec`, in the same order.
    labels:
        True labels of the pile, ``(N,)`` int64.
    predictions:
        ``(n_models, N)`` int64, the argmax of ``probabilities``.
    probabilities:
        ``(n_models, N, C)`` float32 softmax outputs (rows sum to 1).
    activations:
        One entry per model: ``(N, m_i)`` float32, the input of the model's last ``Linear``
        (its last hidden layer), or ``None`` for a model without a hidden layer.
    train_seconds:
        Wall-clock training time of each model (not deterministic).
    """

    dataset: str
    seed: int
    names: list[str]
    specs: tuple[ModelSpec, ...]
    labels: NDArray[np.int64]
    predictions: NDArray[np.int64]
    probabilities: NDArray[np.float32]
    activations: list[NDArray[np.float32] | None]
    train_seconds: tuple[float, ...] = field(default=())

    @property
    def n_models(self) -> int:
        return len(self.names)

    @property
    def n_inputs(self) -> int:
        """Size ``N`` of the operational pile."""
        return int(self.labels.shape[0])

    @property
    def correct(self) -> NDArray[np.bool_]:
        """``(n_models, N)``: whether each model classifies each input correctly."""
        out: NDArray[np.bool_] = self.predictions == self.labels[None, :]
        return out

    @property
    def accuracies(self) -> NDArray[np.float64]:
        """``(n_models,)`` true accuracies on the pile (NaN for an empty pile)."""
        if self.n_inputs == 0:
            return np.full(self.n_models, np.nan)
        out: NDArray[np.float64] = self.correct.mean(axis=1, dtype=np.float64)
        return out

    def select(self, models: Sequence[int | str]) -> Zoo:
        """A zoo with only ``models`` (indices or names), in the given order."""
        index = {name: i for i, name in enumerate(self.names)}
        rows: list[int] = []
        for m in models:
            if isinstance(m, str):
                if m not in index:
                    raise LabelwiseError(f"no model named {m!r} in the zoo")
                rows.append(index[m])
            else:
                rows.append(check_int(m, "model index", minimum=0, maximum=self.n_models - 1))
        if not rows:
            raise LabelwiseError("select at least one model")
        if len(set(rows)) != len(rows):
            raise LabelwiseError(f"models must be distinct; got {list(models)!r}")
        return Zoo(
            dataset=self.dataset,
            seed=self.seed,
            names=[self.names[i] for i in rows],
            specs=tuple(self.specs[i] for i in rows),
            labels=self.labels,
            predictions=self.predictions[rows],
            probabilities=self.probabilities[rows],
            activations=[self.activations[i] for i in rows],
            train_seconds=tuple(self.train_seconds[i] for i in rows) if self.train_seconds else (),
        )

    def __repr__(self) -> str:
        acc = self.accuracies
        span = f"{acc.min():.3f}-{acc.max():.3f}" if acc.size else "n/a"
        return (
            f"Zoo(dataset={self.dataset!r}, n_models={self.n_models}, "
            f"n_inputs={self.n_inputs}, accuracies={span})"
        )


# ----------------------------------------------------------------------------- training


def _load(
    dataset: str, n_samples: int | None, seed: int
) -> tuple[NDArray[np.float32], NDArray[np.int64], NDArray[np.float32], NDArray[np.int64]]:
    """``(x_train, y_train, x_op, y_op)`` with 2D float32 inputs ``(rows, L)``."""
    if dataset == "mnist1d":
        from labelwise.experiments.mnist1d import load_mnist1d

        return load_mnist1d(10_000 if n_samples is None else n_samples, seed=seed)
    if n_samples is not None:
        raise LabelwiseError("n_samples applies to dataset='mnist1d' only")
    from sklearn.model_selection import train_test_split

    from labelwise.experiments.digits import load_digit_images

    images, labels = load_digit_images()
    x_train, x_op, y_train, y_op = train_test_split(
        images.reshape(len(images), -1),
        labels,
        train_size=0.5,
        stratify=labels,
        random_state=seed,
    )
    return (
        np.ascontiguousarray(x_train, dtype=np.float32),
        np.asarray(y_train, dtype=np.int64),
        np.ascontiguousarray(x_op, dtype=np.float32),
        np.asarray(y_op, dtype=np.int64),
    )


def _check_specs(specs: Any) -> tuple[ModelSpec, ...]:
    if isinstance(specs, ModelSpec | str) or not isinstance(specs, Sequence):
        raise LabelwiseError(f"specs must be a sequence of ModelSpec; got {type(specs).__name__}")
    out = tuple(specs)
    if not out:
        raise LabelwiseError("specs must hold at least one ModelSpec")
    for spec in out:
        if not isinstance(spec, ModelSpec):
            raise LabelwiseError(f"specs must hold ModelSpec objects; got {spec!r}")
    names = [s.name for s in out]
    duplicates = sorted({n for n in names if names.count(n) > 1})
    if duplicates:
        raise LabelwiseError(f"model names must be unique; repeated: {duplicates}")
    return out


def _training_seed(zoo_seed: int, spec_seed: int) -> int:
    """The seed handed to ``fit``: a hash of the zoo's and the spec's seeds."""
    return int(np.random.SeedSequence([zoo_seed, spec_seed]).generate_state(1)[0])


def train_zoo(
    specs: Sequence[ModelSpec] | None = None,
    *,
    dataset: str = "mnist1d",
    n_samples: int | None = None,
    seed: int = 0,
    progress: bool = True,
) -> Zoo:
    """Train every model of ``specs`` (default :func:`default_zoo`) and run it over one pile.

    ``dataset="mnist1d"`` generates ``n_samples`` signals (default 10,000) with
    :func:`~labelwise.experiments.mnist1d.load_mnist1d` (``seed``): half for training, the
    other half (5,000 signals by default) is the operational pile shared by all models.
    ``dataset="digits"`` splits scikit-learn's 1797 digits (flattened to 64 pixels) into
    stratified halves (``seed``); ``n_samples`` must then be left ``None``.

    Each model trains on one thread (``torch.set_num_threads(1)``, restored afterwards)
    with :func:`~labelwise.adapters.training.fit` seeded by a hash of
    ``(seed, spec.seed)`` (``numpy.random.SeedSequence``), which also draws the
    ``train_fraction`` subset; the caller's global random states are left untouched. The
    same arguments give identical outputs on the same machine and thread count.

    ``progress`` shows a bar on a terminal (:func:`labelwise._progress.progress_bar`).

    Measured for ``default_zoo()`` with the defaults on a shared 2-core CPU (four runs):
    54-65 s of training in all (0.8-5.5 s per model; the 256-wide three-layer MLPs and the
    32- to 48-channel three-block CNNs are the slowest), 57-70 s wall-clock including
    about 2 s to import torch and 1.5 s to generate the data. Accuracies: see
    :func:`default_zoo`.
    """
    specs_t = _check_specs(default_zoo() if specs is None else specs)
    if dataset not in DATASETS:
        raise LabelwiseError(f"dataset must be one of {DATASETS}; got {dataset!r}")
    seed = check_int(seed, "seed", minimum=0, maximum=2**32 - 1)
    if n_samples is not None:
        n_samples = check_int(n_samples, "n_samples", minimum=20)
    require_torch(__name__)
    x_train, y_train, x_op, y_op = _load(dataset, n_samples, seed)
    length = x_train.shape[1]
    for spec in specs_t:
        if spec.family == "cnn" and length >> spec.depth < 1:
            raise LabelwiseError(
                f"{spec.name}: {spec.depth} pooling blocks do not fit length-{length} inputs"
            )
    predictions, probabilities, activations, seconds = train_zoo_models(
        specs_t,
        x_train,
        y_train,
        x_op,
        seeds=[_training_seed(seed, spec.seed) for spec in specs_t],
        n_classes=N_CLASSES,
        progress=progress,
    )
    return Zoo(
        dataset=dataset,
        seed=seed,
        names=[s.name for s in specs_t],
        specs=specs_t,
        labels=np.asarray(y_op, dtype=np.int64).copy(),
        predictions=predictions,
        probabilities=probabilities,
        activations=activations,
        train_seconds=tuple(seconds),
    )
