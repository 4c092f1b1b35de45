"""Statements of one loop nest from resolved scalar expressions (used by codegen.py).

`Emitter.value(e)` names each subexpression once, as a statement placed at the outermost
loop level it depends on (a loop-invariant value is computed before the loops it does not
vary in); `take(level)` hands out the statements of one level.  Loads are written by the
generator (`load_text`), with unsigned indices where a nest asks for them
(scalar_code.unsigned); other operations by scalar_code.render.
"""

from __future__ import annotations

from ...compiler.core.ir import Scalar
from . import scalar_code


class Names:
    """Fresh temporary names of one kernel module (v1, v2, ..., or another prefix)."""

    def __init__(self):
        self.count = 0

    def fresh(self, prefix="v"):
        self.count += 1
        return f"{prefix}{self.count}"


class Emitter:
    """Turns resolved expressions into hoisted statements for one loop nest."""

    def __init__(self, gen, loop_vars, unsigned_index: bool = False):
        self.gen = gen
        self.unsigned_index = unsigned_index
        self.levels = {id(v): k + 1 for k, v in enumerate(loop_vars)}
        self.stmts: dict = {}     # level -> list of lines
        self.names: dict = {}     # id(expr) -> (name, level)
        self._named: list = []    # those expressions, kept alive so no id is reused

    def level_of(self, e) -> int:
        hit = self.names.get(id(e))
        if hit is not None:
            return hit[1]
        if e.op is Scalar.VAR:
            return self.levels.get(id(e), 0)
        return max((self.level_of(a) for a in e.args), default=0)

    def value(self, e) -> str:
        """The Python expression (usually a temp name) computing `e`."""
        hit = self.names.get(id(e))
        if hit is not None:
            return hit[0]
        op = e.op
        if op is Scalar.CONST:
            return self.gen.constant(e.attr, e.dtype)
        if op is Scalar.VAR:
            kind, k = e.attr
            return f"{ {'a': 'i', 'r': 'r', 'u': 'u'}[kind]}{k}"
        if op is Scalar.DIM:
            return self.gen.dim_name(e)
        args = [self.value(a) for a in e.args]
        if op is Scalar.LOAD:
            if self.unsigned_index:
                args = [scalar_code.unsigned(a) for a in args]
            text = self.gen.load_text(e.attr, args)
        else:
            text = scalar_code.render(op, e.dtype, args, [a.dtype for a in e.args],
                                      self.gen.helpers)
        level = self.level_of(e)
        name = self.gen.names.fresh()
        self.stmts.setdefault(level, []).append(f"{name} = {text}")
        self.names[id(e)] = (name, level)
        self._named.append(e)
        return name

    def take(self, level: int) -> list:
        return self.stmts.pop(level, [])
