"""The canonical text of a kernel-IR program, the part of every target's cache key that is IR.

`ir_fingerprint(program)` numbers nodes in program order and expressions in first-use order
and writes constants exactly (floats in hex, arrays by content hash), so it depends neither
on interning order nor on node names: two processes that build the same program get the
same text.  Targets hash it with their own options (targets/target.py, "cache key";
docs/architecture.md, "Layers").  It reads only the kernel IR.
"""

from __future__ import annotations

import enum
import hashlib

import numpy as np

from ..compiler.core.ir import Node, Program, WhileSpec, postorder


def _attr_text(value, node_ix: dict) -> str:
    """Exact text of an IR attribute (floats in hex, arrays by content hash)."""
    if isinstance(value, (bool, int, str, type(None))):
        return repr(value)
    if isinstance(value, float):
        return value.hex()
    if isinstance(value, complex):
        return f"{value.real.hex()},{value.imag.hex()}"
    if isinstance(value, Node):
        return f"n{node_ix[id(value)]}"
    if isinstance(value, enum.Enum):
        return f"{type(value).__name__}.{value.name}"
    if isinstance(value, (tuple, list)):
        return "(" + ",".join(_attr_text(v, node_ix) for v in value) + ")"
    if isinstance(value, np.ndarray):
        data = np.ascontiguousarray(value)
        return (f"array({data.dtype.str},{data.shape},"
                f"{hashlib.sha256(data.tobytes()).hexdigest()})")
    if isinstance(value, WhileSpec):   # a loop: its sub-programs' canonical texts
        return (f"while({value.n_carried})<cond>\n{ir_fingerprint(value.cond)}\n"
                f"<body>\n{ir_fingerprint(value.body)}\n</while>")
    if isinstance(value, np.generic):
        return _attr_text(value.item(), node_ix) + ":" + value.dtype.str
    return f"{type(value).__name__}:{value!r}"


def ir_fingerprint(program: Program) -> str:
    """A canonical text of `program` that two processes build identically."""
    nodes = program.nodes()
    node_ix = {id(n): k for k, n in enumerate(nodes)}
    exprs: dict = {}
    lines: list = []

    def ex(e) -> int:
        hit = exprs.get(id(e))
        if hit is not None:
            return hit
        # numbered in the order a recursive walk finishes them, without recursing
        # (docs/architecture.md, "The path of a computation"): the key must not change
        for x in postorder(e, known=exprs):
            args = [exprs[id(a)] for a in x.args]
            attr = _attr_text(x.attr, node_ix)
            lines.append(f"e{len(exprs)} {x.op.value} {x.dtype.name} {args} {attr}")
            exprs[id(x)] = len(exprs)
        return exprs[id(e)]

    for k, n in enumerate(nodes):
        shape = [ex(d) for d in n.shape]
        axes = [ex(a) for a in n.axes]
        raxes = [ex(a) for a in n.raxes]
        rshape = [ex(d) for d in n.rshape]
        body = ex(n.body) if n.body is not None else None
        attr = _attr_text(n.attr, node_ix)
        ins = [node_ix[id(i)] for i in n.inputs]
        lines.append(f"n{k} {n.kind.value} {n.dtype.name} shape={shape} axes={axes} "
                     f"raxes={raxes} rshape={rshape} body={body} inputs={ins} attr={attr}")
    # every input's dtype and rank, read or not: the entry point reads each argument's
    # dimensions by its rank (an unread input of another rank once shared an entry: segfault)
    lines.append("inputs " + " ".join(f"{node_ix.get(id(i), -1)}:{i.dtype.name}:{len(i.shape)}"
                                      for i in program.inputs))
    lines.append("outputs " + " ".join(str(node_ix[id(o)]) for o in program.outputs))
    for cond, message in program.checks:
        lines.append(f"check e{ex(cond)} {message!r}")
    if program.donated:
        lines.append(f"donated {list(program.donated)}")
    return "\n".join(lines)
