"""Capture throughput and agreement of the PyTorch and ONNX adapters on one small CNN: the
module, its TorchScript, its ONNX export (in memory and written batch by batch to a directory).
Run: python benchmarks/capture_speed.py [ROWS]  (default 20,000 rows of 1x28x28)."""

from __future__ import annotations

import sys
import tempfile
import time
import warnings
from pathlib import Path

import numpy as np
import torch
from torch import nn

from labelwise.adapters import onnx as lw_onnx
from labelwise.adapters import torch as lw_torch


def make_cnn() -> nn.Module:
    torch.manual_seed(0)
    return nn.Sequential(
        nn.Conv2d(1, 8, 3),
        nn.ReLU(),
        nn.MaxPool2d(2),
        nn.Conv2d(8, 16, 3),
        nn.ReLU(),
        nn.MaxPool2d(2),
        nn.Flatten(),
        nn.Linear(16 * 5 * 5, 64),
        nn.ReLU(),
        nn.Linear(64, 10),
    ).eval()


def main() -> None:
    n = int(sys.argv[1]) if len(sys.argv) > 1 else 20_000
    x = np.random.default_rng(0).standard_normal((n, 1, 28, 28), dtype=np.float32)
    model = make_cnn()
    with tempfile.TemporaryDirectory() as tmp:
        where = Path(tmp)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            torch.onnx.export(
                model,
                (torch.from_numpy(x[:2]),),
                str(where / "cnn.onnx"),
                dynamo=False,
                input_names=["x"],
                output_names=["logits"],
                dynamic_axes={"x": {0: "batch"}, "logits": {0: "batch"}},
            )
            torch.jit.save(torch.jit.script(model), str(where / "cnn.pt"))
        lw_torch.capture(model, x[:512], progress=False)  # warm up torch's kernels
        runs = {
            "torch module": lambda: lw_torch.capture(model, x, progress=False),
            "torchscript": lambda: lw_torch.capture(where / "cnn.pt", x, progress=False),
            "onnx": lambda: lw_onnx.capture(where / "cnn.onnx", x, progress=False),
            "onnx, out=DIR": lambda: lw_onnx.capture(
                where / "cnn.onnx", x, progress=False, out=where / "cap"
            ),
        }
        caps = {}
        for name, run in runs.items():
            started = time.perf_counter()
            caps[name] = run()
            seconds = time.perf_counter() - started
            print(f"{name:>14}: {n / seconds:10,.0f} rows/s ({seconds:.2f} s for {n:,} rows)")
        ref = caps["torch module"]
        for name, cap in caps.items():
            da = float(np.abs(np.asarray(cap.activations) - ref.activations).max())
            dp = float(np.abs(np.asarray(cap.outputs) - ref.outputs).max())
            print(f"{name:>14}: max |diff| activations {da:.2e}, probabilities {dp:.2e}")


if __name__ == "__main__":
    main()
