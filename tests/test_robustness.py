"""Tests for labelwise.dependability.robustness (confidence loss, Sec. II-D)."""

from __future__ import annotations

import json
import math
import subprocess
import sys

import numpy as np
import pytest

torch = pytest.importorskip("torch")
nn = torch.nn

from labelwise.dependability.robustness import (  # noqa: E402
    FGSM,
    PGD,
    Brightness,
    ConfidenceLoss,
    DeepFool,
    GaussianNoise,
    Patch,
    Rotation,
    confidence_loss,
    plot_confidence_loss,
)
from labelwise.exceptions import LabelwiseError, MissingDependencyError  # noqa: E402


def identity(x: torch.Tensor) -> torch.Tensor:
    return x


# --------------------------------------------------------------------------- models


class SumModel(nn.Module):
    """Two classes, logits (w * sum(x), 0): p(class 0) = sigmoid(w * sum(x))."""

    def __init__(self, w: float = 1.0) -> None:
        super().__init__()
        self.lin = nn.Linear(1, 1, bias=False)
        with torch.no_grad():
            self.lin.weight.fill_(w)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        s = self.lin(x.reshape(x.shape[0], -1).sum(dim=1, keepdim=True))
        return torch.cat([s, torch.zeros_like(s)], dim=1)


def sigmoid(v: np.ndarray) -> np.ndarray:
    return 1.0 / (1.0 + np.exp(-v))


class SmallCNN(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.conv = nn.Conv2d(1, 8, kernel_size=3, padding=1)
        self.pool = nn.MaxPool2d(2)
        self.drop = nn.Dropout(0.2)
        self.fc = nn.Linear(8 * 4 * 4, 10)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        h = self.pool(torch.relu(self.conv(x)))
        return self.fc(self.drop(h.flatten(1)))


@pytest.fixture(scope="module")
def digits() -> tuple[SmallCNN, torch.Tensor, torch.Tensor]:
    """A small CNN trained on scikit-learn digits (8x8, values / 16 in [0, 1]), seeded."""
    datasets = pytest.importorskip("sklearn.datasets")
    data = datasets.load_digits()
    x = torch.tensor(data.images / 16.0, dtype=torch.float32).unsqueeze(1)
    y = torch.tensor(data.target, dtype=torch.int64)
    perm = torch.from_numpy(np.random.default_rng(0).permutation(len(y)))
    x, y = x[perm], y[perm]
    x_train, y_train, x_test, y_test = x[:1400], y[:1400], x[1400:1560], y[1400:1560]
    torch.manual_seed(0)
    model = SmallCNN()
    opt = torch.optim.Adam(model.parameters(), lr=0.01)
    g = torch.Generator().manual_seed(0)
    for _ in range(8):
        order = torch.randperm(len(y_train), generator=g)
        for i in range(0, len(order), 64):
            idx = order[i : i + 64]
            opt.zero_grad()
            nn.functional.cross_entropy(model(x_train[idx]), y_train[idx]).backward()
            opt.step()
    model.zero_grad(set_to_none=True)
    model.eval()
    with torch.no_grad():
        acc = (model(x_test).argmax(1) == y_test).float().mean().item()
    assert acc > 0.9
    return model, x_test, y_test


# --------------------------------------------------------------------------- trained CNN


def test_losses_bounded_and_summaries(digits) -> None:
    model, x, y = digits
    res = confidence_loss(
        model, x, y, [FGSM(0.1), GaussianNoise(0.1), Rotation(15), Patch(3)], rng=0, progress=False
    )
    assert isinstance(res, ConfidenceLoss)
    n, k = len(y), 4
    assert res.loss.shape == (n,) and res.p_after.shape == (n, k)
    assert np.all((res.loss >= 0) & (res.loss <= 1))
    assert np.all((res.loss_by_transformer >= 0) & (res.loss_by_transformer <= 1))
    np.testing.assert_allclose(res.loss, res.loss_by_transformer.max(axis=1))
    np.testing.assert_array_equal(res.targets, y.numpy())
    assert res.maximum == pytest.approx(res.loss.max())
    assert res.mean <= res.top_mean <= res.maximum
    assert res.n_top == math.ceil(0.1 * n)
    assert res.top_mean == pytest.approx(np.sort(res.loss)[-res.n_top :].mean())
    assert res.n_worst.sum() + res.n_unharmed == n
    assert not res.loss.flags.writeable
    json.dumps(res.to_dict())
    text = res.table()
    assert "FGSM(eps=0.1)" in text and "average" in text


def test_identity_transformer_gives_zero_loss(digits) -> None:
    model, x, y = digits
    res = confidence_loss(model, x, y, identity, rng=0, progress=False)
    assert res.transformers == ("identity",)
    assert np.all(res.loss == 0)
    assert np.all(res.worst == -1)
    assert res.mean == 0 and res.n_unharmed == len(y)
    twice = confidence_loss(model, x[:5], y[:5], [identity, identity], progress=False)
    assert twice.transformers == ("identity", "identity#2")
    # eps = 0 attacks are the identity too (up to clamping, a no-op on [0, 1] inputs)
    res0 = confidence_loss(model, x, y, [FGSM(0.0), Brightness(0.0)], progress=False)
    assert res0.maximum == pytest.approx(0.0, abs=1e-6)


def test_larger_eps_does_more_harm_and_pgd_beats_fgsm(digits) -> None:
    model, x, y = digits
    res = confidence_loss(
        model,
        x,
        y,
        [FGSM(0.02), FGSM(0.1), PGD(0.1, alpha=0.02, steps=10)],
        batch_size=64,
        rng=0,
        progress=False,
    )
    small, large, pgd = res.mean_by_transformer
    assert large >= small
    assert pgd >= large
    assert large > 0.05  # the attack does real harm on a trained network


def test_deepfool_runs_and_harms(digits) -> None:
    model, x, y = digits
    res = confidence_loss(model, x[:12], y[:12], DeepFool(steps=20), rng=0, progress=False)
    assert np.all((res.loss >= 0) & (res.loss <= 1))
    assert res.mean > 0


def test_deterministic_for_a_seed_and_global_rng_untouched(digits) -> None:
    model, x, y = digits
    ts = [GaussianNoise(0.2), Patch(3), PGD(0.05, alpha=0.01, steps=3)]
    torch.manual_seed(123)
    state = torch.get_rng_state()
    a = confidence_loss(model, x[:40], y[:40], ts, rng=7, progress=False)
    assert torch.equal(torch.get_rng_state(), state)
    b = confidence_loss(model, x[:40], y[:40], ts, rng=7, progress=False)
    np.testing.assert_array_equal(a.p_after, b.p_after)
    c = confidence_loss(model, x[:40], y[:40], ts, rng=8, progress=False)
    assert not np.array_equal(a.p_after[:, :2], c.p_after[:, :2])


def test_training_mode_and_grad_flags_restored(digits) -> None:
    model, x, y = digits
    model.train()
    model.drop.eval()  # a mixed state must come back as it was
    try:
        res = confidence_loss(
            model, x[:10], y[:10], [FGSM(0.05), DeepFool(steps=3)], progress=False
        )
        assert model.training and model.conv.training and not model.drop.training
        assert all(p.requires_grad for p in model.parameters())
        assert all(p.grad is None for p in model.parameters())
        # dropout did not run: the result equals the one in eval mode
        model.eval()
        again = confidence_loss(model, x[:10], y[:10], [FGSM(0.05)], progress=False)
        np.testing.assert_allclose(res.p_before, again.p_before)
        assert not model.training
    finally:
        model.eval()


def test_plot(digits, tmp_path) -> None:
    pytest.importorskip("matplotlib")
    model, x, y = digits
    res = confidence_loss(model, x[:30], y[:30], [FGSM(0.1), Rotation(10)], progress=False)
    out = plot_confidence_loss(res, tmp_path / "loss.png")
    assert out is not None and out.read_bytes()[:4] == b"\x89PNG"


# --------------------------------------------------------------------------- known values


def test_brightness_known_values_on_linear_model() -> None:
    model = SumModel(w=0.5)
    x = torch.tensor([[0.2, 0.4, 0.3], [0.6, 0.5, 0.7], [0.3, 0.3, 0.3]])
    y = np.array([0, 1, 0])
    delta = 0.2
    res = confidence_loss(
        model, x, y, {"darker": Brightness(-delta), "brighter": Brightness(delta)}, progress=False
    )
    s = 0.5 * x.sum(dim=1).numpy().astype(np.float64)
    p0 = np.where(y == 0, sigmoid(s), 1 - sigmoid(s))
    # darker lowers class 0's logit by 0.5 * 3 * 0.2 = 0.3, brighter raises it
    dark = np.where(y == 0, sigmoid(s - 0.3), 1 - sigmoid(s - 0.3))
    bright = np.where(y == 0, sigmoid(s + 0.3), 1 - sigmoid(s + 0.3))
    np.testing.assert_allclose(res.p_before, p0, rtol=1e-5)
    np.testing.assert_allclose(res.p_after, np.stack([dark, bright], axis=1), rtol=1e-5)
    expected = np.maximum(0, np.maximum(p0 - dark, p0 - bright))
    np.testing.assert_allclose(res.loss, expected, rtol=1e-5)
    # worst attribution: darkening hurts class 0, brightening hurts class 1
    assert res.transformers == ("darker", "brighter")
    np.testing.assert_array_equal(res.worst, [0, 1, 0])
    assert res.worst_names == ("darker", "brighter", "darker")
    np.testing.assert_array_equal(res.n_worst, [2, 1])
    assert res.mean == pytest.approx(expected.mean(), rel=1e-5)
    assert res.maximum == pytest.approx(expected.max(), rel=1e-5)
    assert res.top_mean == pytest.approx(expected.max(), rel=1e-5)  # ceil(0.1 * 3) = 1


def test_fgsm_known_value_on_linear_model() -> None:
    # for logits (w * sum(x), 0) and label 0, FGSM moves every value by -eps * sign(w):
    # the logit drops by eps * w * d
    model = SumModel(w=1.0)
    x = torch.full((2, 4), 0.5)
    res = confidence_loss(model, x, [0, 1], FGSM(0.1), progress=False)
    s = 2.0
    np.testing.assert_allclose(res.p_after[:, 0], [sigmoid(s - 0.4), 1 - sigmoid(s + 0.4)], 1e-5)
    np.testing.assert_allclose(
        res.loss, [sigmoid(s) - sigmoid(s - 0.4), sigmoid(s + 0.4) - sigmoid(s)], rtol=1e-5
    )


def test_unlabelled_mode_uses_predicted_class() -> None:
    model = SumModel(w=1.0)
    x = torch.tensor([[0.9, 0.9], [-0.8, -0.9], [0.2, 0.1]])
    ts = [Brightness(-0.3, bounds=None), Brightness(0.3, bounds=None)]
    res = confidence_loss(model, x, None, ts, progress=False)
    predicted = np.array([0, 1, 0])
    np.testing.assert_array_equal(res.targets, predicted)
    assert not res.labelled
    assert np.all(res.p_before >= 0.5)
    same = confidence_loss(model, x, predicted, ts, progress=False)
    np.testing.assert_allclose(res.loss, same.loss)
    assert "predicted class" in res.table()


def test_loss_when_model_errs_uses_true_class() -> None:
    model = SumModel(w=1.0)
    x = torch.tensor([[1.0, 1.0]])  # predicts class 0 with p = sigmoid(2)
    res = confidence_loss(model, x, [1], Brightness(0.5, bounds=None), progress=False)
    p1 = 1 - sigmoid(np.array([2.0, 3.0]))
    assert res.p_before[0] == pytest.approx(p1[0])
    assert res.loss[0] == pytest.approx(p1[0] - p1[1])


def test_model_ending_in_softmax_is_not_softmaxed_twice() -> None:
    # a model whose last layer is a softmax returns probabilities; softmaxing them again
    # squeezed p(true class) toward 1/C (here sigmoid(1) = 0.73 at most) and shrank the loss
    model = nn.Sequential(SumModel(w=1.0), nn.Softmax(dim=1))
    x = torch.tensor([[1.0, 1.0], [0.2, 0.1]])
    res = confidence_loss(model, x, [0, 0], Brightness(-0.5, bounds=None), progress=False)
    s = np.array([2.0, 0.3])
    np.testing.assert_allclose(res.p_before, sigmoid(s), rtol=1e-5)
    np.testing.assert_allclose(res.p_after[:, 0], sigmoid(s - 1.0), rtol=1e-5)
    logits = confidence_loss(
        SumModel(w=1.0), x, [0, 0], Brightness(-0.5, bounds=None), progress=False
    )
    np.testing.assert_allclose(res.loss, logits.loss, rtol=1e-5)


def test_attacks_on_a_model_ending_in_softmax_see_its_logits() -> None:
    """torchattacks took a softmax-ending model's probabilities for logits: DeepFool on a
    5-class linear model lost 0.062 of the true class's probability on average against 0.047
    for the same model without the softmax (per input up to 0.31 apart), FGSM and PGD up to
    0.002. The attacks now see log-probabilities, logits of the same model: the same losses."""
    torch.manual_seed(0)
    lin = nn.Linear(16, 5)
    with torch.no_grad():
        lin.weight.mul_(4)
    logits_model = nn.Sequential(nn.Flatten(), lin)
    prob_model = nn.Sequential(nn.Flatten(), lin, nn.Softmax(dim=1))
    g = np.random.default_rng(0)
    x = g.random((40, 1, 4, 4)).astype(np.float32)
    y = g.integers(0, 5, 40)
    for t in (FGSM(0.05), PGD(0.05, alpha=0.01, steps=5), DeepFool(steps=3)):
        a = confidence_loss(logits_model, x, y, [t], rng=0, progress=False)
        b = confidence_loss(prob_model, x, y, [t], rng=0, progress=False)
        np.testing.assert_allclose(b.p_after, a.p_after, atol=1e-6)


def test_transforms_behave() -> None:
    dev = torch.device("cpu")
    rng = np.random.default_rng(0)
    img = torch.arange(16.0).reshape(1, 1, 4, 4) / 16
    rot = Rotation(90)._prepare(nn.Identity(), dev)(img, torch.zeros(1), rng)
    torch.testing.assert_close(rot, torch.rot90(img, 1, dims=(-2, -1)))
    patched = Patch(2, value=1.0, position=(1, 2))._prepare(nn.Identity(), dev)(img, None, rng)
    expected = img.clone()
    expected[..., 1:3, 2:4] = 1.0
    torch.testing.assert_close(patched, expected)
    ones = torch.full((3, 5, 5), 0.5)
    rand = Patch(2, value=0.0)._prepare(nn.Identity(), dev)(ones, None, rng)
    assert rand.shape == ones.shape
    assert torch.all((rand == 0).sum(dim=(1, 2)) == 4)
    noisy = GaussianNoise(5.0)._prepare(nn.Identity(), dev)(ones, None, rng)
    assert noisy.min() >= 0 and noisy.max() <= 1
    assert FGSM(0.1).name == "FGSM(eps=0.1)"
    with pytest.raises(AttributeError):
        FGSM(0.1).eps = 0.2  # type: ignore[misc]


# --------------------------------------------------------------------------- errors


@pytest.mark.parametrize(
    ("make", "word"),
    [
        (lambda: FGSM(-0.1), "eps"),
        (lambda: PGD(-1.0), "eps"),
        (lambda: PGD(0.1, alpha=0), "alpha"),
        (lambda: PGD(0.1, steps=0), "steps"),
        (lambda: DeepFool(overshoot=-1), "overshoot"),
        (lambda: GaussianNoise(-0.5), "sigma"),
        (lambda: GaussianNoise(float("nan")), "sigma"),
        (lambda: Brightness(0.1, bounds=(1, 0)), "bounds"),
        (lambda: Patch(0), "size"),
        (lambda: Patch(2, position=(-1, 0)), "position"),
    ],
)
def test_bad_transformer_parameters(make, word) -> None:
    with pytest.raises(LabelwiseError, match=word):
        make()


def test_bad_inputs_raise() -> None:
    model = SumModel()
    x = torch.full((3, 2), 0.5)
    with pytest.raises(LabelwiseError, match="inputs"):
        confidence_loss(model, torch.ones(3), None, identity, progress=False)
    with pytest.raises(LabelwiseError, match="labels"):
        confidence_loss(model, x, [0, 1], identity, progress=False)
    with pytest.raises(LabelwiseError, match="labels"):
        confidence_loss(model, x, [0, 1, 2], identity, progress=False)
    with pytest.raises(LabelwiseError, match="finite"):
        confidence_loss(model, torch.tensor([[0.1, float("nan")]]), None, identity)
    with pytest.raises(LabelwiseError, match=r"\[0, 1\]"):
        confidence_loss(model, x * 3, None, FGSM(0.1), progress=False)
    with pytest.raises(LabelwiseError, match="shape"):
        confidence_loss(model, x, None, lambda t: t[:, :1], progress=False)
    with pytest.raises(LabelwiseError, match="image"):
        confidence_loss(model, x, None, Rotation(10), progress=False)
    with pytest.raises(LabelwiseError, match="transformers"):
        confidence_loss(model, x, None, [], progress=False)
    with pytest.raises(LabelwiseError, match="top_fraction"):
        confidence_loss(model, x, None, identity, top_fraction=0, progress=False)
    with pytest.raises(LabelwiseError, match="logits"):
        confidence_loss(nn.Identity(), torch.full((3, 1), 0.5), None, identity, progress=False)


def test_missing_torchattacks(monkeypatch) -> None:
    monkeypatch.setitem(sys.modules, "torchattacks", None)
    with pytest.raises(MissingDependencyError, match="pip install --no-deps torchattacks"):
        confidence_loss(SumModel(), torch.full((2, 2), 0.5), None, FGSM(0.1), progress=False)
    # torch-written transformers do not need it
    confidence_loss(SumModel(), torch.full((2, 2), 0.5), None, Brightness(0.1), progress=False)


def test_missing_torch(monkeypatch) -> None:
    monkeypatch.setitem(sys.modules, "torch", None)
    with pytest.raises(MissingDependencyError, match=r"pip install 'labelwise\[torch\]'"):
        confidence_loss(object(), np.zeros((2, 2)), None, identity)


def test_import_does_not_import_torch() -> None:
    code = (
        "import sys; import labelwise.dependability.robustness as r; "
        "assert 'torch' not in sys.modules and 'torchattacks' not in sys.modules; "
        "r.FGSM(0.1); r.Rotation(5); r.Patch(2)"
    )
    subprocess.run([sys.executable, "-c", code], check=True)


def test_an_image_transformer_on_tabular_inputs_names_the_input_shape() -> None:
    """Rotation on (N, 2) rows said 'got (3, 2)': the shape of the batch the pile was cut
    into, not what the user passed per input. It now names one input's shape."""
    with pytest.raises(
        LabelwiseError, match=r"each input of shape \(H, W\).*got inputs of shape \(2,\)"
    ):
        confidence_loss(SumModel(), torch.full((3, 2), 0.5), None, [Rotation(15)], progress=False)
