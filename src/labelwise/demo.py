"""``labelwise demo``: the whole job end to end on scikit-learn's bundled digits."""

from __future__ import annotations

import os
import shutil
import sys
import time
import warnings
from pathlib import Path
from typing import Any

import numpy as np

from ._plotting import pyplot, save_figure
from ._results import Estimate, Selection
from ._validation import check_int, check_out_dir
from .estimation import estimate
from .exceptions import DegenerateDataWarning, LabelwiseError
from .experiments.study import CampaignSpec, MethodSpec, Population, run_study
from .io import (
    file_digest,
    new_folders,
    read_json,
    remove_empty,
    save_array,
    shell_arg,
    write_csv,
    write_json,
)
from .workspace import Workspace, aside_directory

#: The demo's methods: registry entries (labelwise.registry) with their parameters.
METHODS: tuple[MethodSpec, ...] = (
    MethodSpec("SRS", "srs"),
    MethodSpec("CSS", "css"),
    MethodSpec("CES", "ces"),
    MethodSpec("CES-Eq8", "ces", {"objective": "ce"}),
    # Last, so the paper's methods keep their seeds: a sequential labelwise.Campaign.
    CampaignSpec("Campaign", "auto"),
)


def run_demo(
    *,
    shift: str = "patch",
    mutant: str | None = None,
    budget: int = 100,
    repeats: int = 50,
    seed: int = 0,
    out: Path = Path("labelwise-demo"),
    force: bool = False,
) -> int:
    from .experiments.digits import digits_context

    # the arguments are checked before the CNN is trained (7 s), not after it
    budget = check_int(budget, "--budget", minimum=1)
    repeats = check_int(repeats, "--repeats", minimum=2)
    check_out_dir(out, "--out")
    found = demo_out_work(out)
    if found and not force:
        raise _refusal(out, found)
    n_pop = _pile_size()
    if budget > n_pop:
        raise LabelwiseError(f"--budget must be at most the pile's {n_pop} rows, got {budget}")
    t0 = time.perf_counter()
    ctx = digits_context(shift, mutant=mutant, seed=seed)
    took = time.perf_counter() - t0
    truth = ctx.accuracy
    if len(ctx) != n_pop:  # the split's rule changed: the budget was checked against another size
        raise LabelwiseError(f"the demo's pile has {len(ctx)} rows, expected {n_pop}")
    print(f"labelwise demo: {ctx.name}")
    print(
        f"  trained a LeNet-style CNN on {ctx.train_labels.size} digits"
        f"{' with labels ' + mutant + ' swapped' if mutant else ''} ({took:.1f} s)"
    )
    print(
        f"  operational pile: {n_pop} held-out digits, shift '{shift}'; true accuracy "
        f"{truth:.4f} (known here only because the demo has every label)"
    )
    created = new_folders(out)
    out.mkdir(parents=True, exist_ok=True)
    if found:  # --force: the user's work goes aside, whole, as select --force does
        shown = _shown(out, found)
        aside = aside_directory(out)
        for name, _ in found:
            os.replace(out / name, aside / name)
        print(
            f"note: moved what the demo did not write ({shown}) into {aside}; nothing was deleted",
            file=sys.stderr,
        )
    # demo.json is written last: present, the directory holds one whole demo. An earlier
    # demo's is removed first, so that it cannot vouch for this run's half-written files
    (out / "demo.json").unlink(missing_ok=True)
    try:
        _write_demo(ctx, out, shift=shift, budget=budget, repeats=repeats, seed=seed)
    except KeyboardInterrupt:
        print(_interrupted(out, created), file=sys.stderr)
        return 130
    return 0


#: What the demo writes in ``--out`` besides its selections (each a directory named after
#: its method, holding :data:`SELECTION_FILES`); demo.json last.
PILE_FILES = (
    "activations.npy",
    "probabilities.npy",
    "predictions.npy",
    "answer_key.csv",
    "spread.png",
    "demo.json",
)
SELECTION_FILES = ("selection.json", "to_label.csv", "labels.csv")


def demo_layout_dirs() -> set[str]:
    """The demo's selection directories in ``--out``: one per method but the campaign."""
    return {spec.name.lower() for spec in METHODS if not isinstance(spec, CampaignSpec)}


def demo_layout() -> set[str]:
    """Every file the demo may write in ``--out``, as a path relative to it ('ces/labels.csv')."""
    dirs = demo_layout_dirs()
    return {*PILE_FILES, *(f"{d}/{f}" for d in dirs for f in SELECTION_FILES)}


def check_demo_out(out: Path) -> None:
    """An error, before the CNN is trained, unless the demo can write ``out`` without losing
    anything of the user's: ``out`` is new or empty, or holds only files an earlier demo
    wrote there, unchanged since.

    Unchanged means: the sha256 the demo recorded in ``demo.json`` (``"files"``); for a
    demo.json without them (written before the demo recorded them), not modified after it
    (the demo writes it last); without demo.json (a demo interrupted while it wrote ``out``)
    the file names alone are checked. A selection extended there ('select --extend
    out/srs'), a campaign started there or any other file would otherwise be overwritten,
    or left referring to the replaced pile's arrays.
    """
    found = demo_out_work(out)
    if found:
        raise _refusal(out, found)


def _refusal(out: Path, found: list[tuple[str, str]]) -> LabelwiseError:
    """The error naming :func:`demo_out_work`'s entries and what to do."""
    return LabelwiseError(
        f"--out {out} holds work the demo did not write there: {_shown(out, found)}; "
        "the demo would overwrite it, or the pile's arrays it was made from. Give the demo "
        f"another directory (--out), remove {out} first (rm -r {shell_arg(out)}), or give "
        f"--force to move that work into {out / 'replaced-<time>'} and run the demo there"
    )


def demo_out_work(out: Path) -> list[tuple[str, str]]:
    """The entries of ``out`` (top-level names) holding work the demo did not write there,
    each with why (see :func:`check_demo_out`); ``replaced-*`` folders, where ``--force``
    set earlier work aside, are left alone (the demo never writes there)."""
    if not out.is_dir():
        return []
    files, written_at = _recorded(out / "demo.json")
    known = demo_layout() if files is None else set(files)
    dirs = demo_layout_dirs()

    def why(f: Path, rel: str) -> str | None:
        if f.is_symlink() or not f.is_file() or rel not in known:
            return "not written by the demo"
        if files is not None and file_digest(f) != files[rel]:
            return "changed since the demo wrote it"
        if written_at is not None and f.stat().st_mtime > written_at:
            return "changed since the demo wrote it"
        return None

    found: list[tuple[str, str]] = []
    for entry in sorted(out.iterdir()):
        name = entry.name
        if name == "demo.json" or (name.startswith("replaced-") and entry.is_dir()):
            continue
        if not entry.is_dir() or entry.is_symlink():
            what = why(entry, name)
            if what:
                found.append((name, what))
            continue
        held = Workspace(entry).holds()
        if name not in dirs:  # not a directory the demo writes: not looked into
            found.append(
                (name, f"a {held} the demo did not make" if held else "not written by the demo")
            )
            continue
        inner = [(f, f.relative_to(entry).as_posix()) for f in sorted(entry.rglob("*"))]
        odd = [(rel, w) for f, rel in inner if not f.is_dir() and (w := why(f, f"{name}/{rel}"))]
        if odd:
            found.append((name, _listed(odd, held)))
    return found


def _shown(out: Path, found: list[tuple[str, str]]) -> str:
    """:func:`demo_out_work`'s entries as the messages show them: 'camp/ (a campaign the
    demo did not make), notes.txt (not written by the demo)', the first five."""
    shown = [name + "/" * (out / name).is_dir() + f" ({why})" for name, why in found]
    return ", ".join(shown[:5]) + (f", and {len(shown) - 5} more" if len(shown) > 5 else "")


def _recorded(record: Path) -> tuple[dict[str, Any] | None, float | None]:
    """What an earlier demo's ``demo.json`` says of the files it wrote: their sha256
    (``"files"``), else, for a demo.json without them, when it was written; (None, None)
    without a readable demo.json."""
    if not record.is_file() or record.is_symlink():
        return None, None
    try:
        doc = read_json(record, str(record))
    except LabelwiseError:
        return None, None  # cut short by a crash: the demo writes it again
    if not isinstance(doc, dict):
        return None, None
    files = doc.get("files")
    if isinstance(files, dict):
        return files, None
    return None, record.stat().st_mtime


def _listed(odd: list[tuple[str, str]], held: str | None) -> str:
    """The files of one of the demo's selection directories that are not as the demo wrote
    them, grouped by why: 'a selection: selection.json, to_label.csv changed since ...'."""
    parts = []
    for why in ("changed since the demo wrote it", "not written by the demo"):
        # a folder in it (e.g. the replaced-<time>/ 'select --force' set aside) as one name
        names = list(dict.fromkeys(n.split("/")[0] + "/" * ("/" in n) for n, w in odd if w == why))
        if names:
            said = why if len(names) == 1 else why.replace("wrote it", "wrote them")
            parts.append(", ".join(names[:4]) + (", ..." if len(names) > 4 else "") + f" {said}")
    return (f"a {held}: " if held else "") + "; ".join(parts)


def _interrupted(out: Path, created: list[Path]) -> str:
    """What a Ctrl-C while the demo writes ``out`` leaves: nothing, when the run created
    ``out`` (it is removed); else an incomplete directory, said as such (the CLI's general
    'no file was left half-written' read as if the demo were whole)."""
    if created:
        shutil.rmtree(out, ignore_errors=True)
        remove_empty(created[1:])
        if not out.exists():
            return f"labelwise: interrupted; removed the incomplete demo directory {out}"
    return (
        f"labelwise: interrupted; {out} holds an incomplete demo (no demo.json; some of the "
        "pile's arrays and selections may be this run's): run the same 'labelwise demo ... "
        f"--out {shell_arg(out)}' again to complete it"
    )


def _write_demo(ctx: Any, out: Path, *, shift: str, budget: int, repeats: int, seed: int) -> None:
    """The demo's files in ``out`` and its printed tables; demo.json last."""
    n_pop, truth = len(ctx), ctx.accuracy
    sources = _save_pile(ctx, out)
    pop = Population(
        name=ctx.name,
        model="demo CNN",
        operational=shift,
        scores=(ctx.predictions == ctx.labels).astype(np.float64),
        activations=ctx.activations,
        confidences=ctx.probabilities,
        probabilities=ctx.probabilities,
    )

    print(f"\nOne selection of {budget} labels per method (seed {seed}):")
    header = f"  {'method':<8}{'estimate':>10}  {'95% interval':<20}{'error':>9}  covers truth"
    print(header)
    for spec in METHODS:
        gen = np.random.default_rng(seed)
        if isinstance(spec, CampaignSpec):  # 40 labels, then batches of 20, the design learning
            sizes = (*range(40, budget, 20), budget)
            value, lo, hi = spec.estimates(pop, sizes, gen)[-1]
        else:
            sel = spec.selections(pop, (budget,), gen)[0]
            est = _estimate(sel, pop)
            value, lo, hi = est.value, est.ci_low, est.ci_high
            _save_selection(out / spec.name.lower(), sel, sources, seed, ctx.labels)
        covers = "yes" if lo <= truth <= hi else "no"
        print(
            f"  {spec.name:<8}{value:>10.4f}  [{lo:.4f}, {hi:.4f}]  "
            f"{value - truth:>+9.4f}  {covers}"
        )

    print(f"\nSpread over {repeats} repetitions of {budget} labels (true accuracy {truth:.4f}):")
    rows = _repeat(pop, budget, repeats, seed)
    print(f"  {'method':<8}{'mean':>8}{'sd':>9}{'RMSE':>9}{'E vs SRS':>10}{'coverage':>10}{'w':>7}")
    srs_mse = rows["SRS"]["mse"]
    summary = []
    for name, r in rows.items():
        eff = r["mse"] / srs_mse
        print(
            f"  {name:<8}{r['mean']:>8.4f}{r['sd']:>9.4f}{np.sqrt(r['mse']):>9.4f}"
            f"{eff:>10.3f}{r['coverage']:>10.2f}{r['w']:>7.2f}"
        )
        summary.append({"method": name, **r, "efficiency_vs_srs": eff})
    print(
        "  E = MSE(method) / MSE(SRS): below 1 means fewer labels for the same precision "
        "(Li et al. 2019, Sec. 4.2);\n  coverage: share of the 95% intervals that hold the "
        "truth; w = mean half-width of the\n  reported interval / SRS's: the saving a user "
        "actually sees (below 1: a narrower interval)."
    )
    plot = _plot(rows, truth, budget, out)
    # what this run wrote, as it wrote it: a later demo into out checks that nothing changed
    written = sorted(f for f in demo_layout() - {"demo.json"} if (out / f).is_file())
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
            "files": {f: file_digest(out / f) for f in written},
        },
    )
    print(
        f"\nwrote {out}/: demo.json{', ' + plot if plot else ''}, answer_key.csv (every true "
        "label: only a demo has one) and per method a selection with the labels of its rows"
    )

    def q(*parts: str | Path) -> str:  # a path under --out, as one shell word
        return shell_arg(Path(*parts))

    print(
        f"try: labelwise estimate {q(out, 'ces')} --labels {q(out, 'ces', 'labels.csv')}\n"
        f"     labelwise select --extend {q(out, 'ces')} --budget 20\n"
        f"     labelwise campaign {q(out, 'camp')} --activations {q(out, 'activations.npy')} "
        f"--probs {q(out, 'probabilities.npy')}"
    )


def _pile_size() -> int:
    """The operational pile's rows, known before the CNN is trained: the digits' half that
    :func:`~labelwise.experiments.digits.digits_context` does not train on (its split, at
    ``train_size=0.5``, trains on floor(0.5 n) of the n digits: 1797 - 898 = 899 rows)."""
    from .experiments.digits import load_digit_images

    n = len(load_digit_images()[1])
    return n - int(np.floor(0.5 * n))


def _estimate(sel: Selection, pop: Population) -> Estimate:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DegenerateDataWarning)
        return estimate(sel, pop.scores[sel.indices])


def _repeat(pop: Population, budget: int, repeats: int, seed: int) -> dict[str, dict[str, Any]]:
    """The spread over repetitions: the operational study's harness at one size."""
    res = run_study(pop, list(METHODS), sizes=(budget,), repetitions=repeats, seed=seed)
    out = {}
    for spec in METHODS:
        a = res.estimates[spec.name][:, 0]
        out[spec.name] = {
            "mean": float(a.mean()),
            "sd": float(a.std(ddof=1)),
            "mse": float(res.mse(spec.name)[0]),
            "coverage": float(res.coverage(spec.name)[0]),
            "w": float(res.halfwidth(spec.name)[0] / res.halfwidth("SRS")[0]),
            "estimates": a.tolist(),
        }
    return out


def _save_pile(ctx: Any, out: Path) -> dict[str, Any]:
    save_array(out / "activations.npy", ctx.activations)
    save_array(out / "probabilities.npy", ctx.probabilities)
    save_array(out / "predictions.npy", ctx.predictions)
    write_csv(
        out / "answer_key.csv", ["row", "label"], [[i, int(y)] for i, y in enumerate(ctx.labels)]
    )
    ws = Workspace(out)
    ws.add_source("activations", out / "activations.npy", "activations")
    ws.add_source("probs", out / "probabilities.npy", "probabilities")
    return ws.sources


def _save_selection(
    directory: Path, sel: Selection, sources: dict[str, Any], seed: int, labels: np.ndarray
) -> None:
    """The selection, and its labels as a human labeller would return them (selected rows)."""
    ws = Workspace(directory)
    ws.sources, ws.seed = dict(sources), seed
    ws.write_selection(sel)
    ws.write_labels(sel.indices, labels[sel.indices])


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
