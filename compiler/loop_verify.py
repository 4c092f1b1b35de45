"""Structural checks of the loop IR, and the runner of loop-IR passes that applies them.

`verify(program)` raises `LoopIRError` naming the first broken rule:
- every variable is defined before it is read (parameters, constants, loop indices, lets,
  accumulators, allocations, the names a `Verbatim` declares); a name bound inside a loop
  body is not visible after the loop, one bound in both arms of an `If` is;
- an accumulator is bound (by a `Let`) before its first step;
- a loop's index is not rebound inside its body (no let, accumulator or inner loop of it);
- stores and loads name arrays (parameters or `Alloc`s), never scalar variables;
- a parallel loop is not nested in another parallel loop.

`run_passes(program, passes)` applies (name, function) passes in order, verifying after each
one when `verify_each` is true or `FLOWJIT_VERIFY_LOOP_IR=1` (the tests set it); see
docs/architecture.md, "every pipeline stage can be verified".
"""

from __future__ import annotations

import os

from .loop_ir import ExprKind, LoopKind, LoopProgram, StmtKind
from .loop_walk import blocks, stmt_exprs, walk_expr


class LoopIRError(ValueError):
    """A loop program breaks a structural rule."""


def verify(program: LoopProgram) -> LoopProgram:
    """Check `program`'s structure (module docstring); returns it unchanged."""
    scalars = {name for name, _ in program.constants}
    arrays = set(program.params)
    _block(program.body, scalars, arrays, loop_vars=(), in_parallel=False)
    return program


def _expr(e, scalars: set, arrays: set, where: str):
    for x in walk_expr(e):
        kind = x.kind
        if kind is ExprKind.VAR and x.name not in scalars and x.name not in arrays:
            raise LoopIRError(f"{where}: reads {x.name!r} before it is defined")
        if kind is ExprKind.ACC_RESULT and x.acc not in scalars:
            raise LoopIRError(f"{where}: result of accumulator {x.acc!r} never bound")
        if kind in (ExprKind.LOAD, ExprKind.DIM) and x.buffer not in arrays:
            raise LoopIRError(f"{where}: {x.buffer!r} is not an array")


def _block(body, scalars: set, arrays: set, loop_vars: tuple, in_parallel: bool):
    """Check statements `body` with the names defined so far (extended in place)."""
    for s in body:
        kind = s.kind
        where = f"{kind.value} statement"
        if kind is StmtKind.VERBATIM:
            scalars.update(s.defines)
            arrays.update(s.defines)
            continue
        for e in stmt_exprs(s):
            _expr(e, scalars, arrays, where)
        if kind is StmtKind.LET:
            if s.name in loop_vars:
                raise LoopIRError(f"loop index {s.name!r} rebound in its loop")
            if s.name in arrays and s.name not in scalars:
                raise LoopIRError(f"array {s.name!r} rebound as a scalar")
            scalars.add(s.name)
        elif kind is StmtKind.ACCUMULATE:
            if s.acc not in scalars:
                raise LoopIRError(f"accumulator {s.acc!r} stepped before it is bound")
            if s.acc in loop_vars:
                raise LoopIRError(f"loop index {s.acc!r} used as an accumulator")
        elif kind is StmtKind.STORE:
            if s.buffer not in arrays:
                raise LoopIRError(f"store into {s.buffer!r}, which is not an array")
        elif kind is StmtKind.ALLOC:
            arrays.add(s.name)
        elif kind is StmtKind.LOOP:
            if s.var in loop_vars:
                raise LoopIRError(f"loop index {s.var!r} rebound by an inner loop")
            parallel = s.loop_kind is LoopKind.PARALLEL
            if parallel and in_parallel:
                raise LoopIRError(f"parallel loop over {s.var!r} nested in a parallel loop")
            inner = set(scalars) | {s.var}
            _block(s.body, inner, set(arrays), loop_vars + (s.var,), in_parallel or parallel)
        elif kind is StmtKind.WHILE:
            _block(s.body, set(scalars), set(arrays), loop_vars, in_parallel)
        elif kind is StmtKind.IF:
            arms = []
            for arm in blocks(s):
                sc, ar = set(scalars), set(arrays)
                _block(arm, sc, ar, loop_vars, in_parallel)
                arms.append((sc, ar))
            scalars |= arms[0][0] & arms[1][0]
            arrays |= arms[0][1] & arms[1][1]


def verifying() -> bool:
    """Whether loop-IR passes verify after each pass by default (FLOWJIT_VERIFY_LOOP_IR)."""
    return os.environ.get("FLOWJIT_VERIFY_LOOP_IR", "").strip() not in ("", "0")


def run_passes(program: LoopProgram, passes, verify_each: bool | None = None) -> LoopProgram:
    """`program` through each (name, pass) in order, verified before the first and after
    every pass when `verify_each` (default: `verifying()`)."""
    check = verifying() if verify_each is None else verify_each
    if check:
        _named(verify, "input", program)
    for name, fn in passes:
        program = fn(program)
        if check:
            _named(verify, name, program)
    return program


def _named(check, name: str, program):
    try:
        check(program)
    except LoopIRError as e:
        raise LoopIRError(f"after loop-IR pass {name!r}: {e}") from None
