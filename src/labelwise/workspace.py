"""A selection directory: what was selected, from which files, and what the labels said.

Layout (every file written atomically)::

    DIR/selection.json   the Selection, its seed and its source files (path, sha256, shape)
    DIR/to_label.csv     order,row,new: the rows to label in selection order; new=1 marks the
                         rows added by the last selection or extension. When the row ids are
                         known (:meth:`Workspace.row_ids`), order,row,id,new
    DIR/labels.csv       row,label[,class][,id] (written by the demo, import and label: the
                         class index and its name; a labeller's file can live anywhere; it may
                         name rows by id and classes by name, see :meth:`read_label_file`)
    DIR/estimate.json    the last estimate
    DIR/ranking.json     the last ranking, with a fingerprint of the rows and labels it used
    DIR/<name>.state.json / <name>.state.npz   other state, e.g. a sequential campaign's;
                         export.state.json: the sha256 of each Label Studio task file and config
                         ``labelwise export`` wrote (a re-run keeps one edited since)
    DIR/campaign.state.json   a sequential campaign (``labelwise campaign``): its sources, its
                         state (:meth:`labelwise.Campaign.to_dict`) and the labels recorded
    DIR/campaign-arrays.state.npz  what the campaign computed from the pile once
                         (:meth:`labelwise.Campaign.to_arrays`: strata, features), so each
                         command resumes it without recomputing
    DIR/classes.json     class names (a JSON list, index = class), when the user gave them
    DIR/replaced-<time>/ a selection or campaign with labels that ``--force`` replaced: its
                         files, moved aside whole (see :meth:`Workspace.create`)

Beside a captured pile (``labelwise capture --out CAP``) live ``CAP/capture.json`` (its
``"pile"`` entry says what the inputs were: kind, path, image root, preprocessing),
``CAP/ids.txt`` (one stable id per row: an image's path under the root, or a table's row
number), ``CAP/classes.json`` and ``CAP/used_by.json`` (the directories of the selections and
campaigns made from the capture: a new capture into ``CAP`` refuses to replace arrays that one
of them records, see :func:`users_of`). A workspace whose activations came from ``CAP`` finds them
through :meth:`Workspace.capture_dir`.

A directory holds a selection or a campaign, never both.

The CLI, the demo and (later) campaigns all read and write a selection through
:class:`Workspace`; nothing else knows the file names.
"""

from __future__ import annotations

import contextlib
import datetime as _dt
import hashlib
import os
import shutil
import zipfile
from collections.abc import Collection, Sequence
from pathlib import Path
from typing import Any

import numpy as np
from numpy.typing import NDArray

from . import __version__
from ._results import Selection
from .adapters._capture import OUTPUT_FILES
from .exceptions import LabelwiseError
from .io import (
    atomic_write,
    file_digest,
    load_array,
    read_json,
    read_labels_csv,
    shell_arg,
    write_csv,
    write_json,
    write_labels_csv,
)

__all__ = ["Workspace"]

SELECTION = "selection.json"
TO_LABEL = "to_label.csv"
LABELS = "labels.csv"
ESTIMATE = "estimate.json"
RANKING = "ranking.json"
CAMPAIGN = "campaign"  # state name: DIR/campaign.state.json
CAMPAIGN_ARRAYS = "campaign-arrays"  # DIR/campaign-arrays.state.npz: Campaign.to_arrays()
CLASSES = "classes.json"
IDS = "ids.txt"
CAPTURE = "capture.json"
CAPTURE_PROBS = OUTPUT_FILES["softmax"]  # beside capture.json: the model's softmax
CAPTURE_RAW = OUTPUT_FILES["raw"]  # or its raw outputs ('capture --head raw')
USED_BY = "used_by.json"  # beside capture.json: the selections and campaigns made from it


class Workspace:
    """One selection directory.

    ``sources`` maps a data key (``"activations"``, ``"probs"``, ``"predictions"``) to the
    record of the file it was loaded from: ``{"path", "sha256", "shape"}``. A source is a .npy
    file (memory-mapped) or a zarr store (a directory, opened read-only, rows read where they
    are used); the ``"sha256"`` of a zarr store is :func:`labelwise.io.file_digest` of the
    directory: the sha256 over its files in the order of their relative paths, each path
    followed by the file's size and bytes. Reopening a source checks that digest, so an edited,
    added or removed chunk file is found like an edited .npy.
    """

    def __init__(self, directory: str | Path) -> None:
        self.path = Path(directory)
        self.sources: dict[str, Any] = {}
        self.seed: Any = None
        self._loaded: dict[str, Any] = {}  # sources read and digest-checked (memmap, zarr)
        self._held_classes: tuple[str, ...] | None = None  # see hold_classes
        self.kind = "selection"
        self._replacing = False  # create(force=True) over one of the same kind: see _set_aside
        self.set_aside: Path | None = None  # where the replaced one and its labels went

    # ---------------------------------------------------------------------- creating

    @classmethod
    def create(
        cls,
        directory: str | Path,
        *,
        force: bool = False,
        what: str = "--out",
        kind: str = "selection",
    ) -> Workspace:
        """A new workspace for a ``kind`` (``"selection"`` or ``"campaign"``).

        An existing one of the same kind in ``directory`` needs ``force``; one of the other
        kind is always an error (a directory holds one or the other).
        """
        ws = cls(directory)
        ws.kind = kind
        if ws.path.exists() and not ws.path.is_dir():
            raise LabelwiseError(f"{what} {ws.path} exists and is not a directory")
        held = ws.holds()
        if held is not None and held != kind:
            raise LabelwiseError(
                f"{what} {ws.path} already holds a {held}; a {kind} needs its own directory"
            )
        if held == kind and not force:
            more = (
                f"labelwise select --extend {shell_arg(ws.path)} --budget N"
                if kind == "selection"
                else f"labelwise next {shell_arg(ws.path)} --batch N"
            )
            raise LabelwiseError(
                f"{what} {ws.path} already holds a {kind}; to label more of it: {more}; to "
                "start another, give another directory, or --force to overwrite this one"
            )
        ws._replacing = held == kind
        return ws

    def _set_aside(self) -> None:
        """Before the first write over a replaced selection or campaign (``create`` with
        ``force``) that has labels (``labels.csv``, or labels a campaign recorded): move its
        files into ``DIR/replaced-<UTC time>/``, itself a working selection or campaign
        directory, so that ``--force`` loses no label and no result those labels gave."""
        if not self._replacing:
            return
        self._replacing = False
        state = self.path / f"{CAMPAIGN}.state.json"
        labelled = (self.path / LABELS).is_file()
        if not labelled and state.is_file():
            try:
                labelled = bool(read_json(state, str(state)).get("labels", {}).get("rows"))
            except (LabelwiseError, AttributeError):
                labelled = True  # unreadable: keep it rather than guess
        if not labelled:
            # nothing to keep, but the old one's Label Studio tasks, as export wrote them,
            # would be taken for the new one's (and the next export would write beside them)
            for f in self._exported_files():
                f.unlink(missing_ok=True)
            (self.path / "export.state.json").unlink(missing_ok=True)
            return
        aside = aside_directory(self.path)
        for name in (SELECTION, TO_LABEL, LABELS, ESTIMATE, RANKING, "report.html"):
            if (self.path / name).is_file():
                os.replace(self.path / name, aside / name)
        for f in self._exported_files():
            os.replace(f, aside / f.name)
        for f in self.path.glob("*.state.*"):
            os.replace(f, aside / f.name)
        if (self.path / CLASSES).is_file():
            shutil.copy2(self.path / CLASSES, aside / CLASSES)
        self.set_aside = aside
        # the moved one still refers to its capture's arrays: noted in that capture's
        # used_by.json, so that a later 'capture' into it refuses to replace them as well
        moved = Workspace(aside)
        with contextlib.suppress(OSError, LabelwiseError):
            moved._read_held_sources()
            moved._note_use()

    def _exported_files(self) -> list[Path]:
        """The Label Studio task files and configs ``labelwise export`` wrote into DIR for the
        selection or campaign being replaced, as it wrote them (their sha256 among those of
        ``DIR/export.state.json``). Left behind, the old tasks were in DIR beside the new
        campaign's, and the next export, taking them for the user's, wrote its tasks to
        ``label-studio-tasks.new.json`` instead."""
        try:
            doc = read_json(self.path / "export.state.json", "export.state.json")
        except LabelwiseError:
            return []
        if not isinstance(doc, dict):
            return []
        digests = {v for v in doc.values() if isinstance(v, str)}
        found = []
        for f in sorted(self.path.iterdir()):
            if f.suffix in (".json", ".xml") and f.is_file() and not f.is_symlink():
                with contextlib.suppress(OSError):
                    if file_digest(f) in digests:
                        found.append(f)
        return found

    def holds(self) -> str | None:
        """``"selection"``, ``"campaign"`` or None: what this directory already holds."""
        if (self.path / SELECTION).is_file():
            return "selection"
        if (self.path / f"{CAMPAIGN}.state.json").is_file():
            return "campaign"
        return None

    def _read_held_sources(self) -> str | None:
        """What this directory holds (:meth:`holds`), its recorded sources read from the
        selection's or campaign's file (:meth:`set_sources`); None if it holds neither."""
        kind = self.holds()
        if kind is not None:
            state = self.path / (SELECTION if kind == "selection" else f"{CAMPAIGN}.state.json")
            self.set_sources(read_json(state, str(state)), state)
            self.kind = kind
        return kind

    @classmethod
    def open(cls, directory: str | Path, what: str = "DIR") -> tuple[Workspace, Selection]:
        """The workspace in ``directory`` and its selection (errors if there is none)."""
        check_directory(directory, what)
        ws = cls(directory)
        file = ws.path / SELECTION
        if not file.exists():
            if ws.holds() == "campaign":
                raise LabelwiseError(
                    f"{what} {ws.path} holds a campaign, not a selection; a campaign proposes "
                    f"rows with 'labelwise next {shell_arg(ws.path)}'"
                )
            raise LabelwiseError(
                f"{what} {ws.path} holds no selection ({SELECTION} is not there); give the "
                f"directory a 'labelwise select ... --out DIR' wrote{capture_hint(ws.path)}"
            )
        doc = read_json(file, what)
        ws.set_sources(doc, file)
        try:
            sel = Selection.from_dict(doc.get("selection", {}))
        except LabelwiseError as exc:
            raise LabelwiseError(
                f"{file}: {exc}; restore the file or make the selection again"
            ) from None
        return ws, sel

    def set_sources(self, doc: Any, file: Path, *, required: bool = False) -> None:
        """Take the sources and seed that ``doc`` (the JSON of ``file``) records.

        An error naming ``file`` if ``doc`` is no JSON object or its ``"sources"`` are not
        ``{key: {"path": ..., ...}}`` (``required``: or absent).
        """
        if not isinstance(doc, dict):
            raise LabelwiseError(
                f"{file} must be a JSON object, got {type(doc).__name__}; restore it or make "
                f"the {self.kind} again"
            )
        sources = doc.get("sources")
        if sources is None and not required:
            sources = {}
        if not isinstance(sources, dict) or not all(
            isinstance(v, dict) and isinstance(v.get("path"), str) for v in sources.values()
        ):
            raise LabelwiseError(
                f"{file}: 'sources' must map each source to its record {{\"path\": ...}}; "
                f"restore the file or make the {self.kind} again"
            )
        self.sources = dict(sources)
        self.seed = doc.get("seed")

    # ----------------------------------------------------------------------- sources

    def add_source(self, key: str, path: str | Path, what: str) -> Any:
        """Open ``path`` (a .npy memory-mapped, or a zarr store; see
        :func:`labelwise.io.load_array`) and record it under ``key`` (path, sha256, shape)."""
        p = Path(path)
        arr = load_array(p, what)
        self.sources[key] = {
            "path": str(p.resolve()),
            # where it lies from this directory: found there when both were moved together
            "relative": _relative(p, self.path),
            "sha256": file_digest(p),
            "shape": list(arr.shape),
        }
        self._loaded[key] = arr
        return arr

    def has_source(self, key: str) -> bool:
        return bool(self.sources.get(key))

    def source_path(self, key: str) -> Path:
        """Where a recorded source lies: its recorded path, else, when that is gone, the same
        place relative to this directory (a project folder copied or moved as a whole holds
        the pile and the selection together; the sha256 still has to match)."""
        info = self.sources[key]
        path = Path(info["path"])
        rel = info.get("relative")
        if not path.exists() and isinstance(rel, str) and (self.path / rel).exists():
            return self.path / rel
        return path

    def load_source(self, key: str) -> Any:
        """Reload a recorded source; an error if the file changed since it was recorded.

        Read and hashed once per workspace object: a command that needs a source twice
        (e.g. the campaign and then its scores) does not read the file again.
        """
        if key in self._loaded:
            return self._loaded[key]
        info = self.sources.get(key)
        if not info:
            raise LabelwiseError(f"the selection does not record its {key} file")
        path = self.source_path(key)
        if not path.exists():
            rel = info.get("relative")
            also = f" or at {self.path / rel}" if isinstance(rel, str) else ""
            raise LabelwiseError(
                f"the {key} file recorded with the {self.kind} in {self.path} is gone: {path} "
                f"does not exist (moved or deleted?); put it back there{also}"
            )
        arr = load_array(path, f"{key} recorded in {SELECTION}")
        if file_digest(path) != info.get("sha256"):
            raise LabelwiseError(
                f"{path} changed since the {self.kind} was made (sha256 differs); going on "
                f"would not continue the same {self.kind}: put back the file it was made from "
                f"(a re-capture with --force replaced it?), or start a new {self.kind} from "
                "this one in another directory"
            )
        self._loaded[key] = arr
        return arr

    # ------------------------------------------------------- the pile behind the sources

    def capture_outputs(self) -> Path | None:
        """``CAP/outputs.npy`` (a regression model's outputs, ``capture --head raw``) of the
        capture a recorded source came from, when there is one: what --predictions names."""
        cap = self.capture_dir()
        outputs = None if cap is None else cap / "outputs.npy"
        return outputs if outputs is not None and outputs.is_file() else None

    def capture_dir(self) -> Path | None:
        """The ``labelwise capture`` directory a recorded source came from, if any.

        The activations' first, else the probabilities' or predictions': a selection made
        from ``CAP/probabilities.npy`` alone (CSS) knows its pile's ids and images too.
        """
        for key in ("activations", "probs", "predictions"):
            if self.sources.get(key):
                parent = self.source_path(key).parent
                if (parent / CAPTURE).is_file():
                    return parent
        return None

    def capture_probabilities(self) -> Path | None:
        """``CAP/probabilities.npy`` of the capture the sources came from, when no
        probabilities are recorded yet: what ``--probs`` defaults to (None if there is none).

        Without it a selection made from ``--activations`` alone had nothing to score its
        labels against, and a campaign started without ``--probs`` was a regression one.
        """
        if self.has_source("probs"):
            return None
        cap = self.capture_dir()
        if cap is None or not (cap / CAPTURE_PROBS).is_file():
            return None
        return cap / CAPTURE_PROBS

    def pile_info(self) -> dict[str, Any] | None:
        """The ``"pile"`` entry of the capture's ``capture.json`` (None if unknown)."""
        cap = self.capture_dir()
        if cap is None:
            return None
        pile = read_json(cap / CAPTURE, f"{cap / CAPTURE}").get("pile")
        return dict(pile) if isinstance(pile, dict) else None

    def row_ids(self) -> list[str] | None:
        """One stable id per row of the pile (from the capture's ``ids.txt``), or None."""
        cap = self.capture_dir()
        if cap is None or not (cap / IDS).is_file():
            return None
        return (cap / IDS).read_text(encoding="utf-8").splitlines()

    def classes(self) -> tuple[str, ...] | None:
        """Class names (index = class): those held by :meth:`hold_classes`, else
        ``DIR/classes.json``, else the capture's, else None."""
        if self._held_classes is not None:
            return self._held_classes
        for where in (self.path, self.capture_dir()):
            names = _names_in(where)
            if names is not None:
                return names
        return None

    def models_classes(self) -> int | None:
        """How many classes the ranked models' recorded ``predictions`` show: C of (M, N, C)
        probabilities, one past the largest class of (M, N) integer classes; else None (no
        such source, or a regression model's outputs)."""
        if not self.has_source("predictions"):
            return None
        preds = self.load_source("predictions")
        if preds.ndim == 3:
            return int(preds.shape[2])
        if preds.ndim == 2 and preds.dtype.kind in "iu":
            return max(2, int(np.max(preds)) + 1)
        return None

    def capture_classes(self) -> tuple[str, ...] | None:
        """The class names the capture recorded (``CAP/classes.json``: ``capture --classes``
        or the model's own), or None."""
        return _names_in(self.capture_dir())

    def set_classes(self, names: list[str] | tuple[str, ...]) -> Path:
        """Write ``DIR/classes.json``."""
        self.path.mkdir(parents=True, exist_ok=True)
        write_json(self.path / CLASSES, list(names))
        self._held_classes = None
        return self.path / CLASSES

    def hold_classes(self, names: list[str] | tuple[str, ...]) -> None:
        """Use ``names`` as the class names (labels are read with them) but write
        ``DIR/classes.json`` only with this command's result (selection, estimate, ranking):
        a command that fails leaves the directory's names as they were."""
        self._held_classes = tuple(names)

    def _save_held_classes(self) -> None:
        if self._held_classes is not None:
            self.set_classes(self._held_classes)

    # --------------------------------------------------------------------- selection

    def write_selection(self, sel: Selection, *, new_from: int = 0) -> None:
        """``selection.json`` and ``to_label.csv``; rows from position ``new_from`` on are new."""
        self._set_aside()
        self.write_to_label(sel.indices, new_from=new_from)
        write_json(
            self.path / SELECTION,
            {
                "tool": f"labelwise {__version__}",
                "seed": self.seed,
                "sources": self.sources,
                "selection": sel.to_dict(),
            },
        )
        self._save_held_classes()
        self._note_use()

    def _note_use(self) -> None:
        """Add this directory to ``CAP/used_by.json`` of each capture a source came from, so
        that a later ``labelwise capture --out CAP`` finds it (:func:`users_of`) wherever it
        lies. Best effort: a capture directory that cannot be written is left alone."""
        me = str(self.path.resolve())
        for key in self.sources:
            cap = self.source_path(key).parent
            if not (cap / CAPTURE).is_file():
                continue
            known = _used_by(cap)
            if me in known:
                continue
            with contextlib.suppress(OSError):
                write_json(cap / USED_BY, [*known, me])

    def write_to_label(self, rows: NDArray[Any], *, new_from: int = 0) -> Path:
        """``to_label.csv``: order,row,new; rows from position ``new_from`` on have new = 1.

        With row ids (:meth:`row_ids`), order,row,id,new: the labeller sees which image (or
        table row) to open.
        """
        self.path.mkdir(parents=True, exist_ok=True)
        ids = self.row_ids()
        body: list[list[Any]]
        if ids is None:
            body = [[i + 1, int(r), int(i >= new_from)] for i, r in enumerate(rows)]
            write_csv(self.path / TO_LABEL, ["order", "row", "new"], body)
            return self.path / TO_LABEL
        picked = [int(r) for r in rows]
        beyond = [r for r in picked if not 0 <= r < len(ids)]
        if beyond:
            raise LabelwiseError(
                f"{self.capture_dir()}/{IDS} has {len(ids)} ids, fewer than the rows of the "
                f"pile (e.g. row {beyond[0]}); capture again"
            )
        body = [[i + 1, r, ids[r], int(i >= new_from)] for i, r in enumerate(picked)]
        write_csv(self.path / TO_LABEL, ["order", "row", "id", "new"], body)
        return self.path / TO_LABEL

    @property
    def to_label(self) -> Path:
        return self.path / TO_LABEL

    # ------------------------------------------------------------------------ labels

    def write_labels(
        self,
        rows: NDArray[Any],
        labels: NDArray[Any],
        column: str = "label",
        *,
        ids: Sequence[str] | None = None,
    ) -> Path:
        """``labels.csv``: ``row,<column>``, plus ``class`` (each label's name) when the class
        names are known and ``id`` when ``ids`` are given (:func:`labelwise.io.write_labels_csv`;
        :meth:`read_label_file` reads it back unchanged)."""
        self.path.mkdir(parents=True, exist_ok=True)
        out = self.path / LABELS
        write_labels_csv(out, rows, labels, column=column, classes=self.classes(), ids=ids)
        return out

    def read_label_file(
        self,
        path: str | Path,
        *,
        n_rows: int | None = None,
        allowed: Collection[int] | None = None,
        not_allowed: str = "not selected",
        n_classes: int | None = None,
    ) -> tuple[NDArray[np.int64], str, NDArray[Any]]:
        """A labels CSV read with this workspace's class names and row ids.

        Labels may be class names (:meth:`classes`) and rows may be named by id
        (:meth:`row_ids`) in an ``id`` column; rows outside ``[0, n_rows)`` or not in
        ``allowed`` are errors naming the file's lines; see
        :func:`labelwise.io.read_labels_csv`.
        """
        return read_labels_csv(
            path,
            classes=self.classes(),
            ids=self.row_ids(),
            n_rows=n_rows,
            allowed=allowed,
            not_allowed=not_allowed,
            n_classes=n_classes,
        )

    def selected_labels(
        self, path: str | Path, sel: Selection, *, n_classes: int | None = None
    ) -> tuple[str, dict[int, Any]]:
        """The label column's kind and ``{row: label}`` of the selected rows that have one.

        Rows outside the pile and labels for rows that were not selected are errors that
        name the file's lines (:meth:`read_label_file`); what a missing label means is the
        caller's (:meth:`read_labels`: an error; a report: a labelled prefix).
        """
        rows, kind, values = self.read_label_file(
            path,
            n_rows=sel.population_size,
            allowed=set(sel.indices.tolist()),
            n_classes=n_classes,
        )
        return kind, dict(zip(rows.tolist(), values.tolist(), strict=True))

    def read_labels(
        self, path: str | Path, sel: Selection, *, n_classes: int | None = None
    ) -> tuple[str, NDArray[Any]]:
        """The label column's kind and its values in selection order: exactly the selected rows.

        Rows outside the pile, labels for rows that were not selected (they would bias the
        estimate) and selected rows without a label are errors that name the rows.
        """
        kind, have = self.selected_labels(path, sel, n_classes=n_classes)
        missing = [int(r) for r in sel.indices if int(r) not in have]
        if missing:
            raise LabelwiseError(
                f"--labels: {len(missing)} selected rows have no label in {path}, e.g. "
                f"{missing[:10]}: label them (see {self.to_label}) and add them to that file"
            )
        return kind, np.asarray([have[int(r)] for r in sel.indices])

    # ------------------------------------------------------------------------ results

    def write_estimate(self, doc: dict[str, Any]) -> Path:
        write_json(self.path / ESTIMATE, doc)
        self._save_held_classes()
        return self.path / ESTIMATE

    def write_ranking(self, doc: dict[str, Any], sel: Selection, labels: NDArray[Any]) -> Path:
        """``ranking.json``: ``doc`` and the fingerprint of the labelled rows it was made from
        (:func:`labels_fingerprint`), so a later report can tell it from a stale one."""
        write_json(self.path / RANKING, {**doc, "labelled": labels_fingerprint(sel, labels)})
        self._save_held_classes()
        return self.path / RANKING

    def ranking(self, sel: Selection, labels: NDArray[Any]) -> tuple[dict[str, Any] | None, bool]:
        """The ``"ranking"`` of ``ranking.json`` (None if there is none) and whether it was made
        from exactly these labelled rows: ``sel``'s rows with ``labels`` (selection order).

        A ranking from before the selection was extended or made again (``--force``), or
        from other labels, is stale. A file without a fingerprint (older versions) counts as
        current when its method and its number of labelled rows match.
        """
        p = self.path / RANKING
        if not p.is_file():
            return None, False
        doc = read_json(p, str(p))
        r = doc.get("ranking") if isinstance(doc, dict) else None
        if not isinstance(r, dict):
            return None, False
        if "labelled" in doc:
            current = doc["labelled"] == labels_fingerprint(sel, labels)
        else:
            current = doc.get("method") == sel.method and r.get("n_labelled") == sel.budget
        return dict(r), current

    # -------------------------------------------------------------------------- state

    def write_state(self, name: str, obj: Any) -> Path:
        """Save ``obj`` under ``name``: a dict of arrays as ``<name>.state.npz``, else JSON.

        For state that is not the selection itself, e.g. a sequential campaign's.
        """
        _check_name(name)
        self.path.mkdir(parents=True, exist_ok=True)
        self._set_aside()
        if isinstance(obj, dict) and obj and all(isinstance(v, np.ndarray) for v in obj.values()):
            out = self.path / f"{name}.state.npz"

            def _write(fh: Any) -> None:
                np.savez(fh, **obj)

            atomic_write(out, _write, binary=True)
            return out
        out = self.state_file(name)
        write_json(out, obj)
        if name == CAMPAIGN:
            self._note_use()
        return out

    def read_state(self, name: str) -> Any:
        """What :meth:`write_state` saved under ``name`` (None if nothing was)."""
        _check_name(name)
        npz = self.path / f"{name}.state.npz"
        if npz.is_file():
            try:
                with open(npz, "rb") as fh, np.load(fh, allow_pickle=False) as data:
                    return {k: data[k] for k in data.files}
            except (OSError, ValueError, EOFError, zipfile.BadZipFile) as exc:
                hint = (
                    "delete it: the campaign computes it again"
                    if name == CAMPAIGN_ARRAYS
                    else "restore it"
                )
                raise LabelwiseError(
                    f"state {name!r}: {npz} is not a readable .npz file ({exc}); {hint}"
                ) from None
        js = self.state_file(name)
        if js.is_file():
            return read_json(js, f"state {name!r}")
        return None

    def state_file(self, name: str) -> Path:
        """Where :meth:`write_state` saves JSON state ``name``: ``<name>.state.json``."""
        _check_name(name)
        return self.path / f"{name}.state.json"


def aside_directory(directory: Path) -> Path:
    """A new, empty ``directory/replaced-<UTC time>[-n]/``: where ``--force`` moves what it
    would otherwise replace (a labelled selection or campaign, an earlier study's tables)."""
    stamp = _dt.datetime.now(_dt.timezone.utc).strftime("%Y%m%dT%H%M%SZ")
    aside = directory / f"replaced-{stamp}"
    n = 1
    while aside.exists():
        n += 1
        aside = directory / f"replaced-{stamp}-{n}"
    aside.mkdir()
    return aside


def labels_fingerprint(sel: Selection, labels: NDArray[Any]) -> str:
    """sha256 of a selection's method, rows and their labels (selection order): what a
    ranking was made from."""
    h = hashlib.sha256(sel.method.encode())
    h.update(np.ascontiguousarray(sel.indices, dtype=np.int64).tobytes())
    h.update(np.ascontiguousarray(labels, dtype=np.int64).tobytes())
    return h.hexdigest()


def load_campaign(directory: str | Path) -> tuple[Workspace, Any, dict[str, Any]]:
    """A campaign directory's workspace, :class:`labelwise.Campaign` and recorded labels.

    The labels come as ``{"kind": str | None, "labels": {row: value}, "last_batch": int}``.
    Every way the state can be malformed (hand edits, a truncated file) is one
    :class:`LabelwiseError` naming the state file.
    """
    from .campaign import Campaign

    ws = Workspace(directory)
    ws.kind = "campaign"
    file = ws.path / f"{CAMPAIGN}.state.json"
    doc = ws.read_state(CAMPAIGN)
    if not isinstance(doc, dict):
        held = ws.holds()
        if held == "campaign":  # the file exists but holds no JSON object
            ws.set_sources(doc, file)
        extra = (
            " (it holds a selection: 'labelwise select --extend' adds rows to it)"
            if held == "selection"
            else capture_hint(ws.path)
            or "; start one with 'labelwise campaign DIR --activations ...'"
        )
        raise LabelwiseError(f"DIR {ws.path} holds no campaign{extra}")
    ws.set_sources(doc, file, required=True)
    acts = ws.load_source("activations")
    probs = ws.load_source("probs") if ws.has_source("probs") else None
    arrays = ws.read_state(CAMPAIGN_ARRAYS)  # None for campaigns started before the cache
    try:
        if "campaign" not in doc:
            raise LabelwiseError("it has no 'campaign' entry")
        camp = Campaign.from_dict(
            doc["campaign"], activations=acts, probabilities=probs, arrays=arrays
        )
        lab = doc.get("labels") or {}
        if not isinstance(lab, dict):
            raise LabelwiseError(f"'labels' must be a JSON object, got {type(lab).__name__}")
        rows, values = lab.get("rows", []), lab.get("values", [])
        if not isinstance(rows, list) or not isinstance(values, list) or len(rows) != len(values):
            raise LabelwiseError("'labels' must hold two lists of equal length, rows and values")
        labels = {int(r): v for r, v in zip(rows, values, strict=True)}
        kind = lab.get("kind")
        if kind is not None and not isinstance(kind, str):
            raise LabelwiseError(f"'labels.kind' must be a string, got {kind!r}")
        info = {"kind": kind, "labels": labels, "last_batch": int(doc.get("last_batch", 0))}
    except LabelwiseError as exc:
        raise LabelwiseError(
            f"{file}: {exc}; restore the file or start the campaign again"
        ) from None
    except (KeyError, TypeError, ValueError, AttributeError, IndexError) as exc:
        raise LabelwiseError(
            f"{file} is missing or has a malformed field ({exc}); restore the file or start "
            "the campaign again"
        ) from None
    return ws, camp, info


def users_of(capture: str | Path, names: Sequence[str]) -> list[tuple[Path, str, list[str]]]:
    """The selections and campaigns whose recorded sources are the files ``names`` of the
    capture directory ``capture`` as they are now (the recorded sha256 matches): replacing
    those files would leave their labels without the arrays they refer to.

    Looked for in ``capture/used_by.json`` (written when a selection or campaign is saved),
    in the subdirectories of ``capture`` and in those beside it (a project folder holding
    ``cap/`` and ``sel/``; selections made before ``used_by.json`` existed), and in their
    ``replaced-*`` folders (set aside by ``--force`` before that noted them). Returns
    ``(directory, "selection" | "campaign", file names)`` in the order found.
    """
    cap = Path(capture).resolve()
    candidates = [Path(k) for k in _used_by(cap)]
    for where in (cap, cap.parent):
        with contextlib.suppress(OSError):
            near = sorted(p for p in where.iterdir() if p.is_dir())
            # and what 'select --force' moved aside in them (moved before used_by.json noted it)
            candidates += near + [r for p in near for r in sorted(p.glob("replaced-*"))]
    found: list[tuple[Path, str, list[str]]] = []
    seen: set[Path] = set()
    digests: dict[Path, str] = {}
    for d in candidates:
        try:
            d = d.resolve()
            if d in seen or not d.is_dir():
                continue
            seen.add(d)
            ws = Workspace(d)
            kind = ws._read_held_sources()
            if kind is None:
                continue
        except (OSError, LabelwiseError):
            continue  # not readable: not a directory whose labels we can tell apart
        files = []
        for key, info in ws.sources.items():
            path = ws.source_path(key)
            if path.parent.resolve() != cap or path.name not in names or not path.is_file():
                continue
            if path not in digests:
                digests[path] = file_digest(path)
            if digests[path] == info.get("sha256"):
                files.append(path.name)
        if files:
            found.append((d, kind, sorted(set(files))))
    return found


def _used_by(capture: Path) -> list[str]:
    """The directories ``capture/used_by.json`` lists ([] when it is missing or unreadable)."""
    file = capture / USED_BY
    try:
        known = read_json(file, str(file)) if file.is_file() else []
    except LabelwiseError:
        return []
    return [k for k in known if isinstance(k, str)] if isinstance(known, list) else []


def check_directory(directory: str | Path, what: str = "DIR") -> None:
    """An error if ``directory`` does not exist or is a file (before asking what it holds)."""
    d = Path(directory)
    if not d.exists():
        raise LabelwiseError(
            f"{what} {d} does not exist; give the directory of a 'labelwise select' or "
            "'labelwise campaign'"
        )
    if not d.is_dir():
        raise LabelwiseError(
            f"{what} {d} is a file, not a directory; give the directory of a 'labelwise select' "
            "or 'labelwise campaign'"
        )


def capture_hint(directory: str | Path) -> str:
    """For a directory 'labelwise capture' wrote, given where a selection or campaign is
    asked for: that it is a capture, and the commands that choose rows from it (else "")."""
    d = Path(directory)
    if not (d / CAPTURE).is_file():
        return ""
    acts = shell_arg(d / "activations.npy")
    outputs = d / CAPTURE_PROBS
    probs = f" --probs {shell_arg(outputs)}" if outputs.is_file() else ""
    try:
        rows = int(read_json(d / CAPTURE, CAPTURE).get("rows", 100))
    except (LabelwiseError, AttributeError, TypeError, ValueError):
        rows = 100
    budget = max(1, min(100, rows // 2))  # a budget the pile can meet
    return (
        f"; {d} is a capture ({CAPTURE}): choose the rows to label from its arrays first, "
        f"e.g. 'labelwise select --method ces --budget {budget} --activations {acts}{probs} "
        f"--out sel' or 'labelwise campaign camp --activations {acts}{probs}'"
    )


def check_not_state(path: str | Path, directory: str | Path, what: str) -> None:
    """An error if ``path`` is a directory or one of the files that keep ``directory``'s
    selection or campaign (writing there would lose it)."""
    p = Path(path)
    if p.is_dir():
        raise LabelwiseError(f"{what} {p} is a directory; give a file name")
    for up in p.parents:
        if up.exists() and not up.is_dir():
            raise LabelwiseError(f"{what} {p}: {up} is a file, not a directory")
    d = Path(directory)
    if not d.is_dir() or p.parent.resolve() != d.resolve():
        return
    name = p.name
    if name in (SELECTION, TO_LABEL, LABELS, ESTIMATE, RANKING, CLASSES) or name.endswith(
        (".state.json", ".state.npz")
    ):
        raise LabelwiseError(
            f"{what} {p} would overwrite a file of the {Workspace(d).holds() or 'directory'} "
            f"in {d}; choose another name"
        )


def check_output_file(
    path: str | Path, directory: str | Path, what: str, *, suffixes: tuple[str, ...]
) -> None:
    """An error unless writing ``path`` can lose nothing of the user's.

    Beyond :func:`check_not_state`: ``path`` must not be a link, device or pipe (an atomic
    write would replace it); an existing file is overwritten only when its suffix is one of
    ``suffixes`` (a report over an older report: never a CSV of labels or an .npy of
    activations) and it is not a state file of another labelwise directory.
    """
    check_not_state(path, directory, what)
    p = Path(path)
    if p.is_symlink() or (p.exists() and not p.is_file()):
        raise LabelwiseError(
            f"{what} {p} exists and is not a regular file (a link, device or pipe); give a "
            "new file name"
        )
    if not p.exists():
        return
    if p.suffix.lower() not in suffixes:
        raise LabelwiseError(
            f"{what} {p} exists and is not a {' / '.join(suffixes)} file; labelwise will not "
            "overwrite it: give a new file name, or remove it first"
        )
    if p.parent.resolve() != Path(directory).resolve():
        check_not_state(p, p.parent, what)


def _check_name(name: str) -> None:
    if not name or not all(c.isalnum() or c in "-_" for c in name):
        raise LabelwiseError(f"name must be letters, digits, - or _, got {name!r}")


def _names_in(where: Path | None) -> tuple[str, ...] | None:
    """The class names of ``where/classes.json`` (None if ``where`` or the file is missing)."""
    if where is None or not (where / CLASSES).is_file():
        return None
    names = read_json(where / CLASSES, f"{where / CLASSES}")
    if not isinstance(names, list) or not all(isinstance(n, str) for n in names):
        raise LabelwiseError(f"{where / CLASSES} must be a JSON list of names")
    return tuple(names)


def _relative(path: Path, start: Path) -> str | None:
    """``path`` relative to the directory ``start`` (None where there is no such path, e.g.
    another drive)."""
    try:
        return os.path.relpath(path.resolve(), start.resolve())
    except ValueError:
        return None
