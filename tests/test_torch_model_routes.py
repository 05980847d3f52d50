"""PyTorch models as people save them: TorchScript with any forward, state_dicts and checkpoints
with --model-class, pickles whose class lives in the current directory, torch.export .pt2
files; Datasets, DataLoaders and sliceable piles as inputs; capture written to a directory."""

from __future__ import annotations

import json
import sys
import textwrap
import warnings
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pytest

torch = pytest.importorskip("torch")
nn = torch.nn

from labelwise.adapters.torch import capture, load_model  # noqa: E402
from labelwise.cli import main  # noqa: E402
from labelwise.exceptions import LabelwiseError  # noqa: E402

# A model file a user would have next to their checkpoint: forward flattens, rescales and calls
# functional ops, so it is not a chain of its children.
MODEL_SOURCE = textwrap.dedent(
    """
    import torch
    from torch import nn


    class Net(nn.Module):
        def __init__(self, hidden: int = 8) -> None:
            super().__init__()
            self.conv = nn.Conv2d(1, 2, kernel_size=3)
            self.fc = nn.Linear(2 * 4 * 4, hidden)
            self.head = nn.Linear(hidden, 3)

        def forward(self, x: torch.Tensor) -> torch.Tensor:
            x = (x - 0.5) / 0.25
            h = torch.flatten(torch.relu(self.conv(x)), 1)
            h = torch.nn.functional.gelu(self.fc(h)) * 2.0
            return self.head(h)
    """
)


@pytest.fixture
def user_dir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """A directory holding ``usermodels_<n>.py`` (a module name unique to the test), imported
    as a user script would; sys.path and sys.modules are restored afterwards."""
    name = f"usermodels_{abs(hash(str(tmp_path))) % 10**8}"
    (tmp_path / f"{name}.py").write_text(MODEL_SOURCE)
    monkeypatch.syspath_prepend(str(tmp_path))
    (tmp_path / "name.txt").write_text(name)
    yield tmp_path
    sys.modules.pop(name, None)


def user_net(where: Path, hidden: int = 8) -> tuple[nn.Module, str]:
    import importlib

    name = (where / "name.txt").read_text()
    module = importlib.import_module(name)
    torch.manual_seed(0)
    return module.Net(hidden=hidden).eval(), name


def images(n: int = 23) -> np.ndarray:
    return np.random.default_rng(0).uniform(size=(n, 1, 6, 6)).astype(np.float32)


def reference_hidden(model: nn.Module, x: np.ndarray) -> np.ndarray:
    with torch.no_grad():
        t = (torch.from_numpy(x) - 0.5) / 0.25
        h = torch.flatten(torch.relu(model.conv(t)), 1)
        return (torch.nn.functional.gelu(model.fc(h)) * 2.0).numpy()


def scripted(model: nn.Module, path: Path) -> Path:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        torch.jit.save(torch.jit.script(model), str(path))
    return path


def run_cli(*argv: str) -> int:
    return main(["capture", *argv])


# --------------------------------------------------------------------------- TorchScript


def test_torchscript_forward_that_flattens_and_rescales(user_dir: Path) -> None:
    model, _ = user_net(user_dir)
    path = scripted(model, user_dir / "net.pt")
    x = images()
    cap = capture(path, x, batch_size=5, progress=False)
    assert cap.layer == "head (input)"
    np.testing.assert_allclose(cap.activations, reference_hidden(model, x), rtol=1e-5, atol=1e-6)
    ref = capture(model, x, progress=False)
    np.testing.assert_allclose(cap.outputs, ref.outputs, rtol=1e-5, atol=1e-6)
    conv = capture(path, x, layer="conv", progress=False)  # a module's output, by name
    np.testing.assert_allclose(
        conv.activations, capture(model, x, layer="conv", progress=False).activations, atol=1e-6
    )


def test_torchscript_module_called_twice_names_the_cause(tmp_path: Path) -> None:
    class Twice(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.fc = nn.Linear(4, 4)
            self.head = nn.Linear(4, 2)

        def forward(self, x: torch.Tensor) -> torch.Tensor:
            return self.head(self.fc(self.fc(x)))

    path = scripted(Twice(), tmp_path / "twice.pt")
    x = np.ones((3, 4), dtype=np.float32)
    assert capture(path, x, progress=False).layer == "head (input)"
    with pytest.raises(LabelwiseError, match=r"layer 'fc'.*2 different tensors.*called more"):
        capture(path, x, layer="fc", progress=False)


# --------------------------------------------------------------------------- state dicts


def test_state_dict_and_checkpoint_with_model_class(
    user_dir: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    model, name = user_net(user_dir, hidden=5)
    torch.save(model.state_dict(), user_dir / "weights.pt")
    torch.save(
        {"epoch": 3, "model_state_dict": model.state_dict(), "optimizer": {"lr": 0.1}},
        user_dir / "ckpt.pth",
    )
    x = images()
    np.save(user_dir / "x.npy", x)
    monkeypatch.chdir(user_dir)
    del sys.modules[name]  # imported again from the current directory
    expected = reference_hidden(model, x)
    for weights in ("weights.pt", "ckpt.pth"):
        loaded = load_model(weights, model_class=f"{name}:Net", model_kwargs={"hidden": 5})
        np.testing.assert_allclose(
            capture(loaded, x, progress=False).activations, expected, rtol=1e-5, atol=1e-6
        )
        out = user_dir / f"cap_{weights}"
        code = run_cli(
            *("--model-class", f"{name}:Net", "--state-dict", weights),
            *("--model-kwargs", '{"hidden": 5}', "--inputs", "x.npy", "--out", str(out)),
        )
        assert code == 0
        meta = json.loads((out / "capture.json").read_text())
        assert meta["model_kind"] == "state-dict" and meta["model_kwargs"] == {"hidden": 5}
        assert meta["layer"] == "head (input)" and meta["neurons"] == 5
        np.testing.assert_allclose(np.load(out / "activations.npy"), expected, atol=1e-6)
    capsys.readouterr()

    # wrong sizes: the message names the class, the kwargs and the mismatch
    with pytest.raises(LabelwiseError, match=r"do not fit Net\(\*\*\{'hidden': 8\}\)"):
        load_model("weights.pt", model_class=f"{name}:Net", model_kwargs={"hidden": 8})
    with pytest.raises(LabelwiseError, match=r"has no class 'Nett'.*did you mean Net"):
        load_model("weights.pt", model_class=f"{name}:Nett")
    with pytest.raises(LabelwiseError, match=r"cannot import module 'nosuchmodule'"):
        load_model("weights.pt", model_class="nosuchmodule:Net")
    code = run_cli("--state-dict", "weights.pt", "--inputs", "x.npy", "--out", "c")
    assert code != 0
    assert "--model-class and --state-dict go together" in capsys.readouterr().err
    code = run_cli("--model", "weights.pt", "--inputs", "x.npy", "--out", "c")
    assert code != 0
    assert "--model-class package.module:Class --state-dict" in capsys.readouterr().err


# --------------------------------------------------------------------------- pickles


def test_pickled_model_class_found_in_current_directory(
    user_dir: Path, tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch
) -> None:
    model, name = user_net(user_dir)
    torch.save(model, user_dir / "whole.pt")
    x = images()
    # a fresh interpreter state: the module is neither imported nor on sys.path
    monkeypatch.delitem(sys.modules, name)
    monkeypatch.setattr(sys, "path", [p for p in sys.path if p != str(user_dir)])
    elsewhere = tmp_path_factory.mktemp("elsewhere")
    monkeypatch.chdir(elsewhere)
    with pytest.raises(LabelwiseError, match=rf"module '{name}', which cannot be imported.*"):
        load_model(user_dir / "whole.pt")
    monkeypatch.chdir(user_dir)
    cap = capture("whole.pt", x, progress=False)
    np.testing.assert_allclose(cap.activations, reference_hidden(model, x), atol=1e-6)
    assert str(user_dir) not in sys.path  # the current directory was put back off the path


def test_pickle_of_a_class_defined_in_a_script(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # what `python train.py` saves when Net is defined in train.py itself: a class of __main__
    class Net(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.fc = nn.Linear(3, 2)

    Net.__module__, Net.__qualname__ = "__main__", "Net"
    main_module = sys.modules["__main__"]
    monkeypatch.setattr(main_module, "Net", Net, raising=False)
    torch.save(Net(), tmp_path / "main.pt")
    monkeypatch.delattr(main_module, "Net")  # another process: __main__ is not train.py
    with pytest.raises(LabelwiseError, match=r"defined in the script that saved.*--model-class"):
        load_model(tmp_path / "main.pt")


# --------------------------------------------------------------------------- torch.export


def test_export_pt2_matches_module(user_dir: Path, capsys: pytest.CaptureFixture[str]) -> None:
    model, _ = user_net(user_dir)
    x = images()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        batch = torch.export.Dim("batch", min=1)
        program = torch.export.export(
            model, (torch.from_numpy(x[:4]),), dynamic_shapes={"x": {0: batch}}
        )
        torch.export.save(program, str(user_dir / "net.pt2"))
    cap = capture(load_model(user_dir / "net.pt2"), x, batch_size=7, progress=False)
    assert cap.layer == "head (input)"
    np.testing.assert_allclose(cap.activations, reference_hidden(model, x), atol=1e-5)
    ref = capture(model, x, progress=False)
    np.testing.assert_allclose(cap.outputs, ref.outputs, atol=1e-6)
    fc = capture(load_model(user_dir / "net.pt2"), x, layer="fc", progress=False)
    np.testing.assert_allclose(
        fc.activations, capture(model, x, layer="fc", progress=False).activations, atol=1e-5
    )
    np.save(user_dir / "x.npy", x)
    argv = ["--model", str(user_dir / "net.pt2"), "--inputs", str(user_dir / "x.npy")]
    assert run_cli(*argv, "--out", str(user_dir / "cap")) == 0
    assert "(export): layer head (input)" in capsys.readouterr().out
    assert json.loads((user_dir / "cap" / "capture.json").read_text())["model_kind"] == "export"


def test_a_pt2_that_torch_save_wrote_is_named_without_torchs_traceback(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A state_dict (or a TorchScript file) saved as .pt2: torch.export.load logged its own
    traceback through torch's stderr handler, then raised 'check the warnings above'. Now
    nothing is logged and the error says what wrote the file and how to give it; a .pt2
    that is no zip at all gets torch's own reason, not 'the warnings above'."""
    import io
    import logging

    stream = io.StringIO()
    torch_handler = logging.StreamHandler(stream)  # as torch's own stderr handler
    monkeypatch.setattr(logging.getLogger("torch.export"), "handlers", [torch_handler])
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(4, 3), nn.ReLU(), nn.Linear(3, 2))
    torch.save(model.state_dict(), str(tmp_path / "sd.pt2"))
    with pytest.raises(LabelwiseError) as err:
        load_model(tmp_path / "sd.pt2")
    assert "is not a torch.export program: torch.save wrote it" in str(err.value)
    assert "--state-dict FILE with --model-class" in str(err.value)
    scripted(model, tmp_path / "ts.pt2")
    with pytest.raises(LabelwiseError, match=r"TorchScript file \(torch.jit.save\): give it a .pt"):
        load_model(tmp_path / "ts.pt2")
    (tmp_path / "text.pt2").write_text("not a model")
    with pytest.raises(LabelwiseError) as err:
        load_model(tmp_path / "text.pt2")
    assert "failed reading zip archive" in str(err.value) and "above" not in str(err.value)
    assert stream.getvalue() == ""
    assert logging.getLogger("torch.export").handlers == [torch_handler]


# --------------------------------------------------------------------------- inputs


class Pile:
    """Only ``len``, ``shape`` and ``__getitem__(slice)``, recording the largest read."""

    def __init__(self, data: np.ndarray) -> None:
        self.data = data
        self.shape = data.shape
        self.largest = 0

    def __len__(self) -> int:
        return len(self.data)

    def __getitem__(self, index: slice) -> np.ndarray:
        assert isinstance(index, slice)
        rows = self.data[index]
        self.largest = max(self.largest, len(rows))
        return rows


def test_dataset_dataloader_and_sliceable_pile(user_dir: Path) -> None:
    from torch.utils.data import DataLoader, Dataset, TensorDataset

    model, _ = user_net(user_dir)
    x = images(30)
    ref = capture(model, x, progress=False)

    class Images(Dataset):  # type: ignore[type-arg]
        def __len__(self) -> int:
            return len(x)

        def __getitem__(self, i: int) -> Any:
            return torch.from_numpy(x[i]), i % 3

    pile = Pile(x)
    sources: list[Any] = [
        Images(),
        TensorDataset(torch.from_numpy(x)),
        DataLoader(Images(), batch_size=4),
        DataLoader(TensorDataset(torch.from_numpy(x), torch.zeros(30)), batch_size=11),
        pile,
    ]
    for source in sources:
        cap = capture(model, source, batch_size=8, progress=False)
        np.testing.assert_allclose(cap.activations, ref.activations, atol=1e-6)
        np.testing.assert_allclose(cap.outputs, ref.outputs, atol=1e-6)
    assert pile.largest == 8  # read one batch at a time
    with pytest.raises(LabelwiseError, match="DataLoader is a list"):
        capture(model, DataLoader(["a", "b"], batch_size=1), progress=False)


def test_a_dataloader_that_reorders_or_drops_rows_is_refused(user_dir: Path) -> None:
    """capture(model, DataLoader(ds, shuffle=True)) was taken as the pile: row i of the
    capture held another input's outputs (largest probability difference to the ordered
    capture 0.9999997 on 897 digits), so every label matched by row or id scored the wrong
    input; drop_last=True silently captured 800 of 897 rows. Both are now errors that say
    why; shuffle=False without drop_last is the pile as before."""
    from torch.utils.data import DataLoader, SubsetRandomSampler, TensorDataset

    model, _ = user_net(user_dir)
    x = images(30)
    ds = TensorDataset(torch.from_numpy(x), torch.zeros(30))
    ref = capture(model, x, progress=False)
    same = capture(model, DataLoader(ds, batch_size=8, shuffle=False), progress=False)
    np.testing.assert_allclose(same.outputs, ref.outputs, atol=1e-6)
    for loader in (
        DataLoader(ds, batch_size=8, shuffle=True),
        DataLoader(ds, batch_size=8, sampler=SubsetRandomSampler(range(30))),
    ):
        with pytest.raises(LabelwiseError, match=r"in the pile's order.*shuffle=False"):
            capture(model, loader, progress=False)
    with pytest.raises(LabelwiseError, match=r"drop_last=True.*last 6 rows"):
        capture(model, DataLoader(ds, batch_size=8, drop_last=True), progress=False)
    whole = capture(model, DataLoader(ds, batch_size=10, drop_last=True), progress=False)
    np.testing.assert_allclose(whole.outputs, ref.outputs, atol=1e-6)  # nothing to drop


def test_out_directory_is_written_batch_by_batch_and_atomically(tmp_path: Path) -> None:
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(6, 4), nn.ReLU(), nn.Linear(4, 3))
    x = np.random.default_rng(0).normal(size=(50, 6)).astype(np.float32)
    ref = capture(model, x, batch_size=7, progress=False)
    out = tmp_path / "cap"
    cap = capture(model, x, batch_size=7, progress=False, out=out)
    assert isinstance(cap.activations, np.memmap)  # read back from the files
    assert sorted(p.name for p in out.iterdir()) == [
        "activations.npy",
        "predictions.npy",
        "probabilities.npy",
    ]
    np.testing.assert_array_equal(np.load(out / "activations.npy"), ref.activations)
    np.testing.assert_allclose(np.load(out / "probabilities.npy"), ref.outputs, atol=1e-7)
    np.testing.assert_array_equal(np.load(out / "predictions.npy"), ref.outputs.argmax(1))

    raw = capture(nn.Linear(6, 1), x, head="raw", progress=False, out=tmp_path / "raw")
    assert np.load(tmp_path / "raw" / "outputs.npy").shape == (50,)  # a regression: 1-D
    assert raw.outputs.shape == (50, 1)

    # an error in batch 3 leaves the earlier files as they were and no temporary file
    before = (out / "activations.npy").read_bytes()
    bad = x.copy()
    bad[20] = np.nan
    with pytest.raises(LabelwiseError, match="row 20"):
        capture(model, bad, batch_size=7, progress=False, out=out)
    assert sorted(p.name for p in out.iterdir()) == [
        "activations.npy",
        "predictions.npy",
        "probabilities.npy",
    ]
    assert (out / "activations.npy").read_bytes() == before


def test_scripted_capture_restores_requires_grad(tmp_path: Path) -> None:
    torch.manual_seed(0)
    path = scripted(nn.Sequential(nn.Linear(3, 4), nn.Linear(4, 2)), tmp_path / "s.pt")
    model = load_model(path)
    first = next(iter(model.parameters()))
    first.requires_grad_(False)
    capture(model, np.ones((5, 3), dtype=np.float32), progress=False)
    assert [p.requires_grad for p in model.parameters()] == [False, True, True, True]


def test_torchscript_head_inside_control_flow_names_the_cause(tmp_path: Path) -> None:
    class Branchy(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.fc = nn.Linear(4, 4)
            self.head = nn.Linear(4, 2)

        def forward(self, x: torch.Tensor) -> torch.Tensor:
            h = torch.relu(self.fc(x))
            if bool(h.sum() > 0):
                return self.head(h)
            return self.head(-h)

    path = scripted(Branchy(), tmp_path / "branchy.pt")
    x = np.ones((3, 4), dtype=np.float32)
    with pytest.raises(LabelwiseError, match=r"inside control flow \(an if or a loop"):
        capture(path, x, progress=False)
    fc = capture(path, x, layer="fc", progress=False)  # a module outside the branch works
    with torch.no_grad():
        expected = load_model(path).fc(torch.from_numpy(x)).numpy()
    np.testing.assert_allclose(fc.activations, expected, atol=1e-6)


def test_what_a_file_holds_is_named_with_its_article(tmp_path: Path) -> None:
    """A state_dict given as the model said "holds a OrderedDict"; the article now follows
    the name: "an OrderedDict", "a list"."""
    from collections import OrderedDict

    sd = tmp_path / "sd.pt"
    torch.save(OrderedDict(w=torch.zeros(2)), sd)
    with pytest.raises(LabelwiseError, match=r"holds an OrderedDict \(a state_dict"):
        load_model(sd)
    lst = tmp_path / "list.pt"
    torch.save([1, 2], lst)
    with pytest.raises(LabelwiseError, match=r"holds a list, not a torch\.nn\.Module"):
        load_model(lst)
