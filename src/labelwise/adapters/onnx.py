"""ONNX Runtime adapter: run an ``.onnx`` model once and capture a hidden tensor and its outputs.

The hidden tensor is taken by adding it to the graph's outputs: the model is loaded with
``onnx``, its shapes are inferred, the tensor is appended to ``graph.output`` and the changed
model runs in an ``onnxruntime.InferenceSession`` on the CPU. Nothing else about the model
changes, so the outputs are those of the original graph.

onnx and onnxruntime are imported lazily inside the functions (``pip install
'labelwise[onnx]'``); importing this module works without them.

Examples
--------
>>> from labelwise.adapters.onnx import capture
>>> cap = capture("model.onnx", x_operational)  # doctest: +SKIP
>>> cap.layer, cap.activations.shape, cap.classes  # doctest: +SKIP
('/fc1/Relu_output_0', (10000, 84), ('cat', 'dog', ...))
"""

from __future__ import annotations

import difflib
import os
import warnings
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
from numpy.typing import NDArray

from .._deps import require
from .._progress import progress_bar
from .._validation import check_int, did_you_mean
from ..exceptions import LabelwiseError, user_stacklevel
from ._capture import (
    Capture,
    CaptureWriter,
    array_rows,
    check_head,
    check_logits_output,
    head_outputs,
    model_file,
    one_output,
    pair_roles,
    parse_classes,
    single_output_message,
    warn_one_output,
)

__all__ = ["capture", "load_model"]

_HEAD_OPS = ("Gemm", "MatMul")


def _require_onnx() -> tuple[Any, Any]:
    onnx = require("onnx", "the ONNX adapter", extra="onnx")
    ort = require("onnxruntime", "the ONNX adapter", extra="onnx")
    return onnx, ort


def _short(exc: BaseException, limit: int = 240) -> str:
    text = str(exc).strip().splitlines()
    first = text[0] if text else type(exc).__name__
    return first if len(first) <= limit else first[: limit - 3] + "..."


def load_model(path: str | os.PathLike[str]) -> Any:
    """Read an ``.onnx`` file into an ``onnx.ModelProto`` (checked with ``onnx.checker``).

    Raises
    ------
    LabelwiseError
        The file is missing, a directory, or not a valid ONNX model (the message says why).
    MissingDependencyError
        onnx or onnxruntime is not installed.
    """
    onnx, _ = _require_onnx()
    where = model_file(path, "an .onnx file")
    try:
        model = onnx.load(where)
        onnx.checker.check_model(model)
    except Exception as exc:
        raise LabelwiseError(
            f"{where!r} is not a valid ONNX model ({type(exc).__name__}: {_short(exc)}); "
            "export one with torch.onnx.export(model, x, 'model.onnx', dynamo=False, "
            "dynamic_axes={'input': {0: 'batch'}, ...})"
        ) from exc
    if len(model.graph.node) == 0:
        raise LabelwiseError(f"{where!r} is an ONNX model without any operation")
    return model


@dataclass(frozen=True)
class _Graph:
    """What capture needs to know about the graph."""

    input_name: str
    input_dims: tuple[int | str | None, ...]  # None or a str: free (e.g. "batch")
    input_dtype: np.dtype[Any]
    output_name: str
    feature_name: str  # the tensor to capture
    label: str
    feature_is_input: bool


def capture(
    model: str | os.PathLike[str] | Any,
    inputs: Any,
    *,
    layer: str | None = None,
    head: str | None = None,
    batch_size: int = 256,
    progress: bool = True,
    out: str | os.PathLike[str] | None = None,
    logits_output: int | str | None = None,
) -> Capture:
    """Run an ONNX model over ``inputs`` once and capture a hidden tensor and the outputs.

    Parameters
    ----------
    model:
        The path of an ``.onnx`` file, or an ``onnx.ModelProto``. It must have one input (rows
        first) and returns the class scores as its first output (or ``(features, logits)`` as
        its two outputs, like the PyTorch adapter's tuple convention).
    inputs:
        A NumPy array, a memory map, or any array-like with ``shape`` (or ``len``) and slicing
        that returns an array (read one batch at a time), cast to the model input's dtype.
    layer:
        ``None`` (default): the *input* of the last ``Gemm``/``MatMul`` that feeds the output,
        i.e. the last hidden representation before the classification head. A tensor name of
        the graph (e.g. ``"/fc1/Relu_output_0"``) captures that tensor. ``Capture.layer`` is
        the captured tensor's name.
    head:
        ``"softmax"`` (outputs that are already probabilities are kept as they are) or
        ``"raw"`` (outputs unchanged, e.g. regression), as in the PyTorch adapter; ``None``
        (default): ``"softmax"``, with a ``UserWarning`` when the model has one output per row
        (a binary classifier's logit, or a regression's output).
    batch_size:
        Rows per run (>= 1). A model exported with a fixed batch size runs that many rows at a
        time (the last batch padded with zeros, the padding dropped).
    progress:
        Show a progress bar over the batches (off off a terminal or with
        ``LABELWISE_NO_PROGRESS=1``).
    out:
        ``None`` (arrays in memory) or a directory written batch by batch, as for
        :func:`labelwise.adapters.torch.capture`.
    logits_output:
        For a model with two outputs: which one (0 or 1) holds the class scores, as for
        :func:`labelwise.adapters.torch.capture` (``None``: decided by the outputs' shapes and
        types; a 1-D or integer output is a predicted label and is ignored). For a model with
        three or more outputs: the index or the name of the one holding the class scores
        (``None``: the output named ``"logits"``, else the first, with a ``UserWarning``
        naming them). A name (``"logits"``) may be given for two outputs too.

    Returns
    -------
    Capture
        float32 ``activations`` ``(N, m)`` and ``outputs`` ``(N, C)``; ``classes`` from the
        model's metadata entry ``classes`` (a JSON list or comma-separated names), if any.

    Raises
    ------
    LabelwiseError
        Invalid arguments, a corrupt file, a model with several inputs, an unknown tensor name
        (the message lists candidates), inputs of the wrong shape (the message gives both
        shapes), or non-finite results.
    MissingDependencyError
        onnx or onnxruntime is not installed.
    """
    onnx, ort = _require_onnx()
    head, inferred = check_head(head)
    batch_size = check_int(batch_size, "batch_size", minimum=1)
    if layer is not None and (not isinstance(layer, str) or not layer):
        raise LabelwiseError(f"layer must be None or a non-empty tensor name, got {layer!r}")
    if not isinstance(progress, bool | np.bool_):
        raise LabelwiseError(f"progress must be True or False, got {progress!r}")
    if isinstance(model, str | os.PathLike):
        proto = load_model(model)
    elif isinstance(model, onnx.ModelProto):
        proto = onnx.ModelProto()
        proto.CopyFrom(model)
    else:
        raise LabelwiseError(
            f"model must be the path of an .onnx file or an onnx.ModelProto, got "
            f"{type(model).__name__}"
        )
    classes = parse_classes(
        {p.key: p.value for p in proto.metadata_props}.get("classes"),
        "the ONNX metadata entry 'classes'",
    )
    logits_output = check_logits_output(logits_output)
    graph = _prepare(proto, layer, logits_output)
    session = _session(ort, proto)

    n_rows, get = array_rows(inputs)
    fixed = graph.input_dims[0] if graph.input_dims else None
    step = fixed if isinstance(fixed, int) and fixed > 0 else batch_size
    fetch = [graph.output_name]
    if not graph.feature_is_input and graph.feature_name != graph.output_name:
        fetch.append(graph.feature_name)
    single = False
    with CaptureWriter(n_rows, head=head, out=out) as writer:
        starts = range(0, n_rows, step)
        bar = progress_bar(len(starts), desc="labelwise capture", unit="batch", enabled=progress)
        with bar:
            for start, x, rows in _padded(get, n_rows, step, graph, fixed == step):
                results = _run(session, fetch, graph, x)
                outs = results[0][:rows]
                single = one_output(outs)
                feats = x[:rows] if graph.feature_is_input else results[-1][:rows]
                writer.write(
                    start,
                    _rows_first(feats, rows, f"the captured tensor {graph.label!r}"),
                    head_outputs(outs, rows, head),
                    graph.label,
                )
                bar.update(1)
        activations, outputs = writer.finish(graph.label)
    if inferred and single:
        warn_one_output(probability=bool(writer.binary_probability))
    if classes is not None and len(classes) != outputs.shape[1]:
        raise LabelwiseError(
            f"the ONNX metadata entry 'classes' names {len(classes)} classes but the model "
            f"has {outputs.shape[1]} outputs; fix the metadata"
        )
    return Capture(
        activations=activations,
        outputs=outputs,
        layer=graph.label,
        head=head,
        classes=classes,
        probabilities_given=writer.probabilities,
        binary_probability=writer.binary_probability,
    )


# --------------------------------------------------------------------------- the graph


def _prepare(proto: Any, layer: str | None, logits_output: int | str | None = None) -> _Graph:
    """Find the input, the output and the tensor to capture; add it to the graph outputs."""
    import onnx

    g = proto.graph
    initialisers = {t.name for t in g.initializer}
    inputs = [i for i in g.input if i.name not in initialisers]
    if len(inputs) != 1:
        names = ", ".join(repr(i.name) for i in inputs)
        raise LabelwiseError(
            f"the ONNX model has {len(inputs)} inputs ({names}); capture needs a model with "
            "exactly one input (rows first)"
        )
    if len(g.output) == 0:
        raise LabelwiseError("the ONNX model has no outputs")
    the_input = inputs[0]
    tensor_type = the_input.type.tensor_type
    try:
        input_dtype = np.dtype(onnx.helper.tensor_dtype_to_np_dtype(tensor_type.elem_type))
    except Exception:
        raise LabelwiseError(
            f"the ONNX model's input {the_input.name!r} is not a tensor of numbers"
        ) from None
    dims: tuple[int | str | None, ...] = tuple(
        d.dim_value if d.HasField("dim_value") else (d.dim_param or None)
        for d in tensor_type.shape.dim
    )
    # one output: the class scores; two: (features, logits) by their shapes and types;
    # more: the one named by logits_output (an index or a name), else 'logits' or the first
    pair_features: str | None = None
    output_name = g.output[0].name
    out_names = [o.name for o in g.output]
    listed = ", ".join(repr(n) for n in out_names)
    if isinstance(logits_output, str):
        if logits_output not in out_names:
            raise LabelwiseError(
                f"logits_output={logits_output!r} (CLI: --logits-output) is not an output of "
                f"the ONNX model{did_you_mean(logits_output, out_names)}; its outputs: {listed}"
            )
        logits_output = out_names.index(logits_output)
    if logits_output is not None and len(g.output) == 1:
        raise LabelwiseError(single_output_message(logits_output, f"one output ({listed})"))
    if logits_output is not None and logits_output >= len(g.output):
        raise LabelwiseError(
            f"logits_output={logits_output} (CLI: --logits-output) is not an output of the ONNX "
            f"model, which has {len(out_names)} ({listed}): name one by index "
            f"(0..{len(out_names) - 1}) or by name"
        )
    if len(g.output) > 2:
        if logits_output is not None:
            output_name = out_names[logits_output]
        else:
            output_name = "logits" if "logits" in out_names else out_names[0]
            warnings.warn(
                f"the ONNX model has {len(out_names)} outputs ({listed}): taking {output_name!r} "
                "as the class scores; name another with logits_output='NAME' (CLI: "
                "--logits-output NAME)",
                UserWarning,
                stacklevel=user_stacklevel(),
            )
    elif len(g.output) == 2:
        shapes = tuple(_static_shape(o) for o in g.output)
        labels = tuple(_is_label_output(o) for o in g.output)
        feats, logits, warning = pair_roles(
            (shapes[0], shapes[1]), (labels[0], labels[1]), logits_output
        )
        output_name = g.output[logits].name
        pair_features = None if feats is None else g.output[feats].name
        if warning and layer is None and feats is not None:
            warnings.warn(warning, UserWarning, stacklevel=user_stacklevel())

    try:
        inferred = onnx.shape_inference.infer_shapes(proto)
        known = {v.name: v for v in [*inferred.graph.value_info, *inferred.graph.output]}
    except Exception:
        known = {}
    producers = {out: node for node in g.node for out in node.output}
    tensors = [out for node in g.node for out in node.output if out]

    if layer is None and pair_features is not None:
        features = pair_features
        return _Graph(the_input.name, dims, input_dtype, output_name, features, features, False)
    if layer is None:
        feature = _default_tensor(g, producers, initialisers, output_name)
    else:
        if layer not in producers and layer != the_input.name:
            raise LabelwiseError(_unknown_tensor_message(layer, tensors))
        feature = layer
    is_input = feature == the_input.name
    if not is_input and feature not in {o.name for o in g.output}:
        info = known.get(feature)
        if info is None or not info.type.tensor_type.elem_type:
            info = onnx.helper.make_tensor_value_info(feature, onnx.TensorProto.FLOAT, None)
        g.output.append(info)
    return _Graph(the_input.name, dims, input_dtype, output_name, feature, feature, is_input)


def _default_tensor(
    g: Any, producers: dict[str, Any], initialisers: set[str], output_name: str
) -> str:
    """The data input of the last Gemm/MatMul from which the class scores are computed."""
    feeding: set[int] = set()
    stack = [output_name]
    seen: set[str] = set()
    while stack:
        name = stack.pop()
        if name in seen:
            continue
        seen.add(name)
        node = producers.get(name)
        if node is None:
            continue
        feeding.add(id(node))
        stack.extend(node.input)
    constants = initialisers | {
        out for node in g.node if node.op_type == "Constant" for out in node.output
    }
    heads = [n for n in g.node if n.op_type in _HEAD_OPS and id(n) in feeding]
    for node in reversed(heads):
        data = [name for name in node.input[:2] if name and name not in constants]
        if data:
            return str(data[0])
    raise LabelwiseError(
        "no Gemm or MatMul feeds the ONNX model's output, so there is no default layer to "
        "capture: pass layer='<tensor name>' (CLI: --layer)"
    )


def _static_shape(value_info: Any) -> tuple[Any, ...]:
    """The declared shape of a graph output (unknown sizes as their names or ``"?"``)."""
    dims = value_info.type.tensor_type.shape.dim
    return tuple(d.dim_value if d.HasField("dim_value") else (d.dim_param or "?") for d in dims)


def _is_label_output(value_info: Any) -> bool:
    """A graph output holding labels: integer/bool/string elements, or rank 1."""
    import onnx

    tensor_type = value_info.type.tensor_type
    floats = {
        onnx.TensorProto.FLOAT,
        onnx.TensorProto.DOUBLE,
        onnx.TensorProto.FLOAT16,
        onnx.TensorProto.BFLOAT16,
    }
    if not value_info.type.HasField("tensor_type"):
        return False  # e.g. a sequence of maps (skl2onnx ZipMap): not a label
    if tensor_type.elem_type not in floats:
        return True
    return tensor_type.HasField("shape") and len(tensor_type.shape.dim) == 1


def _unknown_tensor_message(layer: str, names: list[str], shown: int = 8) -> str:
    holding = [n for n in names if layer.lower() in n.lower()][:3]
    close = holding + [
        n for n in difflib.get_close_matches(layer, names, n=3, cutoff=0.4) if n not in holding
    ]
    tail = [n for n in reversed(names) if n not in close][: max(0, shown - len(close))]
    picks = close + tail
    more = f", ... ({len(names)} tensors in all)" if len(names) > len(picks) else ""
    return (
        f"layer {layer!r} is not a tensor of the ONNX graph; tensor names include "
        f"{', '.join(repr(n) for n in picks)}{more} (the outputs of the graph's nodes; "
        "see them with netron or onnx.load(path).graph.node)"
    )


def _session(ort: Any, proto: Any) -> Any:
    options = ort.SessionOptions()
    options.log_severity_level = 3  # errors only: no warnings about unused initialisers
    try:
        return ort.InferenceSession(
            proto.SerializeToString(), options, providers=["CPUExecutionProvider"]
        )
    except Exception as exc:
        raise LabelwiseError(
            f"onnxruntime cannot run this model ({type(exc).__name__}: {_short(exc)})"
        ) from exc


# --------------------------------------------------------------------------- running


def _shape_text(dims: tuple[int | str | None, ...]) -> str:
    shown = [str(d) if isinstance(d, int) else (d or "?") for d in dims]
    return "(" + ", ".join(shown) + ("," if len(shown) == 1 else "") + ")"


def _padded(
    get: Any, n_rows: int, step: int, graph: _Graph, pad: bool
) -> Iterator[tuple[int, NDArray[Any], int]]:
    """``(start, batch, real rows)``; with a fixed batch size the last batch is zero-padded."""
    for start in range(0, n_rows, step):
        stop = min(start + step, n_rows)
        x = np.ascontiguousarray(get(start, stop), dtype=graph.input_dtype)
        _check_shape(x, graph)
        rows = stop - start
        if pad and rows < step:
            filler = np.zeros((step - rows, *x.shape[1:]), dtype=x.dtype)
            x = np.concatenate([x, filler])
        yield start, x, rows


def _check_shape(x: NDArray[Any], graph: _Graph) -> None:
    dims = graph.input_dims
    if not dims:
        return
    wrong = len(dims) != x.ndim or any(
        isinstance(d, int) and d > 0 and d != s for d, s in zip(dims[1:], x.shape[1:], strict=False)
    )
    if wrong:
        raise LabelwiseError(
            f"the ONNX model expects input {graph.input_name!r} of shape "
            f"{_shape_text(dims)} (rows first), got inputs of shape {x.shape}; "
            f"{_reshape_advice(dims, x.shape)}"
        )


def _fits(dims: Sequence[Any], shape: tuple[int, ...]) -> bool:
    """Whether ``shape`` fits the graph's input ``dims`` past the rows (symbolic dims fit)."""
    return len(dims) == len(shape) and all(
        not (isinstance(d, int) and d > 0) or d == s
        for d, s in zip(dims[1:], shape[1:], strict=True)
    )


def _reshape_advice(dims: Sequence[Any], shape: tuple[int, ...]) -> str:
    """How to give rows the model takes: when only the channel axis is in the other place
    (images read channels first for a model taking (rows, H, W, C), or the reverse), which
    way to move it; else the general advice. Before, a channels-last model given (rows, 3, 8,
    8) images was told to give them 'as (rows, channels, height, width)': what it was given."""
    if len(shape) >= 4 and _fits(dims, (shape[0], *shape[2:], shape[1])):
        return (
            "the model takes channels last: np.save(FILE, np.moveaxis(x, 1, -1)) "
            "(a folder of images: --layout hwc)"
        )
    if len(shape) >= 4 and _fits(dims, (shape[0], shape[-1], *shape[1:-1])):
        return (
            "the model takes channels first: np.save(FILE, np.moveaxis(x, -1, 1)) "
            "(a folder of images: --layout chw)"
        )
    return "reshape the inputs (e.g. images as (rows, channels, height, width))"


def _run(session: Any, fetch: list[str], graph: _Graph, x: NDArray[Any]) -> list[Any]:
    try:
        return list(session.run(fetch, {graph.input_name: x}))
    except Exception as exc:
        raise LabelwiseError(
            f"the ONNX model failed on inputs of shape {x.shape} (dtype {x.dtype}; it expects "
            f"{_shape_text(graph.input_dims)}): {type(exc).__name__}: {_short(exc)}"
        ) from exc


def _rows_first(values: Any, rows: int, what: str) -> NDArray[Any]:
    arr = np.asarray(values)
    if arr.ndim == 0 or arr.shape[0] != rows:
        raise LabelwiseError(
            f"{what} has shape {arr.shape}, expected {rows} rows first (one per input row); "
            "pass another layer"
        )
    return arr.reshape(rows, -1)
