"""Unroll-and-jam of row reductions, a CPU pass over the loop IR: JAM rows of a reduction
share one pass over its axis.

A loop nest whose members each reduce one axis per output element (a matrix-vector
product `a @ x`, row sums, row norms, or several of them over the same rows) is built by
nest_code.py as (shown as the renderer prints it)

    for i0 in prange(rows):                      # tagged ROWS_OF_REDUCTIONS
        acc = 0
        for r0 in range(cols):
            acc = radd(acc, a[i0, r0] * x[r0])
        out[i0] = acc

`jam_rows` rewrites each tagged loop so each pass of the reduction loop serves JAM
consecutive rows, each with its own accumulator, and a remainder loop takes the last rows
one at a time:

    for i0_b in prange(rows // JAM):
        i0 = i0_b * JAM; i0_j1 = i0 + 1; ...
        acc = 0; acc_j1 = 0; ...
        for r0 in range(cols):
            acc = radd(acc, a[i0, r0] * x[r0]); acc_j1 = radd(acc_j1, a[i0_j1, r0] * x[r0])
        out[i0] = acc; out[i0_j1] = acc_j1; ...
    for i0 in range(rows // JAM * JAM, rows): <the row as before>

Loads that do not depend on the row (`x[r0]`) are then read once per JAM rows, and JAM rows
stream from memory at once, which keeps more cache misses in flight. The `power_iteration`
corpus kernel (21 L3-bound 1000x1000 float64 `a @ x`) took 3.04 ms jammed by 4 against
3.20 a row at a time (NumPy 3.19), timed side by side. Each row still has its own
accumulator; the vectorizer may split a row's sum differently in the jammed loop and in
the remainder loop, as it may in a nest's parallel and serial versions.

Several reductions of a row are jammed loop by loop, and the statements between their loops
(combining results) are copied per row in order.  Copy k renames (`loop_walk.rename`) every
scalar the row binds, and the row index itself, with a `_j<k>` suffix.
"""

from __future__ import annotations

import dataclasses

from ...compiler.core.ir import Combiner, NodeKind
from ...compiler.loop_ir import (IndexOpKind, Int, Let, Loop, LoopKind, LoopProgram, LoopTag,
                                 StmtKind, Var, index_op)
from ...compiler.loop_walk import assigned, map_body, names_read, rename, walk_stmts
from . import render

JAM = 4          # rows per pass of the reduction loop
MAX_LINES = 40   # source lines of a row beyond which it is not jammed (each copy compiles)
_BRANCHY = (StmtKind.LOOP, StmtKind.WHILE, StmtKind.IF, StmtKind.CHECK)


def jammable(gen, group, p: int) -> bool:
    """Whether `group`'s nest (p outer loops) holds only one-axis reductions (a lone one, or
    several of the same rows fused, whose results may stay in locals) and values computed
    per row from them, and so may be jammed (nest_code.py tags its row loop)."""
    if p == 0 or gen.row_allocs:
        return False
    if len(group.members) == 1 and gen.schedule.boxes.get(id(group.members[0])):
        return False

    def per_row(m) -> bool:   # a one-axis reduction, or a value per row computed from them
        if m.kind is NodeKind.REDUCE:
            return len(m.rshape) == 1 and bool(m.shape)
        return m.kind is NodeKind.COMPUTE and len(m.shape) == p
    return any(m.kind is NodeKind.REDUCE for m in group.members) and all(
        per_row(m) and id(m) not in gen.schedule.scratch for m in group.members)


def _branches(body) -> bool:
    """Whether statements `body` branch (a nested loop or condition, an ARGMAX step)."""
    return any(s.kind in _BRANCHY or (s.kind is StmtKind.ACCUMULATE and s.combiner in
                                      (Combiner.ARGMAX, Combiner.ARGMIN))
               for s in walk_stmts(body))


def jammed(loop: Loop):
    """Loop `loop` over rows jammed by JAM with a remainder loop (module docstring), as a
    list of statements; None when the row is too long to copy, a reduction loop's bounds
    depend on the row, or a loop branches: the reductions that gain are the vectorized
    ones, and copies of branchy loops only cost compile time (6.3 s against 2.8 for five
    reductions, two with argmax)."""
    body = loop.body
    loops = [s for s in body if s.kind is StmtKind.LOOP]
    if (len(render.lines(body)) > MAX_LINES or not loops
            or not _starts_at_zero(loop)
            or any(_branches(s.body) for s in loops)):
        return None   # too long, or a loop with branches (argmax: it does not vectorize)
    row = loop.var
    per_row = assigned(body) | {row}
    if any((names_read(s.start) | names_read(s.stop)) & per_row for s in loops):
        return None   # a loop's bounds depend on the row: the copies cannot share it
    copies = [{name: f"{name}_j{k}" for name in per_row} for k in range(1, JAM)]
    block = f"{row}_b"
    head = [Let(row, index_op(IndexOpKind.MUL, Var(block), Int(JAM)))]
    head += [Let(f"{row}_j{k}", index_op(IndexOpKind.ADD, Var(row), Int(k)))
             for k in range(1, JAM)]
    for s in body:
        if s.kind is StmtKind.LOOP:
            inner = s.body + tuple(t for names in copies for t in rename(s.body, names))
            head.append(dataclasses.replace(s, body=inner))
        else:
            head += [s] + [t for names in copies for t in rename((s,), names)]
    blocks = index_op(IndexOpKind.FLOORDIV, loop.stop, Int(JAM))
    return [Loop(loop.loop_kind, block, Int(0), blocks, tuple(head)),
            Loop(LoopKind.SERIAL, row, index_op(IndexOpKind.MUL, blocks, Int(JAM)), loop.stop,
                 body)]


def _starts_at_zero(loop: Loop) -> bool:
    return loop.start == Int(0)


def jam_rows(program: LoopProgram) -> LoopProgram:
    """`program` with every loop tagged ROWS_OF_REDUCTIONS jammed where `jammed` allows."""
    def one(s):
        if s.kind is StmtKind.LOOP and LoopTag.ROWS_OF_REDUCTIONS in s.tags:
            out = jammed(s)
            return tuple(out) if out is not None else (dataclasses.replace(s, tags=frozenset()),)
        return (s,)
    return dataclasses.replace(program, body=map_body(program.body, one))
