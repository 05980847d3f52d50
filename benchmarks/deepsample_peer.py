"""DeepSample's selectors beside labelwise's Campaign, on the campaign study's own piles.

DeepSample (Guerriero, Pietrantuono & Russo, "DeepSample: DNN sampling-based testing for
operational accuracy assessment", ICSE 2024; github.com/dessertlab/DeepSample) is Java and not
on PyPI. This harness compiles its classification sources (``selector/classification``,
``utility``; its own ``main`` classes write into ``./Results`` and are not used) together with
our thin driver ``benchmarks/deepsample/Driver.java`` into a temporary directory, writes each
pile dumped by ``benchmarks/peers.py dump DIR`` in DeepSample's CSV format, and runs:

* ``SSRS`` (``StratifiedRandomSelectorWOR``): 10 partitions, optimal (Neyman) allocation on
  the spread of the auxiliary variable in each, simple random sampling without replacement
  in each, the stratified estimate;
* ``2-UPS`` (``TwoUPSSelector``): partitions drawn with probability proportional to their sum
  of the auxiliary variable, a row drawn uniformly without replacement in the partition drawn;
* ``GBS`` (``GBSSelector``): one row per partition, then each next row in the partition with
  the largest gradient of the stratified variance (rows drawn with replacement);
* ``RHC-S`` (``RHCSSelector``): Rao-Hartley-Cochran, the rows split at random into n groups, one
  row drawn per group with probability proportional to the auxiliary variable;
* ``SUPS`` (``SUPSSelector``): n rows drawn with replacement with probability proportional to
  the auxiliary variable, the Hansen-Hurwitz estimate;
* ``DeepEST`` (``DeepESTSelector``): adaptive (weights of rows whose auxiliary variable passes
  a threshold, mixed with uniform draws by d = 0.8), its own estimator of the failure
  probability and its variance.

The auxiliary variable is DeepSample's ``confidence`` (CSV column 3, which it uses as
1 - confidence), here the model's largest probability. The partitions are what
``TestSuiteFileLoader.getPartitionsSimulation_kNN`` computes: Weka's ``SimpleKMeans`` (k-means,
not kNN, despite the name; Weka's default seed 10) into 10 clusters on that column alone.

Measures as ``benchmarks/peers.py`` (imported): ``E`` = mean over sizes of MSE(n) over the exact
SRS variance, and ``coverage`` / ``w`` only for the selectors whose code computes a variance of
its estimate (RHC-S and DeepEST): estimate +- 1.96 sqrt(variance). The others give a point
estimate and no interval. DeepSample's selectors draw from ``new Random()``, ``Math.random()``
and ``ThreadLocalRandom`` without a seed, so repetitions are not reproducible draw for draw.

Usage (the project venv; java and javac 17, Weka, commons-math3 and commons-lang3 jars, e.g.
Debian's ``weka libcommons-math3-java libcommons-lang3-java`` in /usr/share/java)::

    PYTHONPATH=src .venv/bin/python benchmarks/peers.py dump DIR
    PYTHONPATH=src .venv/bin/python benchmarks/deepsample_peer.py DIR --deepsample CHECKOUT

or ``make deepsample-peer DEEPSAMPLE_DIR=CHECKOUT``.
"""

from __future__ import annotations

import argparse
import functools
import glob
import importlib.util
import os
import shutil
import subprocess
import tempfile
import time
from collections.abc import Sequence
from types import ModuleType
from typing import Any

import numpy as np
from numpy.typing import NDArray

METHODS = ("SSRS", "2-UPS", "GBS", "RHC-S", "SUPS", "DeepEST")
KEY = 3  # DeepSample's column for "confidence"
HEADER = "id,outcome,prediction,confidence,dsa,lsa,combo"
JARS = ("weka.jar", "commons-math3.jar", "commons-lang3.jar")
HERE = os.path.dirname(os.path.abspath(__file__))


@functools.cache
def _peers() -> ModuleType:
    spec = importlib.util.spec_from_file_location("peers_benchmark", os.path.join(HERE, "peers.py"))
    assert spec is not None and spec.loader is not None
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def pile_csv(scores: NDArray[np.floating], probabilities: NDArray[np.floating]) -> str:
    """One pile in DeepSample's classification CSV (``TestSuiteFileLoader``, ``InitializerTF``).

    Columns ``id, outcome, prediction, confidence, dsa, lsa, combo``: ``outcome`` is ``Pass``
    where the score is 1 (correct) and ``Fail`` otherwise, ``confidence`` the largest
    probability (DeepSample reads column 3 as confidence and uses 1 - it). DSA, LSA and the
    combination are not computed here: 0 (Weka's k-means reads only the key column).
    """
    y = np.asarray(scores, dtype=np.float64)
    p = np.asarray(probabilities, dtype=np.float64)
    conf = p.max(axis=1)
    pred = p.argmax(axis=1)
    lines = [HEADER]
    for i in range(y.size):
        outcome = "Pass" if y[i] == 1 else "Fail"
        lines.append(f"{i},{outcome},{pred[i]},{float(conf[i])!r},0,0,0")
    return "\n".join(lines) + "\n"


def parse_driver(text: str) -> tuple[dict[tuple[str, int], NDArray[np.float64]], list[int]]:
    """Driver's stdout: {(method, size): (repetitions, 2) array of accuracy, variance}, and the
    partition sizes (the ``# partitions`` line)."""
    rows: dict[tuple[str, int], list[tuple[int, float, float]]] = {}
    parts: list[int] = []
    for line in text.splitlines():
        if line.startswith("# partitions"):
            parts = [int(v) for v in line.split()[2:]]
            continue
        if not line.strip():
            continue
        m, n, r, acc, var = line.split()
        rows.setdefault((m, int(n)), []).append((int(r), float(acc), float(var)))
    out = {}
    for k, v in rows.items():
        v.sort()
        out[k] = np.array([[a, b] for _, a, b in v], dtype=np.float64)
    return out, parts


def measures(
    runs: dict[tuple[str, int], NDArray[np.float64]],
    scores: NDArray[np.floating],
    sizes: Sequence[int],
    srs_half: NDArray[np.float64],
    method: str,
    *,
    z: float = 1.959963984540054,
) -> dict[str, Any]:
    """peers.py's ``summary`` of one method's runs; coverage and w only if every run reports a
    variance (``interval`` says which), estimate +- z sqrt(variance)."""
    peers = _peers()
    y = np.asarray(scores, dtype=np.float64)
    truth = float(y.mean())
    est = np.column_stack([runs[(method, n)][:, 0] for n in sizes])
    var = np.column_stack([runs[(method, n)][:, 1] for n in sizes])
    err = est - truth
    interval = bool(np.all(np.isfinite(var)))
    half = z * np.sqrt(np.maximum(var, 0.0)) if interval else np.full_like(err, np.nan)
    cover = np.abs(err) <= half if interval else np.zeros(err.shape, dtype=bool)
    s = peers.summary(err, half, cover, peers.srs_mse(y, sizes), srs_half)
    out: dict[str, Any] = dict(s)
    out["interval"] = interval
    out["nan_var"] = int(np.sum(~np.isfinite(var)))
    out["nan_est"] = int(np.sum(~np.isfinite(est)))
    if not interval:
        for k in ("coverage", "coverage_se", "coverage_min", "w"):
            out[k] = float("nan")
    return out


def cell(s: dict[str, Any]) -> str:
    """A README-style cell: ``E / coverage mean (worst) / w`` or ``E / no interval``."""
    if not s["interval"]:
        return f"{s['E']:.2f} / no interval"
    return f"{s['E']:.2f} / {s['coverage']:.3f} ({s['coverage_min']:.3f}) / {s['w']:.2f}"


def _source_root(checkout: str) -> str:
    for cand in (
        os.path.join(checkout, "DeepSample", "source_code"),
        os.path.join(checkout, "source_code"),
        checkout,
    ):
        if os.path.isdir(os.path.join(cand, "selector", "classification")):
            return cand
    raise SystemExit(f"no DeepSample/source_code/selector/classification under {checkout}")


def classpath(checkout: str, extra: str | None = None) -> str:
    """Weka, commons-math3, commons-lang3: from ``extra`` (a path list), the checkout's
    ``libs``, or /usr/share/java."""
    found = []
    dirs = [os.path.join(checkout, "libs"), os.path.join(checkout, "DeepSample", "libs")]
    dirs.append("/usr/share/java")
    for jar in JARS:
        stem = jar.removesuffix(".jar")
        hits = [p for d in dirs for p in sorted(glob.glob(os.path.join(d, f"{stem}*.jar")))]
        if hits:
            found.append(hits[0])
        elif extra is None:
            raise SystemExit(f"no {jar} (Debian: apt-get install weka libcommons-math3-java)")
    return os.pathsep.join(([extra] if extra else []) + found)


def compile_deepsample(checkout: str, build: str, cp: str) -> None:
    """javac DeepSample's classification selectors, utilities and our Driver into ``build``."""
    root = _source_root(checkout)
    srcs = sorted(glob.glob(os.path.join(root, "selector", "classification", "*.java")))
    srcs += sorted(glob.glob(os.path.join(root, "utility", "*.java")))
    srcs.append(os.path.join(HERE, "deepsample", "Driver.java"))
    cmd = ["javac", "-nowarn", "-encoding", "UTF-8", "-cp", cp, "-d", build, *srcs]
    done = subprocess.run(cmd, capture_output=True, text=True)
    if done.returncode != 0:
        raise SystemExit(f"javac failed:\n{done.stderr}")


def run_context(
    path: str,
    *,
    build: str,
    cp: str,
    repetitions: int,
    methods: Sequence[str],
    work: str,
    save: str | None = None,
) -> tuple[str, dict[str, dict[str, Any]], list[int], float]:
    peers = _peers()
    ctx = peers.load_context(path)
    sizes = [int(s) for s in ctx["sizes"]]
    csv = os.path.join(work, f"{ctx['name']}.csv")
    with open(csv, "w") as f:
        f.write(pile_csv(ctx["scores"], ctx["probabilities"]))
    t0 = time.perf_counter()
    cmd = ["java", "-Xss16m", "-cp", os.pathsep.join([build, cp]), "Driver", csv]
    cmd += [str(ctx["scores"].size), str(KEY), ",".join(map(str, sizes)), str(repetitions)]
    cmd.append(",".join(methods))
    done = subprocess.run(cmd, capture_output=True, text=True)
    if done.returncode != 0:
        raise SystemExit(f"Driver failed on {ctx['name']}:\n{done.stderr[-3000:]}")
    if save is not None:
        with open(os.path.join(save, f"{ctx['name']}.txt"), "w") as f:
            f.write(done.stdout)
    runs, parts = parse_driver(done.stdout)
    srs_half = np.asarray(ctx["srs_half"], dtype=np.float64)
    res = {m: measures(runs, ctx["scores"], sizes, srs_half, m) for m in methods}
    return str(ctx["name"]), res, parts, time.perf_counter() - t0


def table(results: dict[str, dict[str, dict[str, Any]]]) -> str:
    methods = list(next(iter(results.values())))
    lines = ["| context | " + " | ".join(methods) + " |", "|---" * (len(methods) + 1) + "|"]
    for ctx, rows in results.items():
        lines.append(f"| {ctx} | " + " | ".join(cell(rows[m]) for m in methods) + " |")
    mean = []
    for m in methods:
        rs = [rows[m] for rows in results.values()]
        agg = {
            "E": np.mean([s["E"] for s in rs]),
            "interval": all(s["interval"] for s in rs),
            "coverage": np.mean([s["coverage"] for s in rs]),
            "coverage_min": min(s["coverage_min"] for s in rs),
            "w": np.mean([s["w"] for s in rs]),
        }
        mean.append(cell(agg))
    lines.append("| **mean** | " + " | ".join(mean) + " |")
    lines.append("")
    head = f"{'context':<20}{'method':<9}{'E':>6}{'+-':>6}{'E max':>7}{'bias':>8}"
    head += f"{'cov':>7}{'cov min':>8}{'w':>6}{'NaN est':>8}"
    lines += [head, "-" * len(head)]
    for ctx, rows in results.items():
        for m, s in rows.items():
            lines.append(
                f"{ctx:<20}{m:<9}{s['E']:>6.2f}{s['E_se']:>6.2f}{s['E_max']:>7.2f}"
                f"{s['bias']:>8.4f}{s['coverage']:>7.3f}{s['coverage_min']:>8.3f}{s['w']:>6.2f}"
                f"{s['nan_est']:>8d}"
            )
    return "\n".join(lines)


def main(argv: Sequence[str] | None = None) -> None:
    ap = argparse.ArgumentParser(
        prog="benchmarks/deepsample_peer.py", description=__doc__.split("\n")[0]
    )
    ap.add_argument("dir", help="what `benchmarks/peers.py dump DIR` wrote")
    ap.add_argument("--deepsample", required=True, help="a checkout of dessertlab/DeepSample")
    ap.add_argument("--repetitions", type=int, default=200)
    ap.add_argument("--methods", default=",".join(METHODS))
    ap.add_argument("--classpath", default=None, help="Weka, commons-math3, commons-lang3 jars")
    ap.add_argument("--save", default=None, help="keep each context's Driver output here")
    args = ap.parse_args(argv)
    methods = args.methods.split(",")
    bad = [m for m in methods if m not in METHODS]
    if bad:
        ap.error(f"--methods must be among {', '.join(METHODS)}; got {', '.join(bad)}")
    for tool in ("java", "javac"):
        if shutil.which(tool) is None:
            raise SystemExit(f"{tool} not found (DeepSample is Java; JDK 17 was used)")
    paths = [os.path.join(args.dir, f) for f in _peers()._dumped(args.dir)]
    cp = classpath(args.deepsample, args.classpath)
    if args.save is not None:
        os.makedirs(args.save, exist_ok=True)
    results = {}
    with tempfile.TemporaryDirectory(prefix="deepsample-") as tmp:
        build = os.path.join(tmp, "classes")
        os.makedirs(build)
        compile_deepsample(args.deepsample, build, cp)
        for path in paths:
            name, res, parts, secs = run_context(
                path,
                build=build,
                cp=cp,
                repetitions=args.repetitions,
                methods=methods,
                work=tmp,
                save=args.save,
            )
            results[name] = res
            print(f"  {name}: {secs:.0f} s, k-means partition sizes {parts}", flush=True)
    print(f"{args.repetitions} repetitions per size; sizes from the dump; 95 % intervals")
    print(table(results))


if __name__ == "__main__":
    main()
