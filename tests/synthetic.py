"""Shared test data: a synthetic classifier's pile, and how the browser tests start Chromium."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import numpy as np

# Debian's Chromium, headless and offline (no browser is downloaded)
CHROMIUM = "/usr/bin/chromium"
CHROMIUM_ARGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]


def classifier_pile(
    gen: np.random.Generator, n: int, n_classes: int, width: int
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """True labels (n,), activations (n, width) and softmax probabilities (n, n_classes).

    Class k shifts activation k by 1.5 and the logits are twice the first n_classes
    activations: a model about 70 % accurate (width 8, 4 classes), float64 throughout.
    """
    y = gen.integers(n_classes, size=n)
    x = gen.normal(size=(n, width))
    x[np.arange(n), y] += 1.5
    logits = 2 * x[:, :n_classes]
    p = np.exp(logits - logits.max(axis=1, keepdims=True))
    p /= p.sum(axis=1, keepdims=True)
    return y, x, p


def captured_pile(
    tmp_path: Path,
    seed: int,
    n: int,
    names: list[str],
    width: int,
    ids: Sequence[str] | Callable[[np.ndarray], Sequence[str]],
) -> dict[str, Any]:
    """``tmp_path/cap`` as ``labelwise capture`` leaves it for an image folder: activations,
    probabilities (float32), capture.json, ids.txt and classes.json; with the truth ``y``."""
    y, x, p = classifier_pile(np.random.default_rng(seed), n, len(names), width)
    cap = tmp_path / "cap"
    cap.mkdir()
    np.save(cap / "activations.npy", x.astype(np.float32))
    np.save(cap / "probabilities.npy", p.astype(np.float32))
    (cap / "capture.json").write_text(json.dumps({"pile": {"kind": "images", "root": "imgs"}}))
    (cap / "ids.txt").write_text("\n".join(ids(y) if callable(ids) else ids) + "\n")
    (cap / "classes.json").write_text(json.dumps(names))
    return {"dir": tmp_path, "cap": cap, "y": y, "probs": p.astype(np.float32)}


def run_cli(argv: Sequence[Any], capsys: Any) -> tuple[int, str, str]:
    """``labelwise ARGV`` in process: its exit code, stdout and stderr (output captured
    before the call is dropped)."""
    from labelwise.cli import main

    capsys.readouterr()
    code = main([str(a) for a in argv])
    out, err = capsys.readouterr()
    return code, out, err


def interrupt_while_importing(
    args: Sequence[str],
    cwd: Path,
    after: tuple[str, ...] = ("labelwise._deps", "labelwise.exceptions"),
) -> tuple[int, str, str]:
    """``python -X importtime ARGS --version`` interrupted by SIGINT while it imports labelwise:
    its exit code, stdout and stderr without the import-time lines. -X importtime reports each
    import as it completes, so the first labelwise submodule reported means the package's
    import is under way (``after``: the modules whose report sends the signal). On a busy
    machine the signal can arrive after the imports are done (the version is printed: the
    window was missed, not a failure; a SIGINT during the interpreter's own exit then kills
    it, exit -2, as it does any Python program): up to 8 tries for one that lands before
    anything is printed."""
    import labelwise

    env = {**os.environ, "PYTHONPATH": str(Path(labelwise.__file__).parents[1])}
    for _ in range(8):
        proc = subprocess.Popen(
            [sys.executable, "-X", "importtime", *args, "--version"],
            stderr=subprocess.PIPE, stdout=subprocess.PIPE, text=True, env=env, cwd=cwd,
        )  # fmt: skip
        assert proc.stderr is not None
        for line in proc.stderr:
            if line.rstrip().endswith(after):
                break
        else:
            raise AssertionError("labelwise's import was not reported")
        proc.send_signal(signal.SIGINT)
        out, rest = proc.communicate(timeout=60)
        err = "".join(x for x in rest.splitlines(keepends=True) if not x.startswith("import time"))
        if out != f"labelwise {labelwise.__version__}\n":
            break
    return proc.returncode, out, err


def srs_selection(
    pile: dict[str, Any], capsys: Any, *, name: str = "sel", budget: int = 8, seed: int = 1
) -> Path:
    """``labelwise select --method srs`` on :func:`captured_pile`'s arrays into
    ``pile["dir"] / name``."""
    d = pile["dir"] / name
    cap = pile["cap"]
    code, _, err = run_cli(
        ["select", "--method", "srs", "--budget", budget, "--activations",
         cap / "activations.npy", "--probs", cap / "probabilities.npy", "--seed", seed,
         "--out", d],
        capsys,
    )  # fmt: skip
    assert code == 0, err
    return d


class FakeDigits:
    """A stand-in for the demo's trained CNN and pile (``digits_context``; training takes
    7 s): random probabilities over 10 classes for ``n`` rows (the demo's 899), drawn from
    ``seed``."""

    def __init__(self, n: int, seed: int = 0) -> None:
        rng = np.random.default_rng(seed)
        self.name, self.labels = "fake digits", rng.integers(0, 10, n)
        self.probabilities = rng.dirichlet(np.ones(10), n)
        self.predictions = self.probabilities.argmax(axis=1)
        self.activations = rng.normal(size=(n, 6))
        self.train_labels = self.labels[:10]
        self.accuracy = float(np.mean(self.predictions == self.labels))

    def __len__(self) -> int:
        return int(self.labels.size)
