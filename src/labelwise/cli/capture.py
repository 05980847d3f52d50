"""``labelwise capture``: run a PyTorch model over inputs, save activations and probabilities."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

import numpy as np

from .._deps import install_hint
from ..exceptions import LabelwiseError
from ..io import save_array, write_json
from ._piles import CLASSES_HELP, add_pile_arguments, open_inputs, read_classes, write_pile_files


def add_parser(sub: Any) -> None:
    c = sub.add_parser(
        "capture",
        help="run a PyTorch model over inputs and save activations and probabilities",
        description=(
            "One batched pass of a PyTorch model (TorchScript file or pickled nn.Module) over "
            "INPUTS (an array, a table or a folder of images; see below). Writes "
            "OUT/activations.npy (float32, the last hidden layer: the input of the last Linear "
            "layer, or --layer's output), OUT/probabilities.npy "
            "(softmax; or OUT/outputs.npy with --head raw), OUT/predictions.npy, "
            'OUT/ids.txt (one id per row), OUT/capture.json (its "pile" entry: what the '
            "inputs were and how they were read) and, with --classes, OUT/classes.json. "
            f"Needs: {install_hint('torch', extra='torch')}."
        ),
        formatter_class=argparse.ArgumentDefaultsHelpFormatter,
    )
    c.add_argument("--model", type=Path, required=True, help="TorchScript or pickled model file")
    c.add_argument(
        "--inputs",
        type=Path,
        required=True,
        help="the pile: .npy, .npz, .csv, .parquet or a folder of images; first axis = rows",
    )
    c.add_argument("--out", type=Path, required=True, help="output directory")
    c.add_argument("--layer", default=None, help="module name to capture (default: last hidden)")
    c.add_argument("--head", choices=["softmax", "raw"], default="softmax", help="output transform")
    c.add_argument("--batch-size", type=int, default=256, help="rows per forward pass")
    c.add_argument("--classes", type=Path, help=CLASSES_HELP)
    add_pile_arguments(c)
    c.set_defaults(func=cmd_capture)


def cmd_capture(args: argparse.Namespace) -> int:
    from ..adapters.torch import capture, load_model

    inputs = open_inputs(args)
    classes = None if args.classes is None else read_classes(args.classes)
    model = load_model(args.model)
    cap = capture(model, inputs, layer=args.layer, head=args.head, batch_size=args.batch_size)
    if classes is not None and cap.head == "softmax" and len(classes) != cap.outputs.shape[1]:
        raise LabelwiseError(
            f"--classes: {args.classes} names {len(classes)} classes, the model outputs "
            f"{cap.outputs.shape[1]}"
        )
    args.out.mkdir(parents=True, exist_ok=True)
    save_array(args.out / "activations.npy", cap.activations)
    written = ["activations.npy"]
    if cap.head == "softmax":
        save_array(args.out / "probabilities.npy", cap.outputs)
        save_array(args.out / "predictions.npy", cap.outputs.argmax(axis=1).astype(np.int64))
        written += ["probabilities.npy", "predictions.npy"]
    else:
        outputs = cap.outputs[:, 0] if cap.outputs.shape[1] == 1 else cap.outputs
        save_array(args.out / "outputs.npy", outputs)
        save_array(args.out / "predictions.npy", outputs)
        written += ["outputs.npy", "predictions.npy"]
    written += write_pile_files(args.out, inputs, classes)
    write_json(
        args.out / "capture.json",
        {
            "model": str(args.model.resolve()),
            "inputs": str(args.inputs.resolve()),
            "layer": cap.layer,
            "head": cap.head,
            "rows": int(cap.activations.shape[0]),
            "neurons": int(cap.activations.shape[1]),
            "outputs": int(cap.outputs.shape[1]),
            "pile": inputs.describe(),
        },
    )
    print(
        f"captured {cap.activations.shape[0]} rows: layer {cap.layer}, "
        f"{cap.activations.shape[1]} neurons"
    )
    print(f"  wrote {', '.join(written)} and capture.json to {args.out}")
    return 0
