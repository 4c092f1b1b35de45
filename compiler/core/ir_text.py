"""Readable text for kernel-IR expressions, nodes and programs (for dumps and `lower()`).

Owns only formatting: `expr_text`, `node_text`, `program_text`.  The text is meant for
people; nothing parses it back.
"""

from __future__ import annotations

from .ir import Node, NodeKind, Program, Scalar

_INFIX = {Scalar.ADD: "+", Scalar.SUB: "-", Scalar.MUL: "*", Scalar.DIV: "/",
          Scalar.FLOORDIV: "//", Scalar.MOD: "%", Scalar.POW: "**", Scalar.EQ: "==",
          Scalar.NE: "!=", Scalar.LT: "<", Scalar.LE: "<=", Scalar.GT: ">", Scalar.GE: ">=",
          Scalar.AND: "&", Scalar.OR: "|"}


def expr_text(e) -> str:
    """One-line text of an Expr."""
    # written part by part from an explicit stack, not by recursion (docs/architecture.md,
    # "The path of a computation"): expressions may be a million operations deep, and
    # nested f-strings would also copy the text once per level
    parts: list = []
    stack = [e]
    while stack:
        item = stack.pop()
        if isinstance(item, str):
            parts.append(item)
            continue
        head, args, sep, tail = _pieces(item)
        parts.append(head)
        stack.append(tail)
        for k in range(len(args) - 1, -1, -1):
            stack.append(args[k])
            if k:
                stack.append(sep)
    return "".join(parts)


def _pieces(e) -> tuple:
    """(text before the arguments, the arguments, the text between two, the text after)."""
    op = e.op
    if op is Scalar.CONST:
        return (repr(e.attr) if e.dtype.name in ("int64", "float64", "bool") else
                f"{e.attr!r}:{e.dtype.name}"), (), "", ""
    if op is Scalar.VAR:
        kind, k = e.attr
        return f"{'i' if kind == 'a' else 'r'}{k}", (), "", ""
    if op is Scalar.DIM:
        return f"in{e.attr[0]}.shape[{e.attr[1]}]", (), "", ""
    if op is Scalar.LOAD:
        return f"{e.attr.name}[", e.args, ", ", "]"
    if op in _INFIX:
        return "(", e.args[:2], f" {_INFIX[op]} ", ")"
    if op is Scalar.CAST:
        return f"{e.dtype.name}(", e.args[:1], "", ")"
    return f"{op.value}(", e.args, ", ", ")"


def node_text(n: Node) -> str:
    """One line per node: name, dtype, shape and definition."""
    dims = ", ".join(expr_text(d) for d in n.shape)
    head = f"{n.name}: {n.dtype.name}[{dims}]"
    if n.kind is NodeKind.INPUT:
        return f"{head} = input {n.attr[0]}"
    if n.kind is NodeKind.COMPUTE:
        idx = ", ".join(expr_text(a) for a in n.axes)
        return f"{head} = compute[{idx}] {expr_text(n.body)}"
    if n.kind is NodeKind.REDUCE:
        idx = ", ".join(expr_text(a) for a in n.axes)
        red = ", ".join(f"{expr_text(r)} < {expr_text(s)}" for r, s in zip(n.raxes, n.rshape))
        return f"{head} = {n.attr.value}[{idx}] over ({red}) of {expr_text(n.body)}"
    if n.kind is NodeKind.MATMUL:
        ta, tb = n.attr
        return (f"{head} = matmul({n.inputs[0].name}{'.T' if ta else ''}, "
                f"{n.inputs[1].name}{'.T' if tb else ''})")
    if n.kind is NodeKind.SCATTER:
        base, rows, updates = (x.name for x in n.inputs)
        verb = "scatter_add_rows" if n.attr is not None else "scatter_rows"
        return f"{head} = {verb}({base}, rows={rows}, updates={updates})"
    if n.kind is NodeKind.LIBCALL:
        return f"{head} = {n.attr.value}({', '.join(x.name for x in n.inputs)})"
    if n.kind is NodeKind.WHILE:
        spec = n.attr
        inits = ", ".join(x.name for x in n.inputs[:spec.n_carried])
        captured = ", ".join(x.name for x in n.inputs[spec.n_carried:])
        return (f"{n.name} = while(vars=({inits}), captured=({captured}))\n"
                f"  cond:\n{_indented(program_text(spec.cond))}\n"
                f"  body:\n{_indented(program_text(spec.body))}")
    if n.kind is NodeKind.WHILE_OUT:
        return f"{head} = {n.inputs[0].name}.vars[{n.attr}]"
    return f"{head} = reshape({n.inputs[0].name})"


def _indented(text: str) -> str:
    return "\n".join("    " + line for line in text.splitlines())


def program_text(p: Program) -> str:
    """Every node of a program, producers first, then its outputs and checks."""
    lines = [node_text(n) for n in p.nodes()]
    lines.append("return " + ", ".join(o.name for o in p.outputs))
    for cond, msg in p.checks:
        lines.append(f"check {expr_text(cond)}  # {msg}")
    for position, out in p.donated:
        lines.append(f"donated input {position} -> output {out}")
    return "\n".join(lines)
