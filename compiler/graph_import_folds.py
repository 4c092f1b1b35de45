"""Gradient idioms of imported GraphDefs, folded into flowjit's SumToShape.

A gradient through a broadcasting op sums the incoming gradient back to an operand's shape.
TensorFlow writes that as `Reshape(Sum(g, BroadcastGradientArgs(sa, sb)[k]), s_k)`: the
reduction axes are a run-time value, so a compiler cannot know them, and such a backward
pass would run op by op.  flowjit's SumToShape(g, s_k) means the same (g summed over the
axes broadcasting added to `s_k`, then shaped as `s_k`) and compiles: its lowering decides
the axes from the sizes the kernel is compiled for (ops/sum_to_shape.py).  Importing
(compiler/graph_import.py) replaces each such Reshape node by a SumToShape node of the
same name; the Sum and BroadcastGradientArgs nodes stay in the graph (fetchable), and a
step that does not fetch them never runs them.

flowjit writes its own SumToShape in that form too, with the four nodes named after it and
the Reshape marked `_flowjit_op: "SumToShape"` (compiler/core/graph_def.py); those helper
nodes are dropped again, so a written and re-read graph has the ops it had.
"""

from __future__ import annotations

from .core.graph_def import _SHAPES_ATTR, EXPANDED_OP_ATTR, NodeDef


def _split(spec: str):
    name, sep, index = spec.rpartition(":")
    return (name, int(index)) if sep and index.isdigit() else (spec, 0)


def _sum_to_shape_match(n, by_name):
    """(gradient input spec, Sum node, BroadcastGradientArgs node) when `n` is the Reshape of
    TensorFlow's broadcast-gradient idiom, else None."""
    data = [i for i in n.input if not i.startswith("^")]
    if n.op != "Reshape" or len(data) != 2:
        return None
    total = by_name.get(_split(data[0])[0])
    if total is None or total.op != "Sum" or _split(data[0])[1] != 0 or len(total.input) != 2:
        return None
    axes_name, k = _split(total.input[1])
    axes = by_name.get(axes_name)
    if axes is None or axes.op != "BroadcastGradientArgs" or k not in (0, 1) \
            or len(axes.input) != 2 or axes.input[k] != data[1]:
        return None
    return total.input[0], total, axes


def fold_sums_to_shapes(nodes: list) -> list:
    """`nodes` with every broadcast-gradient Reshape replaced by a SumToShape of the same
    name (module docstring); flowjit's own expansions lose their helper nodes."""
    by_name = {n.name: n for n in nodes}
    replaced, helpers = {}, set()
    for n in nodes:
        match = _sum_to_shape_match(n, by_name)
        if match is None:
            continue
        grad, total, axes = match
        data = [i for i in n.input if not i.startswith("^")]
        controls = [i for i in n.input if i.startswith("^")]
        folded = NodeDef(name=n.name, op="SumToShape", device=n.device,
                         input=[grad, data[1]] + controls)
        if _SHAPES_ATTR in n.attr:
            folded.attr[_SHAPES_ATTR].CopyFrom(n.attr[_SHAPES_ATTR])
        mine = (EXPANDED_OP_ATTR in n.attr and n.attr[EXPANDED_OP_ATTR].s == b"SumToShape"
                and total.name == n.name + "/Sum"
                and axes.name == n.name + "/BroadcastGradientArgs"
                and _split(axes.input[0])[0] == n.name + "/Shape")
        if mine:
            shape = by_name.get(n.name + "/Shape")
            if shape is None or shape.op != "Shape":
                continue
            folded.input.extend(i for i in shape.input if i.startswith("^"))
            helpers.update((total.name, axes.name, shape.name))
        replaced[n.name] = folded
    if not replaced:
        return nodes
    if helpers:   # flowjit's helper nodes go unless something else reads one
        used = {_split(spec.lstrip("^"))[0] for n in nodes
                if n.name not in helpers and n.name not in replaced for spec in n.input}
        if used & helpers:
            helpers = set()
    return [replaced.get(n.name, n) for n in nodes if n.name not in helpers]
