"""Loop-IR statements of one loop nest from resolved scalar expressions (used by codegen.py).

`Emitter.value(e)` names each subexpression once, as a `Let` placed at the outermost loop
level it depends on (a loop-invariant value is computed before the loops it does not vary
in), and returns the variable (`loop_ir.Var`) holding it; `take(level)` hands out the
statements of one level.  Loads are built by the generator (`load_expr`), with unsigned
indices where a nest asks for them (`unsigned`); other operations become `ScalarOp` nodes
that the renderer prints through scalar_code.render.
"""

from __future__ import annotations

from ...compiler.core.ir import Scalar
from ...compiler.loop_ir import Call, Dim, ExprKind, Let, ScalarOp, Var

_VAR_PREFIX = {"a": "i", "r": "r", "u": "u", "b": "b"}


class Names:
    """Fresh temporary names of one kernel module (v1, v2, ..., or another prefix)."""

    def __init__(self):
        self.count = 0

    def fresh(self, prefix="v"):
        self.count += 1
        return f"{prefix}{self.count}"


def unsigned(index):
    """`index` (a generated, in-bounds, non-negative index) as an unsigned integer: numba
    then emits no negative-index wraparound, which keeps LLVM from vectorizing a loop whose
    start it cannot prove non-negative (`range(c0, hi)`; a column sum of 16x100000 float32
    took 530 us so, 85 us unsigned, measured)."""
    return index if index.kind is ExprKind.INT else Call("np.uint64", (index,))


class Emitter:
    """Turns resolved expressions into hoisted `Let` statements for one loop nest."""

    def __init__(self, gen, loop_vars, unsigned_index: bool = False):
        self.gen = gen
        self.unsigned_index = unsigned_index
        self.levels = {id(v): k + 1 for k, v in enumerate(loop_vars)}
        self.stmts: dict = {}     # level -> list of statements
        self.names: dict = {}     # id(expr) -> (name, level)
        self._named: list = []    # those expressions, kept alive so no id is reused

    def level_of(self, e) -> int:
        hit = self.names.get(id(e))
        if hit is not None:
            return hit[1]
        if e.op is Scalar.VAR:
            return self.levels.get(id(e), 0)
        return max((self.level_of(a) for a in e.args), default=0)

    def value(self, e):
        """The loop-IR expression (usually a variable) computing `e`."""
        hit = self.names.get(id(e))
        if hit is not None:
            return Var(hit[0])
        op = e.op
        if op is Scalar.CONST:
            return Var(self.gen.constant(e.attr, e.dtype))
        if op is Scalar.VAR:
            kind, k = e.attr
            return Var(f"{_VAR_PREFIX[kind]}{k}")
        if op is Scalar.DIM:
            position, axis = e.attr
            return Dim(f"in{position}", axis)
        args = [self.value(a) for a in e.args]
        if op is Scalar.LOAD:
            if self.unsigned_index:
                args = [unsigned(a) for a in args]
            computed = self.gen.load_expr(e.attr, args)
        else:
            computed = ScalarOp(op, e.dtype, tuple(args), tuple(a.dtype for a in e.args))
        level = self.level_of(e)
        name = self.gen.names.fresh()
        self.stmts.setdefault(level, []).append(Let(name, computed))
        self.names[id(e)] = (name, level)
        self._named.append(e)
        return Var(name)

    def take(self, level: int) -> list:
        return self.stmts.pop(level, [])
