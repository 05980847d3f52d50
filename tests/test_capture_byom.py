"""Bring-your-own-model-and-pile edge cases of ``labelwise capture`` (small torch models)."""

from __future__ import annotations

import numpy as np
import pytest

torch = pytest.importorskip("torch")
nn = torch.nn

from labelwise.adapters._capture import CaptureWriter  # noqa: E402
from labelwise.adapters.torch import capture  # noqa: E402
from labelwise.exceptions import LabelwiseError  # noqa: E402


def _x(n: int = 40, d: int = 8) -> np.ndarray:
    return np.random.default_rng(0).standard_normal((n, d)).astype(np.float32)


# --------------------------------------------------------------------------- 1. half softmax


@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16])
def test_half_precision_softmax_outputs_are_not_softmaxed_twice(dtype: torch.dtype) -> None:
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(8, 16), nn.ReLU(), nn.Linear(16, 3), nn.Softmax(dim=1))
    model = model.to(dtype).eval()
    x = _x()
    with torch.no_grad():
        ref = model(torch.from_numpy(x).to(dtype)).float().numpy()
    cap = capture(model, x, progress=False, batch_size=16)
    assert cap.probabilities_given is True
    np.testing.assert_allclose(cap.outputs, ref, atol=1e-6)


def test_probability_decision_is_made_once_and_a_contradiction_is_an_error() -> None:
    probs = np.full((4, 2), 0.5, dtype=np.float32)
    logits = np.array([[3.0, -1.0]] * 4, dtype=np.float32)
    feats = np.zeros((4, 1), dtype=np.float32)
    with CaptureWriter(8, head="softmax", out=None) as writer:
        writer.write(0, feats, probs, "f")
        with pytest.raises(LabelwiseError, match="first batch were already probabilities"):
            writer.write(4, feats, logits, "f")
    with CaptureWriter(8, head="softmax", out=None) as writer:
        writer.write(0, feats, logits, "f")
        with pytest.raises(LabelwiseError, match="head='raw'"):
            writer.write(4, feats, probs, "f")


# --------------------------------------------------------------------------- 2. integer ids


class TextNet(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        torch.manual_seed(0)
        self.emb = nn.Embedding(100, 8)
        self.fc1 = nn.Linear(8, 16)
        self.fc2 = nn.Linear(16, 3)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.fc2(torch.relu(self.fc1(self.emb(x).mean(1))))


def test_embedding_models_get_integer_inputs() -> None:
    model = TextNet().eval()
    tokens = np.random.default_rng(0).integers(0, 100, (30, 12)).astype(np.int64)
    with torch.no_grad():
        ref = torch.softmax(model(torch.from_numpy(tokens)), dim=1).numpy()
    for pile in (tokens, tokens.astype(np.int32), torch.from_numpy(tokens)):
        cap = capture(model, pile, progress=False, batch_size=7)
        assert cap.layer == "fc2 (input)"
        np.testing.assert_allclose(cap.outputs, ref, atol=1e-6)
    with pytest.raises(LabelwiseError, match="integer ids"):
        capture(model, tokens + 0.5, progress=False)
