"""The shape every trained classification context shares (digits, MNIST-1D)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np
from numpy.typing import NDArray

if TYPE_CHECKING:
    import torch


@dataclass(frozen=True, eq=False)
class ClassifierContext:
    """A trained classifier and its operational pile, run once through the model."""

    name: str
    model: torch.nn.Module
    images: NDArray[np.float32]
    labels: NDArray[np.int64]
    activations: NDArray[np.float32]
    probabilities: NDArray[np.float32]
    predictions: NDArray[np.int64]

    def scores(self) -> NDArray[np.float64]:
        """Per-row ``H``: 1.0 where the prediction is the label, else 0.0 (mean: accuracy)."""
        return (self.predictions == self.labels).astype(np.float64)

    @property
    def accuracy(self) -> float:
        """True operational accuracy: the fraction of ``predictions`` equal to ``labels``."""
        if self.labels.size == 0:
            return float("nan")
        return float(np.mean(self.predictions == self.labels))

    def __len__(self) -> int:
        return int(self.labels.shape[0])
