"""Capture a hidden tensor of a model whose forward is a graph: TorchScript and ``torch.export``.

Hooks do not fire inside these models (the whole forward is one compiled graph), so the hidden
value is exposed in the graph itself:

* TorchScript: the ``forward`` graph is copied and inlined (every submodule call becomes its
  operations, each tagged with the module it came from), the wanted value is appended to the
  graph's return as a tuple, and the graph is run as a function of the original module.
* ``torch.export`` (``.pt2``): the unlifted ``GraphModule`` is run node by node
  (``torch.fx.Interpreter``) and the wanted node's value is kept; nodes carry the module path in
  ``meta["nn_module_stack"]``.

The wanted value is the input of the last ``linear`` operation that feeds the output (default),
or the one tensor a named module hands on to the rest of the graph (``layer=``).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable
from typing import TYPE_CHECKING, Any

from ..exceptions import LabelwiseError

if TYPE_CHECKING:
    import torch

__all__ = ["GraphTap", "is_exported", "tap_exported", "tap_scripted"]

_SCRIPT_LINEAR = ("aten::linear",)
_CLASS_IN_PATH = re.compile(r"\([^()]*\)")


class GraphTap:
    """``tap(x) -> (model output, hidden tensor)``; ``label`` names the hidden tensor."""

    def __init__(self, run: Callable[[Any], tuple[Any, Any]], label: str) -> None:
        self._run = run
        self.label = label

    def __call__(self, x: torch.Tensor) -> tuple[Any, Any]:
        return self._run(x)


def is_exported(model: Any) -> bool:
    """True for the ``GraphModule`` of a ``torch.export`` program (nodes know their module)."""
    import torch

    if not isinstance(model, torch.fx.GraphModule):
        return False
    return any("nn_module_stack" in node.meta for node in model.graph.nodes)


def _in_scope(path: str, layer: str) -> bool:
    return path == layer or path.startswith(layer + ".")


def _no_linear(kind: str) -> LabelwiseError:
    return LabelwiseError(
        f"no linear layer feeds the output of this {kind} graph, so there is no default layer "
        "to capture: pass layer='<module name>' (a name from model.named_modules())"
    )


def _no_value(layer: str, kind: str, found: int) -> LabelwiseError:
    if found == 0:
        why = (
            "runs no operation of its own in the graph (e.g. an Identity, or a Dropout "
            "removed when the model was saved)"
        )
    else:
        why = (
            f"hands {found} different tensors to the rest of the graph (is it called more "
            "than once?)"
        )
    return LabelwiseError(
        f"cannot capture layer {layer!r} of this {kind} model: it {why}; pass the module "
        "before or after it as layer="
    )


def _ancestors(start: Iterable[Any], parents: Callable[[Any], Iterable[Any]]) -> set[Any]:
    seen: set[Any] = set()
    stack = list(start)
    while stack:
        node = stack.pop()
        if node in seen:
            continue
        seen.add(node)
        stack.extend(parents(node))
    return seen


def _repeats(kinds: list[str]) -> int:
    """How many times the operations of a module repeat back to back, e.g. 2 for
    ``[linear, linear]``: inlining a module that is called twice repeats its body, and then
    its output is ambiguous (the calls cannot be told apart in the inlined graph)."""
    n = len(kinds)
    for size in range(1, n // 2 + 1):
        if n % size == 0 and kinds == kinds[:size] * (n // size):
            return n // size
    return 1


# --------------------------------------------------------------------------- TorchScript


def _script_path(node: Any) -> str:
    """``'body(Sequential).0(Linear)'`` -> ``'body.0'``."""
    try:
        hierarchy = node.getModuleHierarchy()
    except RuntimeError:
        return ""
    return str(_CLASS_IN_PATH.sub("", hierarchy or ""))


def _linear_in_blocks(nodes: list[Any]) -> bool:
    """Whether a linear operation sits in a sub-block (if / loop) of these nodes."""
    stack = [inner for node in nodes for block in node.blocks() for inner in block.nodes()]
    while stack:
        node = stack.pop()
        if node.kind() in _SCRIPT_LINEAR:
            return True
        stack.extend(inner for block in node.blocks() for inner in block.nodes())
    return False


def tap_scripted(model: torch.jit.ScriptModule, layer: str | None) -> GraphTap:
    """A tap on a TorchScript module's ``forward`` graph (see the module docstring)."""
    import torch

    try:
        forward: Any = model.forward
        graph = forward.graph.copy()
        torch._C._jit_pass_inline(graph)
    except Exception as exc:
        raise LabelwiseError(
            f"cannot read the forward() graph of this TorchScript model ({exc}); save it "
            "with forward() returning a tuple (features, logits)"
        ) from exc
    nodes = list(graph.nodes())
    ret = graph.return_node()
    if layer is None:
        producers = {value.node() for value in ret.inputs()}

        def parents(node: Any) -> list[Any]:
            return [value.node() for value in node.inputs()]

        feeding = _ancestors(producers, parents)
        linears = [n for n in nodes if n.kind() in _SCRIPT_LINEAR and n in feeding]
        after = nodes[nodes.index(linears[-1]) + 1 :] if linears else nodes
        if _linear_in_blocks(after):
            raise LabelwiseError(
                "the last linear layer of this TorchScript model runs inside control flow "
                "(an if or a loop in forward()), where its input cannot be exposed: pass "
                "layer='<module name>' of a module outside it, or save the model with "
                "forward() returning a tuple (features, logits)"
            )
        if not linears:
            raise _no_linear("TorchScript")
        chosen = linears[-1]
        value = chosen.inputsAt(0)
        path = _script_path(chosen)
        label = f"{path or '<model>'} (input)"
    else:
        scope = {n for n in nodes if _in_scope(_script_path(n), layer)}
        candidates = []
        for node in nodes:
            if node not in scope:
                continue
            for out in node.outputs():
                if not isinstance(out.type(), torch._C.TensorType):
                    continue
                if any(use.user not in scope for use in out.uses()):
                    candidates.append(out)
        kinds = [n.kind() for n in nodes if n in scope and not n.kind().startswith("prim::")]
        calls = _repeats(kinds)
        if calls > 1:
            raise _no_value(layer, "TorchScript", calls)
        if len(candidates) != 1:
            raise _no_value(layer, "TorchScript", len(candidates))
        value = candidates[0]
        label = f"{layer} (output)"

    old = ret.inputsAt(0)
    pair = graph.create("prim::TupleConstruct", [old, value])
    pair.output().setType(torch._C.TupleType([old.type(), value.type()]))
    pair.insertBefore(ret)
    graph.eraseOutput(0)
    graph.registerOutput(pair.output())
    try:
        function = torch._C._create_function_from_graph("labelwise_capture_forward", graph)
    except Exception as exc:
        raise LabelwiseError(
            f"cannot expose layer {label!r} of this TorchScript model ({exc}); save it with "
            "forward() returning a tuple (features, logits)"
        ) from exc
    module = model._c

    def run(x: torch.Tensor) -> tuple[Any, Any]:
        out, hidden = function(module, x)
        return out, hidden

    return GraphTap(run, label)


# --------------------------------------------------------------------------- torch.export


def _fx_path(node: Any) -> str:
    stack = node.meta.get("nn_module_stack") or {}
    if not stack:
        return ""
    last = list(stack.values())[-1]
    return str(last[0]) if isinstance(last, tuple | list) and last else ""


def tap_exported(model: torch.fx.GraphModule, layer: str | None) -> GraphTap:
    """A tap on the ``GraphModule`` of a ``torch.export`` program (see the module docstring)."""
    import torch

    nodes = list(model.graph.nodes)
    calls = [n for n in nodes if n.op == "call_function"]
    if layer is None:
        outputs = [n for n in nodes if n.op == "output"]
        feeding = _ancestors(outputs, lambda n: n.all_input_nodes)
        linear = torch.ops.aten.linear.default
        linears = [n for n in calls if n.target == linear and n in feeding]
        if not linears:
            raise _no_linear("torch.export")
        chosen = linears[-1]
        target = chosen.args[0]
        if not isinstance(target, torch.fx.Node):
            raise _no_linear("torch.export")
        path = _fx_path(chosen)
        label = f"{path or '<model>'} (input)"
    else:
        scope = {n for n in calls if _in_scope(_fx_path(n), layer)}
        candidates = [n for n in calls if n in scope and any(u not in scope for u in n.users)]
        if len(candidates) != 1:
            raise _no_value(layer, "torch.export", len(candidates))
        target = candidates[0]
        label = f"{layer} (output)"

    class _Tap(torch.fx.Interpreter):
        def run_node(self, n: torch.fx.Node) -> Any:
            value = super().run_node(n)
            if n is target:
                self.kept = value
            return value

    def run(x: torch.Tensor) -> tuple[Any, Any]:
        interpreter = _Tap(model)
        out = interpreter.run(x)
        if isinstance(out, tuple | list) and len(out) == 1:
            out = out[0]
        return out, interpreter.kept

    return GraphTap(run, label)
