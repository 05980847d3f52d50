"""Scenario coverage of operating conditions by k-projection (Cheng et al. 2018, Sec. II-A).

Each input is labelled with the operating conditions it was recorded under (weather, road
surface, ...). A *scenario* gives every condition a value; there are too many to cover them
all, so the metric looks at every k-subset of the conditions (the paper uses k = 2) and asks
how many cells of its projection table (one cell per combination of the subset's values) the
data occupies (Eq. 1)::

    M_scene = (# cells occupied by the data) / (# cells of all k-projection tables)

The quantitative variant (Cheng, Huang & Yasuoka 2018, "Quantitative projection coverage")
asks for ``target`` inputs per cell and credits each cell with ``min(count, target) / target``.

Impossible combinations
-----------------------
``impossible`` lists partial assignments ``{condition: value, ...}`` that cannot occur
(e.g. ``{"weather": "snowy", "season": "summer"}``). A cell of the k-subset S with values v
is *impossible*, and left out of the denominator, when some impossible assignment A names
only conditions of S (``A.keys() <= S``) and agrees with v on all of them. An assignment
over more than k conditions therefore excludes no k-cell (each of its k-sub-combinations
can still occur with other values elsewhere), but no input may match it and
:func:`next_scenarios` never proposes a scenario that matches it.
"""

from __future__ import annotations

import csv
import itertools
import math
import os
import warnings
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from types import MappingProxyType
from typing import Any, ClassVar, TypeAlias

import numpy as np
from numpy.typing import NDArray

from .._contract import Result
from .._validation import check_int
from ..exceptions import (
    DegenerateDataWarning,
    LabelwiseError,
    MissingDependencyError,
    user_stacklevel,
)
from ..io import read_json

__all__ = [
    "ProjectionTable",
    "ScenarioCoverage",
    "ScenarioProposal",
    "ScenarioProposals",
    "next_scenarios",
    "scenario_coverage",
]

MAX_K = 3
# Cells over all k-projection tables held in memory at once (int64 counts).
_MAX_CELLS = 20_000_000
# next_scenarios scores every full scenario exactly when there are at most this many.
_EXACT_LIMIT = 1 << 22

Subset: TypeAlias = tuple[str, ...]
TableLike: TypeAlias = Any  # mapping column -> values, DataFrame-like, or CSV path
SpecLike: TypeAlias = Mapping[str, Sequence[Any]] | str | os.PathLike[str] | None


# --- results ------------------------------------------------------------------------------


@dataclass(frozen=True, eq=False)
class ProjectionTable(Result):
    """One k-subset's projection table: how many inputs fall in each cell.

    Attributes
    ----------
    conditions:
        The subset's conditions, in spec order.
    values:
        Each condition's allowed values, in spec order (the table's axes).
    counts:
        Inputs per cell, int64 of shape ``tuple(len(v) for v in values)`` (read-only).
    possible:
        False for impossible cells (read-only, same shape).
    target:
        Inputs wanted per cell (1 for the plain metric).

    The headline ``value`` is ``covered / total`` (0 without possible cells; higher is better).
    ``to_dict`` adds ``occupied``, ``total``, ``n_impossible``, ``covered`` and ``missing``.
    """

    higher_is_better: ClassVar[bool | None] = True
    _json_properties: ClassVar[tuple[str, ...]] = (
        "occupied",
        "total",
        "n_impossible",
        "covered",
        "missing",
    )

    conditions: Subset
    values: tuple[tuple[Any, ...], ...]
    counts: NDArray[np.int64] = field(repr=False)
    possible: NDArray[np.bool_] = field(repr=False)
    target: int = 1

    def __post_init__(self) -> None:
        shape = tuple(len(v) for v in self.values)
        counts = np.asarray(self.counts, dtype=np.int64)
        possible = np.asarray(self.possible, dtype=bool)
        if counts.shape != shape or possible.shape != shape:
            raise LabelwiseError(
                f"counts and possible must have shape {shape}, got {counts.shape} and "
                f"{possible.shape}"
            )
        object.__setattr__(self, "counts", counts)
        object.__setattr__(self, "possible", possible)
        super().__post_init__()

    @property
    def value(self) -> float:
        """``covered / total`` (0.0 when no cell is possible)."""
        return self.covered / self.total if self.total else 0.0

    @property
    def occupied(self) -> int:
        """Possible cells holding at least one input."""
        return int(np.count_nonzero((self.counts > 0) & self.possible))

    @property
    def total(self) -> int:
        """Possible cells (the subset's share of the denominator)."""
        return int(np.count_nonzero(self.possible))

    @property
    def n_impossible(self) -> int:
        return int(self.possible.size - self.total)

    @property
    def covered(self) -> float:
        """Sum over possible cells of ``min(count, target) / target`` (= ``occupied`` when
        ``target`` is 1)."""
        clipped = np.minimum(self.counts, self.target)[self.possible]
        return float(clipped.sum()) / self.target

    @property
    def missing(self) -> tuple[tuple[Any, ...], ...]:
        """Values of the possible cells with fewer than ``target`` inputs, in spec order."""
        short = np.argwhere((self.counts < self.target) & self.possible)
        return tuple(tuple(self.values[a][i] for a, i in enumerate(cell)) for cell in short)


@dataclass(frozen=True, eq=False)
class ScenarioCoverage(Result):
    """k-projection scenario coverage of a table of operating conditions.

    Attributes
    ----------
    value:
        The coverage in [0, 1]: covered cells over possible cells, summed over every
        k-subset of the conditions.
    k:
        Size of the projected subsets.
    conditions:
        The conditions, in spec order.
    spec:
        Each condition's allowed values (read-only mapping to tuples).
    tables:
        One :class:`ProjectionTable` per k-subset, in ``itertools.combinations`` order
        of the conditions.
    n_rows:
        Inputs in the table; ``n_distinct`` of them are distinct scenarios.
    spec_inferred:
        True when no spec was given and the allowed values are the ones seen in the data.
    quantitative:
        True when ``targets`` were given.
    impossible:
        The impossible partial assignments, as given (validated).

    ``value`` is the headline number (higher is better); ``to_dict`` adds ``n_occupied`` and
    ``n_cells``.
    """

    higher_is_better: ClassVar[bool | None] = True
    _json_head: ClassVar[Mapping[str, Any]] = MappingProxyType({"metric": "scenario_coverage"})
    _json_properties: ClassVar[tuple[str, ...]] = ("n_occupied", "n_cells")

    value: float
    k: int
    conditions: tuple[str, ...]
    spec: Mapping[str, tuple[Any, ...]] = field(repr=False)
    tables: tuple[ProjectionTable, ...] = field(repr=False)
    n_rows: int = 0
    n_distinct: int = 0
    spec_inferred: bool = False
    quantitative: bool = False
    impossible: tuple[Mapping[str, Any], ...] = field(default=(), repr=False)

    def __post_init__(self) -> None:
        object.__setattr__(
            self, "spec", MappingProxyType({c: tuple(v) for c, v in self.spec.items()})
        )
        object.__setattr__(self, "tables", tuple(self.tables))
        object.__setattr__(
            self, "impossible", tuple(MappingProxyType(dict(a)) for a in self.impossible)
        )
        super().__post_init__()

    @property
    def subsets(self) -> tuple[Subset, ...]:
        return tuple(t.conditions for t in self.tables)

    @property
    def occupied(self) -> dict[Subset, int]:
        """Occupied possible cells per k-subset."""
        return {t.conditions: t.occupied for t in self.tables}

    @property
    def total(self) -> dict[Subset, int]:
        """Possible cells per k-subset."""
        return {t.conditions: t.total for t in self.tables}

    @property
    def covered(self) -> dict[Subset, float]:
        """Credited cells per k-subset (``min(count, target) / target`` summed)."""
        return {t.conditions: t.covered for t in self.tables}

    @property
    def n_occupied(self) -> int:
        return sum(t.occupied for t in self.tables)

    @property
    def n_cells(self) -> int:
        """The denominator: possible cells over all k-subsets."""
        return sum(t.total for t in self.tables)

    @property
    def missing(self) -> tuple[tuple[Subset, tuple[Any, ...]], ...]:
        """``(subset, values)`` of every possible cell short of its target (for the plain
        metric: every unoccupied possible cell), subset by subset in spec order."""
        return tuple((t.conditions, cell) for t in self.tables for cell in t.missing)

    def table(self, *conditions: str) -> ProjectionTable:
        """The projection table of the given k conditions (any order)."""
        wanted = set(conditions)
        for t in self.tables:
            if set(t.conditions) == wanted and len(wanted) == len(conditions):
                return t
        raise LabelwiseError(
            f"table needs {self.k} distinct conditions out of {list(self.conditions)}, "
            f"got {list(conditions)}"
        )


@dataclass(frozen=True)
class ScenarioProposal(Result):
    """One proposed scenario: a value for every condition.

    ``gain`` is the number of k-projection cells it newly occupies, ``coverage`` the
    (plain) coverage once it and all earlier proposals are added to the data, and the
    headline ``value`` (higher is better).
    """

    higher_is_better: ClassVar[bool | None] = True

    scenario: Mapping[str, Any]
    gain: int
    coverage: float

    def __post_init__(self) -> None:
        object.__setattr__(self, "scenario", MappingProxyType(dict(self.scenario)))
        super().__post_init__()

    @property
    def value(self) -> float:
        """``coverage``."""
        return self.coverage


@dataclass(frozen=True)
class ScenarioProposals(Result):
    """Scenarios to collect next, best first (a sequence of :class:`ScenarioProposal`).

    ``exact`` is True when every full scenario was scored (each proposal is then the best
    possible given the earlier ones); False when the scenario space was too large and a
    greedy construction with coordinate ascent was used instead. The headline ``value`` is
    ``coverage_after`` (higher is better).
    """

    higher_is_better: ClassVar[bool | None] = True
    _json_properties: ClassVar[tuple[str, ...]] = ("coverage_after",)

    proposals: tuple[ScenarioProposal, ...]
    coverage_before: float
    k: int
    n_cells: int
    exact: bool

    def __len__(self) -> int:
        return len(self.proposals)

    def __iter__(self) -> Iterator[ScenarioProposal]:
        return iter(self.proposals)

    def __getitem__(self, i: int) -> ScenarioProposal:
        return self.proposals[i]

    @property
    def coverage_after(self) -> float:
        return self.proposals[-1].coverage if self.proposals else self.coverage_before

    @property
    def value(self) -> float:
        """``coverage_after``."""
        return self.coverage_after


# --- public functions ---------------------------------------------------------------------


def scenario_coverage(
    conditions: TableLike,
    spec: SpecLike = None,
    *,
    k: int = 2,
    targets: int | Mapping[Sequence[str], int] | None = None,
    impossible: Sequence[Mapping[str, Any]] | None = None,
) -> ScenarioCoverage:
    """k-projection scenario coverage M_scene (Cheng et al. 2018, Sec. II-A, Eq. 1).

    For every k-subset of the conditions, the projection table has one cell per
    combination of the subset's allowed values; the coverage is the number of cells
    occupied by at least one input over the number of cells, summed over all subsets.
    The paper's example (weather with 3 values, road surface with 3, orientation with 2;
    inputs ``(sunny, stone, straight)`` and ``(rainy, tarmac, curvy)``) gives
    (2 + 2 + 2) / (9 + 6 + 6) for k = 2.

    Parameters
    ----------
    conditions:
        The operating conditions of each input: a mapping ``column -> sequence of values``
        (all of the same length), a DataFrame-like object (``.columns`` and
        ``obj[column]``), or the path of a CSV file with a header row. With a spec,
        columns the spec does not name are ignored. CSV cells are stripped strings; they
        match spec values by their text, so ``"30"`` matches a spec value ``30``.
    spec:
        Each condition's allowed values, in the order used for ties and reports: a
        mapping ``condition -> list of values`` or the path of a JSON file holding one
        (YAML, ``.yaml``/``.yml``, if PyYAML is installed). ``None``: the distinct values
        seen in each column (sorted), with a :class:`DegenerateDataWarning`, because the
        coverage is then relative to what was seen: an unseen value counts as nothing.
    k:
        Size of the projected subsets, 1 to 3 (the paper's 2), at most the number of
        conditions.
    targets:
        Quantitative variant: inputs wanted per cell, one int for all subsets or a
        mapping ``(condition, ...) -> int`` per k-subset (unlisted subsets want 1). A cell
        then counts ``min(count, target) / target``.
    impossible:
        Partial assignments ``{condition: value}`` that cannot occur; the k-cells they
        fix are left out of the denominator (see the module notes for the exact rule).
        An input matching one is an error.

    Returns
    -------
    ScenarioCoverage
        The value, per-subset tables with occupied/total counts, and the missing cells.

    Raises
    ------
    LabelwiseError
        For an empty table, a value outside the spec (naming the condition, the value
        and its first row), a condition unknown to the table or the spec, ``k`` out of
        range, bad targets, or an input matching an impossible assignment.
    """
    problem = _prepare(conditions, spec, impossible, allow_empty=False)
    k = _check_k(k, len(problem.names))
    subsets = list(itertools.combinations(range(len(problem.names)), k))
    target_per_subset = _check_targets(targets, subsets, problem.names, k)
    _check_table_size(problem, subsets, k)

    tables = []
    for s, target in zip(subsets, target_per_subset, strict=True):
        tables.append(
            ProjectionTable(
                conditions=tuple(problem.names[i] for i in s),
                values=tuple(problem.values[i] for i in s),
                counts=_counts(problem, s),
                possible=_possible(problem, s),
                target=target,
            )
        )
    n_cells = sum(t.total for t in tables)
    if n_cells == 0:
        raise LabelwiseError(
            f"impossible excludes every cell of the {k}-projection tables; nothing to cover"
        )
    value = sum(t.covered for t in tables) / n_cells
    return ScenarioCoverage(
        value=float(value),
        k=k,
        conditions=problem.names,
        spec=dict(zip(problem.names, problem.values, strict=True)),
        tables=tuple(tables),
        n_rows=problem.n_rows,
        n_distinct=int(problem.rows.shape[0]),
        spec_inferred=problem.inferred,
        quantitative=targets is not None,
        impossible=problem.impossible_named,
    )


def next_scenarios(
    conditions: TableLike,
    spec: SpecLike = None,
    *,
    k: int = 2,
    n: int = 5,
    impossible: Sequence[Mapping[str, Any]] | None = None,
) -> ScenarioProposals:
    """Propose the next ``n`` scenarios to collect, each raising k-projection coverage most.

    Greedy, as the paper suggests for improving M_scene (Sec. II-A): the first proposal
    is the full scenario (one value per condition, matching no ``impossible``
    assignment) that occupies the most new cells of the k-projection tables; the second
    is the best given the data plus the first, and so on. Ties go to the scenario that
    comes first in spec order (conditions in spec order, each condition's values in spec
    order). Proposing stops early once no scenario adds a cell (the coverage is then
    1, or the remaining cells can only be reached through impossible scenarios).

    Up to 2**22 full scenarios are scored exactly (one array over the whole scenario
    space, updated as cells fill). Beyond that each proposal is built around a few seed
    cells, condition by condition (the value opening most cells given the conditions
    already chosen, as in AETG), then improved one condition at a time until no change
    helps; it is good but not guaranteed best, and the result says ``exact=False``. It
    still stops only when no possible scenario opens a cell.

    Parameters are as in :func:`scenario_coverage`. With a spec, ``conditions`` may have
    no rows (planning from scratch). ``n`` is the number of proposals wanted (>= 1).
    """
    problem = _prepare(conditions, spec, impossible, allow_empty=spec is not None)
    m = len(problem.names)
    k = _check_k(k, m)
    n = check_int(n, "n", minimum=1)
    subsets = list(itertools.combinations(range(m), k))
    _check_table_size(problem, subsets, k)

    # open[j]: 1 where subset j's cell is possible and still unoccupied.
    open_cells = [
        (_possible(problem, s) & (_counts(problem, s) == 0)).astype(np.int32) for s in subsets
    ]
    n_cells = sum(int(np.count_nonzero(_possible(problem, s))) for s in subsets)
    if n_cells == 0:
        raise LabelwiseError(
            f"impossible excludes every cell of the {k}-projection tables; nothing to cover"
        )
    occupied = n_cells - sum(int(g.sum()) for g in open_cells)
    coverage_before = occupied / n_cells
    sizes = problem.sizes
    exact = math.prod(sizes) <= _EXACT_LIMIT

    picks: list[tuple[tuple[int, ...], int]] = []
    if exact:
        picks = _greedy_exact(open_cells, subsets, sizes, problem.impossible, n)
    else:
        dead: set[tuple[int, tuple[int, ...]]] = set()
        for _ in range(n):
            z, gain = _heuristic_pick(open_cells, subsets, sizes, problem.impossible, dead)
            if gain <= 0:
                break
            _occupy(open_cells, subsets, z, None)
            picks.append((z, gain))

    proposals = []
    for z, gain in picks:
        occupied += gain
        scenario = {problem.names[i]: problem.values[i][z[i]] for i in range(m)}
        proposals.append(ScenarioProposal(scenario, gain, occupied / n_cells))
    return ScenarioProposals(
        proposals=tuple(proposals),
        coverage_before=coverage_before,
        k=k,
        n_cells=n_cells,
        exact=exact,
    )


# --- the problem: coded rows --------------------------------------------------------------


@dataclass(frozen=True)
class _Problem:
    names: tuple[str, ...]
    values: tuple[tuple[Any, ...], ...]
    rows: NDArray[np.int64]  # (U, m) distinct coded scenarios in the data
    weights: NDArray[np.int64]  # (U,) inputs per distinct scenario
    n_rows: int
    inferred: bool
    impossible: tuple[dict[int, int], ...]  # condition index -> value code
    impossible_named: tuple[dict[str, Any], ...]

    @property
    def sizes(self) -> tuple[int, ...]:
        return tuple(len(v) for v in self.values)


def _prepare(
    conditions: TableLike,
    spec: SpecLike,
    impossible: Sequence[Mapping[str, Any]] | None,
    *,
    allow_empty: bool,
) -> _Problem:
    columns = _read_table(conditions)
    if not columns:
        raise LabelwiseError("conditions must have at least one column, got none")
    n_rows = len(next(iter(columns.values())))
    if n_rows == 0 and not allow_empty:
        raise LabelwiseError(
            f"conditions must have at least one row, got an empty table with columns "
            f"{list(columns)}"
        )

    if spec is None:
        if n_rows == 0:
            raise LabelwiseError("conditions has no rows, so a spec is needed to know the values")
        names = tuple(columns)
        factorised = [_factorise(columns[c]) for c in names]
        values = tuple(tuple(_plain(u) for u in uniq) for uniq, _ in factorised)
        for name, vals in zip(names, values, strict=True):
            _check_values(name, vals, "conditions")
        seen = ", ".join(f"{c}: {len(v)}" for c, v in zip(names, values, strict=True))
        warnings.warn(
            "no spec given: each condition's allowed values were inferred from the "
            f"{n_rows} row(s) ({seen} distinct values), so the coverage is relative to what "
            "was seen; pass a spec to count unseen values as missing",
            DegenerateDataWarning,
            stacklevel=user_stacklevel(),
        )
        codes = [inv for _, inv in factorised]
        inferred = True
    else:
        spec_map = _read_spec(spec)
        unknown = [c for c in spec_map if c not in columns]
        if unknown:
            raise LabelwiseError(
                f"spec names condition(s) {unknown} that are not columns of conditions "
                f"(columns: {list(columns)})"
            )
        names = tuple(spec_map)
        values = tuple(spec_map[c] for c in names)
        codes = [
            _encode(c, columns[c], _Lookup(c, spec_map[c])) if n_rows else np.zeros(0, np.int64)
            for c in names
        ]
        inferred = False

    lookups = [_Lookup(c, v) for c, v in zip(names, values, strict=True)]
    imp_coded, imp_named = _check_impossible(impossible, names, lookups, inferred)

    if n_rows:
        matrix = np.stack(codes, axis=1)
        rows, first, weights = _distinct_rows(matrix, tuple(len(v) for v in values))
    else:
        rows = np.zeros((0, len(names)), dtype=np.int64)
        first = weights = np.zeros(0, dtype=np.int64)
    _check_rows_possible(rows, first, imp_coded, imp_named)
    return _Problem(names, values, rows, weights, n_rows, inferred, imp_coded, imp_named)


def _read_table(conditions: TableLike) -> dict[str, NDArray[Any]]:
    """Columns as 1-D arrays of equal length, keyed by name in table order."""
    if isinstance(conditions, str | os.PathLike):
        raw: dict[str, Any] = _read_csv(Path(conditions))
    elif isinstance(conditions, Mapping):
        raw = dict(conditions.items())
    elif hasattr(conditions, "columns") and hasattr(conditions, "__getitem__"):
        raw = {c: conditions[c] for c in list(conditions.columns)}
    else:
        raise LabelwiseError(
            "conditions must be a mapping column -> values, a DataFrame or the path of a "
            f"CSV file, got {type(conditions).__name__}"
        )
    columns: dict[str, NDArray[Any]] = {}
    for name, col in raw.items():
        if not isinstance(name, str):
            raise LabelwiseError(f"condition names must be strings, got {name!r}")
        columns[name] = _column_array(name, col)
    lengths = {c: a.shape[0] for c, a in columns.items()}
    if len(set(lengths.values())) > 1:
        raise LabelwiseError(f"conditions' columns must have the same length, got {lengths}")
    return columns


def _read_csv(path: Path, what: str = "conditions") -> dict[str, list[str]]:
    """The CSV of conditions as columns of text; ``what`` names it in errors (the CLI: its
    flag, --scenarios)."""
    if not path.is_file():
        raise LabelwiseError(f"{what}: {path} does not exist or is not a file")
    try:
        with open(path, encoding="utf-8-sig", newline="") as fh:
            reader = csv.reader(fh)
            header = next(reader, None)
            body = [(i, r) for i, r in enumerate(reader, start=2) if any(c.strip() for c in r)]
    except (OSError, UnicodeDecodeError, csv.Error) as exc:
        raise LabelwiseError(f"{what}: cannot read {path} ({exc})") from None
    if header is None:
        raise LabelwiseError(f"{what}: {path} is empty (a header row is needed)")
    names = [h.strip() for h in header]
    if len(set(names)) != len(names) or "" in names:
        raise LabelwiseError(f"{what}: {path} needs distinct, non-empty column names, got {header}")
    columns: dict[str, list[str]] = {c: [] for c in names}
    for line_no, rec in body:
        if len(rec) != len(names):
            raise LabelwiseError(
                f"{what}: {path} line {line_no} has {len(rec)} fields, the header has {len(names)}"
            )
        for c, cell in zip(names, rec, strict=True):
            columns[c].append(cell.strip())
    return columns


def _column_array(name: str, col: Any) -> NDArray[Any]:
    """A 1-D array that keeps each value's type (no silent int -> str conversion)."""
    if isinstance(col, str | bytes) or not hasattr(col, "__len__"):
        raise LabelwiseError(f"column {name!r} must be a sequence of values, got {col!r}")
    if hasattr(col, "to_numpy"):
        col = col.to_numpy()
    if isinstance(col, np.ndarray):
        if col.ndim != 1:
            raise LabelwiseError(f"column {name!r} must be 1-D, got shape {col.shape}")
        return col
    items = list(col)
    try:
        arr = np.asarray(items)
    except (TypeError, ValueError):
        arr = None
    if arr is not None and arr.ndim == 1 and arr.shape[0] == len(items):
        # np.asarray turns [1, "a"] into ["1", "a"] and [True, 0.5] into [1.0, 0.5]:
        # keep such columns as objects so every value keeps its type.
        mixed = (arr.dtype.kind in "US" and not all(isinstance(v, str | bytes) for v in items)) or (
            arr.dtype.kind == "f" and any(isinstance(v, bool) for v in items)
        )
        if not mixed:
            return arr
    out = np.empty(len(items), dtype=object)
    for i, v in enumerate(items):
        out[i] = v
    return out


def _factorise(col: NDArray[Any]) -> tuple[list[Any], NDArray[np.int64]]:
    """Distinct values (sorted when they can be) and each row's index into them."""
    try:
        uniq, inv = np.unique(col, return_inverse=True)
        return list(uniq), inv.reshape(-1).astype(np.int64)
    except TypeError:
        pass
    index: dict[Any, int] = {}
    inv = np.empty(col.shape[0], dtype=np.int64)
    try:
        for i, v in enumerate(col):
            inv[i] = index.setdefault(v, len(index))
    except TypeError as exc:
        raise LabelwiseError(f"condition values must be hashable: {exc}") from None
    return list(index), inv


class _Lookup:
    """Value -> code for one condition; text (e.g. from a CSV) also matches by str()."""

    def __init__(self, name: str, values: Sequence[Any]) -> None:
        self.name = name
        self.values = tuple(values)
        self.exact = {v: i for i, v in enumerate(self.values)}
        text: dict[str, int | None] = {}
        for i, v in enumerate(self.values):
            key = str(v)
            text[key] = i if key not in text else None  # None: ambiguous text
        self.text = text

    def get(self, value: Any) -> int | None:
        try:
            code = self.exact.get(value)
        except TypeError:
            return None
        if code is None and isinstance(value, str):
            code = self.text.get(value)
        return code


def _encode(name: str, col: NDArray[Any], lookup: _Lookup) -> NDArray[np.int64]:
    uniq, inv = _factorise(col)
    mapping = np.empty(len(uniq), dtype=np.int64)
    for j, u in enumerate(uniq):
        code = lookup.get(_plain(u))
        if code is None:
            row = int(np.flatnonzero(inv == j)[0])
            what = "is missing" if _is_missing(u) else f"has value {_plain(u)!r}"
            raise LabelwiseError(
                f"condition {name!r} {what} at row {row}, which is not among its allowed "
                f"values {list(lookup.values)}"
            )
        mapping[j] = code
    return mapping[inv]


def _read_spec(spec: Any, what: str = "spec") -> dict[str, tuple[Any, ...]]:
    """The spec (a mapping, or a JSON or YAML file of one) checked; ``what`` names it in
    errors (the CLI: its flag, --spec)."""
    if isinstance(spec, str | os.PathLike):
        path = Path(spec)
        is_yaml = path.suffix.lower() in (".yaml", ".yml")
        raw = _read_yaml(path) if is_yaml else read_json(path, what)
    else:
        raw = spec
    if not isinstance(raw, Mapping) or not raw:
        raise LabelwiseError(
            f"{what} must map each condition to its list of allowed values, e.g. "
            f'{{"weather": ["sunny", "rainy"]}}, got {type(raw).__name__}'
        )
    out: dict[str, tuple[Any, ...]] = {}
    for name, vals in raw.items():
        if not isinstance(name, str):
            raise LabelwiseError(f"{what}'s condition names must be strings, got {name!r}")
        if isinstance(vals, str | bytes | Mapping) or not isinstance(vals, Sequence | np.ndarray):
            raise LabelwiseError(
                f"{what}: the allowed values of condition {name!r} must be a list, got {vals!r}"
            )
        values = tuple(_plain(v) for v in vals)
        _check_values(name, values, what)
        out[name] = values
    return out


def _read_yaml(path: Path) -> Any:
    from .._deps import require

    try:
        yaml = require("yaml", f"reading the YAML spec {path}")
    except MissingDependencyError as exc:
        raise MissingDependencyError(
            f"{exc}; or write the spec as JSON instead, e.g. "
            '{"weather": ["sunny", "cloudy", "rainy"]}'
        ) from None
    try:
        with open(path, encoding="utf-8") as fh:
            return yaml.safe_load(fh)
    except FileNotFoundError:
        raise LabelwiseError(f"spec: {path} does not exist") from None
    except (OSError, UnicodeDecodeError, yaml.YAMLError) as exc:
        raise LabelwiseError(f"spec: {path} is not valid YAML ({exc})") from None


def _check_values(name: str, values: tuple[Any, ...], where: str) -> None:
    if not values:
        raise LabelwiseError(f"{where}: condition {name!r} needs at least one allowed value")
    for v in values:
        if _is_missing(v):
            raise LabelwiseError(
                f"{where}: condition {name!r} has a missing value ({v!r}); drop or label "
                "those inputs first"
            )
    try:
        distinct = len(set(values))
    except TypeError as exc:
        raise LabelwiseError(f"{where}: condition {name!r} has unhashable values: {exc}") from None
    if distinct != len(values):
        raise LabelwiseError(f"{where}: condition {name!r} lists a value twice: {list(values)}")


def _check_impossible(
    impossible: Sequence[Mapping[str, Any]] | None,
    names: tuple[str, ...],
    lookups: list[_Lookup],
    inferred: bool,
) -> tuple[tuple[dict[int, int], ...], tuple[dict[str, Any], ...]]:
    if impossible is None:
        return (), ()
    if isinstance(impossible, Mapping) or not isinstance(impossible, Sequence):
        raise LabelwiseError(
            "impossible must be a list of partial assignments {condition: value}, got "
            f"{type(impossible).__name__}"
        )
    coded: list[dict[int, int]] = []
    named: list[dict[str, Any]] = []
    for a in impossible:
        if not isinstance(a, Mapping) or not a:
            raise LabelwiseError(
                f"each impossible assignment must be a non-empty dict condition -> value, got {a!r}"
            )
        entry: dict[int, int] = {}
        for cond, value in a.items():
            if cond not in names:
                raise LabelwiseError(
                    f"impossible assignment {dict(a)} names unknown condition {cond!r} "
                    f"(conditions: {list(names)})"
                )
            i = names.index(cond)
            code = lookups[i].get(value)
            if code is None:
                seen = " (seen in the data; no spec given)" if inferred else ""
                raise LabelwiseError(
                    f"impossible assignment {dict(a)}: {value!r} is not an allowed value of "
                    f"condition {cond!r}{seen}: {list(lookups[i].values)}"
                )
            entry[i] = code
        coded.append(entry)
        named.append({names[i]: lookups[i].values[c] for i, c in sorted(entry.items())})
    return tuple(coded), tuple(named)


def _check_rows_possible(
    rows: NDArray[np.int64],
    first: NDArray[np.int64],
    impossible: tuple[dict[int, int], ...],
    named: tuple[dict[str, Any], ...],
) -> None:
    for a, a_named in zip(impossible, named, strict=True):
        hit = np.ones(rows.shape[0], dtype=bool)
        for i, code in a.items():
            hit &= rows[:, i] == code
        if hit.any():
            row = int(first[hit].min())
            raise LabelwiseError(
                f"conditions row {row} matches the impossible assignment {a_named}; fix the "
                "row or the impossible list"
            )


def _distinct_rows(
    matrix: NDArray[np.int64], sizes: tuple[int, ...]
) -> tuple[NDArray[np.int64], NDArray[np.int64], NDArray[np.int64]]:
    """Distinct coded rows, the first row of each, and how many rows each stands for."""
    if math.prod(sizes) < 2**62:
        flat = np.ravel_multi_index(tuple(matrix.T), sizes)
        uniq, first, counts = np.unique(flat, return_index=True, return_counts=True)
        rows = np.stack(np.unravel_index(uniq, sizes), axis=1).astype(np.int64)
    else:
        rows, first, counts = np.unique(matrix, axis=0, return_index=True, return_counts=True)
    return rows.astype(np.int64), first.astype(np.int64), counts.astype(np.int64)


# --- argument checks ----------------------------------------------------------------------


def _check_k(k: Any, m: int) -> int:
    k = check_int(k, "k", minimum=1, maximum=MAX_K)
    if k > m:
        raise LabelwiseError(f"k must be at most the number of conditions ({m}), got {k}")
    return k


def _check_targets(
    targets: Any, subsets: list[tuple[int, ...]], names: tuple[str, ...], k: int
) -> list[int]:
    if targets is None:
        return [1] * len(subsets)
    if not isinstance(targets, Mapping):
        t = check_int(targets, "targets", minimum=1)
        return [t] * len(subsets)
    per: dict[tuple[int, ...], int] = {}
    for key, t in targets.items():
        conds = (key,) if isinstance(key, str) else key
        try:
            conds = tuple(conds)
        except TypeError:
            raise LabelwiseError(
                f"targets keys must be tuples of {k} condition names, got {key!r}"
            ) from None
        unknown = [c for c in conds if c not in names]
        if unknown:
            raise LabelwiseError(
                f"targets key {key!r} names unknown condition(s) {unknown} "
                f"(conditions: {list(names)})"
            )
        idx = tuple(sorted({names.index(c) for c in conds}))
        if len(idx) != k or len(conds) != k:
            raise LabelwiseError(
                f"targets keys must name {k} distinct conditions (a {k}-subset), got {key!r}"
            )
        if idx in per:
            raise LabelwiseError(f"targets gives the subset {key!r} more than once")
        per[idx] = check_int(t, f"targets[{key!r}]", minimum=1)
    return [per.get(s, 1) for s in subsets]


def _check_table_size(problem: _Problem, subsets: list[tuple[int, ...]], k: int) -> None:
    sizes = problem.sizes
    n_cells = sum(math.prod(sizes[i] for i in s) for s in subsets)
    if n_cells > _MAX_CELLS:
        raise LabelwiseError(
            f"the {k}-projection tables would have {n_cells} cells (more than "
            f"{_MAX_CELLS}); use a smaller k or coarser values (condition sizes: "
            f"{dict(zip(problem.names, sizes, strict=True))})"
        )


# --- tables -------------------------------------------------------------------------------


def _counts(problem: _Problem, subset: tuple[int, ...]) -> NDArray[np.int64]:
    dims = tuple(problem.sizes[i] for i in subset)
    if problem.rows.shape[0] == 0:
        return np.zeros(dims, dtype=np.int64)
    ids = np.ravel_multi_index(tuple(problem.rows[:, i] for i in subset), dims)
    counts = np.bincount(ids, weights=problem.weights, minlength=math.prod(dims))
    return np.rint(counts).astype(np.int64).reshape(dims)


def _possible(problem: _Problem, subset: tuple[int, ...]) -> NDArray[np.bool_]:
    dims = tuple(problem.sizes[i] for i in subset)
    mask = np.ones(dims, dtype=bool)
    members = set(subset)
    for a in problem.impossible:
        if set(a) <= members:
            mask[tuple(a.get(i, slice(None)) for i in subset)] = False
    return mask


# --- greedy proposals ---------------------------------------------------------------------


def _occupy(
    open_cells: list[NDArray[np.int32]],
    subsets: list[tuple[int, ...]],
    z: tuple[int, ...],
    gain: NDArray[np.int32] | None,
) -> None:
    """Mark scenario z's cells occupied (and, with ``gain``, update every scenario's gain)."""
    for g, s in zip(open_cells, subsets, strict=True):
        cell = tuple(z[i] for i in s)
        if g[cell]:
            g[cell] = 0
            if gain is not None:
                gain[tuple(z[i] if i in s else slice(None) for i in range(len(z)))] -= 1


def _greedy_exact(
    open_cells: list[NDArray[np.int32]],
    subsets: list[tuple[int, ...]],
    sizes: tuple[int, ...],
    impossible: tuple[dict[int, int], ...],
    n: int,
) -> list[tuple[tuple[int, ...], int]]:
    """Score every full scenario (an array over the whole space) and pick greedily."""
    m = len(sizes)
    gain = np.zeros(sizes, dtype=np.int32)
    for g, s in zip(open_cells, subsets, strict=True):
        shape = [1] * m
        for i in s:
            shape[i] = sizes[i]
        gain += g.reshape(shape)
    if impossible:
        forbidden = np.zeros(sizes, dtype=bool)
        for a in impossible:
            forbidden[tuple(a.get(i, slice(None)) for i in range(m))] = True
        if forbidden.all():
            raise LabelwiseError("impossible rules out every full scenario; nothing to propose")
        # Far below any reachable gain, and decrements cannot bring it up.
        gain[forbidden] = -(len(subsets) + 1)
    picks = []
    for _ in range(n):
        flat = int(np.argmax(gain))  # first maximum: earliest in spec order
        best = int(gain.flat[flat])
        if best <= 0:
            break
        z = tuple(int(c) for c in np.unravel_index(flat, sizes))
        _occupy(open_cells, subsets, z, gain)
        picks.append((z, best))
    return picks


def _heuristic_pick(
    open_cells: list[NDArray[np.int32]],
    subsets: list[tuple[int, ...]],
    sizes: tuple[int, ...],
    impossible: tuple[dict[int, int], ...],
    dead: set[tuple[int, tuple[int, ...]]],
) -> tuple[tuple[int, ...], int]:
    """One good possible scenario for spaces too large to score whole (AETG-like).

    A scenario is built from a seed cell (or none), condition by condition, each taking
    the value that opens most cells among the subsets it completes, backtracking past
    values that would match an impossible assignment; then it is improved one condition
    at a time until no change helps. Seeds: none, then the first open cell of the (up to)
    8 subsets with most open cells; if all of these open nothing, every open cell in turn
    until one can be completed. Cells no possible scenario reaches go into ``dead``.
    """
    m = len(sizes)
    touches: list[list[int]] = [[] for _ in range(m)]
    for j, s in enumerate(subsets):
        for i in s:
            touches[i].append(j)
    rules: list[list[dict[int, int]]] = [[] for _ in range(m)]
    for a in impossible:
        for i in a:
            rules[i].append(a)

    def allowed(z: list[int], c: int) -> NDArray[np.bool_]:
        """Values of c that make z match no impossible rule (unassigned entries are -1)."""
        ok = np.ones(sizes[c], dtype=bool)
        for a in rules[c]:
            if all(z[i] == v for i, v in a.items() if i != c):
                ok[a[c]] = False
        return ok

    def gains(z: list[int], c: int) -> NDArray[np.int64]:
        """Open cells gained per value of c, over subsets whose other members are set."""
        g = np.zeros(sizes[c], dtype=np.int64)
        for j in touches[c]:
            s = subsets[j]
            if all(z[i] >= 0 for i in s if i != c):
                g += open_cells[j][tuple(slice(None) if i == c else z[i] for i in s)]
        return g

    def construct(seed: tuple[int, tuple[int, ...]] | None) -> list[int] | None:
        z = [-1] * m
        if seed is not None:
            for i, v in zip(subsets[seed[0]], seed[1], strict=True):
                z[i] = v
        order = [c for c in range(m) if z[c] < 0]
        if not order:
            return z

        def candidates(c: int) -> list[int]:
            ok = allowed(z, c)
            return [int(v) for v in np.argsort(-gains(z, c), kind="stable") if ok[v]]

        stack = [candidates(order[0])]
        while stack:
            depth = len(stack) - 1
            c = order[depth]
            if not stack[-1]:
                stack.pop()
                z[c] = -1
                continue
            z[c] = stack[-1].pop(0)
            if depth + 1 == len(order):
                return z
            stack.append(candidates(order[depth + 1]))
        return None

    def ascend(z: list[int]) -> int:
        for _ in range(100 * m):
            changed = False
            for c in range(m):
                g = gains(z, c)
                g[~allowed(z, c)] = -1
                best = int(np.argmax(g))
                if g[best] > g[z[c]]:
                    z[c] = best
                    changed = True
            if not changed:
                break
        return sum(int(open_cells[j][tuple(z[i] for i in s)]) for j, s in enumerate(subsets))

    def live_cells(j: int) -> Iterator[tuple[int, tuple[int, ...]]]:
        for cell in np.argwhere(open_cells[j] > 0):
            key = (j, tuple(int(v) for v in cell))
            if key not in dead:
                yield key

    busiest = sorted(range(len(subsets)), key=lambda j: -int(open_cells[j].sum()))[:8]
    seeds: list[tuple[int, tuple[int, ...]] | None] = [None]
    seeds += [next(live_cells(j), None) for j in busiest if open_cells[j].any()]
    best_z: list[int] | None = None
    best_gain = -1
    for i, seed in enumerate(seeds):
        if i > 0 and seed is None:
            continue
        z = construct(seed)
        if z is None:
            if seed is None:
                raise LabelwiseError("impossible rules out every full scenario; nothing to propose")
            dead.add(seed)
            continue
        gain = ascend(z)
        if gain > best_gain:
            best_z, best_gain = z, gain
    if best_gain <= 0:
        for j in range(len(subsets)):
            for seed in live_cells(j):
                z = construct(seed)
                if z is None:
                    dead.add(seed)
                    continue
                return tuple(z), ascend(z)
    assert best_z is not None
    return tuple(best_z), best_gain


# --- helpers ------------------------------------------------------------------------------


def _plain(v: Any) -> Any:
    """NumPy scalars as Python scalars (for messages, dict keys and JSON)."""
    return v.item() if isinstance(v, np.generic) else v


def _is_missing(v: Any) -> bool:
    if v is None:
        return True
    if isinstance(v, str):
        return v.strip() == ""
    if isinstance(v, float | np.floating):
        return bool(np.isnan(v))
    return False
