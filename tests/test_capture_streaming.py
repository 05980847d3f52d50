"""Capture of a pile larger than a memory bound: the inputs are read and the activations written
one batch at a time, so the peak anonymous memory stays far below the pile's size.

Runs in a fresh interpreter that samples its own ``RssAnon`` (from /proc/self/status: the
memory that is not a file mapping, i.e. what would need RAM or swap) while capturing a 400 MB
memory-mapped pile into a directory, with activations as wide as the inputs (another 400 MB).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np
import pytest

pytest.importorskip("torch")
pytestmark = pytest.mark.skipif(
    not Path("/proc/self/status").exists(), reason="needs /proc/self/status (Linux)"
)

ROWS, COLS = 50_000, 2_000  # float32: 400 MB of inputs, 400 MB of activations
BOUND_MB = 150  # allowed peak anonymous memory above the baseline (the pile is 400 MB)

SCRIPT = textwrap.dedent(
    """
    import json, sys, threading, time
    import numpy as np
    import torch
    from labelwise.adapters.torch import capture

    rows, cols, where = int(sys.argv[1]), int(sys.argv[2]), sys.argv[3]

    def rss_anon_mb():
        with open("/proc/self/status") as fh:
            for line in fh:
                if line.startswith("RssAnon:"):
                    return int(line.split()[1]) / 1024
        raise RuntimeError("no RssAnon")

    # the pile: written in chunks, then opened read-only as a memory map
    pile = np.lib.format.open_memmap(
        where + "/pile.npy", mode="w+", dtype=np.float32, shape=(rows, cols)
    )
    rng = np.random.default_rng(0)
    for start in range(0, rows, 5000):
        pile[start : start + 5000] = rng.standard_normal((5000, cols), dtype=np.float32)
    pile.flush()
    del pile
    pile = np.load(where + "/pile.npy", mmap_mode="r")

    torch.set_num_threads(1)
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.ReLU(), torch.nn.Linear(cols, 4))
    capture(model, pile[:256], progress=False)  # warm up: torch's own allocations
    baseline = rss_anon_mb()

    peak = [baseline]
    done = threading.Event()

    def sample():
        while not done.is_set():
            peak[0] = max(peak[0], rss_anon_mb())
            time.sleep(0.002)

    sampler = threading.Thread(target=sample)
    sampler.start()
    started = time.perf_counter()
    cap = capture(model, pile, batch_size=256, progress=False, out=where + "/cap")
    seconds = time.perf_counter() - started
    done.set()
    sampler.join()
    peak[0] = max(peak[0], rss_anon_mb())

    # spot checks against the model on a few rows
    picks = np.array([0, 1, 12345, rows - 1])
    x = torch.from_numpy(np.array(pile[picks]))
    with torch.no_grad():
        hidden = torch.relu(x).numpy()
        probs = torch.softmax(model(x), dim=1).numpy()
    print(json.dumps({
        "baseline_mb": baseline,
        "peak_mb": peak[0],
        "seconds": seconds,
        "shape": list(cap.activations.shape),
        "hidden_ok": bool(np.allclose(cap.activations[picks], hidden, atol=1e-6)),
        "probs_ok": bool(np.allclose(cap.outputs[picks], probs, atol=1e-5)),
    }))
    """
)


def test_capture_of_a_pile_larger_than_the_memory_bound(tmp_path: Path) -> None:
    import labelwise

    src = str(Path(labelwise.__file__).resolve().parents[1])
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([src, os.environ.get("PYTHONPATH", "")])}
    env["LABELWISE_NO_PROGRESS"] = "1"
    done = subprocess.run(
        [sys.executable, "-c", SCRIPT, str(ROWS), str(COLS), str(tmp_path)],
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    report = json.loads(done.stdout.strip().splitlines()[-1])
    pile_mb = ROWS * COLS * 4 / 2**20
    grown = report["peak_mb"] - report["baseline_mb"]
    print(f"pile {pile_mb:.0f} MB: peak RssAnon {grown:.1f} MB above baseline, {report}")
    assert report["shape"] == [ROWS, COLS]
    assert report["hidden_ok"] and report["probs_ok"]
    assert grown < BOUND_MB < pile_mb
    acts = np.load(tmp_path / "cap" / "activations.npy", mmap_mode="r")
    assert acts.shape == (ROWS, COLS)
    assert sorted(p.name for p in (tmp_path / "cap").iterdir()) == [
        "activations.npy",
        "predictions.npy",
        "probabilities.npy",
    ]
