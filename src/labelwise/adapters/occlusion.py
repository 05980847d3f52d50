"""Occlusion sensitivity heatmaps of a PyTorch model with captum (Cheng et al. 2018, II-F step 2).

The metrics on the heatmaps (interpretation precision, occlusion sensitivity, their sweep over
the threshold) are NumPy and live in :mod:`labelwise.dependability.interpretation`, which also
describes the window grid. torch and captum are imported lazily inside the functions.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import numpy as np

from .._deps import require
from .._validation import check_finite_array, check_int
from ..dependability.interpretation import (
    _DEFAULT_STRIDE,
    _DEFAULT_WINDOW,
    OcclusionHeatmaps,
    _check_geometry,
    _check_rho,
    _grid,
    _unpack_calls,
    _verify_order,
)
from ..exceptions import LabelwiseError

if TYPE_CHECKING:
    import torch

__all__ = ["occlusion_heatmaps"]


def _require_captum() -> Any:
    """``captum.attr`` (and torch), or :class:`MissingDependencyError`."""
    require("torch", "occlusion heatmaps")
    return require("captum.attr", "occlusion heatmaps")


def occlusion_heatmaps(
    model: torch.nn.Module,
    images: Any,
    targets: Any = None,
    *,
    window: int | tuple[int, int] = _DEFAULT_WINDOW,
    stride: int | tuple[int, int] = _DEFAULT_STRIDE,
    baseline: float = 0.0,
    score_fn: Callable[[Any, Any], torch.Tensor] | None = None,
    batch_size: int = 64,
) -> OcclusionHeatmaps:
    """Occlusion sensitivity heatmaps (II-F step 2) with ``captum.attr.Occlusion``.

    Parameters
    ----------
    model:
        A PyTorch module; run in eval mode (its mode is restored afterwards) without gradients,
        on the device of its parameters.
    images:
        (N, C, H, W) or (N, H, W) tensor or array. The window covers all channels.
    targets:
        Classifiers (no ``score_fn``): (N,) class indices, or None for the class the model predicts
        on the unoccluded image (the paper's "original class"). The score is the probability of that
        class (softmax of the logits; outputs that already are probabilities, e.g. from a final
        softmax layer, are used as they are). With ``score_fn``: anything indexable per image (e.g.
        a list of ground-truth boxes and classes), passed on in slices, or None.
    window, stride:
        Occlusion window ``(wh, ww)`` and its step ``(sh, sw)``; ints mean square. The grid of
        positions is described in the module docstring.
    baseline:
        The value the occluded pixels are set to.
    score_fn:
        For detectors or other outputs: ``score_fn(model_output, targets_batch)`` returns a
        (B,) tensor, the score of each of the B images of the batch -- e.g. the maximum
        probability of the ground-truth class over the boxes whose IoU with the ground-truth
        box is significant (the paper's rule for object detection). ``targets_batch`` is
        ``targets[start:stop]`` (None when ``targets`` is None).
    batch_size:
        Images per captum call (each call runs ``nH * nW + 1`` forward passes).
    """
    attr_mod = _require_captum()
    import torch

    if not isinstance(model, torch.nn.Module):
        raise LabelwiseError(f"model must be a torch.nn.Module, got {type(model).__name__}")
    x_all = _images_tensor(images)
    n = int(x_all.shape[0])
    image_shape = (int(x_all.shape[-2]), int(x_all.shape[-1]))
    win, st = _check_geometry(image_shape, window, stride)
    base_value = _check_rho(baseline, "baseline")
    batch_size = check_int(batch_size, "batch_size", minimum=1)
    if score_fn is not None and not callable(score_fn):
        raise LabelwiseError(f"score_fn must be callable, got {type(score_fn).__name__}")
    if targets is not None:
        try:
            n_targets = len(targets)
        except TypeError:
            raise LabelwiseError("targets must have one entry per image") from None
        if n_targets != n:
            raise LabelwiseError(f"targets must have one entry per image ({n}), got {n_targets}")
    params = list(model.parameters())
    device = params[0].device if params else torch.device("cpu")
    grid = _grid(image_shape, win, st)
    sliding = win if x_all.dim() == 3 else (int(x_all.shape[1]), *win)
    strides = st if x_all.dim() == 3 else (1, *st)

    heat = np.empty((n, *grid), dtype=np.float64)
    base = np.empty(n, dtype=np.float64)
    attributions = np.empty(tuple(x_all.shape), dtype=np.float32)
    used_targets = None if score_fn is not None else np.empty(n, dtype=np.int64)
    was_training = model.training
    model.eval()
    try:
        with torch.no_grad():
            for start in range(0, n, batch_size):
                stop = min(n, start + batch_size)
                xb = x_all[start:stop].to(device)
                scorer, tb = _scorer(model, xb, targets, start, stop, score_fn)
                if used_targets is not None:
                    used_targets[start:stop] = tb
                calls, attr = _occlude_batch(attr_mod, scorer, xb, sliding, strides, base_value)
                b_heat, b_base = _unpack_calls(calls, stop - start, grid)
                attr_np = attr.detach().to("cpu", torch.float32).numpy()
                _verify_order(attr_np, b_heat, b_base, image_shape, win, st)
                heat[start:stop] = b_heat
                base[start:stop] = b_base
                attributions[start:stop] = attr_np
    finally:
        model.train(was_training)
    return OcclusionHeatmaps(
        heatmaps=heat,
        base_scores=base,
        attributions=attributions,
        targets=used_targets,
        window=win,
        stride=st,
        baseline=base_value,
        image_shape=image_shape,
    )


def _images_tensor(images: Any) -> torch.Tensor:
    import torch

    if isinstance(images, torch.Tensor):
        x = images.detach()
        if x.is_complex() or x.dtype == torch.bool:
            raise LabelwiseError(f"images must hold real numbers, got dtype {x.dtype}")
        x = x.to(torch.float32)
    else:
        arr = check_finite_array(images, "images", ndim=(3, 4))
        x = torch.from_numpy(np.array(arr, dtype=np.float32, copy=True))
    if x.dim() not in (3, 4):
        raise LabelwiseError(f"images must be (N, C, H, W) or (N, H, W), got {tuple(x.shape)}")
    if x.shape[0] == 0:
        raise LabelwiseError("images must hold at least one image, got 0")
    if not bool(torch.isfinite(x).all()):
        raise LabelwiseError("images must be finite, found NaN or infinity")
    return x


def _scorer(
    model: torch.nn.Module,
    xb: torch.Tensor,
    targets: Any,
    start: int,
    stop: int,
    score_fn: Callable[[Any, Any], torch.Tensor] | None,
) -> tuple[Callable[[torch.Tensor], torch.Tensor], Any]:
    """The batch's score function ``x -> (B,)`` and the targets it scores."""
    import torch

    from .torch import class_probabilities

    rows = stop - start
    if score_fn is not None:
        tb = None if targets is None else targets[start:stop]

        def custom(x: torch.Tensor) -> torch.Tensor:
            s = score_fn(model(x), tb)
            if not isinstance(s, torch.Tensor) or tuple(s.shape) != (rows,):
                shape = tuple(s.shape) if isinstance(s, torch.Tensor) else type(s).__name__
                raise LabelwiseError(
                    f"score_fn must return a tensor of shape ({rows},), one score per image, "
                    f"got {shape}"
                )
            return s

        return custom, tb

    def logits(x: torch.Tensor) -> torch.Tensor:
        out = model(x)
        if not isinstance(out, torch.Tensor) or out.dim() != 2 or out.shape[1] < 2:
            shape = tuple(out.shape) if isinstance(out, torch.Tensor) else type(out).__name__
            raise LabelwiseError(
                f"the model must return (rows, classes) scores with at least 2 classes, got "
                f"{shape}; pass score_fn for other outputs (e.g. detections)"
            )
        return out

    if targets is None:
        tb_np = logits(xb).argmax(dim=1).to("cpu").numpy().astype(np.int64)
    else:
        tb_np = np.asarray(
            targets[start:stop].to("cpu").numpy()
            if isinstance(targets, torch.Tensor)
            else targets[start:stop]
        )
        if tb_np.dtype.kind not in "iu" or tb_np.ndim != 1:
            raise LabelwiseError(
                f"targets must be (N,) integer class indices, got {tb_np.dtype} of shape "
                f"{tb_np.shape}"
            )
        tb_np = tb_np.astype(np.int64)
    index = torch.as_tensor(tb_np, device=xb.device)

    def probability(x: torch.Tensor) -> torch.Tensor:
        out = logits(x)
        if int(index.max()) >= out.shape[1] or int(index.min()) < 0:
            raise LabelwiseError(
                f"targets must be class indices in [0, {out.shape[1] - 1}], got "
                f"[{int(index.min())}, {int(index.max())}]"
            )
        return class_probabilities(out).gather(1, index[:, None])[:, 0]

    return probability, tb_np


def _occlude_batch(
    attr_mod: Any,
    scorer: Callable[[torch.Tensor], torch.Tensor],
    xb: torch.Tensor,
    sliding: tuple[int, ...],
    strides: tuple[int, ...],
    baseline: float,
) -> tuple[list[torch.Tensor], torch.Tensor]:
    """Captum's occlusion of one batch: every forward call's scores, and the attribution."""
    import torch

    calls: list[torch.Tensor] = []

    def forward(x: torch.Tensor) -> torch.Tensor:
        s = scorer(x)
        calls.append(s.detach().to("cpu", torch.float64))
        return s

    attr = attr_mod.Occlusion(forward).attribute(
        xb,
        sliding_window_shapes=sliding,
        strides=strides,
        baselines=baseline,
        target=None,
        perturbations_per_eval=1,
    )
    return calls, attr
