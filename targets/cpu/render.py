"""The CPU renderer: a loop program (compiler/loop_ir.py) printed as numba source text.

One table per node kind says how it prints (docs/architecture.md: one IR, many renderers):
PARALLEL loops become `prange`, SERIAL and VECTOR loops `range` (numba's loop vectorizer
decides by itself); scalar operations print through `scalar_code.render` and accumulator
steps through `scalar_code.reduce_step`.  Nothing edits the text afterwards: every
transformation (row jamming, vector widths) is a pass over the loop IR before this.
"""

from __future__ import annotations

from ...compiler.loop_ir import ExprKind, IndexOpKind, LoopKind, LoopProgram, StmtKind
from . import scalar_code

INDENT = "    "
HEADER = ["import numpy as np", "from numba import prange",
          "from flowjit.targets.cpu.scalar_code import *  # noqa: F401,F403", ""]


def expr(e) -> str:
    """numba source of one loop-IR expression."""
    return _EXPR[e.kind](e)


_PRECEDENCE = {IndexOpKind.ADD: 1, IndexOpKind.SUB: 1, IndexOpKind.MUL: 2,
               IndexOpKind.FLOORDIV: 2}


def _operand(e, parent=None, left: bool = True) -> str:
    """`e` as an operand of index operation `parent`, parenthesized unless Python's
    precedence and left-to-right grouping keep its meaning without."""
    text = expr(e)
    if e.kind is not ExprKind.INDEX or e.op in (IndexOpKind.MIN, IndexOpKind.MAX):
        return text
    mine, theirs = _PRECEDENCE.get(e.op), _PRECEDENCE.get(parent)
    if mine is not None and theirs is not None and (mine > theirs or
                                                     (mine == theirs and left)):
        return text
    return f"({text})"


def _index(e) -> str:
    if e.op in (IndexOpKind.MIN, IndexOpKind.MAX):
        return f"{e.op.value}({', '.join(map(expr, e.args))})"
    if e.op is IndexOpKind.NOT:
        return f"not {_operand(e.args[0])}"
    if e.op is IndexOpKind.AND:
        return " and ".join(map(_operand, e.args))
    if e.op in _COMPARE:   # arithmetic binds tighter than a comparison
        return f" {e.op.value} ".join(map(expr, e.args))
    return f" {e.op.value} ".join(_operand(a, e.op, k == 0) for k, a in enumerate(e.args))


_COMPARE = (IndexOpKind.LT, IndexOpKind.LE, IndexOpKind.GT, IndexOpKind.GE, IndexOpKind.EQ)


def _indices(indices) -> str:
    return ", ".join(map(expr, indices)) if indices else "()"


_EXPR = {
    ExprKind.VAR: lambda e: e.name,
    ExprKind.INT: lambda e: str(e.value),
    ExprKind.DIM: lambda e: f"{e.buffer}.shape[{e.axis}]",
    ExprKind.LOAD: lambda e: f"{e.buffer}[{_indices(e.indices)}]",
    ExprKind.SCALAR: lambda e: scalar_code.render(e.op, e.dtype, [expr(a) for a in e.args],
                                                  list(e.arg_dtypes)),
    ExprKind.INDEX: _index,
    ExprKind.CALL: lambda e: f"{e.fn}({', '.join(map(expr, e.args))})",
    ExprKind.ACC_RESULT: lambda e: scalar_code.reduce_result(e.combiner, e.acc, e.dtype),
    ExprKind.SOURCE: lambda e: e.text,
}


def _range(s) -> str:
    fn = "prange" if s.loop_kind is LoopKind.PARALLEL else "range"
    start = s.start
    bounds = expr(s.stop) if start.kind is ExprKind.INT and start.value == 0 else \
        f"{expr(start)}, {expr(s.stop)}"
    return f"{fn}({bounds})"


def _loop(s, ind):
    return [f"{ind}for {s.var} in {_range(s)}:"] + lines(s.body, ind + INDENT)


def _if(s, ind):
    out = [f"{ind}if {expr(s.cond)}:"] + lines(s.then or (), ind + INDENT)
    if s.orelse:
        out += [f"{ind}else:"] + lines(s.orelse, ind + INDENT)
    return out


def _return(s, ind):
    values = [expr(v) for v in s.values]
    return [f"{ind}return ({', '.join(values)},)" if values else f"{ind}return ()"]


_STMT = {
    StmtKind.LOOP: _loop,
    StmtKind.WHILE: lambda s, ind: [f"{ind}while {expr(s.cond)}:"]
    + lines(s.body, ind + INDENT),
    StmtKind.LET: lambda s, ind: [f"{ind}{s.name} = {expr(s.value)}"],
    StmtKind.STORE: lambda s, ind: [
        f"{ind}{s.buffer}[{_indices(s.indices)}] = {expr(s.value)}"],
    StmtKind.ACCUMULATE: lambda s, ind: [
        ind + line for line in scalar_code.reduce_step(
            s.combiner, s.acc, expr(s.value), expr(s.index), s.dtype)],
    StmtKind.IF: _if,
    StmtKind.CHECK: lambda s, ind: [f"{ind}if not {expr(s.cond)}:",
                                    f"{ind}{INDENT}raise ValueError({s.message!r})"],
    StmtKind.ALLOC: lambda s, ind: [f"{ind}{s.name} = {expr(s.value)}"],
    StmtKind.DO: lambda s, ind: [f"{ind}{expr(s.call)}"],
    StmtKind.COMMENT: lambda s, ind: [f"{ind}# {s.text}"],
    StmtKind.RETURN: _return,
    StmtKind.VERBATIM: lambda s, ind: [ind + line for line in s.lines],
}


def lines(body, ind: str = "") -> list:
    """Source lines of statements `body`, indented by `ind`."""
    out = []
    for s in body:
        out += _STMT[s.kind](s, ind)
    return out


def render(program: LoopProgram) -> str:
    """The source of the kernel module: imports, constants, the function."""
    subs, names = _functions(program)
    consts = [f"{name} = {value}" for name, value in program.constants]
    head = [f"def {program.name}({', '.join(program.params)}):"]
    listed = [f"SUBKERNELS = {tuple(names)!r}  # compiled first, innermost first", ""] \
        if names else []
    return "\n".join(HEADER + subs + listed + consts + [""] + head +
                     lines(program.body, INDENT)) + "\n"


def _functions(program: LoopProgram) -> tuple:
    """(source lines, names) of the functions `program` calls (targets/cpu/build.py
    compiles each with numba before the kernel: they are its globals), innermost first."""
    out, names = [], []
    for f in program.functions:
        inner, inner_names = _functions(f)
        out += inner
        names += inner_names
        out += [f"{name} = {value}" for name, value in f.constants] + [""]
        out += [f"def {f.name}({', '.join(f.params)}):"] + lines(f.body, INDENT) + ["", ""]
        names.append(f.name)
    return out, names
