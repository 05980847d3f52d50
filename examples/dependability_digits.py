"""Build an example for ``labelwise dependability`` from scikit-learn's digits.

Writes to a folder (default ``dependability-example``): ``model.pt`` (a TorchScript
LeNet-style CNN trained here in seconds), ``inputs.npy`` (held-out digits, a third each
clean, occluded by a patch and relit), ``labels.npy``, ``scenarios.csv`` (each input's shift
and ink weight) and ``spec.json`` (every condition's possible values, including a "blur"
shift the pile never shows). Then run, for example::

    labelwise dependability --model dependability-example/model.pt \\
        --inputs dependability-example/inputs.npy --labels dependability-example/labels.npy \\
        --scenarios dependability-example/scenarios.csv --spec dependability-example/spec.json \\
        --perturb fgsm,pgd,noise,brightness,rotation,patch --eps 0.05 --out dependability-out
"""

from __future__ import annotations

import argparse
import csv
import json
import warnings
from pathlib import Path

import numpy as np


def main() -> None:
    ap = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    ap.add_argument("out", nargs="?", type=Path, default=Path("dependability-example"))
    ap.add_argument("--seed", type=int, default=0)
    args = ap.parse_args()

    import torch

    from labelwise.experiments.digits import apply_shift, digits_context

    ctx = digits_context("none", seed=args.seed)
    clean, labels = ctx.images, ctx.labels
    rng = np.random.default_rng(args.seed)
    shift = np.array(["none", "patch", "light"])[rng.integers(0, 3, labels.size)]
    images = clean.copy()
    for s in ("patch", "light"):
        rows = shift == s
        images[rows] = apply_shift(clean[rows], s, rng=rng)
    ink = np.where(clean.mean(axis=(1, 2)) > np.median(clean.mean(axis=(1, 2))), "heavy", "thin")

    args.out.mkdir(parents=True, exist_ok=True)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)  # TorchScript is deprecated in 2.13
        torch.jit.save(torch.jit.script(ctx.model), str(args.out / "model.pt"))
    np.save(args.out / "inputs.npy", images[:, None, :, :])  # (N, 1, 8, 8), values in [0, 1]
    np.save(args.out / "labels.npy", labels)
    with open(args.out / "scenarios.csv", "w", newline="") as fh:
        w = csv.writer(fh)
        w.writerow(["shift", "ink"])
        w.writerows(zip(shift, ink, strict=True))
    spec = {"shift": ["none", "patch", "light", "blur"], "ink": ["thin", "heavy"]}
    (args.out / "spec.json").write_text(json.dumps(spec, indent=2) + "\n")
    print(f"wrote model.pt, inputs.npy, labels.npy, scenarios.csv, spec.json to {args.out}")


if __name__ == "__main__":
    main()
