"""``labelwise demo``: the whole job end to end on scikit-learn's bundled digits."""

from __future__ import annotations

import time
import warnings
from pathlib import Path
from typing import Any

import numpy as np

from ._plotting import pyplot, save_figure
from ._progress import progress_bar
from ._results import Estimate, Selection
from .estimation import correctness, estimate
from .exceptions import DegenerateDataWarning
from .io import file_digest, save_array, write_csv, write_json
from .sampling import ces_select, css_select, srs_select

METHODS: dict[str, Any] = {
    "SRS": lambda ctx, n, rng: srs_select(ctx.activations, n, rng=rng),
    "CSS": lambda ctx, n, rng: css_select(ctx.probabilities, n, rng=rng),
    "CES": lambda ctx, n, rng: ces_select(ctx.activations, n, rng=rng),
    "CES-Eq8": lambda ctx, n, rng: ces_select(ctx.activations, n, objective="ce", rng=rng),
}


def run_demo(
    *,
    shift: str = "patch",
    mutant: str | None = None,
    budget: int = 100,
    repeats: int = 50,
    seed: int = 0,
    out: Path = Path("labelwise-demo"),
) -> int:
    from .experiments.digits import digits_context

    t0 = time.perf_counter()
    ctx = digits_context(shift, mutant=mutant, seed=seed)
    took = time.perf_counter() - t0
    n_pop, truth = len(ctx), ctx.accuracy
    print(f"labelwise demo: {ctx.name}")
    print(
        f"  trained a LeNet-style CNN on {ctx.train_labels.size} digits"
        f"{' with labels ' + mutant + ' swapped' if mutant else ''} ({took:.1f} s)"
    )
    print(
        f"  operational pile: {n_pop} held-out digits, shift '{shift}'; true accuracy "
        f"{truth:.4f} (known here only because the demo has every label)"
    )
    out.mkdir(parents=True, exist_ok=True)
    sources = _save_pile(ctx, out)

    print(f"\nOne selection of {budget} labels per method (seed {seed}):")
    header = f"  {'method':<8}{'estimate':>10}  {'95% interval':<20}{'error':>9}  covers truth"
    print(header)
    scores_all = (ctx.predictions == ctx.labels).astype(np.float64)
    for name, pick in METHODS.items():
        sel = pick(ctx, budget, seed)
        est = _estimate(sel, ctx)
        covers = "yes" if est.ci_low <= truth <= est.ci_high else "no"
        print(
            f"  {name:<8}{est.value:>10.4f}  [{est.ci_low:.4f}, {est.ci_high:.4f}]  "
            f"{est.value - truth:>+9.4f}  {covers}"
        )
        _save_selection(out / name.lower(), sel, sources, seed, ctx.labels)

    print(f"\nSpread over {repeats} repetitions of {budget} labels (true accuracy {truth:.4f}):")
    rows = _repeat(ctx, budget, repeats, seed, scores_all)
    print(f"  {'method':<8}{'mean':>8}{'sd':>9}{'RMSE':>9}{'E vs SRS':>10}{'coverage':>10}")
    srs_mse = rows["SRS"]["mse"]
    summary = []
    for name, r in rows.items():
        eff = r["mse"] / srs_mse
        print(
            f"  {name:<8}{r['mean']:>8.4f}{r['sd']:>9.4f}{np.sqrt(r['mse']):>9.4f}"
            f"{eff:>10.3f}{r['coverage']:>10.2f}"
        )
        summary.append({"method": name, **r, "efficiency_vs_srs": eff})
    print(
        "  E = MSE(method) / MSE(SRS): below 1 means fewer labels for the same precision "
        "(Li et al. 2019, Sec. 4.2)."
    )
    plot = _plot(rows, truth, budget, out)
    write_json(
        out / "demo.json",
        {
            "context": ctx.name,
            "population_size": n_pop,
            "true_accuracy": truth,
            "budget": budget,
            "repeats": repeats,
            "seed": seed,
            "spread": summary,
        },
    )
    print(
        f"\nwrote {out}/: demo.json{', ' + plot if plot else ''}, answer_key.csv (every true "
        "label: only a demo has one) and per method a selection with the labels of its rows"
    )
    print(
        f"try: labelwise estimate {out}/ces --labels {out}/ces/labels.csv\n"
        f"     labelwise select --extend {out}/ces --budget 20"
    )
    return 0


def _estimate(sel: Selection, ctx: Any) -> Estimate:
    scores = correctness(ctx.predictions[sel.indices], ctx.labels[sel.indices], n_classes=10)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DegenerateDataWarning)
        return estimate(sel, scores)


def _repeat(
    ctx: Any, budget: int, repeats: int, seed: int, scores_all: np.ndarray
) -> dict[str, dict[str, Any]]:
    truth = float(scores_all.mean())
    values: dict[str, list[float]] = {m: [] for m in METHODS}
    covered: dict[str, int] = dict.fromkeys(METHODS, 0)
    seeds = np.random.SeedSequence([seed, 7]).spawn(repeats)
    bar = progress_bar(repeats, desc="repetitions", unit="rep")
    for r in range(repeats):
        bar.update(1)
        for name, pick in METHODS.items():
            est = _estimate(pick(ctx, budget, np.random.default_rng(seeds[r])), ctx)
            values[name].append(est.value)
            covered[name] += int(est.ci_low <= truth <= est.ci_high)
    bar.close()
    res = {}
    for name, v in values.items():
        a = np.asarray(v)
        res[name] = {
            "mean": float(a.mean()),
            "sd": float(a.std(ddof=1)) if a.size > 1 else 0.0,
            "mse": float(np.mean((a - truth) ** 2)),
            "coverage": covered[name] / repeats,
            "estimates": a.tolist(),
        }
    return res


def _save_pile(ctx: Any, out: Path) -> dict[str, Any]:
    save_array(out / "activations.npy", ctx.activations)
    save_array(out / "probabilities.npy", ctx.probabilities)
    save_array(out / "predictions.npy", ctx.predictions)
    write_csv(
        out / "answer_key.csv", ["row", "label"], [[i, int(y)] for i, y in enumerate(ctx.labels)]
    )
    sources = {}
    for key, fname, arr in (
        ("activations", "activations.npy", ctx.activations),
        ("probs", "probabilities.npy", ctx.probabilities),
    ):
        path = (out / fname).resolve()
        sources[key] = {"path": str(path), "sha256": file_digest(path), "shape": list(arr.shape)}
    return sources


def _save_selection(
    directory: Path, sel: Selection, sources: dict[str, Any], seed: int, labels: np.ndarray
) -> None:
    """The selection, and its labels as a human labeller would return them (selected rows)."""
    from .cli import write_selection

    write_selection(directory, sel, sources, seed)
    rows = [[int(r), int(labels[r])] for r in sel.indices]
    write_csv(directory / "labels.csv", ["row", "label"], rows)


def _plot(rows: dict[str, dict[str, Any]], truth: float, budget: int, out: Path) -> str | None:
    plt = pyplot()
    if plt is None:
        return None
    fig, ax = plt.subplots(figsize=(6.4, 3.6), dpi=120)
    names = list(rows)
    ax.boxplot([rows[n]["estimates"] for n in names], tick_labels=names, showmeans=True)
    ax.axhline(truth, color="tab:red", linestyle="--", label=f"true accuracy {truth:.3f}")
    ax.set_ylabel("estimated accuracy")
    ax.set_title(f"Estimates from {budget} labels, {len(rows['SRS']['estimates'])} repetitions")
    ax.legend(loc="lower right")
    fig.tight_layout()
    return save_figure(fig, out / "spread.png").name
