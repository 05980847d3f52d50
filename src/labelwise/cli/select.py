"""``labelwise select``: choose which rows of the pile to label (or add rows to a selection).

Its ``--method`` choices, the data each method needs, and every tuning option with its
default and help come from :mod:`labelwise.registry`.
"""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

import numpy as np

from .. import registry
from .._params import Param
from .._results import Selection
from .._validation import check_budget
from ..exceptions import LabelwiseError
from ..io import shell_arg
from ..sampling import extend
from ..workspace import Workspace
from ._common import (
    check_model_stack,
    check_probabilities,
    check_probs_beside,
    default_probs,
    fresh_seed,
    known_class_count,
)
from ._piles import CLASSES_HELP, store_classes

#: CLI flag of each data key (see registry.NEEDS).
DATA_FLAGS = {"activations": "--activations", "probs": "--probs", "predictions": "--predictions"}


def _flag(name: str, param: Param) -> str:
    return param.flag or "--" + name.replace("_", "-")


def tuning_options() -> dict[str, dict[str, Any]]:
    """flag -> {dest, param name, Param, default, methods}: one entry per CLI option."""
    out: dict[str, dict[str, Any]] = {}
    for method in registry.methods().values():
        defaults = method.defaults()
        for name, param in method.params.items():
            flag = _flag(name, param)
            opt = out.setdefault(
                flag,
                {
                    "dest": "p_" + name,
                    "name": name,
                    "param": param,
                    "default": defaults[name],
                    "methods": [],
                },
            )
            if opt["name"] != name or opt["default"] != defaults[name]:
                raise RuntimeError(  # pragma: no cover - a registry inconsistency
                    f"{flag} means different things for {opt['methods']} and {method.name}"
                )
            opt["methods"].append(method.name)
    return out


def _methods_epilog() -> str:
    lines = ["methods (labelwise.registry):"]
    for m in registry.methods().values():
        lines.append(f"  {m.name:<5}{m.title}")
        lines.append(f"       {m.purpose}; needs {m.needs}")
    return "\n".join(lines)


def add_parser(sub: Any) -> None:
    s = sub.add_parser(
        "select",
        help="choose which rows of the pile to label",
        description=(
            "Choose which rows to label. Writes OUT/to_label.csv (order, row, id: the row's "
            "image path, table id or number, new: 1 for the rows added by this run) and "
            "OUT/selection.json (everything needed to estimate and to extend)."
        ),
        epilog=_methods_epilog(),
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    accuracy = ", ".join(registry.names("accuracy"))
    ranking = ", ".join(registry.names("ranking"))
    s.add_argument(
        "--method",
        type=str.lower,  # CES, SRS as the papers write them
        choices=list(registry.names()),
        help=f"{accuracy}: estimate one model's accuracy; {ranking}: rank several models "
        "(--predictions). Not with --extend",
    )
    s.add_argument(
        "--budget", type=int, required=True, help="rows to label (with --extend: rows to add)"
    )
    s.add_argument(
        "--activations", type=Path, help="(N, m) last-hidden-layer outputs, .npy or zarr store"
    )
    s.add_argument(
        "--probs",
        type=Path,
        help="(N, C) class probabilities or (N,) confidences, .npy or zarr (default: "
        "CAP/probabilities.npy when --activations is CAP/activations.npy of 'labelwise capture')",
    )
    s.add_argument(
        "--predictions",
        type=Path,
        help="(M, N) predicted classes or (M, N, C) probabilities of M models, .npy or zarr",
    )
    s.add_argument("--population-size", type=int, help="N, for SRS without any array")
    s.add_argument("--out", type=Path, help="output directory")
    s.add_argument(
        "--extend", type=Path, metavar="DIR", help="add --budget rows to the selection in DIR"
    )
    s.add_argument(
        "--labels",
        type=Path,
        help="with --extend of a cppi selection: CSV (row,label or id,label) of the rows "
        "selected so far; the new rows are then the ranking campaign's next active round, "
        "chosen where these labels leave the ranking uncertain (without it: label-free)",
    )
    s.add_argument("--seed", type=int, default=None, help="random seed (default: fresh, recorded)")
    s.add_argument("--force", action="store_true", help="overwrite an existing selection in --out")
    s.add_argument("--classes", type=Path, help=CLASSES_HELP + " (saved as OUT/classes.json)")
    groups: dict[str, Any] = {}
    for flag, opt in tuning_options().items():
        first = registry.get(opt["methods"][0])
        if first.name not in groups:
            groups[first.name] = s.add_argument_group(f"{first.name}: {first.title}")
        param: Param = opt["param"]
        text = param.help.replace("%", "%%")
        shown = param.constraint.format(opt["default"])
        groups[first.name].add_argument(
            flag,
            dest=opt["dest"],
            default=None,
            metavar=opt["name"].upper(),
            help=f"{text} [{', '.join(opt['methods'])}] (default: {shown})",
        )
    s.set_defaults(func=cmd_select)


def cmd_select(args: argparse.Namespace) -> int:
    if args.extend is not None:
        return _select_extend(args)
    if args.labels is not None:
        raise LabelwiseError(
            "--labels applies to --extend DIR only (the labels of the rows selected so far)"
        )
    if args.method is None:
        raise LabelwiseError("--method is required (or use --extend DIR)")
    if args.out is None:
        raise LabelwiseError("--out is required")
    if args.population_size is not None and args.population_size < 1:
        raise LabelwiseError(
            f"--population-size must be the number of rows of the pile (>= 1), got "
            f"{args.population_size}"
        )
    method = registry.get(args.method)
    params = _params(args, method)
    ws = Workspace.create(args.out, force=args.force)
    ws.seed = args.seed if args.seed is not None else fresh_seed()
    arrays: dict[str, np.ndarray] = {}
    for key, flag in DATA_FLAGS.items():
        path = getattr(args, key)
        if path is not None:
            arrays[key] = ws.add_source(key, path, flag)
    if not {"probs", "predictions"} & arrays.keys():
        found = default_probs(ws)
        if found is not None:
            arrays["probs"] = ws.add_source("probs", found, "--probs")
    if "predictions" in arrays:
        check_model_stack(arrays["predictions"], "--predictions", path=args.predictions)
    if "probs" in arrays:
        _refuse_integer_confidences(arrays["probs"], ws.source_path("probs"))
    if "probs" in arrays and method.data != "probs":
        # values outside [0, 1]: not confidences
        check_probs_beside(arrays["probs"], arrays.get("activations"))
    count = {k: a.shape[1] if k == "predictions" else a.shape[0] for k, a in arrays.items()}
    rows = set(count.values())
    if len(rows) > 1:
        each = ", ".join(
            f"{DATA_FLAGS.get(k, '--' + k)} {ws.source_path(k)} has {n:,} rows"
            for k, n in count.items()
        )
        raise LabelwiseError(
            f"the arrays must describe the same pile rows, one row each: {each}; give the "
            "arrays of one capture"
        )
    if args.population_size is not None and rows and args.population_size not in rows:
        raise LabelwiseError(
            f"--population-size {args.population_size} differs from the {next(iter(rows))} rows "
            "of the arrays given; leave it out (it is for SRS without any array)"
        )
    data = _data(method, arrays, rows, args.population_size)
    # the flag named ('budget must be in [1, 200]' named the Python argument); a method's own
    # minimum (CSS: one label per stratum) is the sampler's to say
    check_budget(args.budget, next(iter(rows)) if rows else int(data), name="--budget")
    store_classes(ws, args.classes, n_classes=_n_classes(arrays), fresh=True)
    try:
        sel = method.run(data, args.budget, rng=ws.seed, progress=True, **params)
    except LabelwiseError as exc:
        raise _flag_named(exc, method) from None
    ws.write_selection(sel)  # with the classes: a failed run leaves an older selection's names
    _print_selection(sel, ws, new_from=0)
    return 0


def _flag_named(exc: LabelwiseError, method: registry.Method) -> LabelwiseError:
    """The sampler's error about its data array with the flag the array came from: CES finds
    NaN or infinity in the range pass it makes anyway ('activations must be finite, ...'),
    so the CLI does not read the array a second time to say it first."""
    text = str(exc)
    if method.data is not None and text.startswith(f"{method.data} "):
        return LabelwiseError(DATA_FLAGS[method.data] + text[len(method.data) :])
    return exc


def _n_classes(arrays: dict[str, np.ndarray]) -> int | None:
    """The number of classes the probabilities (or M models' probabilities) show, if any."""
    if "probs" in arrays and arrays["probs"].ndim == 2:
        return int(arrays["probs"].shape[1])
    if "predictions" in arrays and arrays["predictions"].ndim == 3:
        return int(arrays["predictions"].shape[2])
    return None


def _params(args: argparse.Namespace, method: registry.Method) -> dict[str, Any]:
    """The tuning options given on the command line, parsed and checked; others are errors."""
    out: dict[str, Any] = {}
    for flag, opt in tuning_options().items():
        text = getattr(args, opt["dest"], None)
        if text is None:
            continue
        if method.name not in opt["methods"]:
            raise LabelwiseError(
                f"{flag} applies to {', '.join(opt['methods'])}, not {method.name}"
            )
        param: Param = opt["param"]
        try:
            value = param.constraint.parse(text)
        except LabelwiseError as exc:
            raise LabelwiseError(f"{flag} {exc}") from None
        param.constraint.check(value, flag)
        out[opt["name"]] = value
    objective = str(out.get("objective", "kl"))
    if "epsilon" in out and not objective.startswith("ce"):
        raise LabelwiseError(
            f"--epsilon applies to the ce objectives (the floor of Eq. 8), not --objective "
            f"{objective}; add --objective ce or leave --epsilon out"
        )
    return out


def _data(
    method: registry.Method, arrays: dict[str, np.ndarray], rows: set[int], n_pop: int | None
) -> Any:
    if method.data is None:
        if rows:
            return next(iter(rows))
        if n_pop is not None:
            return int(n_pop)
        raise LabelwiseError(
            f"{method.name.upper()} needs the pile size: --population-size N, --activations, "
            "--probs or --predictions"
        )
    flag = DATA_FLAGS[method.data]
    if method.data not in arrays:
        raise LabelwiseError(f"{flag} is required for {method.name.upper()} ({method.needs})")
    arr = arrays[method.data]
    if method.data_ndim and arr.ndim not in method.data_ndim:
        raise LabelwiseError(
            f"{flag} must be {' or '.join(f'{n}-D' for n in method.data_ndim)} for "
            f"{method.name.upper()} ({method.needs}), got shape {arr.shape}"
        )
    if method.data == "probs":
        check_probabilities(arr, flag)
    return arr


def _refuse_integer_confidences(probs: np.ndarray, path: Path) -> None:
    """(N,) --probs of integers: a binary classifier's predicted classes (capture's
    predictions.npy), 0 and 1, were taken as confidences, and CSS stratified by the class
    instead of the confidence without a word. Refused, naming probabilities.npy beside it
    when there is one."""
    if probs.ndim != 1 or np.dtype(probs.dtype).kind not in "iub":
        return
    beside = path.parent / "probabilities.npy"
    hint = f": --probs {shell_arg(beside)}" if beside.is_file() and beside != path else ""
    raise LabelwiseError(
        f"--probs {path} holds integers ({probs.dtype}): predicted classes, not confidences; "
        f"give the model's (N, C) class probabilities{hint}, or (N,) confidences in [0, 1] "
        "as floats"
    )


def _check_extend_arrays(args: argparse.Namespace, ws: Workspace, sel: Selection) -> None:
    """--activations, --probs, --predictions or --population-size given with --extend were
    ignored without a word: the selection continues with the arrays it was made from, so a
    new capture's file named there changed nothing. The same file (or size) as recorded is
    fine, as the same --method is; another one is an error naming the recorded one."""
    if args.population_size is not None and args.population_size != sel.population_size:
        raise LabelwiseError(
            f"--population-size {args.population_size} cannot change an existing selection "
            f"(of {sel.population_size} rows): --extend continues on its pile; leave "
            "--population-size out"
        )
    for key, flag in DATA_FLAGS.items():
        given = getattr(args, key)
        if given is None:
            continue
        if ws.has_source(key) and Path(given).resolve() == ws.source_path(key).resolve():
            continue  # the very file the selection was made from
        made = (
            f"it was made from {ws.source_path(key)}"
            if ws.has_source(key)
            else f"it was made without {flag}"
        )
        raise LabelwiseError(
            f"{flag} {given}: --extend continues the selection in {args.extend} on its own "
            f"arrays ({made}); leave {flag} out, or start a new selection on these arrays "
            "(select --method ... --out NEW)"
        )


def _select_extend(args: argparse.Namespace) -> int:
    ws, sel = Workspace.open(args.extend, "--extend")
    if args.method is not None and args.method != sel.method:
        raise LabelwiseError(f"--method {args.method} differs from the selection's {sel.method}")
    method = registry.get(sel.method)
    given = [f for f, o in tuning_options().items() if getattr(args, o["dest"], None) is not None]
    if given:
        raise LabelwiseError(
            f"{', '.join(given)} cannot change an existing selection (its parameters are kept)"
        )
    _check_extend_arrays(args, ws, sel)
    if args.seed is not None:
        raise LabelwiseError(
            "--seed does not apply to --extend: the selection continues its own random stream "
            "(so that selecting n and extending by m equals selecting n + m)"
        )
    left = sel.population_size - sel.budget
    if left == 0:
        raise LabelwiseError(
            f"--extend {args.extend}: every one of the {sel.population_size} rows is already "
            "selected; there is nothing to add"
        )
    # before the labels are read ('additional budget must be in ...' named the Python
    # argument, after them)
    check_budget(
        args.budget,
        left,
        name="--budget",
        context=f"the rows not yet selected: {left} of {sel.population_size}",
    )
    labels = None
    if args.labels is not None:
        if not method.learns:
            raise LabelwiseError(
                f"--labels: the next rows of {registry.with_article(sel.method)} selection do "
                "not depend on labels: "
                "extend it without --labels"
            )
        store_classes(ws, args.classes)  # the names the labels may be given by
        kind, labels = ws.read_labels(args.labels, sel, n_classes=known_class_count(ws))
        if kind != "label":
            raise LabelwiseError(
                f"--labels: a ranking needs a 'label' column (classes), got '{kind}'"
            )
    data = None if method.data is None else ws.load_source(method.data)
    before = sel.budget
    new = extend(sel, data, args.budget, labels=labels)
    if args.out is not None and args.out != args.extend:
        out = Workspace.create(args.out, force=args.force)
        out.sources, out.seed = ws.sources, ws.seed
        classes = ws.classes()
        if classes is not None and (ws.path / "classes.json").is_file():
            out.set_classes(classes)
        ws = out
    store_classes(ws, args.classes)
    ws.write_selection(new, new_from=before)
    print(f"extended {sel.method} selection from {before} to {new.budget} rows")
    _print_selection(new, ws, new_from=before)
    if method.learns and labels is None:
        print(
            "  note: chosen without labels; with --labels (the labels of the rows selected so "
            "far) the new rows go where those labels leave the ranking uncertain"
        )
    return 0


def _print_selection(sel: Selection, ws: Workspace, *, new_from: int) -> None:
    fresh = sel.indices[new_from:]
    first = ", ".join(str(int(i)) for i in fresh[:10])
    more = ", ..." if fresh.size > 10 else ""
    left = sel.population_size - sel.budget
    print(
        f"{sel.method}: {sel.budget} rows selected, {left:,} rows still unselected "
        f"(pile of {sel.population_size:,})"
    )
    if sel.stratum_sizes is not None and sel.strata is not None:
        per = np.bincount(sel.strata, minlength=len(sel.stratum_sizes))
        parts = [f"stratum {h}: {int(per[h])} of {n}" for h, n in enumerate(sel.stratum_sizes)]
        print("  " + "; ".join(parts))
    label = "new rows to label" if new_from else "rows to label first"
    print(f"  {label} ({fresh.size}): {first}{more}")
    print(f"  wrote {ws.to_label} (column new = 1 for these) and {ws.path / 'selection.json'}")
    if ws.set_aside is not None:
        print(f"  the selection it replaced, with its labels, is now in {ws.set_aside}")
