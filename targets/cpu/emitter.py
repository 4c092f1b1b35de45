"""Loop-IR statements of one loop nest from resolved scalar expressions (used by codegen.py).

`Emitter.value(e)` names each subexpression once, as a `Let` placed at the outermost loop
level it depends on (a loop-invariant value is computed before the loops it does not vary
in), and returns the variable (`loop_ir.Var`) holding it; `take(level)` hands out the
statements of one level.  Loads are built by the generator (`load_expr`), with unsigned
indices where a nest asks for them (`unsigned`); other operations become `ScalarOp` nodes
that the renderer prints through scalar_code.render.
"""

from __future__ import annotations

from ...compiler.core.ir import Scalar, postorder
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
        levels: dict = {}
        for x in postorder(e, known=self.names):   # no recursion (see `value`)
            if x.op is Scalar.VAR:
                levels[id(x)] = self.levels.get(id(x), 0)
            else:
                levels[id(x)] = max((levels[id(a)] if id(a) in levels else
                                     self.names[id(a)][1] for a in x.args), default=0)
        return levels[id(e)]

    def value(self, e):
        """The loop-IR expression (usually a variable) computing `e`."""
        hit = self.names.get(id(e))
        if hit is not None:
            return Var(hit[0])
        # named in the order a recursive walk would name them, without recursing
        # (docs/architecture.md, "The path of a computation": a fused chain is one
        # expression as deep as the chain)
        leaves: dict = {}
        for x in postorder(e, known=self.names):
            if not x.args and x.op is not Scalar.LOAD:
                leaves[id(x)] = self._leaf(x)
            else:
                self._name(x, [leaves[id(a)] if id(a) in leaves else Var(self.names[id(a)][0])
                               for a in x.args])
        hit = self.names.get(id(e))
        return Var(hit[0]) if hit is not None else leaves[id(e)]

    def _leaf(self, e):
        """The loop-IR value of a constant, loop variable or runtime size."""
        op = e.op
        if op is Scalar.CONST:
            return Var(self.gen.constant(e.attr, e.dtype))
        if op is Scalar.VAR:
            kind, k = e.attr
            return Var(f"{_VAR_PREFIX[kind]}{k}")
        position, axis = e.attr
        return Dim(f"in{position}", axis)

    def _name(self, e, args):
        """A `Let` computing `e` from its arguments' values `args`, at its level."""
        op = e.op
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

    def take(self, level: int) -> list:
        return self.stmts.pop(level, [])
