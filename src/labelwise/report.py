"""One self-contained HTML page on a selection or campaign: :func:`build_report`.

The page holds the estimate and its interval, the labels used and their effective sample
size, the estimate against the number of labels (the interval narrowing), per-class accuracy
with Wilson intervals (classification with the model's predictions), the ranking with
P(best) when ``ranking.json`` exists, the method and its parameters, the source files with
their sha256, the tool version and the time. Plots are PNG data URIs (matplotlib, the
``plot`` extra), the style sheet is inline: the file needs no network and names no URL.

The numbers are computed the way ``labelwise estimate DIR --json`` computes them: for a
campaign from the labels its state recorded, for a selection from ``DIR/labels.csv`` (or the
``labels`` given) with the same scoring and estimator.
"""

from __future__ import annotations

import base64
import dataclasses
import datetime as _dt
import html
import io
import json
import math
import warnings
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
from numpy.typing import NDArray

from . import __version__, registry
from ._json import jsonable
from ._plotting import pyplot
from ._results import Estimate, Selection
from ._scoring import selection_predictions, selection_scores
from .estimation import estimate as estimate_selection
from .estimation import wilson_interval
from .exceptions import LabelwiseError
from .io import file_digest, read_json, shell_arg
from .workspace import LABELS, RANKING, Workspace, capture_hint, check_directory, load_campaign

__all__ = ["ReportData", "build_report", "report_data"]

_HISTORY_POINTS = 40  # at most this many prefixes on the estimate-vs-labels curve
_LABELS_SHOWN = 2000  # at most this many labels listed


@dataclass
class ReportData:
    """Everything the page shows (also useful on its own, e.g. in a notebook)."""

    directory: Path
    kind: str  # "selection" or "campaign"
    estimate: Estimate | None  # None: a ranking selection (SDS, DDG, ...) has no estimator
    confidence: float
    n_labels: int
    label_kind: str
    history: list[tuple[int, float, float, float]]  # (labels, value, ci_low, ci_high)
    history_order: str
    per_class: list[dict[str, Any]]
    ranking: dict[str, Any] | None
    method: dict[str, Any]
    sources: dict[str, Any]
    labels_file: dict[str, Any] | None
    notes: list[str] = field(default_factory=list)
    class_names: tuple[str, ...] | None = None
    labelled: list[dict[str, Any]] = field(default_factory=list)  # one entry per label
    anytime: Estimate | None = None  # a campaign's anytime-valid interval (confidence sequence)
    partial: str = ""  # a selection labelled in part: what the report covers and what not


# ------------------------------------------------------------------------------ numbers


def report_data(
    directory: str | Path,
    *,
    labels: str | Path | None = None,
    predictions: str | Path | None = None,
    confidence: float = 0.95,
) -> ReportData:
    """The numbers of the report on ``directory`` (a selection or a campaign).

    ``labels`` (selections only; default ``DIR/labels.csv``) and ``predictions`` mean what
    they mean for ``labelwise estimate``. A directory without labels is an error that says
    how to get some.
    """
    d = Path(directory)
    check_directory(d)
    held = Workspace(d).holds()
    if held is None:
        raise LabelwiseError(
            f"DIR {d} holds no selection or campaign; make one with 'labelwise select' or "
            f"'labelwise campaign'{capture_hint(d)}"
        )
    if not 0 < confidence < 1:
        raise LabelwiseError(f"--confidence must be in (0, 1), got {confidence}")
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        if held == "campaign":
            if labels is not None or predictions is not None:
                raise LabelwiseError(
                    "--labels and --predictions are for selections; a campaign's report uses "
                    "the labels its state recorded ('labelwise estimate DIR --labels ...')"
                )
            data = _campaign_data(d, confidence)
        else:
            data = _selection_data(d, labels, predictions, confidence)
    data.notes += list(dict.fromkeys(str(w.message) for w in caught))
    if held == "campaign":
        data.ranking = _ranking(d)
    return data


def _campaign_data(d: Path, conf: float) -> ReportData:
    ws, camp, info = load_campaign(d)
    probs = ws.load_source("probs") if ws.has_source("probs") else None
    recorded = info["labels"]
    if camp.n_recorded == 0:
        raise LabelwiseError(
            f"DIR {d}: the campaign has no labels recorded yet, so there is nothing to report; "
            f"label the rows of {ws.to_label} and run 'labelwise estimate {shell_arg(d)} "
            "--labels labels.csv' (or 'labelwise import' a Label Studio export) first"
        )
    est = camp.estimate(confidence=conf)
    anytime = None if camp.method == "active" else camp.estimate(anytime=True, confidence=conf)
    c = camp.to_dict()
    rows = c["recorded_rows"]  # proposal order
    history = _history(len(rows), lambda k: camp.recorded_prefix(k).estimate(confidence=conf))
    kind = str(info["kind"] or "")
    per_class: list[dict[str, Any]] = []
    names = ws.classes()
    r = np.asarray(rows, dtype=np.int64)
    given = np.asarray([recorded.get(int(x), np.nan) for x in r])
    pred = None
    if kind == "label" and probs is not None:
        truth = given.astype(np.int64)
        pred = np.asarray(probs[np.sort(r)])[np.argsort(np.argsort(r))].argmax(axis=1)
        per_class = _per_class(truth, pred, int(probs.shape[1]), names, conf)
    method = {
        "kind": "campaign",
        "method": camp.method,
        "requested method": camp.requested_method,
        "task": camp.task,
        "pile size": camp.population_size,
        "strata": len(c["stratum_sizes"]),
        "n_strata (max)": camp.n_strata,
        "min_stratum_size": camp.min_stratum_size,
        "batches proposed": c["n_batches"],
        "rows proposed": camp.n_proposed,
        "rows awaiting labels": int(camp.pending.size),
        "seed": ws.seed,
        "interval": est.interval,
        "confidence": conf,
    }
    data = ReportData(
        directory=d,
        kind="campaign",
        estimate=est,
        confidence=conf,
        n_labels=camp.n_recorded,
        label_kind=kind,
        history=history,
        history_order="the order the campaign proposed the rows (its labelling order)",
        per_class=per_class,
        ranking=None,
        method=method,
        sources=ws.sources,
        labels_file=None,
        class_names=names,
        labelled=_labelled(r, given, pred, kind, names, ws.row_ids()),
        anytime=anytime,
    )
    unrecorded = _unrecorded_note(d, ws, recorded)
    if unrecorded:
        data.notes.append(unrecorded)
    return data


def _unrecorded_note(d: Path, ws: Workspace, recorded: dict[int, Any]) -> str:
    """A campaign's report uses the labels it recorded, as ``labelwise estimate`` does: say
    how many labels of ``DIR/labels.csv`` are not recorded yet and how to record them."""
    path = d / LABELS
    if not path.is_file():
        return ""
    try:
        rows, _, _ = ws.read_label_file(path)
    except LabelwiseError as exc:
        return f"{path} was not read ({exc}); this report uses the labels the campaign recorded"
    n = len({int(r) for r in rows} - {int(r) for r in recorded})
    if not n:
        return ""
    return (
        f"{path} holds {n} {'label' if n == 1 else 'labels'} not yet recorded, so not in this "
        f"report (it uses the {len(recorded)} recorded labels); record them with 'labelwise "
        f"estimate {d} --labels {path}', then report again"
    )


def _selection_data(
    d: Path, labels: str | Path | None, predictions: str | Path | None, conf: float
) -> ReportData:
    ws, sel = Workspace.open(d)
    path = Path(labels) if labels is not None else d / LABELS
    if not path.is_file():
        raise LabelwiseError(
            f"DIR {d} has no labels to report on: {path} does not exist; label the rows of "
            f"{ws.to_label} (row,label) and give the file with --labels, or 'labelwise "
            "import' a Label Studio export"
        )
    budget = sel.budget
    sel, values, kind, partial = _labelled_part(d, ws, sel, path)
    est: Estimate | None = None
    history: list[tuple[int, float, float, float]] = []
    if registry.get(sel.method).estimator is not None:
        scores, metric = selection_scores(ws, sel, kind, values, predictions=predictions)
        try:
            est = estimate_selection(sel, scores, confidence=conf, metric=metric)
        except LabelwiseError as exc:
            if not partial:
                raise
            raise LabelwiseError(
                f"DIR {d}: the first {sel.budget} of the {budget} selected rows, labelled, do "
                f"not give {registry.with_article(sel.method)} estimate yet ({exc}); label the "
                "rows that follow "
                f"in {ws.to_label} (from order {sel.budget + 1}) and report again"
            ) from None

        def at(k: int) -> Estimate:
            return estimate_selection(_prefix(sel, k), scores[:k], confidence=conf, metric=metric)

        history = _history(sel.budget, at)
    ranking, current = ws.ranking(sel, values) if kind == "label" else (None, False)
    notes: list[str] = []
    if ranking is not None and not current:
        stale = (
            f"{d / RANKING} was made from other labelled rows or labels than the selection's "
            f"{sel.budget} rows with {path} (the selection was extended or made again since, "
            "or the labels changed)"
        )
        if est is None:
            raise LabelwiseError(
                f"DIR {d}: {stale}; run 'labelwise rank {shell_arg(d)} --labels "
                f"{shell_arg(path)}' again, then the report shows its ranking"
            )
        notes.append(f"{stale}, so it is not shown; run 'labelwise rank' again to show it")
        ranking = None
    if est is None and ranking is None:
        raise LabelwiseError(
            f"DIR {d}: {registry.rank_instead(sel.method, d, path)} first, then the report "
            "shows its ranking"
        )
    per_class: list[dict[str, Any]] = []
    names = ws.classes()
    one_model = (predictions is not None and est is not None) or (
        ws.has_source("probs") and len(ws.sources["probs"].get("shape", [])) in (1, 2)
    )
    pred = None
    if kind == "label" and one_model:
        picked, _ = selection_predictions(ws, sel, predictions)
        if picked.ndim == 2:
            pred, n_classes = picked.argmax(axis=1), int(picked.shape[1])
        else:
            pred = picked.astype(np.int64)
            n_classes = int(max(pred.max(), values.max())) + 1
        per_class = _per_class(values.astype(np.int64), pred, n_classes, names, conf)
    method = {
        "kind": "selection",
        "method": sel.method,
        "estimator": est.method if est is not None else "none (a ranking method)",
        "interval": est.interval if est is not None else "",
        "confidence": conf,
        "pile size": sel.population_size,
        "rows selected": budget,
        "rows in this report": sel.budget,
        "seed": ws.seed,
        **{f"param {k}": v for k, v in sorted(sel.params.items())},
    }
    return ReportData(
        directory=d,
        kind="selection",
        estimate=est,
        confidence=conf,
        n_labels=int(values.size),
        label_kind=kind,
        history=history,
        history_order="selection order",
        per_class=per_class,
        ranking=ranking,
        method=method,
        sources=ws.sources,
        labels_file={"path": str(path.resolve()), "sha256": file_digest(path)},
        notes=notes,
        class_names=names,
        labelled=_labelled(sel.indices, values, pred, kind, names, ws.row_ids()),
        partial=partial,
    )


def _labelled_part(
    d: Path, ws: Workspace, sel: Selection, path: Path
) -> tuple[Selection, NDArray[Any], str, str]:
    """The selection's labelled part: the selection itself when every row is labelled, else
    its longest prefix in selection order whose rows are all labelled, with a sentence saying
    so ("" when complete).

    A prefix of a selection is the selection that stopping there would have made (what
    ``select --extend`` continues, and what the estimate-against-labels curve shows), so its
    estimate is a valid one of fewer rows; labels beyond the first unlabelled row are not
    used (taking them would pick rows by whether they were labelled). No labelled prefix is
    an error saying which row to label first.
    """
    kind, have = ws.selected_labels(path, sel)  # what read_labels reads, missing rows allowed
    done = np.asarray([int(r) in have for r in sel.indices], dtype=bool)
    k = sel.budget if done.all() else int(np.argmin(done))
    if k == 0:
        raise LabelwiseError(
            f"DIR {d}: {path} labels {len(have)} of the {sel.budget} selected rows but not "
            f"row {int(sel.indices[0])}, the first in selection order; a report on part of a "
            f"selection uses its rows labelled in order from the first ({ws.to_label}, column "
            f"'order'): label row {int(sel.indices[0])} and report again"
        )
    part = _prefix(sel, k) if k < sel.budget else sel
    ordered = np.asarray([have[int(r)] for r in part.indices])
    if k == sel.budget:
        return sel, ordered, kind, ""
    later = int(done[k:].sum())
    partial = (
        f"Partial: {k} of the {sel.budget} selected rows are labelled in selection order "
        f"(order 1 to {k} of {ws.to_label}); this report is that of a selection of those {k} "
        f"rows. Row {int(sel.indices[k])} (order {k + 1}) has no label yet"
        + (
            f"; {later} {'label' if later == 1 else 'labels'} further down the order "
            f"{'is' if later == 1 else 'are'} not used until it and the rows before are labelled"
            if later
            else ""
        )
        + f". Label the remaining {sel.budget - int(done.sum())} rows for the report on the "
        "whole selection."
    )
    return part, ordered, kind, partial


def _labelled(
    rows: NDArray[np.int64],
    values: NDArray[Any],
    pred: NDArray[Any] | None,
    kind: str,
    names: Sequence[str] | None,
    ids: list[str] | None,
) -> list[dict[str, Any]]:
    """One entry per label: row, id, the label (a class name for classes), the model's class."""

    def name(c: int) -> str:
        return names[c] if names is not None and 0 <= c < len(names) else str(c)

    out = []
    for i, (r, v) in enumerate(zip(rows.tolist(), values.tolist(), strict=True)):
        e: dict[str, Any] = {"row": r, "id": ids[r] if ids is not None and r < len(ids) else ""}
        e["label"] = name(int(v)) if kind == "label" else f"{float(v):.6g}"
        if pred is not None:
            e["model"] = name(int(pred[i]))
            e["correct"] = int(pred[i]) == int(v)
        out.append(e)
    return out


def _prefix(sel: Selection, k: int) -> Selection:
    strata = None if sel.strata is None else sel.strata[:k]
    return dataclasses.replace(sel, indices=sel.indices[:k], strata=strata)


def _history(n: int, at: Callable[[int], Estimate]) -> list[tuple[int, float, float, float]]:
    """The estimate after k labels for up to :data:`_HISTORY_POINTS` values of k up to n.

    Prefixes the estimator cannot handle (e.g. a stratum without a label yet) are left out.
    """
    grid = np.linspace(min(2, n), n, max(min(n - 1, _HISTORY_POINTS), 1))
    ks = sorted({round(float(x)) for x in grid} | {n})
    out = []
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # degenerate early prefixes warn; the final one counts
        for k in ks:
            if k < 1:
                continue
            try:
                e = at(k)
            except LabelwiseError:
                continue
            out.append((k, e.value, e.ci_low, e.ci_high))
    return out


def _per_class(
    truth: NDArray[np.int64],
    pred: NDArray[Any],
    n_classes: int,
    names: Sequence[str] | None,
    conf: float,
) -> list[dict[str, Any]]:
    """Accuracy on the labelled rows of each true class, with its Wilson interval."""
    out = []
    for c in range(n_classes):
        m = truth == c
        n = int(m.sum())
        if n == 0:
            continue
        k = int((pred[m] == c).sum())
        lo, hi = wilson_interval(float(k), n, conf)
        name = names[c] if names is not None and c < len(names) else str(c)
        out.append(
            {
                "class": c,
                "name": name,
                "n": n,
                "correct": k,
                "accuracy": k / n,
                "ci_low": lo,
                "ci_high": hi,
            }
        )
    return out


def _ranking(d: Path) -> dict[str, Any] | None:
    p = d / RANKING
    if not p.is_file():
        return None
    doc = read_json(p, str(p))
    r = doc.get("ranking") if isinstance(doc, dict) else None
    return dict(r) if isinstance(r, dict) else None


# ------------------------------------------------------------------------------- HTML


def build_report(
    directory: str | Path,
    *,
    labels: str | Path | None = None,
    predictions: str | Path | None = None,
    confidence: float = 0.95,
    now: _dt.datetime | None = None,
) -> str:
    """The report on ``directory`` as one self-contained HTML page (a string).

    See :func:`report_data` for the arguments; ``now`` is the time stamped on the page
    (default: the current UTC time).
    """
    data = report_data(directory, labels=labels, predictions=predictions, confidence=confidence)
    return render(data, now=now)


_CSS = """
body{font-family:system-ui,-apple-system,"Segoe UI",Roboto,sans-serif;margin:0;
 background:#f6f7f9;color:#1d2330}
main{max-width:960px;margin:0 auto;padding:24px}
h1{font-size:1.6em;margin:0 0 4px}h2{font-size:1.2em;margin:0 0 10px;color:#27466b}
section{background:#fff;border:1px solid #dde2ea;border-radius:8px;padding:16px 20px;
 margin:16px 0}
.big{font-size:2.4em;font-weight:600;color:#14365c}
.muted{color:#5b6575;font-size:.92em}
table{border-collapse:collapse;width:100%;font-size:.95em}
th,td{text-align:left;padding:4px 8px;border-bottom:1px solid #e8ebf0}
th{background:#f0f3f7}td.n,th.n{text-align:right;font-variant-numeric:tabular-nums}
code{font-family:ui-monospace,Menlo,Consolas,monospace;font-size:.9em;word-break:break-all}
img{max-width:100%;height:auto}
.note{background:#fff8e1;border-left:4px solid #f0b400;padding:6px 10px;margin:6px 0}
.partial{background:#fdecea;border-left:4px solid #c62828;padding:6px 10px;margin:6px 0}
"""


def _e(x: Any) -> str:
    return html.escape(str(x), quote=True)


def _num(key: str, value: float | None, digits: int = 4) -> str:
    """A number shown to ``digits`` decimals, its full value in ``data-value``."""
    if value is None or not math.isfinite(value):
        return f'<span class="num" data-key="{_e(key)}" data-value="null">unknown</span>'
    return (
        f'<span class="num" data-key="{_e(key)}" data-value="{value!r}">{value:.{digits}f}</span>'
    )


def render(data: ReportData, *, now: _dt.datetime | None = None) -> str:
    """The HTML page for ``data``."""
    when = (now or _dt.datetime.now(_dt.timezone.utc)).replace(microsecond=0).isoformat()
    parts = [
        "<!DOCTYPE html>",
        '<html lang="en"><head><meta charset="utf-8">',
        '<meta name="viewport" content="width=device-width,initial-scale=1">',
        f"<title>labelwise report: {_e(data.directory.name)}</title>",
        f"<style>{_CSS}</style></head><body><main>",
        f"<h1>labelwise report: {_e(data.directory.name)}</h1>",
        f'<p class="muted">{_e(data.kind)} in <code>{_e(data.directory.resolve())}</code></p>',
    ]
    parts += _estimate_section(data)
    parts += _labels_section(data)
    parts += _history_section(data)
    parts += _per_class_section(data)
    parts += _ranking_section(data)
    parts += _method_section(data)
    parts += _sources_section(data)
    parts.append(
        f'<footer id="footer" class="muted">labelwise {_e(__version__)}, generated {_e(when)}'
        "</footer></main></body></html>"
    )
    return "\n".join(parts) + "\n"


def _estimate_section(data: ReportData) -> list[str]:
    est = data.estimate
    out = ['<section id="estimate"><h2>Estimate</h2>']
    if data.partial:
        out.append(f'<p id="partial" class="partial"><strong>{_e(data.partial)}</strong></p>')
    if est is None:
        out.append(
            f"<p>A {_e(data.method.get('method'))} selection ranks models: it has no estimate "
            "of one model's accuracy on the pile (see the ranking below).</p>"
        )
    else:
        pct = f"{est.confidence * 100:g}%"
        ess = est.effective_sample_size
        ess_html = (
            _num("effective_sample_size", ess, 1)
            if ess is not None
            else f"not reported by the {_e(est.method)} estimator"
        )
        out += [
            f'<div class="big">{_num("value", est.value)}</div>',
            f"<p>{_e(est.metric)} of the model on the whole pile"
            + (f" of {est.population_size:,} rows" if est.population_size else "")
            + f", {pct} interval [{_num('ci_low', est.ci_low)}, {_num('ci_high', est.ci_high)}]"
            f" ({_e(est.interval)}), standard error {_num('std_error', est.std_error)}.</p>",
            f"<p>From {_num_int('n_labelled', est.n_labelled)} labels; effective sample size "
            f"{ess_html}.</p>",
        ]
        if data.anytime is not None:
            a = data.anytime
            out.append(
                f"<p>Anytime-valid {pct} interval [{_num('anytime_ci_low', a.ci_low)}, "
                f"{_num('anytime_ci_high', a.ci_high)}] ({_e(a.interval)}): a confidence "
                "sequence, valid however often the estimate is looked at and whenever labelling "
                "stops (what <code>--until-halfwidth</code> uses).</p>"
            )
        if est.metric == "1-MSE":
            mse, lo, hi = 1 - est.value, 1 - est.ci_high, 1 - est.ci_low
            out.append(
                f"<p>MSE {_fmt(mse)} ({pct} interval [{_fmt(lo)}, {_fmt(hi)}]), RMSE "
                f"{_fmt(math.sqrt(max(mse, 0.0)))}.</p>"
            )
    for note in dict.fromkeys([*(est.notes if est is not None else ()), *data.notes]):
        out.append(f'<p class="note">{_e(note)}</p>')
    if est is not None:
        out.append(
            '<script type="application/json" id="estimate-json">'
            + json.dumps(jsonable(est.to_dict()), allow_nan=False).replace("</", "<\\/")
            + "</script>"
        )
    out.append("</section>")
    return out


def _num_int(key: str, value: int) -> str:
    return f'<span class="num" data-key="{_e(key)}" data-value="{value}">{value:,}</span>'


def _labels_section(data: ReportData) -> list[str]:
    est = data.estimate
    ess = None if est is None else est.effective_sample_size
    what = {"label": "class labels", "target": "regression targets", "score": "scores"}.get(
        data.label_kind, data.label_kind or "labels"
    )
    worth = (
        f"they are worth about {ess:,.0f} labels drawn at random (effective sample size: "
        "the number of random labels whose own interval would be as narrow as this one)."
        if ess is not None and math.isfinite(ess)
        else "no effective sample size is reported for this estimator."
    )
    rows = [
        '<section id="labels"><h2>Labels used</h2>',
        f"<p>{data.n_labels:,} {_e(what)}; {worth}</p>",
    ]
    if data.labels_file is not None:
        rows.append(
            f'<p class="muted">from <code>{_e(data.labels_file["path"])}</code> (sha256 '
            f"<code>{_e(data.labels_file['sha256'])}</code>)</p>"
        )
    if data.labelled:
        shown = data.labelled[:_LABELS_SHOWN]
        more = len(data.labelled) - len(shown)
        has_id = any(e["id"] for e in shown)
        has_model = "model" in shown[0]
        rows.append(
            f"<details><summary>the {len(shown):,} labels"
            + (f" (of {len(data.labelled):,}: the first ones)" if more else "")
            + '</summary><table><tr><th class="n">row</th>'
            + ("<th>id</th>" if has_id else "")
            + "<th>label</th>"
            + ("<th>model</th><th>correct</th>" if has_model else "")
            + "</tr>"
        )
        for e in shown:
            rows.append(
                f'<tr><td class="n">{e["row"]}</td>'
                + (f"<td><code>{_e(e['id'])}</code></td>" if has_id else "")
                + f"<td>{_e(e['label'])}</td>"
                + (
                    f"<td>{_e(e['model'])}</td><td>{'yes' if e['correct'] else 'no'}</td>"
                    if has_model
                    else ""
                )
                + "</tr>"
            )
        rows.append("</table></details>")
    rows.append("</section>")
    return rows


def _png(fig: Any) -> str:
    buf = io.BytesIO()
    try:
        fig.savefig(buf, format="png", dpi=110, bbox_inches="tight")
    finally:
        import matplotlib.pyplot as plt

        plt.close(fig)
    return "data:image/png;base64," + base64.b64encode(buf.getvalue()).decode("ascii")


def _no_plot() -> str:
    return (
        '<p class="note">Plots need matplotlib (pip install "labelwise[plot]"); the numbers '
        "are in the table.</p>"
    )


def _history_section(data: ReportData) -> list[str]:
    h = data.history
    if data.estimate is None:
        return []
    out = ['<section id="history"><h2>Estimate against labels so far</h2>']
    out.append(
        f'<p class="muted">The estimate and its {data.confidence * 100:g}% interval '
        f"after the first k labels, in {_e(data.history_order)}, recomputed with the same "
        "estimator.</p>"
    )
    plt = pyplot()
    if h and plt is not None:
        k = np.asarray([p[0] for p in h], dtype=float)
        v, lo, hi = (np.asarray([p[i] for p in h], dtype=float) for i in (1, 2, 3))
        fig, ax = plt.subplots(figsize=(7.5, 3.4))
        finite = np.isfinite(lo) & np.isfinite(hi)
        ax.fill_between(
            k[finite],
            lo[finite],
            hi[finite],
            color="#9ec5ec",
            alpha=0.6,
            label=f"{data.confidence * 100:g}% interval",
        )
        ax.plot(k, v, color="#14365c", marker="o", ms=3, label="estimate")
        ax.set_xlabel("labels")
        ax.set_ylabel(data.estimate.metric)
        ax.grid(alpha=0.3)
        ax.legend(loc="lower right")
        out.append(f'<img alt="estimate against labels" src="{_png(fig)}">')
    elif h:
        out.append(_no_plot())
    if h:
        out.append(
            "<details><summary>the numbers</summary>"
            '<table><tr><th class="n">labels</th><th class="n">estimate</th>'
            '<th class="n">interval low</th><th class="n">interval high</th>'
            '<th class="n">half-width</th></tr>'
        )
        for n, v0, lo0, hi0 in h:
            half = (hi0 - lo0) / 2 if math.isfinite(lo0) and math.isfinite(hi0) else math.inf
            out.append(
                f'<tr><td class="n">{n}</td><td class="n">{_fmt(v0)}</td>'
                f'<td class="n">{_fmt(lo0)}</td><td class="n">{_fmt(hi0)}</td>'
                f'<td class="n">{_fmt(half)}</td></tr>'
            )
        out.append("</table></details>")
    out.append("</section>")
    return out


def _fmt(x: float) -> str:
    return f"{x:.4f}" if math.isfinite(x) else "unbounded"


def _per_class_section(data: ReportData) -> list[str]:
    if not data.per_class:
        return []
    pct = f"{data.confidence * 100:g}%"
    out = [
        '<section id="per-class"><h2>Per-class accuracy</h2>',
        '<p class="muted">Among the labelled rows of each true class: the share the model '
        f"predicts correctly, with its {pct} Wilson interval (rows as labelled, not weighted "
        "by the design).</p>",
    ]
    plt = pyplot()
    pc = data.per_class
    if plt is not None:
        fig, ax = plt.subplots(figsize=(7.5, 0.35 * len(pc) + 1.2))
        y = np.arange(len(pc))[::-1]
        acc = np.asarray([r["accuracy"] for r in pc])
        err = np.asarray(
            [[r["accuracy"] - r["ci_low"] for r in pc], [r["ci_high"] - r["accuracy"] for r in pc]]
        )
        ax.barh(y, acc, xerr=err, color="#6a9fd4", ecolor="#14365c", capsize=3)
        ax.set_yticks(y, [str(r["name"]) for r in pc])
        ax.set_xlim(0, 1)
        ax.set_xlabel("accuracy on the labelled rows of the class")
        ax.grid(axis="x", alpha=0.3)
        out.append(f'<img alt="per-class accuracy" src="{_png(fig)}">')
    else:
        out.append(_no_plot())
    out.append(
        '<table><tr><th>class</th><th class="n">labels</th><th class="n">correct</th>'
        f'<th class="n">accuracy</th><th class="n">{pct} interval</th></tr>'
    )
    for r in pc:
        out.append(
            f'<tr><td>{_e(r["name"])}</td><td class="n">{r["n"]}</td>'
            f'<td class="n">{r["correct"]}</td><td class="n">{r["accuracy"]:.4f}</td>'
            f'<td class="n">[{r["ci_low"]:.4f}, {r["ci_high"]:.4f}]</td></tr>'
        )
    out.append("</table></section>")
    return out


def _ranking_section(data: ReportData) -> list[str]:
    r = data.ranking
    if not r:
        return []
    names = list(r.get("model_names") or [])
    order = list(r.get("order") or range(len(names)))
    best = r.get("prob_best")
    conf = r.get("confidence")
    pct = f"{float(conf) * 100:g}% " if isinstance(conf, int | float) else ""
    how = (
        "accuracy on the labelled rows"
        if r.get("method") in (None, "labelled")
        else f"{r.get('method')} estimate of the accuracy on the pile"
    )
    out = [
        '<section id="ranking"><h2>Models ranked</h2>',
        f'<p class="muted">From <code>{RANKING}</code> (written by <code>labelwise rank</code>):'
        f" {len(names)} models on {_e(r.get('n_labelled', '?'))} labelled rows, {_e(how)}; "
        "P(best): the probability that the model is the best (paired bootstrap, or posterior "
        "draws for a consensus-PPI ranking).</p>",
        '<table><tr><th class="n">rank</th><th>model</th><th class="n">accuracy</th>'
        f'<th class="n">{pct}interval</th><th class="n">P(best)</th></tr>',
    ]
    for m in order:
        m = int(m)
        pb = "" if best is None else f"{float(best[m]):.3f}"
        out.append(
            f'<tr><td class="n">{_e(r["rank"][m])}</td><td>{_e(names[m])}</td>'
            f'<td class="n">{float(r["accuracy"][m]):.4f}</td>'
            f'<td class="n">[{float(r["ci_low"][m]):.4f}, {float(r["ci_high"][m]):.4f}]</td>'
            f'<td class="n">{pb}</td></tr>'
        )
    out.append("</table></section>")
    return out


def _method_section(data: ReportData) -> list[str]:
    out = ['<section id="method"><h2>Method and parameters</h2><table>']
    for k, v in data.method.items():
        shown = json.dumps(jsonable(v)) if isinstance(v, Mapping | list | tuple) else v
        out.append(f"<tr><th>{_e(k)}</th><td><code>{_e(shown)}</code></td></tr>")
    out.append("</table></section>")
    return out


def _sources_section(data: ReportData) -> list[str]:
    out = [
        '<section id="sources"><h2>Sources</h2>',
        "<table><tr><th>data</th><th>file</th><th>shape</th><th>sha256</th></tr>",
    ]
    for key, info in sorted(data.sources.items()):
        if not info:
            continue
        out.append(
            f"<tr><td>{_e(key)}</td><td><code>{_e(info.get('path', ''))}</code></td>"
            f"<td>{_e(info.get('shape', ''))}</td><td><code>{_e(info.get('sha256', ''))}"
            "</code></td></tr>"
        )
    if data.labels_file is not None:
        out.append(
            f"<tr><td>labels</td><td><code>{_e(data.labels_file['path'])}</code></td><td></td>"
            f"<td><code>{_e(data.labels_file['sha256'])}</code></td></tr>"
        )
    out.append("</table></section>")
    return out
