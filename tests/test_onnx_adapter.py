"""labelwise.adapters.onnx against the PyTorch adapter on the same models, exported with
``torch.onnx.export(..., dynamo=False)``; the CLI's .onnx route; clear errors."""

from __future__ import annotations

import importlib
import json
import sys
import warnings
from pathlib import Path

import numpy as np
import pytest

torch = pytest.importorskip("torch")
onnx = pytest.importorskip("onnx")
pytest.importorskip("onnxruntime")
nn = torch.nn

from labelwise.adapters import onnx as lw_onnx  # noqa: E402
from labelwise.adapters.torch import capture as torch_capture  # noqa: E402
from labelwise.cli import main  # noqa: E402
from labelwise.exceptions import LabelwiseError, MissingDependencyError  # noqa: E402

ATOL = 1e-5


def make_cnn() -> nn.Sequential:
    torch.manual_seed(0)
    return nn.Sequential(
        nn.Conv2d(1, 4, kernel_size=3),  # (N, 1, 8, 8) -> (N, 4, 6, 6)
        nn.ReLU(),
        nn.MaxPool2d(2),  # -> (N, 4, 3, 3)
        nn.Flatten(),
        nn.Linear(36, 16),
        nn.ReLU(),
        nn.Linear(16, 5),
    ).eval()


class MLP(nn.Module):
    """forward flattens, rescales and calls functional ops between the layers."""

    def __init__(self) -> None:
        super().__init__()
        torch.manual_seed(1)
        self.fc1 = nn.Linear(12, 10)
        self.fc2 = nn.Linear(10, 7)
        self.head = nn.Linear(7, 3)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = torch.flatten(x, 1) / 4.0
        h = torch.tanh(self.fc1(x))
        return self.head(torch.relu(self.fc2(h)) * 1.5)


class Pair(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        torch.manual_seed(2)
        self.fc = nn.Linear(12, 6)
        self.head = nn.Linear(6, 4)

    def forward(self, x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        features = torch.relu(self.fc(x))
        return features, self.head(features)


def export(
    model: nn.Module, x: torch.Tensor, path: Path, *, dynamic: bool = True, outputs: int = 1
) -> Path:
    names = ["logits"] if outputs == 1 else ["features", "logits"]
    axes = {name: {0: "batch"} for name in ["x", *names]} if dynamic else None
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        torch.onnx.export(
            model.eval(),
            (x,),
            str(path),
            dynamo=False,
            input_names=["x"],
            output_names=names,
            dynamic_axes=axes,
        )
    return path


def images(n: int = 45) -> np.ndarray:
    return np.random.default_rng(0).normal(size=(n, 1, 8, 8)).astype(np.float32)


def vectors(n: int = 33) -> np.ndarray:
    return np.random.default_rng(1).normal(size=(n, 3, 4)).astype(np.float32)


@pytest.fixture(scope="module")
def cnn_file(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return export(make_cnn(), torch.from_numpy(images(2)), tmp_path_factory.mktemp("o") / "c.onnx")


def pooled_name(path: Path) -> str:
    """The name of the MaxPool output tensor in the exported CNN."""
    names = [out for node in onnx.load(str(path)).graph.node for out in node.output]
    return next(n for n in names if "MaxPool" in n)


# --------------------------------------------------------------------------- agreement


def test_cnn_matches_torch_capture(cnn_file: Path) -> None:
    x = images()
    cap = lw_onnx.capture(cnn_file, x, batch_size=8, progress=False)
    ref = torch_capture(make_cnn(), x, progress=False)
    assert cap.activations.shape == ref.activations.shape == (45, 16)
    np.testing.assert_allclose(cap.activations, ref.activations, atol=ATOL)
    np.testing.assert_allclose(cap.outputs, ref.outputs, atol=ATOL)
    np.testing.assert_allclose(cap.outputs.sum(axis=1), 1.0, atol=1e-5)
    assert cap.layer.endswith("Relu_output_0")  # the input of the last Gemm, by name
    assert cap.classes is None and cap.head == "softmax"


def test_mlp_with_functional_forward_matches_torch(tmp_path: Path) -> None:
    model = MLP()
    path = export(model, torch.from_numpy(vectors(2)), tmp_path / "mlp.onnx")
    x = vectors()
    cap = lw_onnx.capture(path, x, batch_size=10, progress=False)
    ref = torch_capture(model, x, progress=False)
    np.testing.assert_allclose(cap.activations, ref.activations, atol=ATOL)
    np.testing.assert_allclose(cap.outputs, ref.outputs, atol=ATOL)
    with torch.no_grad():  # the captured tensor really is relu(fc2(.)) * 1.5
        h = torch.tanh(model.fc1(torch.from_numpy(x).flatten(1) / 4.0))
        hidden = (torch.relu(model.fc2(h)) * 1.5).numpy()
    np.testing.assert_allclose(cap.activations, hidden, atol=ATOL)
    raw = lw_onnx.capture(path, x, head="raw", progress=False)
    np.testing.assert_allclose(raw.outputs, model(torch.from_numpy(x)).detach(), atol=ATOL)


def test_one_output_without_a_head_warns_as_the_torch_adapter_does(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """An ONNX regression model (one output per row) captured without head= (CLI: without
    --head) was silently taken as a binary logit. It now warns, naming head='raw' and
    head='softmax'; the CLI prints it as one note; --head raw is silent."""
    torch.manual_seed(3)
    reg = nn.Sequential(nn.Flatten(), nn.Linear(12, 5), nn.ReLU(), nn.Linear(5, 1))
    path = export(reg, torch.from_numpy(vectors(2)), tmp_path / "reg.onnx")
    x = vectors()
    with pytest.warns(UserWarning, match="one output per row") as caught:
        cap = lw_onnx.capture(path, x, progress=False)
    assert len(caught) == 1 and "head='raw' (CLI: --head raw)" in str(caught[0].message)
    assert cap.head == "softmax" and cap.outputs.shape == (33, 2)
    raw = lw_onnx.capture(path, x, head="raw", progress=False)
    with torch.no_grad():
        np.testing.assert_allclose(raw.outputs, reg(torch.from_numpy(x)), atol=ATOL)
    np.save(tmp_path / "x.npy", x)
    argv = ["capture", "--model", str(path), "--inputs", str(tmp_path / "x.npy")]
    assert main([*argv, "--out", str(tmp_path / "cap")]) == 0
    notes = [ln for ln in capsys.readouterr().err.splitlines() if "one output per row" in ln]
    assert len(notes) == 1 and notes[0].startswith("note: ") and "--head raw" in notes[0]
    assert main([*argv, "--out", str(tmp_path / "raw"), "--head", "raw"]) == 0
    assert "one output per row" not in capsys.readouterr().err
    assert np.load(tmp_path / "raw" / "outputs.npy").shape == (33,)


def test_layer_by_tensor_name(cnn_file: Path) -> None:
    model = make_cnn()
    x = images()
    pooled = pooled_name(cnn_file)
    cap = lw_onnx.capture(cnn_file, x, layer=pooled, progress=False)
    ref = torch_capture(model, x, layer="2", progress=False)  # the MaxPool2d output
    assert cap.layer == pooled and cap.activations.shape == (45, 36)
    np.testing.assert_allclose(cap.activations, ref.activations, atol=ATOL)
    whole = lw_onnx.capture(cnn_file, x, layer="x", progress=False)  # the graph input itself
    np.testing.assert_allclose(whole.activations, x.reshape(45, -1))


def test_fixed_batch_export_is_padded(tmp_path: Path) -> None:
    model = make_cnn()
    path = export(model, torch.from_numpy(images(4)), tmp_path / "fixed.onnx", dynamic=False)
    x = images(10)  # 4 + 4 + 2 (padded)
    cap = lw_onnx.capture(path, x, batch_size=3, progress=False)
    ref = torch_capture(model, x, progress=False)
    np.testing.assert_allclose(cap.outputs, ref.outputs, atol=ATOL)
    np.testing.assert_allclose(cap.activations, ref.activations, atol=ATOL)


def test_two_outputs_are_features_and_logits(tmp_path: Path) -> None:
    model = Pair()
    x = np.random.default_rng(3).normal(size=(20, 12)).astype(np.float32)
    path = export(model, torch.from_numpy(x[:2]), tmp_path / "pair.onnx", outputs=2)
    cap = lw_onnx.capture(path, x, progress=False)
    ref = torch_capture(model, x, progress=False)
    assert cap.layer == "features"
    np.testing.assert_allclose(cap.activations, ref.activations, atol=ATOL)
    np.testing.assert_allclose(cap.outputs, ref.outputs, atol=ATOL)


def test_classes_from_metadata(tmp_path: Path, cnn_file: Path) -> None:
    proto = onnx.load(str(cnn_file))
    entry = proto.metadata_props.add()
    entry.key, entry.value = "classes", json.dumps(["ant", "bee", "cat", "dog", "eel"])
    cap = lw_onnx.capture(proto, images(6), progress=False)
    assert cap.classes == ("ant", "bee", "cat", "dog", "eel")
    entry.value = "a, b, c"  # comma-separated, but 3 names for 5 outputs
    with pytest.raises(LabelwiseError, match="names 3 classes but the model has 5 outputs"):
        lw_onnx.capture(proto, images(6), progress=False)


# --------------------------------------------------------------------------- errors


def test_unknown_tensor_lists_candidates(cnn_file: Path) -> None:
    with pytest.raises(LabelwiseError, match=r"not a tensor of the ONNX graph.*Relu_output_0"):
        lw_onnx.capture(cnn_file, images(), layer="relu4", progress=False)


def test_corrupt_and_missing_files(tmp_path: Path) -> None:
    bad = tmp_path / "bad.onnx"
    bad.write_bytes(b"\x08\x07 not a protobuf at all \xff\xff")
    with pytest.raises(LabelwiseError, match=r"bad\.onnx.*not a valid ONNX model"):
        lw_onnx.capture(bad, images(), progress=False)
    with pytest.raises(LabelwiseError, match="not found"):
        lw_onnx.capture(tmp_path / "missing.onnx", images(), progress=False)


def test_wrong_input_shape_names_both_shapes(cnn_file: Path) -> None:
    with pytest.raises(LabelwiseError, match=r"\(batch, 1, 8, 8\).*\(45, 64\)"):
        lw_onnx.capture(cnn_file, images().reshape(45, 64), progress=False)
    with pytest.raises(LabelwiseError, match=r"\(batch, 1, 8, 8\).*\(45, 1, 8, 7\)"):
        lw_onnx.capture(cnn_file, images()[..., :7], progress=False)


def test_cli_onnx_route(tmp_path: Path, cnn_file: Path, capsys: pytest.CaptureFixture[str]) -> None:
    x = images()
    np.save(tmp_path / "x.npy", x)
    pooled = pooled_name(cnn_file)
    argv = ["capture", "--model", str(cnn_file), "--inputs", str(tmp_path / "x.npy")]
    assert main([*argv, "--out", str(tmp_path / "cap"), "--layer", pooled]) == 0
    assert f"(onnx): layer {pooled}, 36 neurons" in capsys.readouterr().out
    meta = json.loads((tmp_path / "cap" / "capture.json").read_text())
    assert meta["model_kind"] == "onnx" and meta["tensor"] == meta["layer"] == pooled
    ref = torch_capture(make_cnn(), x, layer="2", progress=False)
    acts = np.load(tmp_path / "cap" / "activations.npy")
    np.testing.assert_allclose(acts, ref.activations, atol=ATOL)
    probs = np.load(tmp_path / "cap" / "probabilities.npy")
    np.testing.assert_array_equal(np.load(tmp_path / "cap" / "predictions.npy"), probs.argmax(1))

    code = main([*argv, "--out", str(tmp_path / "bad"), "--layer", "nope"])
    err = capsys.readouterr().err
    assert code != 0 and err.startswith("labelwise: error: layer 'nope' is not a tensor")
    assert "Traceback" not in err
    assert not (tmp_path / "bad").exists() or not any((tmp_path / "bad").iterdir())


def test_cli_onnx_table_of_too_few_columns_names_them(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """An ONNX model of 12 inputs given a CSV of 3 columns said only 'reshape the inputs
    (e.g. images as (rows, channels, height, width))'; the TorchScript and pickle routes
    also named the columns read and --columns, which the ONNX route now does too."""
    path = export(Pair(), torch.zeros(2, 12), tmp_path / "pair.onnx", outputs=2)
    (tmp_path / "t.csv").write_text("a,b,c\n" + "0.1,0.2,0.3\n" * 5)
    assert main(["capture", "--model", str(path), "--inputs", str(tmp_path / "t.csv"),
                 "--out", str(tmp_path / "cap")]) == 2  # fmt: skip
    err = capsys.readouterr().err
    assert "expects input 'x' of shape (batch, 12)" in err, err
    assert "; the rows are the 3 columns 'a', 'b', 'c' of " in err
    assert "choose the model's inputs with --columns" in err


def test_missing_onnxruntime_names_the_extra(
    monkeypatch: pytest.MonkeyPatch, cnn_file: Path
) -> None:
    monkeypatch.setitem(sys.modules, "onnxruntime", None)
    with pytest.raises(MissingDependencyError, match=r"labelwise\[onnx\]"):
        lw_onnx.capture(cnn_file, images(), progress=False)


def test_module_imports_without_onnx(monkeypatch: pytest.MonkeyPatch) -> None:
    import labelwise.adapters

    monkeypatch.setattr(labelwise.adapters, "onnx", lw_onnx, raising=False)
    monkeypatch.setitem(sys.modules, "onnx", None)
    monkeypatch.delitem(sys.modules, "labelwise.adapters.onnx")
    module = importlib.import_module("labelwise.adapters.onnx")
    with pytest.raises(MissingDependencyError, match="onnx"):
        module.capture("m.onnx", np.zeros((2, 3)))
