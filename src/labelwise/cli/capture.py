"""``labelwise capture``: run a model (PyTorch or ONNX) over inputs, save activations and
probabilities batch by batch."""

from __future__ import annotations

import argparse
import os
import shutil
import sys
import tempfile
import warnings
from pathlib import Path
from typing import Any

import numpy as np

from .._deps import install_hint
from ..adapters._capture import logits_output_arg
from ..exceptions import LabelwiseError
from ..io import new_folders, remove_empty, write_json
from ..workspace import CAPTURE, CLASSES, IDS, Workspace, users_of
from ._common import DefaultsHelpFormatter
from ._piles import CLASSES_HELP, add_pile_arguments, open_inputs, read_classes, write_pile_files

ROUTES = """\
model routes (chosen from the file):
  --model model.onnx    ONNX, run with onnxruntime; --layer takes a tensor name
                        (default: the input of the last Gemm/MatMul)
                        needs: {onnx}
  --model model.pt      TorchScript (torch.jit.save; any forward), or a pickled
                        nn.Module (torch.save(model)) whose class is importable:
                        run from the directory that holds its module
                        needs: {torch}
  --model model.pt2     a torch.export program (torch.export.save)
                        needs: {torch}
  --model-class pkg.module:Class --state-dict ckpt.pt [--model-kwargs '{{"hidden": 32}}']
                        a state_dict, or a checkpoint dict holding one under
                        "state_dict" / "model_state_dict", loaded into Class(**kwargs);
                        pkg.module is imported from the current directory
                        needs: {torch}
  For PyTorch models --layer takes a module name (model.named_modules()); the default
  is the input of the last Linear that runs.
"""


def add_parser(sub: Any) -> None:
    hints = {
        "onnx": install_hint("onnxruntime", extra="onnx"),
        "torch": install_hint("torch", extra="torch"),
    }
    c = sub.add_parser(
        "capture",
        help="run a PyTorch or ONNX model over inputs and save activations and probabilities",
        description=(
            "One batched pass of a model over INPUTS (an array, a table or a folder of images; "
            "see below). Writes, batch by batch, "
            "OUT/activations.npy (float32, the last hidden layer: the input of the last "
            "Linear/Gemm layer, or --layer), OUT/probabilities.npy (softmax; or "
            "OUT/outputs.npy with --head raw), OUT/predictions.npy and OUT/capture.json "
            '(model kind, layer, and its "pile" entry: what the inputs were and how they were '
            "read), OUT/ids.txt (one id per row) and OUT/classes.json (--classes, or the "
            "model's own class names). "
            f"Needs: {hints['torch']} for PyTorch models, {hints['onnx']} for .onnx files."
        ),
        epilog=ROUTES.format(**hints),
        formatter_class=_Formatter,
    )
    c.add_argument(
        "--model", type=Path, default=None, help="model file: .onnx, .pt2, TorchScript or pickle"
    )
    c.add_argument(
        "--model-class",
        default=None,
        metavar="PKG.MODULE:CLASS",
        help="the nn.Module class of --state-dict (imported from the current directory)",
    )
    c.add_argument(
        "--state-dict", type=Path, default=None, help="a state_dict or checkpoint (.pt, .pth)"
    )
    c.add_argument(
        "--model-kwargs",
        default=None,
        metavar="JSON",
        help="keyword arguments of --model-class as a JSON object",
    )
    c.add_argument(
        "--inputs",
        type=Path,
        required=True,
        help="the pile: .npy, .npz, .csv, .parquet or a folder of images; first axis = rows",
    )
    c.add_argument("--out", type=Path, required=True, help="output directory")
    c.add_argument(
        "--force",
        action="store_true",
        help="replace arrays in --out that a selection or campaign was made from (its labels "
        "then no longer refer to arrays that exist)",
    )
    c.add_argument(
        "--layer",
        default=None,
        help="PyTorch: module name; ONNX: tensor name (default: the last hidden layer)",
    )
    c.add_argument(
        "--head",
        choices=["softmax", "raw"],
        default=None,
        help="output transform: softmax (classifier; one output per row is a binary "
        "classifier's: [1 - p, p] with p the output when it lies in [0, 1] on every row, a "
        "sigmoid's, else p = sigmoid(output), a logit's) or raw (regression); not given: "
        "softmax, with a note when the model has one output per row",
    )
    c.add_argument(
        "--logits-output",
        type=logits_output_arg,
        default=None,
        metavar="KEY|INDEX",
        help="a model with several outputs: the one holding the class scores, as a dict key "
        "(e.g. logits, for a forward returning a dict), an index (0, 1, ... of a tuple or of an "
        "ONNX model's outputs) or an ONNX output name (default: a dict's 'logits' or its one "
        "(rows, classes) tensor; of two outputs, the narrower one, the other one captured as "
        "the features unless --layer is given)",
    )
    c.add_argument("--batch-size", type=int, default=256, help="rows per forward pass")
    c.add_argument("--classes", type=Path, help=CLASSES_HELP)
    add_pile_arguments(c)
    c.set_defaults(func=cmd_capture)


class _Formatter(DefaultsHelpFormatter, argparse.RawDescriptionHelpFormatter):
    """Defaults in the help, and the routes epilog kept as written."""


def _model_route(args: argparse.Namespace) -> str:
    """``"onnx"``, ``"state-dict"`` or ``"torch"`` (TorchScript, pickle or .pt2)."""
    if args.head == "raw" and args.classes is not None:
        raise LabelwiseError(
            "--classes names a classifier's classes, but --head raw captures a regression "
            "model's outputs: drop --classes, or use --head softmax for a classifier"
        )
    if args.state_dict is not None or args.model_class is not None:
        if args.model is not None:
            raise LabelwiseError(
                "pass either --model FILE or --model-class with --state-dict, not both"
            )
        if args.state_dict is None or args.model_class is None:
            raise LabelwiseError(
                "--model-class and --state-dict go together: --model-class pkg.module:Class "
                "--state-dict ckpt.pt"
            )
        return "state-dict"
    if args.model_kwargs is not None:
        raise LabelwiseError("--model-kwargs needs --model-class and --state-dict")
    if args.model is None:
        raise LabelwiseError(
            "pass the model: --model FILE (.onnx, .pt2, TorchScript or pickled nn.Module), or "
            "--model-class pkg.module:Class --state-dict ckpt.pt"
        )
    return "onnx" if args.model.suffix.lower() == ".onnx" else "torch"


def _load_model(args: argparse.Namespace) -> tuple[str, Any, dict[str, Any]]:
    """The route, the loaded model and what capture.json says of it."""
    route = _model_route(args)
    if route == "onnx":
        from ..adapters import onnx

        model = onnx.load_model(args.model)
        return route, model, {"model": str(args.model.resolve()), "model_kind": "onnx"}

    from ..adapters import torch as torch_adapter

    if route == "state-dict":
        kwargs = torch_adapter.parse_model_kwargs(args.model_kwargs)
        model, kind = torch_adapter._load(
            args.state_dict,
            model_class=args.model_class,
            model_kwargs=kwargs,
            names=("--model-class", "--model-kwargs"),
        )
        return (
            route,
            model,
            {
                "model": str(args.state_dict.resolve()),
                "model_kind": kind,
                "model_class": args.model_class,
                "model_kwargs": kwargs or {},
            },
        )
    model, kind = torch_adapter._load(args.model)
    return route, model, {"model": str(args.model.resolve()), "model_kind": kind}


def _capture(
    args: argparse.Namespace, inputs: Any, out: Path, notes: list[warnings.WarningMessage]
) -> tuple[Any, dict[str, Any]]:
    """Load the model and run it into ``out``; the Capture and what capture.json says of the
    model. ``notes`` (what opening the inputs warned) are given once the model has loaded:
    a run that fails on a missing or broken model reports only that."""
    route, model, about = _load_model(args)
    for note in notes:
        warnings.warn_explicit(note.message, note.category, note.filename, note.lineno)
    options = {
        "layer": args.layer,
        "head": args.head,
        "batch_size": args.batch_size,
        "out": out,
        "logits_output": args.logits_output,
    }
    if route == "onnx":
        from ..adapters import onnx

        cap = onnx.capture(model, inputs, **options)
        return cap, {**about, "tensor": cap.layer}

    from ..adapters import torch as torch_adapter

    return torch_adapter.capture(model, inputs, **options), about


# every file a capture may write: an earlier capture's files that this one does not write
# (probabilities.npy after a regression model, classes.json without --classes) are removed
CAPTURE_FILES = (
    "activations.npy",
    "probabilities.npy",
    "outputs.npy",
    "predictions.npy",
    IDS,
    CLASSES,
    CAPTURE,
)


def _pile_hint(inputs: Any, message: str) -> str:
    """For a table pile whose rows the model refused: which columns made the rows; for an
    image folder: the options that shaped the images (the model's error says to reshape the
    inputs, which a folder of images cannot)."""
    about = inputs.describe() if hasattr(inputs, "describe") else {}
    prep = about.get("preprocessing")
    refused = "failed on" in message or "expects input" in message
    if about.get("kind") == "images" and isinstance(prep, dict) and refused:
        return (
            f"; the images were read as {tuple(about.get('shape') or ())[1:]} "
            f"({prep.get('channels')} channel(s), layout {prep.get('layout')}): set "
            "--channels 1|3, --image-size HxW and --layout chw|hwc to what the model takes"
        )
    columns = about.get("columns")
    if about.get("kind") not in ("csv", "parquet") or not columns or not refused:
        return ""
    return (
        f"; the rows are the {len(columns)} columns {', '.join(map(repr, columns))} of "
        f"{about.get('path')}: choose the model's inputs with --columns, and name an id column "
        "with --id-column"
    )


def _check_not_in_use(out: Path) -> None:
    """An error if a selection or campaign records arrays in ``out`` as they are now: a new
    capture would replace them, the selection would refuse the new ones (sha256 differs), and
    the arrays its labels refer to would be gone."""
    users = users_of(out, [n for n in CAPTURE_FILES if n.endswith(".npy")])
    if not users:
        return
    named = [f"the {kind} in {d} ({', '.join(files)})" for d, kind, files in users]
    if len(named) == 1:
        made, whose, keeps = f"that {named[0]} was made from", "its", f"the {users[0][1]} keeps"
    else:
        # several: "the campaign in A (...); the campaign in B (...) was made from" misread
        made = f"that {len(named)} directories were made from: {', '.join(named)}"
        whose, keeps = "their", "they keep"
    raise LabelwiseError(
        f"--out {out} holds the arrays {made}; a new capture would replace them and {whose} "
        "labels would no longer refer to arrays that exist. Capture into another --out "
        f"({keeps} working), or pass --force to replace them anyway"
    )


def _remove_dead_stages(out: Path) -> None:
    """Remove the staging directories (``OUT/.capture-PID-XXXX``) of captures whose process
    is gone: a capture killed outright (SIGKILL, the out-of-memory killer, a power cut) cannot
    clean up, and its half-written arrays stayed in OUT, hidden, for good. A stage of a
    process still running (another capture into the same OUT) is left alone."""
    for stage in out.glob(".capture-*-*"):
        pid_text = stage.name.split("-")[1]
        if not stage.is_dir() or not pid_text.isdigit():
            continue
        pid = int(pid_text)
        if pid == os.getpid():
            continue
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            shutil.rmtree(stage, ignore_errors=True)
        except (PermissionError, OSError):  # alive under another user, or unknown: keep
            continue


def _note_unscaled(inputs: Any) -> None:
    """Images stored as uint8 (0..255) go to the model unscaled: a model trained on [0, 1]
    inputs then sees values 255 times too large (897 digits: accuracy 0.925 -> 0.844, with
    no word). Some models scale inside, so it is a note, not an error."""
    stored = getattr(inputs, "stored_dtype", None)
    if stored is None or stored != np.uint8 or len(inputs.shape) < 3:
        return
    warnings.warn(
        f"--inputs {inputs.path} holds uint8 values (0..255), given to the model as they are "
        "(not scaled); if it was trained on inputs in [0, 1], save them divided by 255 "
        "(np.save(FILE, x / 255)), or capture the image files (a folder is scaled by --scale, "
        "1/255 by default)",
        UserWarning,
        stacklevel=2,
    )


def cmd_capture(args: argparse.Namespace) -> int:
    _model_route(args)  # argument errors before the inputs are read
    if args.batch_size < 1:  # else the adapter's 'batch_size must be >= 1', after the model
        raise LabelwiseError(
            f"--batch-size must be >= 1 (rows per forward pass), got {args.batch_size}"
        )
    # the inputs are checked before the model is loaded (quick errors first), but what opening
    # them warns (e.g. id-like columns) is held until the model has loaded (see _capture)
    with warnings.catch_warnings(record=True) as notes:
        warnings.simplefilter("always")
        inputs = open_inputs(args)
        _note_unscaled(inputs)
    classes = None if args.classes is None else read_classes(args.classes)
    out: Path = args.out
    if out.exists() and not out.is_dir():
        raise LabelwiseError(f"--out: {out} exists and is not a directory")
    # the folders this run creates (deepest first): removed again if it fails
    held = Workspace(out).holds() if out.is_dir() else None
    if held is not None:
        # its classes.json (and ids.txt) would be replaced or removed by the capture's
        raise LabelwiseError(
            f"--out {out} holds a {held}; a capture needs its own directory (its classes.json "
            "and ids.txt would replace the " + held + "'s): give another --out"
        )
    if out.is_dir() and not args.force:
        _check_not_in_use(out)
    created = new_folders(out)
    out.mkdir(parents=True, exist_ok=True)
    # the capture is written into a staging directory inside --out and moved into place only
    # when every check passed: a failed run leaves an earlier capture in --out as it was
    _remove_dead_stages(out)
    stage = Path(tempfile.mkdtemp(prefix=f".capture-{os.getpid()}-", dir=out))
    replacing = done = False
    try:
        try:
            cap, about = _capture(args, inputs, stage, notes)
        except LabelwiseError as exc:
            raise LabelwiseError(f"{exc}{_pile_hint(inputs, str(exc))}") from exc
        n_out = int(cap.outputs.shape[1])
        if classes is not None and cap.head == "softmax" and len(classes) != n_out:
            if n_out == 2 and len(classes) == 1:
                raise LabelwiseError(
                    f"--classes: {args.classes} names 1 class, but the model is a binary "
                    "classifier (one logit per row, or two scores): name both classes, class 0 "
                    "(the negative) then class 1"
                )
            raise LabelwiseError(
                f"--classes: {args.classes} names {len(classes)} classes, the model outputs {n_out}"
            )
        written = ["activations.npy"]
        written += ["probabilities.npy"] if cap.head == "softmax" else ["outputs.npy"]
        written += ["predictions.npy"]
        if classes is None and cap.classes is not None:
            classes = list(cap.classes)
        written += write_pile_files(stage, inputs, classes)
        write_json(
            stage / CAPTURE,
            {
                **about,
                "inputs": str(args.inputs.resolve()),
                "layer": cap.layer,
                "head": cap.head,
                "rows": int(cap.activations.shape[0]),
                "neurons": int(cap.activations.shape[1]),
                "outputs": int(cap.outputs.shape[1]),
                "pile": inputs.describe(),
            },
        )
        # capture.json last: until it is replaced, the directory does not claim the new arrays
        replacing = True
        (out / CAPTURE).unlink(missing_ok=True)
        for name in CAPTURE_FILES:
            if name not in written and name != CAPTURE:
                (out / name).unlink(missing_ok=True)
        for name in [*written, CAPTURE]:
            os.replace(stage / name, out / name)
        done = True
    except KeyboardInterrupt:
        if replacing:
            raise
        print(f"labelwise: interrupted; {out} left unchanged", file=sys.stderr)
        return 130
    finally:
        shutil.rmtree(stage, ignore_errors=True)
        if not done:
            remove_empty(created)
    print(
        f"captured {cap.activations.shape[0]} row{'' if cap.activations.shape[0] == 1 else 's'} "
        f"({about['model_kind']}): layer {cap.layer}, "
        f"{cap.activations.shape[1]} neurons"
    )
    print(f"  wrote {', '.join(written)} and capture.json to {out}")
    return 0
