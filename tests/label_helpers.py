"""Shared by tests/test_label_app.py and tests/test_label_page.py: a small real campaign.

The pile is generated with known true labels and one PNG per row, described by a capture
directory (``CAP/capture.json``, ``CAP/ids.txt``, ``CAP/classes.json``) as ``labelwise
capture`` writes it; the campaign is built with the CLI (``campaign`` + ``next``).
"""

from __future__ import annotations

import csv
import json
import threading
import urllib.error
import urllib.request
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from labelwise.cli import main
from labelwise.cli._label_server import LabelServer, make_server
from labelwise.cli._labelling import LabelSession
from labelwise.io import read_labels_csv
from synthetic import classifier_pile

N, C = 240, 4
NAMES = ["cat", "dog", "bird", "fish"]
COLOURS = [(220, 40, 40), (40, 160, 40), (40, 40, 220), (230, 180, 20)]


def make_pile(root: Path) -> dict[str, Any]:
    """Activations, probabilities (about 70 % accurate), true labels and one PNG per row."""
    from PIL import Image

    rng = np.random.default_rng(0)
    y, x, p = classifier_pile(rng, N, C, 8)
    cap = root / "cap"
    images = root / "images"
    (images / "sub").mkdir(parents=True)
    cap.mkdir()
    ids = [f"sub/img_{i:04d}.png" for i in range(N)]
    for i, name in enumerate(ids):
        a = np.zeros((24, 24, 3), dtype=np.uint8)
        a[:, :] = COLOURS[y[i]]
        a[4 + i % 10 : 12 + i % 10, 6:18] = 255
        Image.fromarray(a).save(images / name)
    np.save(cap / "activations.npy", x.astype(np.float32))
    np.save(cap / "probabilities.npy", p.astype(np.float32))
    (cap / "capture.json").write_text(json.dumps({"pile": {"kind": "images", "root": str(images)}}))
    (cap / "ids.txt").write_text("\n".join(ids) + "\n")
    (cap / "classes.json").write_text(json.dumps(NAMES))
    return {"cap": cap, "y": y, "ids": ids, "probs": p}


def make_campaign(pile: dict[str, Any], d: Path, batch: int = 12, *extra: str) -> Path:
    cap = pile["cap"]
    argv = ["campaign", d, "--activations", cap / "activations.npy"]
    argv += ["--probs", cap / "probabilities.npy", "--seed", "5", *extra]
    assert main([str(a) for a in argv]) == 0
    assert main(["next", str(d), "--batch", str(batch)]) == 0
    return d


def proposed(d: Path) -> list[int]:
    with open(d / "to_label.csv", newline="") as fh:
        return [int(r["row"]) for r in csv.DictReader(fh)]


def labels_of(d: Path) -> dict[int, int]:
    rows, kind, values = read_labels_csv(d / "labels.csv")
    assert kind == "label"
    return dict(zip(rows.tolist(), values.tolist(), strict=True))


def cli_estimate(d: Path, capsys: pytest.CaptureFixture[str], *extra: str) -> dict[str, Any]:
    capsys.readouterr()
    code = main(["estimate", str(d), "--labels", str(d / "labels.csv"), "--json", *extra])
    out, err = capsys.readouterr()
    assert code == 0, err
    return json.loads(out)


class Running:
    """A server for a session, serving from a thread."""

    def __init__(self, session: LabelSession, port: int = 0) -> None:
        self.session = session
        self.server: LabelServer = make_server(session, "127.0.0.1", port)
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self.thread.start()
        self.url = self.server.url

    def stop(self) -> None:
        self.server.shutdown()
        self.server.server_close()
        self.thread.join(5)
        self.session.close()

    def post(self, path: str, body: dict[str, Any]) -> tuple[int, dict[str, Any]]:
        req = urllib.request.Request(
            self.url + path.lstrip("/"),
            data=json.dumps(body).encode(),
            headers={"Content-Type": "application/json"},
            method="POST",
        )
        try:
            with urllib.request.urlopen(req, timeout=30) as r:
                return r.status, json.loads(r.read())
        except urllib.error.HTTPError as exc:
            with exc:
                return exc.code, json.loads(exc.read())

    def get(self, path: str) -> tuple[int, bytes, str]:
        try:
            with urllib.request.urlopen(self.url + path.lstrip("/"), timeout=30) as r:
                return r.status, r.read(), r.headers.get("Content-Type", "")
        except urllib.error.HTTPError as exc:
            with exc:
                return exc.code, exc.read(), exc.headers.get("Content-Type", "")
