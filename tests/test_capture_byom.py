"""Bring-your-own-model-and-pile edge cases of ``labelwise capture`` (small torch models)."""

from __future__ import annotations

import warnings
from typing import Any

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


# --------------------------------------------------------------------------- 3. two outputs


class LogitsFirst(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        torch.manual_seed(0)
        self.fc1 = nn.Linear(8, 16)
        self.fc2 = nn.Linear(16, 3)

    def forward(self, x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        h = torch.relu(self.fc1(x))
        return self.fc2(h), h


class LabelAndProbs(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.m = LogitsFirst()

    def forward(self, x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        logits = self.m(x)[0]
        return logits.argmax(1), torch.softmax(logits, 1)


def test_two_outputs_are_told_apart_by_shape_not_order() -> None:
    x = _x()
    model = LogitsFirst().eval()
    with pytest.raises(LabelwiseError, match=r"\(40, 3\).*\(40, 16\).*logits_output"):
        capture(model, x, progress=False)
    cap = capture(model, x, progress=False, logits_output=0)
    assert cap.activations.shape == (40, 16) and cap.outputs.shape == (40, 3)
    assert cap.layer == "output[1] (features)"
    # (label, probabilities): the label is not the features; the default layer is used
    cap = capture(LabelAndProbs().eval(), x, progress=False)
    assert cap.outputs.shape == (40, 3) and cap.layer == "m.fc2 (input)"
    assert cap.activations.shape == (40, 16)


def test_onnx_two_outputs_are_told_apart(tmp_path) -> None:
    pytest.importorskip("onnxruntime")
    from labelwise.adapters import onnx as lw_onnx

    x = _x()
    for name, model, outs in (
        ("lf.onnx", LogitsFirst().eval(), ["logits", "feat"]),
        ("lp.onnx", LabelAndProbs().eval(), ["label", "probabilities"]),
    ):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            torch.onnx.export(
                model,
                (torch.randn(1, 8),),
                str(tmp_path / name),
                dynamo=False,
                input_names=["input"],
                output_names=outs,
                dynamic_axes={"input": {0: "b"}},
            )
    with pytest.raises(LabelwiseError, match="logits_output"):
        lw_onnx.capture(tmp_path / "lf.onnx", x, progress=False)
    cap = lw_onnx.capture(tmp_path / "lf.onnx", x, progress=False, logits_output=0)
    assert cap.layer == "feat" and cap.activations.shape == (40, 16)
    cap = lw_onnx.capture(tmp_path / "lp.onnx", x, progress=False)
    assert cap.outputs.shape == (40, 3) and cap.activations.shape == (40, 16)


# --------------------------------------------------------------------------- 7. path-like class


@pytest.mark.parametrize("spec", ["./pathmod:Net", "pathmod.py:Net", "sub/pathmod.py:Net"])
def test_model_class_accepts_a_path_to_the_module(tmp_path, monkeypatch, spec: str) -> None:
    import sys

    from labelwise.adapters.torch import load_model

    code = (
        "import torch.nn as nn\n"
        "class Net(nn.Module):\n"
        "    def __init__(self):\n"
        "        super().__init__(); self.fc = nn.Linear(4, 2)\n"
        "    def forward(self, x): return self.fc(x)\n"
    )
    (tmp_path / "sub").mkdir()
    for where in (tmp_path, tmp_path / "sub"):
        (where / "pathmod.py").write_text(code)
    monkeypatch.chdir(tmp_path)
    monkeypatch.delitem(sys.modules, "pathmod", raising=False)
    torch.save(nn.Linear(4, 2).state_dict(), tmp_path / "lin.pt")
    state = {f"fc.{k}": v for k, v in torch.load(tmp_path / "lin.pt").items()}
    torch.save(state, tmp_path / "sd.pt")
    model = load_model(tmp_path / "sd.pt", model_class=spec)
    assert type(model).__name__ == "Net"
    sys.modules.pop("pathmod", None)
    with pytest.raises(LabelwiseError, match="no Python file"):
        load_model(tmp_path / "sd.pt", model_class="./nothere:Net")


# --------------------------------------------------------------------------- 4. default layer


class FunctionalHead(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        torch.manual_seed(0)
        self.fc1 = nn.Linear(8, 16)
        self.w = nn.Parameter(torch.randn(3, 16))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return nn.functional.linear(torch.relu(self.fc1(x)), self.w)


def test_a_default_linear_that_is_not_the_head_is_flagged() -> None:
    with pytest.warns(UserWarning, match=r"'fc1'.*16 outputs.*3 outputs.*--layer") as rec:
        cap = capture(FunctionalHead().eval(), _x(), progress=False)
    assert cap.layer == "fc1 (input)"
    assert rec[0].filename == __file__  # the caller's line (was labelwise/adapters/torch.py)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        capture(LogitsFirst().fc2, np.zeros((4, 16), np.float32), progress=False)


# --------------------------------------------------------------------------- 8. one logit


def test_single_logit_binary_classifier_gives_two_class_probabilities(tmp_path) -> None:
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(8, 16), nn.ReLU(), nn.Linear(16, 1)).eval()
    x = _x()
    with torch.no_grad():
        p = torch.sigmoid(model(torch.from_numpy(x))).numpy()[:, 0]
    cap = capture(model, x, head="softmax", progress=False, out=tmp_path / "cap")
    assert cap.outputs.shape == (40, 2)
    np.testing.assert_allclose(cap.outputs[:, 1], p, atol=1e-6)
    np.testing.assert_allclose(cap.outputs.sum(axis=1), 1.0, atol=1e-6)
    predictions = np.load(tmp_path / "cap" / "predictions.npy")
    assert predictions.dtype == np.int64
    np.testing.assert_array_equal(predictions, (p > 0.5).astype(np.int64))


def test_extreme_single_logits_give_zero_and_one_without_overflow_warnings() -> None:
    from labelwise.adapters._capture import CaptureWriter, head_outputs

    logits = np.array([[-1e30], [0.0], [1e30]], dtype=np.float32)
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # no "overflow encountered in exp" (a CLI note)
        with CaptureWriter(3, head="softmax", out=None) as writer:
            writer.write(0, np.zeros((3, 2)), head_outputs(logits, 3, "softmax"), "x")
            _, probs = writer.finish("x")
    np.testing.assert_array_equal(probs, [[1.0, 0.0], [0.5, 0.5], [0.0, 1.0]])
    assert writer.binary_probability is False  # outputs outside [0, 1]: logits


def test_infinite_single_logits_give_zero_and_one_and_nan_is_still_an_error() -> None:
    """A logit of -inf or inf (a float16 logit past 65504, torch.logit of a saturated
    sigmoid) is p = 0 or 1, as before one output per row was decided over every row; since,
    the logit was stored first and finish() refused it as 'NaN or infinite outputs'. A NaN
    output is still refused, naming its row."""
    from labelwise.adapters._capture import CaptureWriter, head_outputs

    logits = np.array([[-np.inf], [0.0], [np.inf]], dtype=np.float16)
    with CaptureWriter(3, head="softmax", out=None) as writer:
        writer.write(0, np.zeros((3, 2)), head_outputs(logits, 3, "softmax"), "x")
        _, probs = writer.finish("x")
    np.testing.assert_array_equal(probs, [[1.0, 0.0], [0.5, 0.5], [0.0, 1.0]])
    assert writer.binary_probability is False
    for bad in ([[0.2], [np.nan], [0.7]], [[3.0], [np.nan], [np.inf]]):
        with CaptureWriter(3, head="softmax", out=None) as writer:
            writer.write(0, np.zeros((3, 2)), head_outputs(np.array(bad), 3, "softmax"), "x")
            with pytest.raises(LabelwiseError, match=r"NaN or infinite outputs \(first at row 1"):
                writer.finish("x")


def test_a_float64_single_logit_is_sigmoided_at_float64_precision(tmp_path) -> None:
    """A float64 model with one logit per row: the probabilities are sigmoid(logit) computed
    on the float64 logit, then stored as float32, as before one output per row was decided
    over every row; since, the logit was stored as float32 first (208 of these 2,000 stored
    probabilities 1 ulp off, up to 6e-8). Logits beyond float32's range give 0 and 1 without
    an overflow warning."""
    from labelwise.adapters.torch import capture

    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(3, 1)).double()
    x = np.random.default_rng(0).normal(size=(2000, 3))
    with torch.no_grad():
        s = model(torch.tensor(x)).numpy()[:, 0]
    p = 1.0 / (1.0 + np.exp(-s))
    expected = np.stack([1.0 - p, p], axis=1).astype(np.float32)
    for out in (None, tmp_path / "cap"):
        cap = capture(model, x, head="softmax", batch_size=256, out=out, progress=False)
        np.testing.assert_array_equal(cap.outputs, expected)
    with torch.no_grad():
        model[0].weight.mul_(1e300)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        cap = capture(model, x[:4], head="softmax", progress=False)
    np.testing.assert_array_equal(cap.outputs[:, 1], (s[:4] > 0).astype(np.float32))


def test_select_refuses_probs_outside_zero_one(tmp_path) -> None:
    from labelwise.cli import main

    np.save(tmp_path / "a.npy", _x(50))
    np.save(tmp_path / "c.npy", np.linspace(-3, 7, 50).astype(np.float32))
    code = main(["select", "--method", "ces", "--budget", "6", "--activations",
                 str(tmp_path / "a.npy"), "--probs", str(tmp_path / "c.npy"), "--out",
                 str(tmp_path / "sel")])  # fmt: skip
    assert code == 2


# --------------------------------------------------------------------------- 11. messages


class Hidden(nn.Module):
    def __init__(self, hidden: int = 16) -> None:
        super().__init__()
        self.fc1 = nn.Linear(8, hidden)
        self.fc2 = nn.Linear(hidden, 3)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.fc2(torch.relu(self.fc1(x)))


def test_state_dict_messages_prefixes_and_trusted_checkpoints(tmp_path, monkeypatch) -> None:
    import argparse

    from labelwise.adapters.torch import load_model

    state = Hidden().state_dict()
    torch.save(state, tmp_path / "sd.pt")
    with pytest.raises(
        LabelwiseError, match=r"size mismatch for 'fc1.weight'.*\(16, 8\).*\(32, 8\)"
    ):
        load_model(tmp_path / "sd.pt", model_class=Hidden, model_kwargs={"hidden": 32})
    # a Lightning checkpoint: the LightningModule keeps the net as self.model
    lightning = {"state_dict": {f"model.{k}": v for k, v in state.items()}, "epoch": 3}
    torch.save(lightning, tmp_path / "pl.ckpt")
    assert isinstance(load_model(tmp_path / "pl.ckpt", model_class=Hidden), Hidden)
    # a trusted checkpoint holding other objects
    torch.save({"state_dict": state, "args": argparse.Namespace(lr=0.1)}, tmp_path / "ns.pt")
    with pytest.raises(LabelwiseError) as err:
        load_model(tmp_path / "ns.pt", model_class=Hidden)
    text = str(err.value)
    assert "\x1b" not in text and "\n" not in text and "LABELWISE_TRUST_CHECKPOINT=1" in text
    assert "argparse.Namespace" in text
    monkeypatch.setenv("LABELWISE_TRUST_CHECKPOINT", "1")
    assert isinstance(load_model(tmp_path / "ns.pt", model_class=Hidden), Hidden)


def test_onnx_file_given_to_the_torch_loader_says_so(tmp_path) -> None:
    from labelwise.adapters.torch import load_model

    (tmp_path / "m.onnx").write_bytes(b"\x08\x07")
    with pytest.raises(LabelwiseError, match=r"ONNX model.*PyTorch models only"):
        load_model(tmp_path / "m.onnx")


def _identity_on_half_logits(zarr: Any, path: str) -> nn.Module:
    """A zarr pile at ``path`` of 40 rows in blocks of 20, rows 0..19 probabilities (0.5,
    0.5) and rows 20.. logits (3, -1), and a model that returns its input (Linear(2, 2),
    weights the identity): one block looks like probabilities, the other does not."""
    x = np.full((40, 2), 0.5, dtype=np.float32)
    x[20:] = [3.0, -1.0]
    model = nn.Sequential(nn.Linear(2, 2))
    with torch.no_grad():
        model[0].weight.copy_(torch.eye(2))
        model[0].bias.zero_()
    zarr.open_array(path, mode="w", shape=x.shape, chunks=(20, 2), dtype=x.dtype)[:] = x
    return model


def test_dask_blocks_that_disagree_on_probabilities_are_an_error(tmp_path) -> None:
    pytest.importorskip("dask.array")
    zarr = pytest.importorskip("zarr")
    from labelwise.adapters.dask_capture import capture_to_zarr

    path = str(tmp_path / "x.zarr")
    model = _identity_on_half_logits(zarr, path)
    with pytest.raises(LabelwiseError, match=r"row 0 were already probabilities.*rows 20-39"):
        capture_to_zarr(model, path, tmp_path / "cap", rows_per_task=20)


def test_dask_blocks_of_one_output_decide_sigmoid_or_logit_over_the_whole_pile(tmp_path) -> None:
    """A logit model (one output per row) whose first block of 20 rows has logits in [0, 1]:
    that block took them for a sigmoid's probabilities ([1 - s, s]), the other block for
    logits ([1 - sigmoid, sigmoid]), and the one-row probe's note said 'taken as a sigmoid's
    probability' (block 0: |zarr - in memory| up to 0.42). The pile is now decided as a whole,
    as in memory: the outputs equal the in-memory capture's, and the one note says logit; a
    sigmoid model stays probabilities."""
    pytest.importorskip("dask.array")
    zarr = pytest.importorskip("zarr")
    from labelwise.adapters.dask_capture import capture_to_zarr
    from labelwise.adapters.torch import capture

    x = np.zeros((40, 2), dtype=np.float32)
    x[:20, 0] = np.linspace(0.1, 0.9, 20)  # logits in [0, 1]
    x[20:, 0] = np.linspace(-3.0, 3.0, 20)
    path = str(tmp_path / "x.zarr")
    zarr.open_array(path, mode="w", shape=x.shape, chunks=(20, 2), dtype=x.dtype)[:] = x
    logit = nn.Sequential(nn.Linear(2, 1))
    with torch.no_grad():
        logit[0].weight.copy_(torch.tensor([[1.0, 0.0]]))
        logit[0].bias.zero_()
    for name, model, said in (
        ("logit", logit, "taken as a binary classifier's logit"),
        ("sig", nn.Sequential(logit, nn.Sigmoid()), "taken as a sigmoid's probability"),
    ):
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            out = capture_to_zarr(model, path, tmp_path / name, rows_per_task=20)
            mem = capture(model, x, head="softmax", progress=False)
        notes = [str(w.message) for w in caught if "one output per row" in str(w.message)]
        assert len(notes) == 1 and said in notes[0], notes
        np.testing.assert_allclose(out.outputs[:], mem.outputs, rtol=0, atol=1e-6)  # BLAS
    s = x[:, 0].astype(np.float64)
    np.testing.assert_allclose(out.outputs[:, 1], 1 / (1 + np.exp(-s)), rtol=1e-6)


# ------------------------------------------------------ notebook models: dicts, extra args


class _Net(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.a = nn.Linear(8, 16)
        self.b = nn.Linear(16, 3)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.b(torch.relu(self.a(x)))


class _DictItems(torch.utils.data.Dataset):  # type: ignore[type-arg]
    def __init__(self, x: np.ndarray) -> None:
        self.x = torch.from_numpy(x)

    def __len__(self) -> int:
        return len(self.x)

    def __getitem__(self, i: int) -> dict[str, torch.Tensor]:
        return {"image": self.x[i], "label": torch.tensor(0)}


class _DictOut(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.net = _Net()

    def forward(self, x: torch.Tensor) -> dict[str, torch.Tensor]:
        return {"logits": self.net(x), "aux": x}


class _NeedsMask(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.net = _Net()

    def forward(self, x: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
        return self.net(x * mask)


def test_a_dataset_of_dicts_names_its_keys_and_how_to_pass_it() -> None:
    """before: 'batch 0 of the DataLoader is a dict; expected a tensor or a tuple' (which
    key, and what to do, unsaid); the collate_fn it now suggests captures what the array does."""
    torch.manual_seed(0)
    model, x = _Net().eval(), _x()
    ds = _DictItems(x)
    with pytest.raises(LabelwiseError, match=r"keys \['image', 'label'\].*collate_fn"):
        capture(model, ds, progress=False)
    loader = torch.utils.data.DataLoader(
        ds, batch_size=16, collate_fn=lambda b: torch.stack([d["image"] for d in b])
    )
    np.testing.assert_array_equal(
        capture(model, loader, progress=False).outputs, capture(model, x, progress=False).outputs
    )


def test_a_model_returning_a_dict_takes_its_logits_or_names_its_keys() -> None:
    """A dict's 'logits' is taken (with a warning); a dict without it and two (rows, C)
    tensors names its keys and logits_output (the Python wrapper was the only remedy)."""
    model = _DictOut().eval()
    with pytest.warns(UserWarning, match=r"'logits' \(40, 3\), 'aux' \(40, 8\)\): taking 'logits'"):
        cap = capture(model, _x(), progress=False)
    np.testing.assert_array_equal(cap.outputs, capture(model.net, _x(), progress=False).outputs)
    with pytest.raises(LabelwiseError, match=r"did you mean 'logits'.*'aux' \(40, 8\)"):
        capture(model, _x(), progress=False, logits_output="lgits")
    with pytest.raises(LabelwiseError, match=r"is an index, but the model returns a dict"):
        capture(model, _x(), progress=False, logits_output=0)


def test_a_forward_needing_more_arguments_says_so_not_a_shape() -> None:
    """before: 'the model failed on inputs of shape (40, 8) ...; the model's first layer ...
    expects inputs of shape (rows, ..., 8): TypeError: ... missing 1 required positional
    argument: 'mask'': the shape was right, the call was not."""
    with pytest.raises(LabelwiseError, match=r"forward takes more than the input") as exc:
        capture(_NeedsMask().eval(), _x(), progress=False)
    assert "mask" in str(exc.value) and "expects inputs of shape" not in str(exc.value)


def test_a_generator_or_a_dict_of_inputs_is_named() -> None:
    """capture(model, (batch for batch in ...)) and capture(model, {'x': x}) said 'inputs must
    have a first axis of rows, got a 0-d array' (np.asarray made a 0-d object array of them)."""
    model, x = _Net().eval(), _x()
    batches = (torch.from_numpy(x[i : i + 8]) for i in range(0, 40, 8))
    with pytest.raises(LabelwiseError, match=r"inputs are a generator.*np\.concatenate"):
        capture(model, batches, progress=False)
    with pytest.raises(LabelwiseError, match=r"inputs are a dict with keys \['x'\].*inputs\['x'\]"):
        capture(model, {"x": x}, progress=False)


class _ListItems(torch.utils.data.Dataset):  # type: ignore[type-arg]
    def __init__(self, x: np.ndarray, labelled: bool) -> None:
        self.x, self.labelled = x.tolist(), labelled

    def __len__(self) -> int:
        return len(self.x)

    def __getitem__(self, i: int) -> object:
        return (self.x[i], i % 3) if self.labelled else self.x[i]


@pytest.mark.parametrize("labelled", [False, True])
def test_a_dataset_of_python_lists_is_read_as_rows(labelled: bool) -> None:
    """A Dataset returning Python lists: torch's default collate turned a list of 8 numbers
    into 8 tensors (one per feature), and capture then said 'the captured layer has shape
    (16,), expected 8 rows first' (items x) or 'batch 0 is a list; expected a tensor' (items
    (x, y)): nothing about lists. A Dataset's lists are now rows (np.asarray of the item); a
    DataLoader with the default collate over them is refused, saying what to change."""
    torch.manual_seed(0)
    model, x = _Net().eval(), _x()
    want = capture(model, x, progress=False)
    got = capture(model, _ListItems(x, labelled), batch_size=7, progress=False)
    np.testing.assert_array_equal(got.outputs, want.outputs)
    np.testing.assert_array_equal(got.activations, want.activations)
    loader = torch.utils.data.DataLoader(_ListItems(x, labelled), batch_size=7)
    with pytest.raises(LabelwiseError, match=r"Python lists.*Pass the Dataset itself.*tensor"):
        capture(model, loader, progress=False)


def test_dask_capture_into_a_file_says_so(tmp_path) -> None:
    """capture_to_zarr(model, pile, "acts.npy") (an existing file as out_dir) ended in
    FileExistsError: [Errno 17] File exists (a traceback from mkdir)."""
    pytest.importorskip("dask.array")
    zarr = pytest.importorskip("zarr")
    from labelwise.adapters.dask_capture import capture_to_zarr

    x = _x(20, 8)
    path = str(tmp_path / "x.zarr")
    zarr.open_array(path, mode="w", shape=x.shape, chunks=(10, 8), dtype=x.dtype)[:] = x
    np.save(tmp_path / "a.npy", x)
    with pytest.raises(LabelwiseError, match=r"out_dir .*a\.npy is a file, not a directory"):
        capture_to_zarr(_Net().eval(), path, tmp_path / "a.npy")
    with pytest.raises(LabelwiseError, match=r"a\.npy is a file, not a directory"):
        capture_to_zarr(_Net().eval(), path, tmp_path / "a.npy" / "cap")


def test_dask_capture_that_fails_leaves_no_out_dir(tmp_path) -> None:
    """capture_to_zarr refused by the model (inputs of 3 columns for Linear(8)) or failing
    in its blocks (outputs probabilities in some blocks only) raised a clear error but left
    the out_dir it had made, empty, like a capture that ran (measured: pile/capture2 and
    pile/capture3 left behind). The folders it made are now removed again."""
    pytest.importorskip("dask.array")
    zarr = pytest.importorskip("zarr")
    from labelwise.adapters.dask_capture import capture_to_zarr

    x = _x(20, 3)
    path = str(tmp_path / "x.zarr")
    zarr.open_array(path, mode="w", shape=x.shape, chunks=(10, 3), dtype=x.dtype)[:] = x
    with pytest.raises(LabelwiseError, match=r"the model failed on inputs of shape \(1, 3\)"):
        capture_to_zarr(_Net().eval(), path, tmp_path / "a" / "b" / "cap")
    assert not (tmp_path / "a").exists()
    path = str(tmp_path / "y.zarr")
    model = _identity_on_half_logits(zarr, path)
    (tmp_path / "kept").mkdir()
    with pytest.raises(LabelwiseError, match=r"row 0 were already probabilities"):
        capture_to_zarr(model, path, tmp_path / "kept" / "cap", rows_per_task=20)
    assert list((tmp_path / "kept").iterdir()) == []  # made by the user: kept, empty
