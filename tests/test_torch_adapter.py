"""Tests for labelwise.adapters.torch, with small real models built here."""

from __future__ import annotations

import importlib
import sys
import warnings
from pathlib import Path

import numpy as np
import pytest

torch = pytest.importorskip("torch")
nn = torch.nn

from labelwise.adapters.torch import Capture, capture, load_model  # noqa: E402
from labelwise.exceptions import LabelwiseError, MissingDependencyError  # noqa: E402

# --------------------------------------------------------------------------- models


def make_cnn() -> nn.Sequential:
    torch.manual_seed(0)
    return nn.Sequential(
        nn.Conv2d(1, 3, kernel_size=3),  # (N, 1, 6, 6) -> (N, 3, 4, 4)
        nn.ReLU(),
        nn.Flatten(),
        nn.Linear(48, 16),
        nn.ReLU(),
        nn.Linear(16, 5),
    )


class Net(nn.Module):
    """Named attributes, a nested container, dropout; forward is a chain of the children."""

    def __init__(self) -> None:
        super().__init__()
        torch.manual_seed(1)
        self.body = nn.Sequential(nn.Linear(10, 12), nn.Tanh())
        self.hidden = nn.Linear(12, 8)
        self.act = nn.ReLU()
        self.drop = nn.Dropout(0.5)
        self.head = nn.Linear(8, 3)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.head(self.drop(self.act(self.hidden(self.body(x)))))


class FunctionalNet(nn.Module):
    """Not a chain of its children: a functional ReLU sits between them."""

    def __init__(self) -> None:
        super().__init__()
        torch.manual_seed(2)
        self.fc = nn.Linear(10, 8)
        self.head = nn.Linear(8, 3)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.head(torch.relu(self.fc(x)) * 2.0)


class PairNet(nn.Module):
    """Returns (features, logits)."""

    def __init__(self) -> None:
        super().__init__()
        torch.manual_seed(3)
        self.fc = nn.Linear(10, 6)
        self.head = nn.Linear(6, 4)

    def forward(self, x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        features = torch.relu(self.fc(x))
        return features, self.head(features)


class SharedNet(nn.Module):
    """Calls the same Linear twice."""

    def __init__(self) -> None:
        super().__init__()
        torch.manual_seed(4)
        self.fc = nn.Linear(10, 10)
        self.head = nn.Linear(10, 3)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.head(self.fc(self.fc(x)))


def images(n: int = 37) -> np.ndarray:
    return np.random.default_rng(0).normal(size=(n, 1, 6, 6))


def vectors(n: int = 29) -> np.ndarray:
    return np.random.default_rng(1).normal(size=(n, 10)).astype(np.float32)


def t32(x: np.ndarray) -> torch.Tensor:
    return torch.from_numpy(np.asarray(x, dtype=np.float32))


def script_and_save(model: nn.Module, path: Path) -> Path:
    with warnings.catch_warnings():  # torch >= 2.9 deprecates TorchScript
        warnings.simplefilter("ignore", DeprecationWarning)
        torch.jit.save(torch.jit.script(model), str(path))
    return path


def no_hooks(model: nn.Module) -> bool:
    return all(not m._forward_hooks and not m._forward_pre_hooks for m in model.modules())


def close(a: np.ndarray, b: torch.Tensor | np.ndarray, atol: float = 1e-6) -> bool:
    expected = b.detach().numpy() if isinstance(b, torch.Tensor) else b
    return bool(np.allclose(a, expected, rtol=1e-5, atol=atol))


# --------------------------------------------------------------------------- values


def test_default_layer_is_input_of_last_linear_and_softmax_outputs() -> None:
    model = make_cnn()
    x = images()
    cap = capture(model, x, progress=False)
    assert isinstance(cap, Capture)
    assert cap.layer == "5 (input)" and cap.head == "softmax"
    assert cap.activations.dtype == np.float32 and cap.outputs.dtype == np.float32
    assert cap.activations.shape == (37, 16) and cap.outputs.shape == (37, 5)
    with torch.no_grad():
        hidden = model[:5](t32(x))
        logits = model(t32(x))
    assert close(cap.activations, hidden)
    assert close(cap.outputs, torch.softmax(logits, dim=1))
    np.testing.assert_allclose(cap.outputs.sum(axis=1), 1.0, atol=1e-6)
    assert "activations=(37, 16)" in repr(cap)


def test_batch_size_does_not_change_results() -> None:
    model = make_cnn()
    x = images()
    ref = capture(model, x, batch_size=1000, progress=False)
    for bs in (1, 7, 37):
        cap = capture(model, x, batch_size=bs, progress=False)
        assert close(cap.activations, ref.activations)
        assert close(cap.outputs, ref.outputs)


def test_tensor_memmap_and_numpy_inputs_agree(tmp_path: Path) -> None:
    model = make_cnn()
    x = images().astype(np.float32)
    path = tmp_path / "x.npy"
    np.save(path, x)
    mm = np.load(path, mmap_mode="r")  # read-only: must not trigger torch's warning
    a = capture(model, x, batch_size=8, progress=False)
    b = capture(model, mm, batch_size=8, progress=False)
    c = capture(model, torch.from_numpy(x), batch_size=8, progress=False)
    for other in (b, c):
        np.testing.assert_array_equal(a.activations, other.activations)
        np.testing.assert_array_equal(a.outputs, other.outputs)


def test_progress_bar_is_silent_off_a_terminal(capsys: pytest.CaptureFixture[str]) -> None:
    model = make_cnn()
    cap = capture(model, images(5), batch_size=2, progress=True)
    quiet = capture(model, images(5), batch_size=2, progress=False)
    np.testing.assert_array_equal(cap.outputs, quiet.outputs)
    assert "labelwise capture" not in capsys.readouterr().err  # pytest's stderr is no TTY


def test_eval_mode_used_and_training_flags_and_hooks_restored() -> None:
    model = Net()
    model.train()
    model.body.eval()  # mixed flags must come back exactly
    before = {name: m.training for name, m in model.named_modules()}
    x = vectors()
    cap1 = capture(model, x, progress=False)
    cap2 = capture(model, x, progress=False)
    assert {name: m.training for name, m in model.named_modules()} == before
    assert no_hooks(model)
    np.testing.assert_array_equal(cap1.outputs, cap2.outputs)  # dropout was off
    model.eval()
    with torch.no_grad():
        hidden = model.act(model.hidden(model.body(t32(x))))
        logits = model(t32(x))
    assert cap1.layer == "head (input)"
    assert close(cap1.activations, hidden)
    assert close(cap1.outputs, torch.softmax(logits, dim=1))


def test_hooks_removed_and_mode_restored_after_an_error() -> None:
    model = SharedNet().train()
    with pytest.raises(LabelwiseError, match="2 times"):
        capture(model, vectors(), layer="fc", progress=False)
    assert no_hooks(model)
    assert all(m.training for m in model.modules())


def test_named_layer_captures_module_output() -> None:
    model = Net()
    x = vectors()
    cap = capture(model, x, layer="body", progress=False)
    assert cap.layer == "body (output)"
    with torch.no_grad():
        assert close(cap.activations, model.body(t32(x)))
    nested = capture(model, x, layer="body.0", progress=False)
    with torch.no_grad():
        assert close(nested.activations, model.body[0](t32(x)))
    conv = capture(make_cnn(), images(), layer="0", progress=False)
    assert conv.activations.shape == (37, 48)  # (3, 4, 4) flattened per row
    np.testing.assert_allclose(conv.outputs, capture(make_cnn(), images(), progress=False).outputs)


def test_unknown_layer_lists_valid_names() -> None:
    with pytest.raises(LabelwiseError, match=r"'hiden'.*valid names.*'hidden'") as info:
        capture(Net(), vectors(), layer="hiden", progress=False)
    assert "'head'" in str(info.value)


def test_layer_not_run_by_forward() -> None:
    model = Net()
    model.unused = nn.Linear(3, 3)  # registered last, never called
    with pytest.raises(LabelwiseError, match="not run"):
        capture(model, vectors(), layer="unused", progress=False)
    assert no_hooks(model)


def test_default_layer_is_last_linear_executed_not_last_defined() -> None:
    # a Linear defined after the head but never called must not be taken
    model = Net()
    model.unused = nn.Linear(3, 3)
    x = vectors()
    cap = capture(model, x, batch_size=10, progress=False)
    assert cap.layer == "head (input)"
    model.eval()  # capture ran in eval mode (dropout off) and restored the training flag
    with torch.no_grad():
        hidden = model.drop(model.act(model.hidden(model.body(t32(x)))))
    assert close(cap.activations, hidden)
    assert no_hooks(model)


class HeadFirst(nn.Module):
    """Defines its head before its hidden layer: definition order is not execution order."""

    def __init__(self) -> None:
        super().__init__()
        torch.manual_seed(4)
        self.head = nn.Linear(6, 3)
        self.hidden = nn.Linear(10, 6)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.head(torch.relu(self.hidden(x)))


def test_default_layer_follows_execution_order_over_batches() -> None:
    model = HeadFirst()
    x = vectors()
    cap = capture(model, x, batch_size=7, progress=False)  # several batches
    assert cap.layer == "head (input)"
    assert cap.activations.shape == (len(x), 6)
    with torch.no_grad():
        assert close(cap.activations, torch.relu(model.hidden(t32(x))))
    assert no_hooks(model)


def test_wrong_input_shape_is_a_clear_error() -> None:
    model = Net()
    wrong = np.zeros((5, 7), dtype=np.float32)  # the model takes 10 features
    with pytest.raises(LabelwiseError) as info:
        capture(model, wrong, progress=False)
    text = str(info.value)
    assert "(5, 7)" in text  # the shape given
    assert "in_features=10" in text and "(rows, ..., 10)" in text  # the shape expected
    assert "RuntimeError" in text  # the model's own error
    assert no_hooks(model) and model.training  # hooks removed, training flag restored
    conv = make_cnn()
    with pytest.raises(LabelwiseError, match=r"in_channels=1.*expects inputs of shape"):
        capture(conv, np.zeros((4, 3, 6, 6)), progress=False)


def test_float64_model_gets_float64_inputs() -> None:
    model = Net().double()
    x = vectors()
    cap = capture(model, x, progress=False)
    model.eval()
    with torch.no_grad():
        expected = torch.softmax(model(torch.from_numpy(np.asarray(x, dtype=np.float64))), 1)
    assert cap.outputs.dtype == np.float32
    np.testing.assert_allclose(cap.outputs, expected.numpy(), rtol=1e-5, atol=1e-6)
    as_tensor = capture(model, torch.from_numpy(np.asarray(x, dtype=np.float32)), progress=False)
    np.testing.assert_allclose(as_tensor.outputs, cap.outputs, rtol=1e-5, atol=1e-6)


def test_model_without_linear_needs_layer() -> None:
    model = nn.Sequential(nn.Conv2d(1, 4, 6), nn.Flatten())  # (N, 4) logits
    with pytest.raises(LabelwiseError, match="layer="):
        capture(model, images(), progress=False)
    cap = capture(model, images(), layer="0", progress=False)
    assert cap.activations.shape == (37, 4)


def test_tuple_features_logits_convention() -> None:
    model = PairNet()
    x = vectors()
    cap = capture(model, x, progress=False)
    with torch.no_grad():
        features, logits = model(t32(x))
    assert cap.layer == "output[0] (features)"
    assert close(cap.activations, features)
    assert close(cap.outputs, torch.softmax(logits, dim=1))
    named = capture(model, x, layer="fc", progress=False)  # layer given: logits = output[1]
    with torch.no_grad():
        assert close(named.activations, model.fc(t32(x)))
    assert close(named.outputs, cap.outputs)


def test_raw_head_and_existing_probabilities() -> None:
    x = vectors()
    reg = nn.Sequential(nn.Linear(10, 4), nn.ReLU(), nn.Linear(4, 1), nn.Flatten(0))  # (N,)
    cap = capture(reg, x, head="raw", progress=False)
    with torch.no_grad():
        expected = reg(t32(x))
    assert cap.outputs.shape == (29, 1) and cap.head == "raw"
    assert close(cap.outputs[:, 0], expected)
    assert cap.layer == "2 (input)"

    model = Net()
    raw = capture(model, x, head="raw", progress=False)
    with torch.no_grad():
        assert close(raw.outputs, model.eval()(t32(x)))

    probs = nn.Sequential(Net(), nn.Softmax(dim=1))
    soft = capture(probs, x, progress=False)
    with torch.no_grad():
        assert close(soft.outputs, probs.eval()(t32(x)))  # softmax not applied twice


def test_softmax_head_needs_classes_or_one_logit() -> None:
    # one output per row is a binary classifier's logit: [1 - sigmoid, sigmoid]
    single = nn.Sequential(nn.Linear(10, 4), nn.Linear(4, 1))
    assert capture(single, vectors(), head="softmax", progress=False).outputs.shape[1] == 2
    grid = nn.Sequential(nn.Linear(10, 4), nn.Unflatten(1, (2, 2)))
    with pytest.raises(LabelwiseError, match="head='raw'"):
        capture(grid, vectors(), progress=False, layer="0")


def test_one_output_without_a_head_warns_that_it_is_taken_as_a_logit() -> None:
    """A regression model (one output per row) captured without head= was silently taken as
    a binary classifier: its outputs became [1 - sigmoid, sigmoid]. The values cannot tell
    the two apart, so head not given now warns, naming head='raw' and head='softmax'; either
    given is silent (warnings are errors here), and several outputs never warn."""
    torch.manual_seed(0)
    reg = nn.Sequential(nn.Linear(10, 4), nn.ReLU(), nn.Linear(4, 1), nn.Flatten(0))  # (N,)
    x = vectors()
    with pytest.warns(UserWarning, match="one output per row") as caught:
        cap = capture(reg, x, progress=False)
    assert len(caught) == 1
    message = str(caught[0].message)
    assert "head='raw' (CLI: --head raw)" in message
    assert "head='softmax' (CLI: --head softmax)" in message
    assert caught[0].filename == __file__  # the caller's line
    with torch.no_grad():
        p = torch.sigmoid(reg(t32(x))).numpy()
    assert cap.head == "softmax" and close(cap.outputs, np.stack([1 - p, p], axis=1))
    assert close(capture(reg, x, head="softmax", progress=False).outputs, cap.outputs)
    with torch.no_grad():
        assert close(capture(reg, x, head="raw", progress=False).outputs[:, 0], reg(t32(x)))
    assert capture(Net(), x, progress=False).outputs.shape == (29, 3)
    with pytest.raises(LabelwiseError, match="head must be None or one of"):
        capture(reg, x, head="sigmoid", progress=False)


def test_nonfinite_inputs_raise() -> None:
    x = vectors()
    x[3, 2] = np.nan
    with pytest.raises(LabelwiseError, match="row 3"):
        capture(Net(), x, progress=False)


# --------------------------------------------------------------------------- files


def test_torchscript_round_trip_matches_module(tmp_path: Path) -> None:
    model = make_cnn()
    path = script_and_save(model, tmp_path / "cnn.pt")
    loaded = load_model(path)
    assert isinstance(loaded, torch.jit.ScriptModule)
    x = images()
    ref = capture(model, x, progress=False)
    for src in (path, str(path), loaded):
        cap = capture(src, x, batch_size=10, progress=False)
        assert cap.layer == ref.layer == "5 (input)"
        assert close(cap.activations, ref.activations)
        assert close(cap.outputs, ref.outputs)
    named = capture(path, x, layer="3", progress=False)
    assert close(named.activations, capture(model, x, layer="3", progress=False).activations)


def test_torchscript_nested_chain_and_flags(tmp_path: Path) -> None:
    model = Net()
    path = script_and_save(model, tmp_path / "net.pt")
    loaded = load_model(path)
    loaded.train()
    x = vectors()
    for layer in (None, "body.0", "hidden"):
        cap = capture(loaded, x, layer=layer, progress=False)
        ref = capture(model, x, layer=layer, progress=False)
        assert cap.layer == ref.layer
        assert close(cap.activations, ref.activations)
        assert close(cap.outputs, ref.outputs)
    assert all(m.training for m in loaded.modules())


def test_torchscript_non_chain_model_is_captured_from_its_graph(tmp_path: Path) -> None:
    # forward is not a chain of the children (a functional ReLU and a rescale in between):
    # this used to be an error; the inlined TorchScript graph exposes the hidden value
    model = FunctionalNet()
    path = script_and_save(model, tmp_path / "f.pt")
    x = vectors()
    for layer in (None, "fc"):
        cap = capture(path, x, layer=layer, batch_size=7, progress=False)
        ref = capture(model, x, layer=layer, progress=False)
        assert cap.layer == ref.layer
        assert close(cap.activations, ref.activations)
        assert close(cap.outputs, ref.outputs)
    with torch.no_grad():
        hidden = torch.relu(model.fc(t32(x))) * 2.0
    assert close(capture(path, x, progress=False).activations, hidden)


def test_torchscript_tuple_convention(tmp_path: Path) -> None:
    model = PairNet()
    path = script_and_save(model, tmp_path / "pair.pt")
    x = vectors()
    cap = capture(path, x, batch_size=5, progress=False)
    ref = capture(model, x, progress=False)
    assert cap.layer == "output[0] (features)"
    assert close(cap.activations, ref.activations)
    assert close(cap.outputs, ref.outputs)


def test_pickled_module_file(tmp_path: Path) -> None:
    model = make_cnn()
    path = tmp_path / "full.pt"
    torch.save(model, path)
    x = images()
    cap = capture(path, x, progress=False)
    np.testing.assert_allclose(cap.outputs, capture(model, x, progress=False).outputs)


def test_bad_files_raise_naming_the_path(tmp_path: Path) -> None:
    corrupt = tmp_path / "corrupt.pt"
    corrupt.write_bytes(b"this is not a model")
    with pytest.raises(LabelwiseError, match=r"corrupt\.pt"):
        capture(corrupt, vectors(), progress=False)
    with pytest.raises(LabelwiseError, match=r"not found.*missing\.pt"):
        load_model(tmp_path / "missing.pt")
    state = tmp_path / "state.pt"
    torch.save(make_cnn().state_dict(), state)
    with pytest.raises(LabelwiseError, match="state_dict"):
        load_model(state)
    with pytest.raises(LabelwiseError, match="directory"):
        load_model(tmp_path)


# --------------------------------------------------------------------------- validation


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        ({"head": "sigmoid"}, "head"),
        ({"batch_size": 0}, "batch_size"),
        ({"batch_size": 2.5}, "batch_size"),
        ({"batch_size": True}, "batch_size"),
        ({"device": "not-a-device"}, "device"),
        ({"device": 3}, "device"),
        ({"layer": ""}, "layer"),
    ],
)
def test_invalid_arguments(kwargs: dict[str, object], match: str) -> None:
    with pytest.raises(LabelwiseError, match=match):
        capture(make_cnn(), images(), progress=False, **kwargs)  # type: ignore[arg-type]


@pytest.mark.skipif(torch.cuda.is_available(), reason="CUDA present")
def test_unavailable_cuda() -> None:
    with pytest.raises(LabelwiseError, match="CUDA"):
        capture(make_cnn(), images(), device="cuda", progress=False)


def test_invalid_inputs_and_model() -> None:
    with pytest.raises(LabelwiseError, match="at least one row"):
        capture(make_cnn(), np.empty((0, 1, 6, 6)), progress=False)
    with pytest.raises(LabelwiseError, match="at least one row"):
        capture(make_cnn(), torch.empty(0, 1, 6, 6), progress=False)
    with pytest.raises(LabelwiseError, match="real numbers"):
        capture(make_cnn(), np.array(["a", "b"]), progress=False)
    with pytest.raises(LabelwiseError, match="first axis"):
        capture(make_cnn(), np.float64(1.0), progress=False)
    with pytest.raises(LabelwiseError, match=r"torch\.nn\.Module"):
        capture(object(), images(), progress=False)  # type: ignore[arg-type]


# --------------------------------------------------------------------------- no torch


def test_missing_torch_raises_missing_dependency(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "torch", None)  # makes `import torch` fail
    with pytest.raises(MissingDependencyError, match=r"labelwise\[torch\]"):
        capture("model.pt", np.zeros((2, 3)), progress=False)
    with pytest.raises(MissingDependencyError, match=r"pip install"):
        load_model("model.pt")


def test_module_imports_without_torch(monkeypatch: pytest.MonkeyPatch) -> None:
    import labelwise.adapters

    # the re-import below rebinds the package attribute; have monkeypatch restore it
    monkeypatch.setattr(labelwise.adapters, "torch", labelwise.adapters.torch)
    monkeypatch.setitem(sys.modules, "torch", None)
    monkeypatch.delitem(sys.modules, "labelwise.adapters.torch")
    module = importlib.import_module("labelwise.adapters.torch")
    assert module.Capture is not None
    with pytest.raises(MissingDependencyError):
        module.capture(None, np.zeros((2, 3)))
