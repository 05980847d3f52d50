"""Out of core: N x 256 float32 on disk through the samplers, the campaign, a coverage metric
and capture, one subprocess per step, beside one plain chunked read of the same file.

Run: ``python benchmarks/out_of_core.py`` (default N = 10,000,000: a 10 GB file under
``--dir``, deleted afterwards unless ``--keep``); ``--rows 1000000`` for a quick run. Prints,
per step, the seconds (numba kernels compiled on a small array first), the ratio to one plain
chunked read of the activations (measured in the same run), and the peak anonymous memory of
the step's process above its baseline (RssAnon sampled every 5 ms; file-backed pages of the
memory map are not anonymous and not counted). The Dask rows run the same calls on dask
arrays built from the same files, on a ``LocalCluster(processes=False)`` inside the step's
process, so its workers' memory is counted too. No assertions. Targets (issue 15): CES within
3x of one plain read; every sampler, the campaign and capture with peak anonymous memory
< 1 GB at 10,000,000 x 256.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

import numpy as np

GiB = 2**30
N_CLASSES = 10
N_MODELS = 5
CAPTURE_IN = 32


def rss_anon() -> int:
    """Anonymous resident memory of this process, bytes (Linux /proc)."""
    with open("/proc/self/status", encoding="ascii") as fh:
        for line in fh:
            if line.startswith("RssAnon:"):
                return int(line.split()[1]) * 1024
    return 0


class PeakSampler:
    """Peak RssAnon while the ``with`` block runs (a thread samples every 5 ms)."""

    def __enter__(self) -> PeakSampler:
        self.base = rss_anon()
        self.peak = self.base
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._thread.start()
        return self

    def _run(self) -> None:
        while not self._stop.wait(0.005):
            self.peak = max(self.peak, rss_anon())

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join()
        self.peak = max(self.peak, rss_anon())


# --------------------------------------------------------------------------- the pile


def make_pile(d: Path, n: int, m: int, capture_rows: int) -> None:
    """activations (n, m) float32, probabilities (n, 10), labels of 5 models (5, n) int16,
    capture inputs (capture_rows, 32) as zarr: written block by block, seeded."""
    d.mkdir(parents=True, exist_ok=True)
    if (d / "done").exists():
        return
    rng = np.random.default_rng(0)
    mix = rng.standard_normal((16, m)).astype(np.float32)
    head = rng.standard_normal((m, N_CLASSES)).astype(np.float32) / np.sqrt(m)
    acts = np.lib.format.open_memmap(d / "acts.npy", mode="w+", dtype=np.float32, shape=(n, m))
    probs = np.lib.format.open_memmap(
        d / "probs.npy", mode="w+", dtype=np.float32, shape=(n, N_CLASSES)
    )
    preds = np.lib.format.open_memmap(
        d / "preds.npy", mode="w+", dtype=np.int16, shape=(N_MODELS, n)
    )
    step = 100_000
    for s in range(0, n, step):
        k = min(step, n - s)
        z = rng.standard_normal((k, 16)).astype(np.float32)
        a = np.maximum(z @ mix + rng.standard_normal((k, m), dtype=np.float32) - 0.5, 0.0)
        acts[s : s + k] = a
        logits = a @ head * 3
        p = np.exp(logits - logits.max(axis=1, keepdims=True))
        p /= p.sum(axis=1, keepdims=True)
        probs[s : s + k] = p
        truth = p.argmax(axis=1)
        noise = rng.integers(0, N_CLASSES, size=(N_MODELS, k))
        keep = rng.random((N_MODELS, k)) < np.linspace(0.6, 0.9, N_MODELS)[:, None]
        preds[:, s : s + k] = np.where(keep, truth[None, :], noise)
    for arr in (acts, probs, preds):
        arr.flush()
    del acts, probs, preds
    import zarr

    z = zarr.open_array(
        str(d / "inputs.zarr"),
        mode="w",
        shape=(capture_rows, CAPTURE_IN),
        chunks=(65536, CAPTURE_IN),
        dtype=np.float32,
    )
    for s in range(0, capture_rows, step):
        k = min(step, capture_rows - s)
        z[s : s + k] = rng.standard_normal((k, CAPTURE_IN)).astype(np.float32)
    (d / "done").write_text("ok")


def _npy_rows(path: str, start: int, stop: int) -> np.ndarray:
    return np.asarray(np.load(path, mmap_mode="r")[start:stop])


def _npy_cols(path: str, start: int, stop: int) -> np.ndarray:
    return np.asarray(np.load(path, mmap_mode="r")[:, start:stop])


def dask_from_npy(path: Path, axis: int = 0) -> Any:
    """A dask array whose tasks each memory-map ``path`` and read their rows (no copy of the
    file; works on any cluster that sees the file)."""
    import dask
    import dask.array as da

    from labelwise._chunks import rows_per_block

    mm = np.load(path, mmap_mode="r")
    rows = rows_per_block(mm.shape, mm.dtype, axis=axis)
    n = mm.shape[axis]
    parts = []
    for s in range(0, n, rows):
        e = min(s + rows, n)
        shape = list(mm.shape)
        shape[axis] = e - s
        fn = _npy_rows if axis == 0 else _npy_cols
        parts.append(da.from_delayed(dask.delayed(fn)(str(path), s, e), shape, mm.dtype))
    return da.concatenate(parts, axis=axis)


# --------------------------------------------------------------------------- steps


def _model() -> Any:
    import torch

    torch.manual_seed(0)
    return torch.nn.Sequential(
        torch.nn.Linear(CAPTURE_IN, 256), torch.nn.ReLU(), torch.nn.Linear(256, N_CLASSES)
    ).eval()


def run_step(name: str, d: Path, use_dask: bool) -> dict[str, float]:
    import labelwise as lw
    from labelwise._chunks import iter_blocks
    from labelwise.campaign import Campaign
    from labelwise.dependability import k_activation_coverage

    if use_dask:
        acts: Any = dask_from_npy(d / "acts.npy")
        probs: Any = dask_from_npy(d / "probs.npy")
        preds: Any = dask_from_npy(d / "preds.npy", axis=1)
        from distributed import Client, LocalCluster

        cluster = LocalCluster(
            n_workers=1, threads_per_worker=2, processes=False, dashboard_address=":0"
        )
        client = Client(cluster)
    else:
        acts = np.load(d / "acts.npy", mmap_mode="r")
        probs = np.load(d / "probs.npy", mmap_mode="r")
        preds = np.load(d / "preds.npy", mmap_mode="r")

    def read() -> None:
        if use_dask:  # one Dask reduction: every block read once, as tasks
            acts.sum(dtype=np.float64).compute()
            return
        total = 0.0
        for _, block in iter_blocks(acts):
            total += float(block.sum(dtype=np.float64))

    steps = {
        "read": read,
        "ces": lambda: lw.ces_select(acts, 100, rng=0),
        "srs": lambda: lw.srs_select(acts, 100, rng=0),
        "css": lambda: lw.css_select(probs, 100, rng=0),
        "rdg": lambda: lw.rdg_select(probs, 100, rng=0),
        "sds": lambda: lw.sds_select(preds, 100, rng=0),
        "campaign": lambda: Campaign(acts, probs, method="stratified", rng=0).propose(100),
        "coverage": lambda: k_activation_coverage(acts, k=2),
        "capture": lambda: _capture(d),
    }
    small = np.random.default_rng(1).random((500, 16)).astype(np.float32)
    warm = {  # numba kernels compiled (or loaded from the disk cache) before the clock starts
        "ces": lambda: lw.ces_select(small, 40, rng=0),
        "coverage": lambda: k_activation_coverage(small, k=2),
    }
    if name in warm:
        warm[name]()
    with PeakSampler() as peak:
        t0 = time.perf_counter()
        steps[name]()
        seconds = time.perf_counter() - t0
    if use_dask:
        client.close()
        cluster.close()
    return {"seconds": seconds, "peak_anon": peak.peak - peak.base, "base_anon": peak.base}


def _capture(d: Path) -> None:
    from labelwise.adapters.dask_capture import capture_to_zarr

    out = d / "capture"
    shutil.rmtree(out, ignore_errors=True)
    capture_to_zarr(_model(), str(d / "inputs.zarr"), out, batch_size=4096)
    shutil.rmtree(out, ignore_errors=True)


# --------------------------------------------------------------------------- driver


def _in_subprocess(name: str, d: Path, use_dask: bool) -> dict[str, float]:
    cmd = [sys.executable, __file__, "--step", name, "--dir", str(d)]
    if use_dask:
        cmd.append("--dask")
    res = subprocess.run(cmd, capture_output=True, text=True, check=False)
    if res.returncode != 0:
        return {"error": 1.0, "seconds": float("nan"), "peak_anon": float("nan")} | {
            "message": res.stderr.strip().splitlines()[-1] if res.stderr.strip() else "?"
        }  # type: ignore[dict-item]
    return dict(json.loads(res.stdout.strip().splitlines()[-1]))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--rows", type=int, default=10_000_000)
    ap.add_argument("--neurons", type=int, default=256)
    ap.add_argument("--capture-rows", type=int, default=None, help="default: --rows")
    ap.add_argument("--dir", type=Path, default=Path("/tmp/labelwise-out-of-core"))
    ap.add_argument("--keep", action="store_true", help="keep the files afterwards")
    ap.add_argument("--no-dask", action="store_true")
    ap.add_argument("--steps", default="read,ces,srs,css,rdg,sds,campaign,coverage,capture")
    ap.add_argument(
        "--dask-steps",
        default="read,ces,srs,css,rdg,sds,campaign,coverage,capture",
        help="steps of the Dask run",
    )
    ap.add_argument("--step", help=argparse.SUPPRESS)
    ap.add_argument("--dask", action="store_true", help=argparse.SUPPRESS)
    args = ap.parse_args()

    if args.step:
        print(json.dumps(run_step(args.step, args.dir, args.dask)))
        return

    d = args.dir / f"{args.rows}x{args.neurons}"
    t0 = time.perf_counter()
    make_pile(d, args.rows, args.neurons, args.capture_rows or args.rows)
    size = (d / "acts.npy").stat().st_size / GiB
    print(
        f"pile: {args.rows:,} x {args.neurons} float32 ({size:.2f} GiB) in {d} "
        f"(made or found in {time.perf_counter() - t0:.1f} s); cpus: {os.cpu_count()}"
    )
    steps = args.steps.split(",")
    try:
        for use_dask in (False,) if args.no_dask else (False, True):
            label = "dask LocalCluster" if use_dask else "memory-mapped .npy"
            print(f"\n{label}")
            print(f"{'step':<10} {'seconds':>9} {'x read':>8} {'peak anon GB':>13}")
            read = _in_subprocess("read", d, use_dask)
            for name in args.dask_steps.split(",") if use_dask else steps:
                r = read if name == "read" else _in_subprocess(name, d, use_dask)
                if "error" in r:
                    print(f"{name:<10} failed: {r.get('message')}")
                    continue
                ratio = r["seconds"] / read["seconds"]
                print(
                    f"{name:<10} {r['seconds']:9.2f} {ratio:8.2f} {r['peak_anon'] / 1e9:13.3f}",
                    flush=True,
                )
    finally:
        if not args.keep:
            shutil.rmtree(d, ignore_errors=True)


if __name__ == "__main__":
    main()
