"""The state behind ``labelwise label``: which row comes next, and recording each answer.

:class:`LabelSession` knows no HTTP: the page's server (:mod:`._label_server`) calls it. It
works on a campaign directory (``labelwise campaign``) or a selection directory (``labelwise
select``) and keeps, in the directory (every file written atomically):

- ``DIR/labels.csv``: ``row,label`` (or ``row,target`` for regression), plus ``class`` (the
  label's class name) when the class names are known and ``id`` when the pile's row ids are
  known, in answer order (:func:`labelwise.io.write_labels_csv`). For a campaign, every
  answer is also recorded in the campaign's state exactly as ``labelwise estimate DIR --labels
  DIR/labels.csv`` records it (the same function, :func:`.campaign.record_and_estimate`), so
  that command gives the estimate the page shows.
- ``DIR/labelling.state.json``: the answers' order (for undo) and the rows skipped (they come
  back at the end of the queue), so a restart resumes where the last session stopped.

One :class:`threading.Lock` serialises the answers of every tab, and an ``fcntl`` lock on
``DIR/.labelling.lock``, held while the session is open, keeps a second server process off the
directory (``labelwise import`` takes it too, so it never writes ``labels.csv`` under a
running page). Before every action the page reads ``labels.csv`` again if it changed on disk
and merges it (a label another program added is kept; one that contradicts the page's is an
error naming the row). An answer names its row: a second answer for a row already labelled (a
stale tab) is refused with a message, never recorded twice.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import threading
import warnings
from pathlib import Path
from typing import IO, Any

import numpy as np
from numpy.typing import NDArray

from .. import registry
from .._json import jsonable
from .._results import Selection
from ..campaign import Campaign
from ..exceptions import LabelwiseError
from ..io import write_labels_csv
from ..workspace import CAMPAIGN_ARRAYS, LABELS, Workspace, capture_hint, check_directory
from ._common import check_confidence_flag
from .campaign import STATE_FILE, CampaignState, check_estimate_args, record_and_estimate

try:  # POSIX; elsewhere the in-process lock is the only one
    import fcntl
except ImportError:  # pragma: no cover
    fcntl = None  # type: ignore[assignment]

__all__ = [
    "LOCK_FILE",
    "STATE_NAME",
    "BadAnswer",
    "LabelSession",
    "Refused",
    "lock_directory",
    "unlock",
]

STATE_NAME = "labelling"  # DIR/labelling.state.json
LOCK_FILE = ".labelling.lock"
TOP_K = 3


class Refused(LabelwiseError):
    """An answer, skip or undo that cannot be applied to the current state (e.g. a stale tab)."""


class BadAnswer(Refused):
    """An answer whose value is no label at all (a bool, not a number, not finite): the
    page's server answers 400, not 409."""


def lock_directory(path: Path, busy: str) -> IO[Any]:
    """Hold ``path/.labelling.lock`` (an ``fcntl`` lock, not waiting); release it with
    :func:`unlock`. Held by another process: a :class:`LabelwiseError` saying ``busy``."""
    fh = open(path / LOCK_FILE, "a+")  # noqa: SIM115 (held until unlock)
    if fcntl is not None:
        try:
            fcntl.flock(fh.fileno(), fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:
            fh.close()
            raise LabelwiseError(busy) from None
    return fh


def unlock(fh: IO[Any]) -> None:
    """Release a lock taken by :func:`lock_directory`."""
    if fcntl is not None:
        with contextlib.suppress(OSError):
            fcntl.flock(fh.fileno(), fcntl.LOCK_UN)
    fh.close()


class LabelSession:
    """Labelling a campaign or a selection directory, one answer at a time.

    ``confidence``, ``until_halfwidth`` and ``predictions`` mean what they mean for
    ``labelwise estimate``; ``batch`` (campaigns only; default 20) is the size of the
    "propose more" step (``labelwise next``); both are errors for a selection. Raises
    :class:`LabelwiseError` if ``directory`` holds neither a campaign nor a selection, or if
    another process is labelling it. Call :meth:`close` when done.
    """

    def __init__(
        self,
        directory: str | Path,
        *,
        confidence: float = 0.95,
        until_halfwidth: float | None = None,
        predictions: str | Path | None = None,
        batch: int | None = None,
    ) -> None:
        self.path = Path(directory)
        check_directory(self.path)
        held = Workspace(self.path).holds()
        if held is None:
            raise LabelwiseError(
                f"DIR {self.path} holds no campaign or selection; start one with 'labelwise "
                "campaign DIR --activations ...' then 'labelwise next DIR', or 'labelwise "
                f"select'{capture_hint(self.path)}"
            )
        if held == "selection":
            # a selection proposes nothing and its labels are classes or targets read from
            # its own sources: these options were ignored without a word
            for flag, value in (("--batch", batch), ("--predictions", predictions)):
                if value is not None:
                    raise LabelwiseError(
                        f"{flag} applies to campaigns ('labelwise campaign'), not to the "
                        f"selection in {self.path}; drop it"
                    )
        if batch is not None and batch < 1:
            raise LabelwiseError(f"--batch must be a positive integer, got {batch}")
        self.kind = held
        self.batch = 20 if batch is None else batch
        self.args = argparse.Namespace(
            confidence=confidence,
            until_halfwidth=until_halfwidth,
            predictions=None if predictions is None else Path(predictions),
            n_classes=None,
        )
        self.lock = threading.Lock()
        self._lock_fh: IO[Any] | None = None
        self._acquire_file_lock()
        try:
            self._open()
        except BaseException:
            self.close()
            raise

    # ------------------------------------------------------------------ opening

    def _acquire_file_lock(self) -> None:
        self._lock_fh = lock_directory(
            self.path,
            f"DIR {self.path} is being labelled by another 'labelwise label' (it holds "
            f"{self.path / LOCK_FILE}); use that page, or stop it first",
        )

    def close(self) -> None:
        """Release the directory's lock file."""
        if self._lock_fh is not None:
            unlock(self._lock_fh)
            self._lock_fh = None

    def _open(self) -> None:
        """Read the directory: the campaign or selection, the labels file and the page state."""
        self.st: CampaignState | None = None
        self.sel: Selection | None = None
        self.ranking = False  # a selection of rows to rank models by (sds, ddg, rdg, cppi)
        if self.kind == "campaign":
            self.st = CampaignState.open(self.path)
            check_estimate_args(self.args, self.st)
            self.ws = self.st.ws
            task = self.st.camp.task
        else:
            self.ws, self.sel = Workspace.open(self.path)
            check_confidence_flag(self.args.confidence)
            if self.args.until_halfwidth is not None:
                raise LabelwiseError(
                    "--until-halfwidth applies to campaigns ('labelwise campaign'), not to a "
                    "selection"
                )
            self.ranking = registry.get(self.sel.method).purpose == "ranking"
            ranked = self.ranking or self.ws.has_source("probs")
            task = "classification" if ranked else "regression"
        self.task = task
        self.probs = self.ws.load_source("probs") if self.ws.has_source("probs") else None
        self.n_classes = None if self.probs is None else int(self.probs.shape[1])
        if self.ranking:
            self.n_classes = self._ranking_classes()
        self.class_names = self._class_names()
        ids = self.ws.row_ids()
        self.ids = ids if ids is not None and len(ids) == self.population_size else None
        self.labels: dict[int, Any] = {}  # row -> value, in answer order
        self.column = "label" if task == "classification" else "target"
        self._read_labels_file()
        doc = self.ws.read_state(STATE_NAME)
        doc = doc if isinstance(doc, dict) else {}
        try:
            skipped = [int(r) for r in doc.get("skipped", [])]
            answered = [(int(r), int(n)) for r, n in doc.get("answered", [])]
        except (TypeError, ValueError) as exc:
            raise LabelwiseError(
                f"{self.path / (STATE_NAME + '.state.json')} is malformed ({exc}); delete it: it "
                f"only keeps the page's skipped rows and undo order, the labels are in {LABELS}"
            ) from None
        self.skipped: list[int] = [r for r in skipped if r in self._order]
        self.answered = [(r, n) for r, n in answered if r in self.labels]
        self.doc: dict[str, Any] | None = None
        self.est_note = ""
        self._estimate()
        self._stamp = self._state_stamp()

    @property
    def population_size(self) -> int:
        if self.st is not None:
            return self.st.camp.population_size
        assert self.sel is not None
        return self.sel.population_size

    @property
    def _order(self) -> list[int]:
        """Every row to label, in the campaign's or selection's order."""
        if self.st is not None:
            return [int(r) for r in self.st.camp.proposed]
        assert self.sel is not None
        return [int(r) for r in self.sel.indices]

    def _ranking_classes(self) -> int:
        """The classes of a ranking selection: its class names, else those of the models'
        (M, N, C) probabilities, else one past the largest class the (M, N) models predict."""
        names = self.ws.classes()
        if names is not None:
            return len(names)
        return self.ws.models_classes() or 2

    def _class_names(self) -> list[str]:
        names = self.ws.classes()
        c = self.n_classes or 0
        if names is not None and len(names) == c:
            return list(names)
        return [f"class {i}" for i in range(c)]

    def _read_labels_file(self) -> None:
        """DIR/labels.csv (if any), and for a campaign its recorded labels, merged.

        Rows of the file not recorded yet are recorded now, as ``labelwise estimate`` would.
        """
        path = self.path / LABELS
        self._labels_stamp = _file_stamp(path)
        if path.is_file():
            self.labels = self._labels_on_disk()
        if self.st is not None:
            if self.st.kind is not None and self.st.kind not in ("label", "target"):
                raise LabelwiseError(
                    f"the campaign recorded '{self.st.kind}' labels; 'labelwise label' records "
                    "'label' or 'target'"
                )
            if self.st.kind is not None:
                self.column = self.st.kind
            changed = [
                (r, v, self.st.labels[r])
                for r, v in self.labels.items()
                if r in self.st.labels and self.st.labels[r] != v
            ]
            if changed:
                shown = ", ".join(f"row {r}: {a} in {LABELS}, {b} recorded" for r, a, b in changed)
                raise LabelwiseError(
                    f"{path} contradicts the labels the campaign recorded ({shown[:300]}); a "
                    f"recorded label cannot change: fix or move {path} away; nothing was changed"
                )
            if set(self.labels) - set(self.st.labels):
                self._record()
            for r, v in self.st.labels.items():
                self.labels.setdefault(int(r), v)
            self._write_labels_file()

    def _labels_on_disk(self) -> dict[int, Any]:
        """DIR/labels.csv's labels, checked: a label or target column, classes in range and
        only rows to label here."""
        path = self.path / LABELS
        rows, kind, values = self.ws.read_label_file(path)
        if kind not in ("label", "target"):
            raise LabelwiseError(
                f"{path} has a '{kind}' column; 'labelwise label' writes 'label' or "
                "'target': move that file away to label here"
            )
        if kind == "label" and self.n_classes is not None:
            check_classes(path, rows, values, self.n_classes)
        if self.labels and kind != self.column:
            raise LabelwiseError(
                f"{path} now has a '{kind}' column, this page labels '{self.column}'"
            )
        self.column = kind
        labels = dict(zip(rows.tolist(), values.tolist(), strict=True))
        order = set(self._order)
        stray = [r for r in labels if r not in order]
        if stray:
            raise LabelwiseError(
                f"{path} labels rows that are not to be labelled here, e.g. {stray[:10]}; "
                "move that file away to label here"
            )
        return labels

    def _merge_labels_file(self) -> None:
        """Labels another program wrote to DIR/labels.csv since the page last wrote it: added
        (for a campaign, recorded); one that contradicts the page's is an error naming the row.
        A label of the page missing from the file is kept (written back with the next answer).
        """
        path = self.path / LABELS
        stamp = _file_stamp(path)
        if stamp == self._labels_stamp:
            return
        if stamp is None:
            self._labels_stamp = None
            return
        disk = self._labels_on_disk()
        clash = [(r, v, self.labels[r]) for r, v in disk.items() if self.labels.get(r, v) != v]
        if clash:
            shown = "; ".join(
                f"row {r}: {self._show(a)} in the file, {self._show(b)} on this page"
                for r, a, b in clash[:5]
            )
            raise LabelwiseError(
                f"{path} was changed by another program and labels {len(clash)} rows "
                f"differently from this page ({shown}); fix that file (a label cannot change), "
                "then go on"
            )
        new = {r: v for r, v in disk.items() if r not in self.labels}
        if new:
            self.labels.update(new)
            if self.st is not None:
                try:
                    self._record()
                except LabelwiseError:
                    for r in new:
                        del self.labels[r]
                    self._reload_campaign()
                    raise
            else:
                self._estimate()
        self._labels_stamp = stamp
        if len(disk) != len(self.labels):
            self._write_labels_file()

    # ------------------------------------------------------------------ the queue

    def queue(self) -> list[int]:
        """The rows still to label: in order, the skipped ones last (in the order skipped)."""
        skipped = set(self.skipped)
        rest = [r for r in self._order if r not in self.labels and r not in skipped]
        return rest + [r for r in self.skipped if r not in self.labels]

    # ------------------------------------------------------------------ actions

    def answer(self, row: int, value: Any) -> dict[str, Any]:
        """Label ``row`` with ``value``; refused if the row has an answer or is not to label."""
        with self.lock:
            self._refresh()
            row = int(row)
            if row in self.labels:
                raise Refused(
                    f"row {row} was already labelled {self._show(self.labels[row])} (in another "
                    "tab?); nothing was changed, the page shows the next row"
                )
            if row not in set(self._order):
                raise Refused(f"row {row} is not a row to label here")
            v = self._check_value(value)
            self.labels[row] = v
            if self.st is not None:
                try:
                    self._record()
                except LabelwiseError:
                    del self.labels[row]
                    self._reload_campaign()
                    raise
            self.answered.append((row, self._n_proposed()))
            if row in self.skipped:
                self.skipped.remove(row)
            self._write_labels_file()
            self._save_page_state()
            if self.st is None:
                self._estimate()
            return self.state()

    def skip(self, row: int) -> dict[str, Any]:
        """Put ``row`` at the end of the queue."""
        with self.lock:
            self._refresh()
            row = int(row)
            if row in self.labels:
                raise Refused(f"row {row} is labelled already (in another tab?); not skipped")
            if row not in set(self._order):
                raise Refused(f"row {row} is not a row to label here")
            if row in self.skipped:
                self.skipped.remove(row)
            self.skipped.append(row)
            self._save_page_state()
            return self.state()

    def undo(self) -> dict[str, Any]:
        """Remove the last answer given on this page."""
        with self.lock:
            self._refresh()
            if not self.answered:
                raise Refused("nothing to undo: no answer was given on this page yet")
            row, n_prop = self.answered[-1]
            if self.st is not None and n_prop != self._n_proposed():
                raise Refused(
                    f"row {row} was labelled before the campaign proposed more rows, and the "
                    "design used its label; it cannot be undone"
                )
            if self.st is not None:
                self._unrecord(row)
            del self.labels[row]
            self.answered.pop()
            self._write_labels_file()
            self._save_page_state()
            self._estimate()
            return self.state()

    def propose(self, n: int | None = None) -> dict[str, Any]:
        """The campaign's next ``n`` rows (``labelwise next DIR --batch n``)."""
        from .next_batch import propose_batch

        with self.lock:
            self._refresh()
            if self.st is None:
                raise Refused(
                    "a selection proposes no more rows here; use 'labelwise select --extend'"
                )
            pending = [r for r in self._order if r not in self.labels]
            if pending:
                raise Refused(f"{len(pending)} proposed rows still await labels; label them first")
            try:
                propose_batch(self.st, self.batch if n is None else int(n))
            except LabelwiseError:
                self._reload_campaign()
                raise
            self._stamp = self._state_stamp()
            return self.state()

    # ------------------------------------------------------------------ the page's view

    def state(self) -> dict[str, Any]:
        """Everything the page shows, as JSON values."""
        queue = self.queue()
        current = self.row_info(queue[0]) if queue else None
        doc = self.doc
        est = None
        stop = False
        if doc is not None:
            e = doc if self.st is not None else doc["estimate"]
            est = {
                k: e.get(k)
                for k in (
                    "value",
                    "ci_low",
                    "ci_high",
                    "confidence",
                    "metric",
                    "method",
                    "interval",
                    "n_labelled",
                    "effective_sample_size",
                )
            }
            any_ = doc.get("anytime")
            if any_ is not None:
                est["anytime"] = any_
                stop = bool(any_["stop"])
        left = None
        if self.st is not None:
            left = self.st.camp.population_size - self.st.camp.n_proposed
        return jsonable(
            {
                "kind": self.kind,
                "task": self.task,
                "column": self.column,
                "directory": str(self.path),
                "classes": self.class_names,
                "n_to_label": len(self._order),
                "n_labelled": len(self.labels),
                "n_skipped": len([r for r in self.skipped if r not in self.labels]),
                "queue_left": len(queue),
                "current": current,
                "estimate": est,
                "estimate_note": self.est_note,
                "until_halfwidth": self.args.until_halfwidth,
                "stop": stop,
                "can_undo": bool(self.answered),
                "can_propose": self.st is not None and not queue and bool(left),
                "never_proposed": left,
                "batch": self.batch,
            }
        )

    def row_info(self, row: int) -> dict[str, Any]:
        """The row's id, position and the model's prediction (top classes or value)."""
        order = self._order
        info: dict[str, Any] = {
            "row": row,
            "position": order.index(row) + 1 if row in order else None,
            "id": None if self.ids is None else self.ids[row],
            "skipped": row in self.skipped,
        }
        if self.probs is not None:
            p = np.asarray(self.probs[row], dtype=np.float64)
            top = np.argsort(-p, kind="stable")[:TOP_K]
            info["top"] = [
                {"class": int(c), "name": self.class_names[int(c)], "p": float(p[c])} for c in top
            ]
            info["prediction"] = int(top[0])
        elif self.ws.has_source("predictions") and not self.ranking:  # regression outputs
            pred = np.asarray(self.ws.load_source("predictions")[row], dtype=np.float64)
            info["predicted_value"] = pred.tolist()
        return info

    # ------------------------------------------------------------------ internals

    def _check_value(self, value: Any) -> int | float:
        if isinstance(value, bool):  # JSON true/false: not a class, not a number
            raise BadAnswer(f"a {self.column} must be a number, got {value!r}")
        if isinstance(value, float) and not np.isfinite(value):  # 1e999 reads as inf
            raise BadAnswer(f"a {self.column} must be a finite number, got {value!r}")
        if self.column == "label":
            try:
                v = int(value)
            except (TypeError, ValueError, OverflowError):
                named = self._class_by_name(value)
                if named is not None:
                    return named
                names = self._real_class_names()
                known = f" or name ({', '.join(names)})" if names else ""
                raise BadAnswer(f"a label must be a class number{known}, got {value!r}") from None
            if isinstance(value, float) and value != v:
                raise BadAnswer(f"a label must be a class number, got {value!r}")
            named = self._class_by_name(value)
            if named is not None and named != v and self.n_classes and 0 <= v < self.n_classes:
                # classes named by numbers: '2' names one class and indexes another (labels.csv
                # refuses it too); a JSON number is always the index
                names = self._real_class_names() or []
                raise BadAnswer(
                    f"label {value!r} is ambiguous: the class named {value!r} is class {named}, "
                    f"but {v} is also the index of class {names[v]!r}; send the class index as "
                    "a JSON number"
                )
            if self.n_classes is not None and not 0 <= v < self.n_classes:
                raise BadAnswer(f"a label must be a class in [0, {self.n_classes}), got {v}")
            return v
        try:
            f = float(value)
        except (TypeError, ValueError, OverflowError):
            raise BadAnswer(f"a {self.column} must be a number, got {value!r}") from None
        if not np.isfinite(f):
            raise BadAnswer(f"a {self.column} must be a finite number, got {value!r}")
        return f

    def _real_class_names(self) -> list[str] | None:
        """The class names of ``--classes`` (not the page's "class i" stand-ins), if any."""
        names = self.ws.classes()
        if names is None or len(names) != (self.n_classes or 0):
            return None
        return list(names)

    def _class_by_name(self, value: Any) -> int | None:
        """A label given by class name (as labels.csv takes it): its number; a name in
        another case is taken when it names one class only. ``None``: not a name."""
        names = self._real_class_names()
        if not isinstance(value, str) or names is None:
            return None
        if value in names:
            return names.index(value)
        folded = [i for i, n in enumerate(names) if n.casefold() == value.strip().casefold()]
        return folded[0] if len(folded) == 1 else None

    @staticmethod
    def _show(v: Any) -> str:
        return str(v)

    def _n_proposed(self) -> int:
        return self.st.camp.n_proposed if self.st is not None else len(self._order)

    def _labels_arrays(self) -> tuple[NDArray[np.int64], NDArray[Any]]:
        rows = np.asarray(list(self.labels), dtype=np.int64)
        dtype = np.int64 if self.column == "label" else np.float64
        return rows, np.asarray(list(self.labels.values()), dtype=dtype)

    def _record(self) -> None:
        """Record the labels as ``labelwise estimate DIR --labels DIR/labels.csv`` does."""
        assert self.st is not None
        rows, values = self._labels_arrays()
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            est, self.doc = record_and_estimate(self.args, self.st, rows, self.column, values)
        self.est_note = _notes(est.notes, caught)
        self._stamp = self._state_stamp()

    def _unrecord(self, row: int) -> None:
        """Take ``row``'s label out of the campaign's state (undo)."""
        assert self.st is not None
        st = self.st
        d = st.camp.to_dict()
        keep = [i for i, r in enumerate(d["recorded_rows"]) if int(r) != row]
        d["recorded_rows"] = [d["recorded_rows"][i] for i in keep]
        d["recorded_scores"] = [d["recorded_scores"][i] for i in keep]
        acts = st.ws.load_source("activations")
        probs = st.ws.load_source("probs") if st.ws.has_source("probs") else None
        st.camp = Campaign.from_dict(
            d, activations=acts, probabilities=probs, arrays=st.ws.read_state(CAMPAIGN_ARRAYS)
        )
        st.labels.pop(row, None)
        if not st.labels:
            st.kind = None
        st.save()
        self._stamp = self._state_stamp()

    def _estimate(self) -> None:
        """The estimate the labels give now (None while there is none), as ``estimate`` gives it."""
        self.doc = None
        self.est_note = ""
        if not self.labels:
            return
        if self.st is not None:
            self._record()
            return
        assert self.sel is not None
        missing = len(self._order) - len(self.labels)
        if missing:
            self.est_note = (
                f"the estimate comes once every selected row is labelled ({missing} to go)"
            )
            return
        if self.ranking:
            labels = self.path / LABELS
            self.est_note = registry.rank_instead(self.sel.method, self.path, labels)
            return
        from .estimate import selection_estimate

        args = argparse.Namespace(**vars(self.args), labels=self.path / LABELS)
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            est, self.doc = selection_estimate(args, self.ws, self.sel)
        self.est_note = _notes(est.notes, caught)

    def _write_labels_file(self) -> None:
        path = self.path / LABELS
        if not self.labels:
            with contextlib.suppress(FileNotFoundError):
                os.unlink(path)
            self._labels_stamp = None
            return
        rows, values = self._labels_arrays()
        classes = self.ws.classes() if self.column == "label" else None
        if classes is not None and self.n_classes is not None and len(classes) != self.n_classes:
            classes = None  # names that do not fit the probabilities' columns are not written
        write_labels_csv(path, rows, values, column=self.column, classes=classes, ids=self.ids)
        self._labels_stamp = _file_stamp(path)

    def _save_page_state(self) -> None:
        self.ws.write_state(
            STATE_NAME,
            {
                "answered": [[r, n] for r, n in self.answered],
                "skipped": [r for r in self.skipped if r not in self.labels],
            },
        )

    def _state_stamp(self) -> tuple[int, int] | None:
        if self.st is None:
            return None
        try:
            s = os.stat(self.path / STATE_FILE)
        except FileNotFoundError:
            return None
        return (s.st_mtime_ns, s.st_size)

    def refresh(self) -> None:
        """Read the directory again if a command (``labelwise next``...) changed the state.

        Call it holding :attr:`lock`; every action does.
        """
        self._refresh()

    def _refresh(self) -> None:
        if self.st is not None and self._state_stamp() != self._stamp:
            self._open()
        self._merge_labels_file()

    def _reload_campaign(self) -> None:
        """After a failed step: the campaign as saved on disk."""
        self.st = CampaignState.open(self.path)
        self.ws = self.st.ws
        self._stamp = self._state_stamp()


def _file_stamp(path: Path) -> tuple[int, int, int] | None:
    """What tells a file changed: its inode (files are replaced), time and size."""
    try:
        s = os.stat(path)
    except FileNotFoundError:
        return None
    return (s.st_ino, s.st_mtime_ns, s.st_size)


def check_classes(
    path: Path, rows: NDArray[np.int64], values: NDArray[Any], n_classes: int
) -> None:
    """An error naming the rows of ``path`` whose label is no class in ``[0, n_classes)``."""
    bad = [(int(r), int(v)) for r, v in zip(rows, values, strict=True) if not 0 <= v < n_classes]
    if bad:
        shown = ", ".join(f"row {r}: {v}" for r, v in bad[:5])
        raise LabelwiseError(
            f"{path} has labels that are no class in [0, {n_classes}) ({shown}); fix or move "
            "that file away"
        )


def _notes(notes: tuple[str, ...], caught: list[warnings.WarningMessage]) -> str:
    """The estimate's notes and the warnings its computation gave, each once."""
    return "; ".join(dict.fromkeys([*notes, *(str(w.message) for w in caught)]))
